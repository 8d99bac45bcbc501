"""
The stock ``parlai`` command resolves the plugin's agents, teachers and zoo, and saved
opts carry fully-qualified class paths.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path


import pytest

from conftest import offline_env, run_cli


def test_stock_parlai_resolves_gsr_and_fails_clearly_offline(tmp_path, datapath):
    """
    ``-m docgraph/gsr`` reaches our class through the stock command; its default hub model
    (t5-small) is not available offline and the error says what to do instead.
    (``docgraph``, ``docgraph/graph_selector`` and ``docgraph/gpt2_responder`` train by
    short name in test_pipeline.py, test_graph_selector.py and test_responder.py.)
    """
    out = run_cli(
        ["parlai", "train_model", "-m", "docgraph/gsr", "-t", "docgraph:sample_kg",
         "--datapath", str(datapath), "-mf", str(tmp_path / "m")],
        cwd=tmp_path,
    )
    assert out.returncode != 0
    assert "GSRUnavailable" in out.stderr and "--gsr-model tiny" in out.stderr, out.stderr[-2000:]
    assert "Could not find" not in out.stderr and "ModuleNotFoundError" not in out.stderr


def test_aliases_are_the_same_modules():
    import parlai.agents.docgraph.graph_selector as alias
    import parlai.tasks.docgraph.agents as task_alias
    import parlai.zoo.docgraph.sample as zoo_alias

    import parlai_docgraph.agents.graph_selector as package
    import parlai_docgraph.agents.graph_selector.agent as real
    import parlai_docgraph.tasks.docgraph.agents as task_real
    import parlai_docgraph.zoo.sample as zoo_real

    assert alias is package and task_alias is task_real and zoo_alias is zoo_real
    assert alias.GraphSelectorAgent is real.GraphSelectorAgent
    assert real.GraphSelectorAgent.__module__ == "parlai_docgraph.agents.graph_selector.agent"
    assert real.__spec__.name == "parlai_docgraph.agents.graph_selector.agent"

    from parlai.core.loader import load_agent_module, load_teacher_module

    assert load_agent_module("docgraph/graph_selector") is real.GraphSelectorAgent
    from parlai_docgraph.agents.gpt2_responder.agent import GPT2ResponderAgent, Gpt2ResponderAgent
    from parlai_docgraph.agents.gsr.agent import GSRAgent, GsrAgent

    assert load_agent_module("docgraph/gpt2_responder") is GPT2ResponderAgent is Gpt2ResponderAgent
    assert load_agent_module("docgraph/gsr") is GSRAgent is GsrAgent
    assert load_teacher_module("docgraph:sample").__name__ == "SampleTeacher"
    assert load_teacher_module("docgraph:wow:topic_split").__name__ == "WowTeacher"


def test_stock_parlai_display_data_sample(tmp_path, datapath):
    out = run_cli(
        ["parlai", "display_data", "-t", "docgraph:sample", "-n", "2", "--datapath", str(datapath)],
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "NEW EPISODE" in out.stdout


def test_zoo_name_reaches_our_download(tmp_path, datapath):
    """
    ``zoo:docgraph/...`` reaches our zoo modules; an unreleased checkpoint says so.
    (The sample model's offline build is tested in test_zoo.py.)
    """
    out = run_cli(
        ["parlai", "eval_model", "-mf", "zoo:docgraph/wow/model", "-t", "docgraph:sample",
         "--datapath", str(datapath)],
        cwd=tmp_path,
    )
    assert out.returncode != 0
    assert "not released yet" in out.stderr, out.stderr[-2000:]


def test_parlai_docgraph_is_a_superset(tmp_path):
    out = run_cli(["parlai-docgraph", "helpall"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    for command in ("datasets", "train_model", "eval_model", "interactive", "display_data"):
        assert command in out.stdout


def test_datasets_script_reports_missing_files(tmp_path, datapath):
    (datapath / "komodis").mkdir()
    (datapath / "komodis" / "dataset.json").write_text("[]")
    out = run_cli(["parlai-docgraph", "datasets", "--datapath", str(datapath)], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "[yes] komodis" in out.stdout
    assert "[ no] opendialkg" in out.stdout and "opendialkg.csv" in out.stdout


def test_datasets_script_uses_parlais_datapath(tmp_path, datapath):
    """Without --datapath, ParlAI's datapath ($PARLAI_DATAPATH, else ParlAI's default), as
    every parlai command and make demo (README, "Quick start")."""
    out = run_cli(["parlai-docgraph", "datasets"], cwd=tmp_path,
                  env={"PARLAI_DATAPATH": str(datapath)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == f"datapath: {datapath}"


FQ_MODULE = """
from parlai.core.loader import register_agent
from parlai.agents.transformer.transformer import TransformerRankerAgent
from parlai_docgraph.agents.base import FullyQualifiedOptMixin

@register_agent("fq_tiny_alias")
class FqTinyAgent(FullyQualifiedOptMixin, TransformerRankerAgent):
    pass
"""

TRAIN = """
import fqtiny
from parlai.scripts.train_model import TrainModel
TrainModel.main(task='integration_tests:candidate', model='fq_tiny_alias',
    model_file={mf!r}, datapath={dp!r}, n_layers=1, embedding_size=16, ffn_size=32,
    n_heads=2, batchsize=4, max_train_steps=2, validation_every_n_steps=2,
    validation_max_exs=8, lr_scheduler='none', candidates='batch', eval_candidates='inline')
"""


def test_saved_opt_is_fully_qualified(tmp_path, datapath):
    """
    A model trained under a registered alias reloads in a process that lacks the alias.
    """
    (tmp_path / "fqtiny.py").write_text(FQ_MODULE)
    mf = tmp_path / "model"
    env = offline_env({"PYTHONPATH": str(tmp_path)})
    train = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(TRAIN.format(mf=str(mf), dp=str(datapath)))],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert train.returncode == 0, train.stderr[-3000:]
    opt = json.loads(Path(f"{mf}.opt").read_text())
    assert opt["model"] == "fqtiny:FqTinyAgent"
    evaluate = ["parlai", "eval_model", "-mf", str(mf), "-t", "integration_tests:candidate",
                "--datapath", str(datapath), "--num-examples", "4"]
    ok = run_cli(evaluate, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)})
    assert ok.returncode == 0, ok.stderr[-3000:]
    # The check can fail: the alias itself does not resolve in a fresh process.
    opt["model"] = "fq_tiny_alias"
    Path(f"{mf}.opt").write_text(json.dumps(opt))
    broken = run_cli(evaluate, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)})
    assert broken.returncode != 0


def test_every_torch_agent_loads_checkpoints_weights_only(tmp_path, monkeypatch):
    """
    ParlAI's ``TorchAgent.load`` hands its pickle module to ``torch.load``, which turns the
    weights-only default off; every torch agent of the package loads through
    ``WeightsOnlyLoadMixin`` instead, falling back (with a warning) only for a file that
    needs full unpickling.
    """
    import pickle

    import torch
    from parlai.core.torch_agent import TorchAgent

    from parlai_docgraph.agents.base import WeightsOnlyLoadMixin
    from parlai_docgraph.agents.gpt2_responder.agent import GPT2ResponderAgent
    from parlai_docgraph.agents.graph_selector.agent import GraphSelectorAgent
    from parlai_docgraph.agents.gsr.agent import GSRAgent

    for cls in (GraphSelectorAgent, GPT2ResponderAgent, GSRAgent):
        assert cls.load is WeightsOnlyLoadMixin.load, cls

    class Parent:
        def load(self, path):
            self.fallback = path
            return {"fallback": True}

    class Agent(WeightsOnlyLoadMixin, Parent):
        def load_state_dict(self, state):
            self.state = state

    plain, unsafe = tmp_path / "plain", tmp_path / "unsafe"
    torch.save({"model": {"w": torch.ones(2)}, "number_training_updates": 3}, plain)
    torch.save({"model": {"w": torch.ones(2)}, "extra": TorchAgent}, unsafe)  # a class: code
    calls = []
    real_load = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **k: calls.append(k) or real_load(*a, **k))
    agent = Agent()
    assert agent.load(str(plain))["number_training_updates"] == 3
    assert torch.equal(agent.state["w"], torch.ones(2)) and not hasattr(agent, "fallback")
    assert calls[-1].get("weights_only") is True
    assert Agent().load(str(unsafe)) == {"fallback": True}
    with pytest.raises(pickle.UnpicklingError):
        real_load(str(unsafe), weights_only=True)


@pytest.mark.parametrize("saved, new", [
    ("parlai_docgraph.agents.agents:DocgraphAgent", "pipeline.agent:DocgraphAgent"),
    ("parlai_docgraph.agents.graph_selector:GraphSelectorAgent",
     "graph_selector.agent:GraphSelectorAgent"),
    ("parlai_docgraph.agents.gpt2_responder:GPT2ResponderAgent",
     "gpt2_responder.agent:GPT2ResponderAgent"),
    ("parlai_docgraph.agents.gpt2_responder:ResponderDictionaryAgent",
     "gpt2_responder.dictionary:ResponderDictionaryAgent"),
    ("parlai_docgraph.agents.gsr:GSRAgent", "gsr.agent:GSRAgent"),
    ("parlai_docgraph.agents.gsr:GSRDictionaryAgent", "gsr.agent:GSRDictionaryAgent"),
])
def test_class_paths_saved_before_the_agent_packages_still_load(saved, new):
    """Model files record ``module:Class`` (FullyQualifiedOptMixin); files written when each
    agent was one module keep loading now that each is a package."""
    from parlai.core.loader import load_agent_module

    from parlai_docgraph.agents.base import qualified_name

    assert qualified_name(load_agent_module(saved)) == "parlai_docgraph.agents." + new

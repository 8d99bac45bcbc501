"""
The zoo: ``zoo:docgraph/sample/model`` built offline from a recipe (deterministic, versioned,
atomic ``.built`` marker, rebuilt when unfinished or outdated), the released-checkpoint path
(``not released yet``, offline, an already-built folder), and the catalogue.

A small recipe (tiny random encoder, 2 steps per part) stands in for the real one, which
trains MiniLM for minutes; the code path is the same.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import torch

from conftest import save_tiny_encoder

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def quick_recipe(tmp_path_factory):
    enc = save_tiny_encoder(tmp_path_factory.mktemp("tiny_bert"))
    steps = ["--max-train-steps", "2", "-bs", "2", "-vstep", "2", "-vme", "2",
             "--short-final-eval", "true"]
    return {
        "name": "docgraph-sample-quick",
        "seed": 0,
        "selector": ["-m", "docgraph/graph_selector", "-t", "docgraph:sample", "--label-type",
                     "chosen_sent", "--encoder-model", str(enc), "--selector-hidden", "32",
                     "--type-dim", "8", "--pair-truncate", "64", "-lr", "1e-3", *steps],
        "responder": ["-m", "docgraph/gpt2_responder", "--responder-model", "tiny", "-t",
                      "docgraph:sample", "-lr", "3e-3", "--optimizer", "adam",
                      "--skip-generation", "true", *steps],
    }


@pytest.fixture(scope="module")
def built(quick_recipe, tmp_path_factory):
    from parlai_docgraph.zoo import sample

    data = tmp_path_factory.mktemp("data")
    return data, sample.download(str(data), quick_recipe)


def _state(path):
    return torch.load(path, map_location="cpu", weights_only=False)["model"]


def test_build_layout_marker_and_reload(built, quick_recipe):
    from parlai.core.agents import create_agent_from_model_file

    from parlai_docgraph.zoo.recipe import recipe_version

    data, mf = built
    folder = Path(data, "models", "docgraph", "sample")
    assert mf == str(folder / "model")
    marker = (folder / ".built").read_text().splitlines()
    assert marker[1] == recipe_version(quick_recipe)
    for name in ("model", "model.opt", "model.selector", "model.selector.opt",
                 "model.responder", "model.responder.opt", "recipe.json"):
        assert (folder / name).exists(), name
    assert not list(folder.glob("train_*"))  # the per-part training folders are gone
    agent = create_agent_from_model_file(mf, {"datapath": str(data), "datatype": "valid"})
    assert type(agent).__name__ == "DocgraphAgent"


def test_build_is_deterministic(built, quick_recipe, tmp_path):
    from parlai_docgraph.zoo import sample

    data, mf = built
    again = sample.download(str(tmp_path / "data2"), quick_recipe)
    for part in ("selector", "responder"):
        a, b = _state(f"{mf}.{part}"), _state(f"{again}.{part}")
        assert a.keys() == b.keys()
        for key in a:
            assert torch.equal(a[key], b[key]), (part, key)


def test_built_folder_is_reused_and_stale_ones_rebuilt(built, quick_recipe, tmp_path,
                                                      monkeypatch):
    from parlai_docgraph.zoo import recipe as recipe_mod
    from parlai_docgraph.zoo import sample

    data, mf = built
    calls = []
    monkeypatch.setattr(recipe_mod, "_train", lambda args, label: calls.append(label))
    assert sample.download(str(data), quick_recipe) == mf
    assert calls == []  # built with this recipe's version: nothing is trained

    # an unfinished build (no .built) is removed and started again
    folder = tmp_path / "d" / "models" / "docgraph" / "sample"
    folder.mkdir(parents=True)
    (folder / "junk").write_text("half written")
    with pytest.raises(Exception):
        sample.download(str(tmp_path / "d"), quick_recipe)  # _train is a stub: nothing saved
    assert calls == ["selector", "responder"]
    assert not (folder / "junk").exists() and not (folder / ".built").exists()

    # another recipe version rebuilds
    other = dict(quick_recipe, seed=1)
    assert recipe_mod.recipe_version(other) != recipe_mod.recipe_version(quick_recipe)
    assert not recipe_mod.is_built(str(Path(mf).parent), recipe_mod.recipe_version(other))


def test_zoo_path_resolves_through_parlai(built, quick_recipe, monkeypatch):
    from parlai.core.build_data import modelzoo_path

    from parlai_docgraph.zoo import sample

    data, mf = built
    monkeypatch.setattr(sample, "RECIPE", quick_recipe)
    assert modelzoo_path(str(data), "zoo:docgraph/sample/model") == mf


def test_released_checkpoints(tmp_path, monkeypatch):
    from parlai.core.build_data import modelzoo_path

    from parlai_docgraph.zoo.recipe import mark_built
    from parlai_docgraph.zoo.released import NotReleasedYet, Release, download

    for name in ("wow", "holle"):
        with pytest.raises(NotReleasedYet, match=f"zoo:docgraph/{name}/model is not released"):
            modelzoo_path(str(tmp_path), f"zoo:docgraph/{name}/model")
    release = Release("future", "v2", url="https://example.org/model.tgz", sha256="0" * 64)
    monkeypatch.setenv("PARLAI_DOCGRAPH_OFFLINE", "1")
    with pytest.raises(RuntimeError, match="offline") as err:
        download(str(tmp_path), release)
    assert "0" * 64 in str(err.value) and "v2" in str(err.value)
    folder = tmp_path / "models" / "docgraph" / "future"
    folder.mkdir(parents=True)
    mark_built(str(folder), "v2")  # already in place with this version: no download
    assert download(str(tmp_path), release) == str(folder / "model")
    mark_built(str(folder), "v1")  # an older version is not accepted
    with pytest.raises(RuntimeError, match="offline"):
        download(str(tmp_path), release)


def test_model_list_entries():
    from parlai_docgraph.zoo.model_list import model_list

    keys = {"title", "id", "path", "agent", "task", "project", "description", "example",
            "result"}
    assert {e["path"] for e in model_list} == {
        "zoo:docgraph/sample/model", "zoo:docgraph/wow/model", "zoo:docgraph/holle/model",
        "zoo:docgraph/cmu_dog/model"}
    for entry in model_list:
        assert keys <= set(entry), entry["path"]
        module = entry["path"][len("zoo:"):].rsplit("/", 1)[0].replace("/", ".")
        mod = importlib.import_module(f"parlai.zoo.{module}")
        assert callable(mod.download)
        assert entry["example"].startswith("parlai ") and entry["path"] in entry["example"]


def test_data_fingerprint_follows_the_data_not_the_location(tmp_path):
    """The recipe's ``data`` digest changes when a training file is edited or added, and not
    when the same files live elsewhere (a moved clone keeps its built model)."""
    from parlai_docgraph.zoo.recipe import data_fingerprint

    a, b = tmp_path / "a", tmp_path / "elsewhere" / "b"
    for folder in (a, b):
        (folder / "docs").mkdir(parents=True)
        (folder / "questions.jsonl").write_text('{"q": 1}\n')
        (folder / "docs" / "x.md").write_text("# X\n\nOne sentence.\n")
    assert data_fingerprint(a) == data_fingerprint(b)
    (b / "docs" / "x.md").write_text("# X\n\nOne sentence changed.\n")
    assert data_fingerprint(a) != data_fingerprint(b)
    (b / "docs" / "x.md").write_text("# X\n\nOne sentence.\n")
    (b / "docs" / "y.md").write_text("")
    assert data_fingerprint(a) != data_fingerprint(b)


def test_zero_shot_reply_rows_take_the_zoo_responders_prompt():
    """``reply_eval``'s default ``--responder-options`` (its zero-shot rows) are the prompt
    options of the zoo responder's recipe, so the rows differ only in the training."""
    import shlex

    from parlai_docgraph.scripts.reply_eval import ReplyEval
    from parlai_docgraph.zoo.sample import RECIPE

    default = shlex.split(ReplyEval.setup_args().parse_args([])["responder_options"])
    recipe = RECIPE["responder"]
    pairs = dict(zip(default[::2], default[1::2]))
    assert pairs and {flag: recipe[recipe.index(flag) + 1] for flag in pairs} == pairs


def test_a_second_process_waits_for_a_build_instead_of_removing_it(tmp_path):
    """While one process builds a zoo model (holding ``folder.lock``), another asking for the
    same model waits, then finds it built; it used to take the unfinished folder for a stale
    one and remove it under the first build."""
    import fcntl
    import threading

    from parlai_docgraph.zoo.recipe import build_pipeline, mark_built, recipe_version

    recipe = {"name": "locked", "selector": [], "responder": []}
    folder = tmp_path / "models" / "docgraph" / "locked"
    folder.mkdir(parents=True)
    (folder / "half_trained").write_text("the first build's work")
    got = []
    with open(f"{folder}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first build is running
        waiting = threading.Thread(target=lambda: got.append(
            build_pipeline(str(folder), recipe, str(tmp_path))))
        waiting.start()
        waiting.join(timeout=2)
        assert waiting.is_alive() and (folder / "half_trained").is_file()
        mark_built(str(folder), recipe_version(recipe))  # the first build finishes
    waiting.join(timeout=30)
    assert got == [str(folder / "model")] and (folder / "half_trained").is_file()

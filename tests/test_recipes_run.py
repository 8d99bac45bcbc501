"""
Every paper recipe runs as ``recipes.yaml`` writes it, through ParlAI's stock
``train_model`` / ``eval_model`` scripts (in-process), with three kinds of substitution
only, since neither the datasets nor the hub weights exist here:

* the hub model it names becomes the tiny random model of the same family
  (``tests/families.py``: ``roberta-base`` -> RoBERTa, ``bert-base-uncased`` -> BERT,
  ``gpt2`` -> GPT-2, ``t5-small`` -> T5);
* the dataset becomes the bundled sample of the same format (WoW / Holl-E ->
  ``docgraph:sample``, OpenDialKG / KOMODIS -> ``docgraph:sample_kg``), without the options
  only the real dataset's teacher has (Holl-E's ``--holle-title``);
* a training stage stops after 2 updates and validates on 4 examples; an evaluation stage
  reads 4 examples.

Every other option (variants, paper hyper-parameters, decoding, stages, init models) is the
recipe's own, and every evaluation stage must report the metric keys of the paper figures the recipe
lists (the multi-reference ones need Holl-E's multi-reference file and are not checked).
A run's model files are shared by the recipes that require it, as ``recipes run`` does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List

import pytest

import parlai_docgraph.recipes as rb

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BOOK = rb.load()
RUNS = sorted({BOOK.run_of(n).name for n in BOOK.recipes})
FAMILY = {"roberta-base": "roberta", "bert-base-uncased": "bert", "gpt2": "gpt2", "t5-small": "t5"}
MODEL_OPTIONS = ("--encoder-model", "--responder-model", "--gsr-model")
TASK = {"docgraph:wow": "docgraph:sample", "docgraph:wow:random_split": "docgraph:sample",
        "docgraph:wow:topic_split": "docgraph:sample:topic_split",
        "docgraph:holle": "docgraph:sample", "docgraph:holle:multi": "docgraph:sample",
        "docgraph:opendialkg": "docgraph:sample_kg", "docgraph:komodis": "docgraph:sample_kg"}
#: options of the real datasets' teachers that their bundled stand-ins lack
DATASET_ONLY = ("--holle-title",)
TRAIN_LIMITS = ("--max-train-steps", "2", "--validation-max-exs", "4", "--short-final-eval", "true")
EVAL_LIMITS = ("-ne", "4")


@pytest.fixture(scope="module")
def dirs(tmp_path_factory) -> Dict[str, Path]:
    return {"data": tmp_path_factory.mktemp("data"), "runs": tmp_path_factory.mktemp("runs")}


def substituted(argv: List[str], families: Dict[str, Path]) -> List[str]:
    """``argv`` with the hub model and the dataset replaced (see the module docstring)."""
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        if arg in MODEL_OPTIONS:
            out[i + 1] = str(families[FAMILY[out[i + 1]]])
        elif arg in ("-t", "--task"):
            out[i + 1] = TASK[out[i + 1]]
    for flag in DATASET_ONLY:
        while flag in out:
            i = out.index(flag)
            del out[i:i + 2]
    return out


def _value(report, key) -> float:
    v = report[key]
    return float(v.value() if hasattr(v, "value") else v)


@pytest.mark.parametrize("name", RUNS)
def test_recipe_runs_as_written_with_tiny_models_of_its_family(name, family_dirs, dirs):
    from parlai.scripts.eval_model import EvalModel
    from parlai.scripts.train_model import TrainModel

    run = BOOK.run_of(name)
    table = BOOK.tables[run.table]
    for rec, stage, argv in BOOK.plan(name, str(dirs["data"]), str(dirs["runs"])):
        script, args = argv[0], substituted(argv[1:], family_dirs)
        if script == "train_model":
            model_file = rb.option_value(args, "-mf", "--model-file")
            if rec != name and model_file and os.path.isfile(model_file):
                continue  # a required run another recipe already trained
            valid, _ = TrainModel.main(*args, *TRAIN_LIMITS)
            assert _value(valid, "exs") > 0, (rec, stage)
            continue
        assert script == "eval_model", argv
        report = EvalModel.main(*args, *EVAL_LIMITS)
        assert _value(report, "exs") > 0, (rec, stage)
        keys = {c.key for c in table.columns if c.stage == stage and c.label in run.reported
                and c.key and not c.key.endswith("_multi")}
        missing = sorted(k for k in keys if k not in report)
        assert not missing, (rec, stage, missing, sorted(report))

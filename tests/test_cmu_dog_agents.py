"""
ParlAI's own ``-t cmu_dog`` teacher and ``-t docgraph:cmu_dog`` with the three docgraph
agents through the stock CLI (issue 37, item 1): ``train_model``, ``eval_model``,
``display_model``, ``self_chat`` and ``interactive``, on the release written for the tests
(``tests/cmu_dog_fixture.py``) with tiny models (a random 1-layer encoder, the tiny GPT-2).
What is checked is that each command runs on the real message fields and that the figures
and fields it reports are there and consistent, not the tiny models' quality.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest

import cmu_dog_fixture as fx
from conftest import BIN, offline_env, run_cli

TINY_SELECTOR = ["--selector-hidden", "16", "--type-dim", "8", "--pair-truncate", "48"]
SHORT = ["--max-train-steps", "2", "-bs", "2", "-vstep", "2", "-vme", "4",
         "--short-final-eval", "true"]
def _ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def _report(text: str) -> Dict[str, float]:
    """The last JSON report a ParlAI script printed."""
    for line in reversed(text.splitlines()):
        if line.startswith("{") and line.endswith("}"):
            return json.loads(line)
    raise AssertionError(f"no report in {text[-2000:]}")


@pytest.fixture(scope="module")
def setup(tmp_path_factory, tiny_encoder) -> Dict[str, Path]:
    root = tmp_path_factory.mktemp("cmu_dog_agents")
    fx.install_fixture(root / "data", root)
    return {"root": root, "data": root / "data", "encoder": Path(tiny_encoder)}


def _common(setup) -> List[str]:
    return ["--datapath", str(setup["data"])]


@pytest.fixture(scope="module")
def parts(setup) -> Dict[str, Path]:
    """The selector and the responder, each trained alone on ParlAI's -t cmu_dog."""
    sel, resp = setup["root"] / "sel" / "model", setup["root"] / "resp" / "model"
    _ok(run_cli(["parlai", "train_model", "-m", "docgraph/graph_selector", "-t", "cmu_dog", "-mf",
                 str(sel), "--encoder-model", str(setup["encoder"]), *TINY_SELECTOR, *SHORT,
                 *_common(setup)], cwd=setup["root"]))
    _ok(run_cli(["parlai", "train_model", "-m", "docgraph/gpt2_responder", "--responder-model",
                 "tiny", "-t", "cmu_dog", "-mf", str(resp), "--skip-generation", "true", *SHORT,
                 *_common(setup)], cwd=setup["root"]))
    return {"sel": sel, "resp": resp}


def test_selector_trains_and_evaluates_on_parlais_teacher(setup, parts):
    report = _report(_ok(run_cli(["parlai", "eval_model", "-mf", str(parts["sel"]), "-t",
                                  "cmu_dog", "-dt", "test", *_common(setup)], cwd=setup["root"])))
    # every test turn (7 of harbour_a, 3 of chalk_b) ranked against its pseudo label, and
    # ParlAI's teacher metric of the chosen line
    assert report["exs"] == 10 and 0 <= report["know_acc"] <= 1 and "knowledge_f1" in report


def test_responder_trains_and_evaluates_on_parlais_teacher(setup, parts):
    report = _report(_ok(run_cli(["parlai", "eval_model", "-mf", str(parts["resp"]), "-t",
                                  "cmu_dog", "-dt", "test", "--inference", "greedy",
                                  "--label-truncate", "8", "--skip-generation", "false",
                                  *_common(setup)], cwd=setup["root"])))
    for key in ("f1", "knowledge_f1", "rare_word_f1", "ppl", "bleu-4"):
        assert key in report, (key, sorted(report))


@pytest.fixture(scope="module")
def pipeline(setup) -> Path:
    mf = setup["root"] / "pipe" / "model"
    _ok(run_cli(["parlai", "train_model", "-m", "docgraph", "-t", "cmu_dog", "-mf", str(mf),
                 "--encoder-model", str(setup["encoder"]), "--responder-model", "tiny",
                 "--skip-generation", "true", *TINY_SELECTOR, *SHORT, *_common(setup)],
                cwd=setup["root"]))
    return mf


@pytest.mark.parametrize("task", ["cmu_dog", "docgraph:cmu_dog"])
def test_pipeline_evaluates_and_displays_on_both_teachers(setup, pipeline, task):
    report = _report(_ok(run_cli(["parlai", "eval_model", "-mf", str(pipeline), "-t", task, "-dt",
                                  "test", "--inference", "greedy", "--label-truncate", "8", "--skip-generation", "false",
                                  *_common(setup)], cwd=setup["root"])))
    for key in ("f1", "knowledge_f1", "rare_word_f1", "ppl", "know_acc"):
        assert key in report, (task, key, sorted(report))
    shown = _ok(run_cli(["parlai", "display_model", "-mf", str(pipeline), "-t", task, "-dt",
                         "test", "-n", "3", "--label-truncate", "8", *_common(setup)],
                        cwd=setup["root"]))
    assert "[selected_sentence]" in shown


@pytest.mark.parametrize("task", ["cmu_dog", "docgraph:cmu_dog"])
def test_self_chat_and_interactive_talk_about_a_movie(setup, pipeline, task):
    out = setup["root"] / f"chats_{task.replace(':', '_')}"
    _ok(run_cli(["parlai", "self_chat", "-mf", str(pipeline), "-t", task, "--num-self-chats", "1",
                 "--selfchat-max-turns", "2", "--label-truncate", "8", "--outfile", str(out),
                 *_common(setup)], cwd=setup["root"]))
    first = json.loads(Path(f"{out}.jsonl").read_text().splitlines()[0])
    assert first["context"][0]["text"] == "The Glass Harbour"  # the first movie, then turns
    turns = [t for pair in first["dialog"] for t in pair]
    assert len(turns) == 2 and all("selected_sentence" in t for t in turns)
    chat = subprocess.run(
        [str(BIN / "parlai"), "interactive", "-mf", str(pipeline), "-t", task, "--label-truncate",
         "8", *_common(setup)], input="Who directed it?\n[EXIT]\n", capture_output=True,
        text=True, cwd=setup["root"], timeout=300, env=offline_env())
    text = _ok(chat)
    assert "[topic]: The Glass Harbour" in text
    assert "[selected_sentence]" in text, text[-2000:]


@pytest.mark.parametrize("part", ["sel", "resp"])
def test_each_part_alone_chats_about_a_movie(setup, parts, part):
    """The selector and the responder on their own in ``self_chat -t cmu_dog``."""
    mf = parts[part]
    out = setup["root"] / f"alone_{part}"
    _ok(run_cli(["parlai", "self_chat", "-mf", str(mf), "-t", "cmu_dog", "--num-self-chats", "1",
                 "--selfchat-max-turns", "2", "--outfile", str(out), *_common(setup)],
                cwd=setup["root"]))
    first = json.loads(Path(f"{out}.jsonl").read_text().splitlines()[0])
    assert first["context"][0]["text"] == "The Glass Harbour"
    turns = [t for pair in first["dialog"] for t in pair]
    assert len(turns) == 2 and all(t.get("text") for t in turns)

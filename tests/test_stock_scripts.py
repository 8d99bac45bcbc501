"""
Every stock ParlAI script a user reaches for, run through the CLI (``parlai ...`` in a
subprocess, :func:`conftest.run_cli`) against ``zoo:docgraph/sample/model``: verify_data,
data_stats, display_model, eval_model with ``--world-logs``, convert_to_parlai,
multiprocessing_eval with two processes, self_chat (the pipeline and each part alone) and
interactive_web (start, one request, stop).

``zoo:docgraph/sample/model`` is the quickly trained stand-in of ``tests/zoo_standin.py``
(the real recipe's code path and layout; a random 1-layer encoder and the tiny GPT-2, two
training steps each), which the zoo resolves to under the session's datapath, passed with
``--datapath`` as a user would. The checks are about what each command does (it runs,
its output is complete and consistent), not about the stand-in's accuracy.
"""

from __future__ import annotations

import ast
import json
import re
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Dict, List, Set

import pytest

from conftest import BIN, offline_env, run_cli, teacher_acts

ZOO = "zoo:docgraph/sample/model"
NOTES = ("# Lighthouse keepers\n\n"
         "Keepers trimmed the wicks and polished the lenses every evening. "
         "Stations built on rocks at sea had no room for families.\n\n"
         "## Automation\n\nThe last keepers left in 1998.\n")


def _ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def _report(path: Path) -> Dict[str, float]:
    return json.loads(path.read_text())["report"]


def _notes_sentences() -> Set[str]:
    return {"Keepers trimmed the wicks and polished the lenses every evening.",
            "Stations built on rocks at sea had no room for families.",
            "The last keepers left in 1998."}


def _conversations(path: Path) -> List[List[dict]]:
    """The model turns of each self-chat episode in a ``--save-format conversations`` file."""
    episodes = []
    for line in path.read_text().splitlines():
        turns = [t for pair in json.loads(line)["dialog"] for t in pair]
        episodes.append([t for t in turns if t.get("id") != "context"])
    return episodes


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(proc: subprocess.Popen, port: int, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited ({proc.returncode}):\n"
                                 + proc.stdout.read()[-3000:])
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"nothing listens on port {port} after {timeout} s")


def test_verify_data_and_data_stats(zoo_datapath, tmp_path):
    out = _ok(run_cli(["parlai", "verify_data", "-t", "docgraph:sample",
                       "--datapath", str(zoo_datapath)], tmp_path))
    [line] = [ln for ln in out.splitlines() if ln.startswith("{'missing_text'")]
    counts = ast.literal_eval(line)
    assert counts.pop("exs") > 0
    assert set(counts.values()) == {0}, counts  # no problem of any kind

    out = _ok(run_cli(["parlai", "data_stats", "-t", "docgraph:sample", "-dt", "valid",
                       "--datapath", str(zoo_datapath)], tmp_path))
    stats = json.loads([ln for ln in out.splitlines() if ln.startswith('{"both/')][-1])
    valid = teacher_acts("docgraph:sample", zoo_datapath, "valid")
    assert stats["input/utterances"] == len(valid) == stats["labels/utterances"]


def test_convert_to_parlai_and_display_model(zoo_datapath, tmp_path):
    outfile = tmp_path / "sample.txt"
    _ok(run_cli(["parlai", "convert_to_parlai", "-t", "docgraph:sample", "-dt", "valid",
                 "--outfile", str(outfile), "--datapath", str(zoo_datapath)], tmp_path))
    lines = [ln for ln in outfile.read_text().splitlines() if ln.strip()]
    valid = teacher_acts("docgraph:sample", zoo_datapath, "valid")
    assert len(lines) == len(valid)
    assert all(ln.startswith("text:") and "\tlabels:" in ln for ln in lines)
    assert sum("episode_done:True" in ln for ln in lines) == sum(
        bool(m.get("episode_done")) for m in valid)

    out = _ok(run_cli(["parlai", "display_model", "-mf", ZOO, "-t", "docgraph:sample",
                       "-dt", "valid", "-n", "2", "--datapath", str(zoo_datapath)], tmp_path))
    assert len(re.findall(r"\[Docgraph\]: \S", out)) == 2, out[-2000:]
    assert "[selected_sentence]:" in out


def test_eval_model_world_logs_and_multiprocessing_eval(zoo_datapath, tmp_path):
    """eval_model's world log holds every evaluated example with the pipeline's reply
    fields; multiprocessing_eval over two processes evaluates the same examples once and
    agrees with it."""
    logs, single, multi = tmp_path / "world.jsonl", tmp_path / "single.json", tmp_path / "mp.json"
    common = ["-mf", ZOO, "-t", "docgraph:sample", "-dt", "valid", "--datapath",
              str(zoo_datapath)]
    _ok(run_cli(["parlai", "eval_model", *common, "-bs", "1", "--world-logs", str(logs),
                 "--report-filename", str(single)], tmp_path))
    report = _report(single)
    pairs = [turn for line in logs.read_text().splitlines()
             for turn in json.loads(line)["dialog"]]
    assert len(pairs) == report["exs"] > 0
    for teacher, model in pairs:  # extract replies: a sentence of the turn's pool
        assert model["id"] == "Docgraph"
        sentences = {s for _, ss in teacher["knowledge_passages"] for s in ss}
        assert model["selected_sentence"] in sentences | {"no_passages_used"}
        if model["selected_sentence"] != "no_passages_used":
            assert model["text"] == model["selected_sentence"]
    assert 0 <= report["know_acc"] <= 1

    _ok(run_cli(["parlai", "multiprocessing_eval", *common, "-bs", "1",
                 "--distributed-world-size", "2", "--report-filename", str(multi)],
                tmp_path))
    both = _report(multi)
    assert both["exs"] == report["exs"]
    assert both["know_acc"] == pytest.approx(report["know_acc"])


def _topic_sentences(datapath: Path, topic: str) -> Set[str]:
    """Every knowledge sentence of ``topic`` in docgraph:sample valid."""
    return {s for msg in teacher_acts("docgraph:sample", datapath, "valid")
            if msg.get("chosen_topic") == topic
            for _, sentences in msg["knowledge_passages"] for s in sentences}


@pytest.mark.parametrize("model", [
    ["-mf", ZOO],
    ["-m", "docgraph/graph_selector", "-mf", f"{ZOO}.selector"],
    ["-m", "docgraph/gpt2_responder", "-mf", f"{ZOO}.responder"],
], ids=["pipeline", "selector", "responder"])
def test_self_chat_on_task_topics(zoo_datapath, tmp_path, model):
    """``self_chat -t docgraph:sample``: the task's self-chat world gives both agents the
    topic and its knowledge pool (ParlAI's fallback world made the model speak first
    without having observed anything: "You're self_observing without having observed
    something")."""
    outfile = tmp_path / "chats.jsonl"
    _ok(run_cli(["parlai", "self_chat", *model, "-t", "docgraph:sample",
                 "--num-self-chats", "2", "--selfchat-max-turns", "2",
                 "--outfile", str(outfile), "--datapath", str(zoo_datapath)], tmp_path))
    episodes = _conversations(outfile)
    contexts = [json.loads(line)["context"][0]["text"]
                for line in outfile.read_text().splitlines()]
    assert len(episodes) == 2 and len(set(contexts)) == 2  # one topic per episode, in order
    for topic, turns in zip(contexts, episodes):
        assert [t["id"].rsplit("_", 1)[1] for t in turns] == ["1", "2"]
        assert all(t.get("text", "").strip() for t in turns)
        if model[-1] == ZOO:  # extract replies: a sentence of this topic's pool
            sentences = _topic_sentences(zoo_datapath, topic)
            assert all(t["selected_sentence"] in sentences for t in turns)
            assert all(t["text"] == t["selected_sentence"] for t in turns)
        elif model[1] == "docgraph/graph_selector":  # a knowledge line of the pool
            assert all(t["text"].startswith(topic + " ") for t in turns)


def test_self_chat_over_documents(zoo_datapath, tmp_path):
    """ParlAI's own self-chat world (no task): both agents (the model and its clone) talk
    about the ``--documents``, and the partner's empty opening context is not taken for an
    empty user turn."""
    (tmp_path / "notes.md").write_text(NOTES)
    outfile = tmp_path / "chats.jsonl"
    out = _ok(run_cli(["parlai", "self_chat", "-mf", ZOO, "--documents", "notes.md",
                       "--selfchat-max-turns", "3", "--outfile", str(outfile),
                       "--datapath", str(zoo_datapath)], tmp_path))
    [turns] = _conversations(outfile)
    assert [t["id"] for t in turns] == ["Docgraph_1", "Docgraph_2"] * 2
    assert all(t["text"] in _notes_sentences() for t in turns)
    assert "empty message" not in out and "no documents" not in out


def test_interactive_web_answers_one_request(zoo_datapath, tmp_path):
    (tmp_path / "notes.md").write_text(NOTES)
    port = _free_port()
    proc = subprocess.Popen(
        [str(BIN / "parlai"), "interactive_web", "-mf", ZOO, "--documents", "notes.md",
         "--port", str(port), "--datapath", str(zoo_datapath)],
        cwd=tmp_path, env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    try:
        _wait_for_port(proc, port)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/interact", method="POST",
            data=b"Why did the keepers live without their families?")
        with urllib.request.urlopen(request, timeout=120) as response:
            reply = json.loads(response.read())
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        proc.stdout.close()
    assert reply["text"] in _notes_sentences()
    assert reply["selected_sentence"] == reply["text"]

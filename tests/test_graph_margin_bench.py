"""
The graph-margin study's bookkeeping (``parlai_docgraph/bench/graph_margin.py``): runs are
grouped by set, commit, options and epochs; the margin is of the means; the README's row is
the default set's, at the commit recorded last; a datapath without the set says how to
write it; a tree whose environment imports another checkout is refused.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from parlai_docgraph.bench.graph_margin import (
    DEFAULT_SET, check_tree, command, current, load, save, set_name, set_of, summarize, table)

SET = {"version": 1, "train_dialogues": 120, "eval_dialogues": 60, "members": 4, "facts": 3,
       "turns": 2, "per_passage": 2, "seed": 0}
SMALL = dict(SET, train_dialogues=40, eval_dialogues=10)


def _run(commit, variant, seed, valid, test, when, data_set=SET, options=()):
    return {"set": data_set, "commit": commit, "variant": variant, "epochs": 1, "seed": seed,
            "init_seed": False, "options": list(options), "valid_know_acc": valid,
            "test_know_acc": test, "time_utc": when, "command": "parlai train_model ..."}


RUNS = [
    _run("aaa", "full", 0, 0.8, 0.9, "2026-01-01T00:00:00Z"),
    _run("aaa", "full", 1, 0.6, 0.7, "2026-01-01T00:01:00Z"),
    _run("aaa", "none", 0, 0.2, 0.2, "2026-01-01T00:02:00Z"),
    _run("bbb", "full", 0, 0.3, 0.3, "2026-01-02T00:00:00Z"),
    _run("bbb", "none", 0, 0.2, 0.1, "2026-01-02T00:01:00Z"),
    _run("aaa", "full", 0, 0.9, 0.9, "2026-01-03T00:00:00Z", data_set=SMALL),
    _run("aaa", "none", 0, 0.1, 0.1, "2026-01-03T00:00:00Z", data_set=SMALL),
    _run("aaa", "full", 0, 0.5, 0.5, "2026-01-04T00:00:00Z", options=["--x", "1"]),
]


def test_rows_by_set_commit_and_options_with_the_margin_of_the_means():
    rows = summarize(RUNS)
    assert [(set_name(r["set"]), r["commit"]) for r in rows] == [
        ("120/60 m4 f3", "aaa"), ("120/60 m4 f3", "aaa"), ("120/60 m4 f3", "bbb"),
        ("40/10 m4 f3", "aaa")]
    assert rows[1]["options"] == ["--x", "1"] and "margin" not in rows[1]
    full = rows[0]["variants"]["full"]["test"]
    assert (full["n"], full["mean"], full["min"], full["max"]) == (2, 0.8, 0.7, 0.9)
    assert full["sd"] == pytest.approx(0.1414, abs=1e-4)
    assert rows[0]["margin"] == {"valid": 0.5, "test": 0.6}
    assert rows[2]["margin"] == {"valid": 0.1, "test": 0.2}


def test_the_readme_row_is_the_default_set_at_the_commit_recorded_last():
    rows = summarize(RUNS)
    # runs on the small set and with options came last; the README quotes the stock row
    assert set_name(SET) == DEFAULT_SET
    assert current(RUNS, rows)["commit"] == "bbb"
    assert current(RUNS[:3], summarize(RUNS[:3]))["commit"] == "aaa"
    assert current(RUNS[:2], summarize(RUNS[:2])) is None  # no none run: no margin


def test_file_round_trip_and_table(tmp_path):
    path = tmp_path / "graph_margin.json"
    data = load(path)
    data["graph_margin"]["runs"] = RUNS
    save(path, data, {"command": "test"})
    again = load(path)
    assert again["graph_margin"]["current"]["commit"] == "bbb"
    text = table(again)
    assert "| 120/60 m4 f3 | aaa | defaults | 1 |" in text and "+0.600 (+0.500)" in text


def test_a_datapath_without_the_set_says_how_to_write_it(tmp_path):
    with pytest.raises(ValueError, match="tools/make_coref_groups.py --out"):
        set_of(str(tmp_path))


def test_the_command_is_the_stock_one():
    cmd = command(Path("/t"), "/d", "full", 3, 2, ["--node-relevance", "false"], "/m", False)
    assert cmd[:2] == ["/t/.venv/bin/parlai", "train_model"]
    line = " ".join(cmd)
    for part in ("-m docgraph/graph_selector -t docgraph:wow:topic_split --encoder-model "
                 "minilm-l6 --label-type chosen_sent -bs 8 --graph-variant full --num-epochs 3 "
                 "--seed 2 -veps 1", "--datapath /d --node-relevance false"):
        assert part in line


def _tree(root: Path, interpreter: str) -> Path:
    """A checkout whose ``.venv/bin/parlai`` names ``interpreter`` on its first line, and
    whose ``.venv/bin/python`` imports the package (a stand-in) from the checkout."""
    for package in ("parlai_docgraph", "parlai_docgraph/tasks/docgraph"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    (root / "parlai_docgraph" / "tasks" / "__init__.py").write_text("")
    venv = root / ".venv" / "bin"
    venv.mkdir(parents=True)
    python = venv / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{root}" exec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    (venv / "parlai").write_text(f"#!{interpreter or python}\nprint('parlai')\n")
    return root


def test_a_tree_whose_environment_imports_it_is_accepted(tmp_path):
    check_tree(_tree(tmp_path / "own", ""))


def test_an_environment_that_imports_another_tree_is_refused(tmp_path):
    # a venv copied from another checkout: its scripts run that checkout's interpreter
    tree = _tree(tmp_path / "copied", sys.executable)
    with pytest.raises(ValueError, match="imports parlai_docgraph from .*, not from .*copied"):
        check_tree(tree)
    with pytest.raises(ValueError, match="missing: run `make dev`"):
        check_tree(tmp_path / "empty")

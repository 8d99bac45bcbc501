"""
The generated coreference set of issue 42 (``tools/make_coref_groups.py``, read by the stock
``-t docgraph:wow:topic_split``): its premises (the gold is a pronoun sentence that only the
nearest preceding name ties to the member asked about, every member has a twin of it, unseen
groups and names in the topic splits, same options same bytes) and the guard of the graph's
margin over the cross-encoder at the default options.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from conftest import teacher_acts

ROOT = Path(__file__).resolve().parents[1]
TASK = "docgraph:wow:topic_split"


@functools.lru_cache(maxsize=None)
def _tool():
    """``tools/make_coref_groups.py`` (tools/ is not installed; its dataclasses need the
    module registered while it runs)."""
    spec = importlib.util.spec_from_file_location("make_coref_groups",
                                                  ROOT / "tools" / "make_coref_groups.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _write(datapath: Path, **sizes) -> Path:
    tool = _tool()
    config = tool.GroupsConfig(**{"train_dialogues": 12, "eval_dialogues": 6, **sizes})
    tool.write(config, str(datapath))
    return datapath


def _acts(datapath: Path, datatype: str, task: str = TASK) -> List:
    dt = "train:ordered" if datatype == "train" else datatype
    return teacher_acts(task, datapath, dt, "--label-type", "chosen_sent")


def _members(acts) -> set:
    """Every member a pool introduces (``Name joined the ...``)."""
    return {s.split(" joined the ")[0] for a in acts for _, ss in a["knowledge_passages"]
            for s in ss if " joined the " in s}


def _twins(sentence: str, passages) -> List[str]:
    """The sentences of the pool made from the same template as ``sentence`` (any value)."""
    pronoun = sentence.split()[0]
    for relation in _tool().RELATIONS:
        pattern = re.compile(re.escape(relation.fact.format(subj=pronoun, value="\0"))
                             .replace(re.escape("\0"), ".+"))
        if pattern.fullmatch(sentence):
            return [s for _, ss in passages for s in ss if pattern.fullmatch(s)]
    return []


def test_gold_is_the_pronoun_sentence_of_the_named_member(datapath):
    _write(datapath)
    acts = _acts(datapath, "train")
    assert len(acts) == 12 * 2
    for a in acts:
        lines = a["knowledge"].splitlines()
        assert a["labels"] == [lines[a["checked_sentence_index"]]]
        assert a["label_candidates"] == ["no_passages_used no_passages_used"] + lines
        gold = a["checked_sentence"]
        assert gold.split()[0] in ("He", "She")
        # narrative order: the nearest name before the gold in its passage is the one asked
        sents = next(ss for t, ss in a["knowledge_passages"] if t == a["title"])
        before = [s for s in sents[: sents.index(gold)] if " joined the " in s]
        asked = before[-1].split(" joined the ")[0]
        question = a["text"].splitlines()[-1]
        assert asked in question
        assert not any(m in question for m in _members([a]) - {asked})
        # one twin per member: same pronoun, same template, another value
        twins = _twins(gold, a["knowledge_passages"])
        assert len(twins) == 4 and gold in twins, twins
        assert len(set(lines)) == len(lines)
    assert [a["episode_done"] for a in acts[:4]] == [False, True, False, True]


def test_same_options_same_files_and_check(tmp_path):
    tool = _tool()
    config = tool.GroupsConfig(train_dialogues=5, eval_dialogues=3)
    first = tool.files(config)
    assert tool.files(config) == first
    assert tool.files(tool.GroupsConfig(train_dialogues=5, eval_dialogues=3, seed=1)) != first
    tool.write(config, str(tmp_path))
    assert tool.main(["--out", str(tmp_path), "--check", "--train-dialogues", "5",
                      "--eval-dialogues", "3"]) == 0
    path = tmp_path / "wizard_of_wikipedia" / "test_topic_split.json"
    path.write_text(path.read_text().replace("joined", "left", 1))
    assert tool.stale(config, str(tmp_path)) == [str(path)]


def test_unseen_groups_and_members_in_the_topic_splits(datapath):
    _write(datapath, train_dialogues=60, eval_dialogues=30)
    train = _acts(datapath, "train")
    topics = {split: {a["chosen_topic"] for a in acts} for split, acts in
              (("train", train), ("valid", _acts(datapath, "valid")),
               ("test", _acts(datapath, "test")))}
    people = {"train": _members(train), "valid": _members(_acts(datapath, "valid")),
              "test": _members(_acts(datapath, "test"))}
    for a, b in (("train", "valid"), ("train", "test"), ("valid", "test")):
        assert not topics[a] & topics[b]
        assert not {p.split()[0] for p in people[a]} & {p.split()[0] for p in people[b]}
        assert not {p.split()[1] for p in people[a]} & {p.split()[1] for p in people[b]}
    listed = json.loads((datapath / "wizard_of_wikipedia" / "topic_splits.json").read_text())
    assert {k: set(v) for k, v in listed.items()} == topics
    # the random (seen) splits draw from train's names
    seen = _members(_acts(datapath, "test", task="docgraph:wow:random_split"))
    assert seen & people["train"]


@pytest.mark.parametrize("sizes, flag", [
    ({"members": 1}, "--members"), ({"members": 9}, "--members"),
    ({"facts": 0}, "--facts"), ({"turns": 5}, "--turns"),
    ({"train_dialogues": 0}, "--train-dialogues"),
])
def test_bad_sizes_fail_clearly(sizes, flag):
    tool = _tool()
    with pytest.raises(ValueError, match=re.escape(flag)):
        tool.GroupsConfig(**sizes).check()


def test_rule_coreference_ties_pronouns_to_the_nearest_name(datapath):
    """The premise: in the real graph, the pronoun sentences after a member's introduction
    share a concept with that member's name and with no other member's (measured on the 60
    test pools of the default options, seed 0: 714 of 720 sentences)."""
    from parlai_docgraph.graphs.semantic import build_document_graph

    _write(datapath, eval_dialogues=10)
    clean = total = 0
    for a in [a for a in _acts(datapath, "test") if a["episode_done"]]:
        passages = [(t, list(s)) for t, s in a["knowledge_passages"]]
        graph = build_document_graph(passages)
        texts = graph.sentence_texts()
        names: Dict[int, set] = {}
        for node in graph.nodes_of_type("concept"):
            said = {texts[s][x:y] for s, x, y in node.mentions}
            for s, _, _ in node.mentions:
                names.setdefault(s, set()).update(said & _members([a]))
        index = 0
        for _, sents in passages:
            member = None
            for s in sents:
                if " joined the " in s:
                    member = s.split(" joined the ")[0]
                elif member is not None:
                    total += 1
                    clean += names.get(index, set()) == {member}
                index += 1
    assert total == 10 * 4 * 3 and clean >= 0.9 * total, (clean, total)




#: the guard's set: 40 training dialogues (80 turns: one epoch is 10 updates of the stock
#: ``-bs 8``) and 10 unseen-group dialogues in valid and in test (20 turns each)
GUARD_SET = {"train_dialogues": 40, "eval_dialogues": 10}
#: the seeds whose margins the guard averages: at 10 updates a seed now and then has not yet
#: picked up the graph (measured: seed 2 of 0-2), so one seed alone would fail on such a draw
GUARD_SEEDS = (0, 1)
#: the mean over GUARD_SEEDS of full - none (know_acc, valid and test pooled) below which
#: the guard fails. Measured on this set (docs/results/graph_margin.json, set "40/10 m4 f3"):
#: defaults 0.550 and 0.525 (seed 2, not picked up: 0.075); --node-relevance false, which
#: keeps the graph from learning in 10 updates, 0.025 and -0.025. 0.25 lies halfway, and a
#: mean with one seed not picked up (about 0.31) still passes.
GUARD_MARGIN = 0.25


@pytest.mark.slow
def test_graph_beats_the_cross_encoder_on_unseen_groups(datapath, tmp_path):
    """The stock command (``-m docgraph/graph_selector -t docgraph:wow:topic_split
    --encoder-model minilm-l6 --label-type chosen_sent -bs 8``, one epoch, every other option
    at its default) with ``--graph-variant full`` and ``none``: the cross-encoder cannot tell
    which member's pronoun sentence answers (at most one in four of the asked relation's
    sentences), the graph ties each to the name before it."""
    from parlai_docgraph.bench.graph_margin import margin_once

    _write(datapath, **GUARD_SET)
    runs = [margin_once(ROOT, str(datapath), seed=seed, logs=tmp_path / "logs")
            for seed in GUARD_SEEDS]
    acc = [{v: (r[v]["valid_know_acc"], r[v]["test_know_acc"]) for v in ("full", "none")}
           for r in runs]
    mean = sum(r["margin"] for r in runs) / len(runs)
    assert mean >= GUARD_MARGIN, (mean, acc)

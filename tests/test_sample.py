"""
The bundled ``docgraph:sample`` (WoW format): size, splits, coreference, edge cases,
ParlAI parity on every split file and a clean ``verify_data``.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import teacher_acts
from parlai_docgraph.tasks.docgraph.build import SAMPLE_DATAPATH
from parlai_docgraph.graphs.knowledge_lines import NO_PASSAGE
from parlai_docgraph.tasks.docgraph.readers.wow import read_wow

WOW = Path(SAMPLE_DATAPATH) / "wizard_of_wikipedia"
SPLITS = {
    ("train", "random_split"): "train.json",
    ("valid", "random_split"): "valid_random_split.json",
    ("test", "random_split"): "test_random_split.json",
    ("valid", "topic_split"): "valid_topic_split.json",
    ("test", "topic_split"): "test_topic_split.json",
}
VERIFY_COUNTERS = (
    "missing_text",
    "missing_labels",
    "missing_label_candidates",
    "empty_string_label_candidates",
    "label_candidates_with_missing_label",
    "did_not_return_message",
)


def _raw(name):
    return json.loads((WOW / name).read_text())


def test_size_and_topics():
    dialogues = {name: _raw(name) for name in SPLITS.values()}
    assert sum(len(d) for d in dialogues.values()) >= 30
    topics = {d["chosen_topic"] for ds in dialogues.values() for d in ds}
    assert len(topics) >= 8
    train_topics = {d["chosen_topic"] for d in dialogues["train.json"]}
    for name in ("valid_topic_split.json", "test_topic_split.json"):
        assert dialogues[name] and not {d["chosen_topic"] for d in dialogues[name]} & train_topics
    for name in ("valid_random_split.json", "test_random_split.json"):
        assert {d["chosen_topic"] for d in dialogues[name]} <= train_topics
    assert any("Wizard" in d["dialog"][0]["speaker"] for d in dialogues["train.json"])


def test_passages_have_natural_coreference():
    pronoun = re.compile(r"\b(he|she|it|its|they|their|his|her)\b", re.I)
    for dialogue in _raw("train.json"):
        passage = dialogue["chosen_topic_passage"]
        assert len(passage) >= 5
        later = " ".join(passage[1:])
        assert pronoun.search(later), dialogue["chosen_topic"]
        # the topic's name (or its last word) comes back after the first sentence
        name = dialogue["chosen_topic"].split(" (")[0].split()[-1]
        assert name.lower() in later.lower() or pronoun.search(later)


@pytest.mark.parametrize("key", list(SPLITS))
def test_parity_with_parlai_teacher_on_every_split(key, datapath):
    datatype, split = key
    folder = datapath / "wizard_of_wikipedia"
    shutil.copytree(WOW, folder)
    (folder / ".built").write_text("built\n1.0")
    args = ("--label-type", "chosen_sent", "--add-missing-turns", "all")
    dt = f"{datatype}:ordered" if datatype == "train" else datatype
    ours = teacher_acts(f"docgraph:sample:{split}", datapath, dt, *args)
    theirs = teacher_acts(f"wizard_of_wikipedia:WizardDialogKnowledge:{split}", datapath, dt, *args)
    assert len(ours) == len(theirs) > 0
    for a, b in zip(ours, theirs):
        for field in ("text", "knowledge", "title", "checked_sentence"):
            assert a[field] == b[field], field
        assert a.get("labels", a.get("eval_labels")) == b.get("labels", b.get("eval_labels"))
        assert list(a["label_candidates"]) == list(b["label_candidates"])


def test_edge_cases_resolve():
    train = list(read_wow(str(WOW / "train.json")))
    by_turn = {(int(t.dialogue_id), t.turn_index): t for turns in train for t in turns}
    # checked_passage == {}: the title comes from the sentence key
    t = by_turn[(0, 6)]
    assert t.title == "Eddystone Lighthouse (1698)" and t.gold is not None
    # chosen_* keys always say _0; the real index is 6
    t = by_turn[(10, 3)]
    assert t.title == "Danube" and t.gold == (0, 6)
    # checked_sentence == {} means no knowledge
    assert by_turn[(19, 9)].title == NO_PASSAGE and by_turn[(19, 9)].gold is None
    # 2-entry checked_passage with no_passages_used
    assert by_turn[(15, 1)].title == "Mount Vesuvius"
    # sources disagree: self_0_ passage with chosen_ sentence
    assert by_turn[(18, 2)].title == "Marie Curie" and by_turn[(18, 2)].gold == (0, 1)
    resolved = [t for t in by_turn.values() if t.title != NO_PASSAGE]
    assert all(t.gold is not None for t in resolved)


@pytest.mark.parametrize("datatype", ["train", "valid", "test"])
@pytest.mark.parametrize("task", ["docgraph:sample", "docgraph:sample:topic_split"])
def test_verify_data_has_no_problems(task, datatype, datapath):
    from parlai.scripts.verify_data import VerifyData

    if datatype == "train" and task.endswith("topic_split"):
        pytest.skip("train has one file")
    counts = VerifyData.main(task=task, datatype=datatype, datapath=str(datapath))
    assert counts["exs"] > 0
    assert {k: counts[k] for k in VERIFY_COUNTERS} == {k: 0 for k in VERIFY_COUNTERS}


def test_lengths_cache_is_keyed_and_outside_the_package(datapath):
    from parlai.scripts.verify_data import VerifyData

    VerifyData.main(task="docgraph:sample", datatype="train:stream:ordered", datapath=str(datapath))
    VerifyData.main(
        task="docgraph:sample", datatype="train:stream:ordered", datapath=str(datapath),
        add_missing_turns="none",
    )
    cached = sorted((datapath / "docgraph_cache" / "lengths").glob("SampleTeacher-*.lengths"))
    assert len(cached) == 2  # one per count-changing option value
    counts = sorted(int(p.read_text().split()[1]) for p in cached)
    assert counts[0] < counts[1]  # dropping Wizard-first last turns gives fewer examples
    assert not list(WOW.glob("*.lengths"))

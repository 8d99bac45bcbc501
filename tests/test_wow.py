"""
Wizard of Wikipedia reader and teacher: real format, ParlAI parity, bad input.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import real_file, teacher_acts
from parlai_docgraph.dataset_errors import (
    BadRows,
    DatasetFormatError,
    MissingDatasetFile,
)
from parlai_docgraph.graphs.knowledge_lines import NO_PASSAGE
from parlai_docgraph.tasks.docgraph.readers.wow import read_wow


def _wow_datapath(datapath: Path, source: Path, name: str = "train.json") -> Path:
    folder = datapath / "wizard_of_wikipedia"
    folder.mkdir(exist_ok=True)
    shutil.copy(source, folder / name)
    (folder / ".built").write_text("built\n1.0")  # ParlAI's marker: date line, version line
    return folder / name


def _expected_gold(turn: dict, topic: str):
    """
    Title and sentence a reader of the key grammar must produce (datasets.md 1.2).
    """
    sentences = turn.get("checked_sentence") or {}
    if not sentences or list(sentences.values())[0] == NO_PASSAGE:
        return NO_PASSAGE, NO_PASSAGE
    key, sentence = next(iter(sentences.items()))
    titles = [v for k, v in (turn.get("checked_passage") or {}).items() if v != NO_PASSAGE]
    title = titles[0] if titles else " ".join(key.split("_")[1:-1])
    return title, sentence


def test_real_sample_every_wizard_turn_has_right_gold():
    path = real_file("wizard_of_wikipedia", "original_examples.json")
    raw = json.loads(path.read_text())
    dialogues = list(read_wow(str(path)))
    assert len(dialogues) == 5
    count = 0
    for dialogue, turns in zip(raw, dialogues):
        wizard = [i for i, t in enumerate(dialogue["dialog"]) if "Wizard" in t["speaker"]]
        assert [t.turn_index for t in turns] == wizard  # no turn lost
        for turn in turns:
            count += 1
            entry = dialogue["dialog"][turn.turn_index]
            title, sentence = _expected_gold(entry, dialogue["chosen_topic"])
            assert turn.checked_sentence == sentence
            assert turn.title == title, (turn.title, entry["checked_passage"])
            if sentence != NO_PASSAGE:
                p, s = turn.gold
                assert turn.passages[p] [0] == title and turn.passages[p][1][s] == sentence
            assert turn.response == entry["text"]
    assert count == 24


def test_parity_with_parlai_wow_teacher(datapath):
    """
    Same text, labels, knowledge, title, checked sentence and candidates as ParlAI's
    ``WizardDialogKnowledgeTeacher`` on the real sample (knowledge-pool construction).
    """
    _wow_datapath(datapath, real_file("wizard_of_wikipedia", "original_examples.json"))
    args = ("--label-type", "chosen_sent", "--add-missing-turns", "all")
    ours = teacher_acts("docgraph:wow", datapath, "train:ordered", *args)
    theirs = teacher_acts("wizard_of_wikipedia", datapath, "train:ordered", *args)
    assert len(ours) == len(theirs) == 24
    for a, b in zip(ours, theirs):
        for key in ("text", "labels", "knowledge", "title", "checked_sentence", "episode_done"):
            assert a[key] == b[key], key
        assert list(a["label_candidates"]) == list(b["label_candidates"])
        lines = a["knowledge"].splitlines()
        if a["checked_sentence_index"] >= 0:
            assert lines[a["checked_sentence_index"]] == a["labels"][0]
        flat = [f"{t} {s}" for t, sents in a["knowledge_passages"] for s in sents]
        assert flat == lines


def test_missing_split_file_offline_names_file_and_url(datapath):
    with pytest.raises(MissingDatasetFile) as err:
        teacher_acts("docgraph:wow:topic_split", datapath, "valid")
    msg = str(err.value)
    assert str(datapath / "wizard_of_wikipedia" / "valid_topic_split.json") in msg
    assert "wizard_of_wikipedia.tgz" in msg


def _dialogue(topic="Lighthouse", speaker_first="0_Wizard"):
    other = "1_Apprentice" if speaker_first == "0_Wizard" else "1_Wizard"
    passage = ["A lighthouse is a tower.", "It guides ships."]
    return {
        "chosen_topic": topic,
        "chosen_topic_passage": passage,
        "persona": "i like the sea.",
        "wizard_eval": 5,
        "dialog": [
            {"speaker": speaker_first, "text": "Lighthouses guide ships.",
             "retrieved_topics": ["Beacon"], "retrieved_passages": [{"Beacon": ["A beacon is a fire."]}],
             "checked_sentence": {f"chosen_{topic}_0": "It guides ships."},
             "checked_passage": {f"chosen_topic_0_{topic}": topic}},
            {"speaker": other, "text": "Tell me more.",
             "retrieved_topics": ["Beacon"], "retrieved_passages": [{"Beacon": ["A beacon is a fire."]}]},
        ],
    }


def _write(path: Path, dialogues) -> Path:
    path.write_text(json.dumps(dialogues, indent=1))
    return path


def test_malformed_dialogue_reports_file_and_line(tmp_path):
    bad = _dialogue()
    del bad["dialog"][1]["text"]
    path = _write(tmp_path / "train.json", [_dialogue(), bad, _dialogue()])
    start = path.read_text().splitlines()
    with pytest.raises(DatasetFormatError) as err:
        list(read_wow(str(path)))
    e = err.value
    assert e.path == str(path) and "dialogue 1" in e.where and "'text'" in e.problem
    # the reported line is where the second dialogue starts
    assert start[e.line - 1].strip() == "{" and e.line > 2
    assert f"{path}:{e.line}" in str(e)


def test_skip_bad_rows_counts_and_keeps_the_rest(tmp_path):
    bad = _dialogue()
    bad["dialog"][0]["retrieved_passages"] = [{"A": "not a list"}]
    path = _write(tmp_path / "train.json", [_dialogue(), bad, _dialogue("Beacon")])
    rows = BadRows(skip=True)
    dialogues = list(read_wow(str(path), rows))
    assert len(dialogues) == 2 and len(rows.errors) == 1
    assert "retrieved_passages[0]" in rows.errors[0].problem
    assert "skipped 1 malformed row" in rows.summary()


def test_invalid_json_reports_line(tmp_path):
    path = tmp_path / "train.json"
    text = json.dumps([_dialogue(), _dialogue()], indent=1)
    lines = text.splitlines()
    lines[20] = lines[20] + " oops"
    path.write_text("\n".join(lines))
    with pytest.raises(DatasetFormatError) as err:
        list(read_wow(str(path)))
    assert err.value.line == 21 and "invalid JSON" in err.value.problem


def test_skip_bad_rows_through_the_teacher(datapath, caplog):
    bad = _dialogue()
    bad["dialog"] = "not a list"
    folder = datapath / "wizard_of_wikipedia"
    folder.mkdir()
    _write(folder / "train.json", [_dialogue(), bad])
    with pytest.raises(DatasetFormatError):
        teacher_acts("docgraph:wow", datapath)
    acts = teacher_acts("docgraph:wow", datapath, "train:ordered", "--skip-bad-rows", "true")
    assert len(acts) == 1


def test_wizard_first_last_turn_kept_unless_asked(tmp_path):
    path = _write(tmp_path / "t.json", [_dialogue()])
    assert len(next(read_wow(str(path)))) == 1
    assert list(read_wow(str(path), add_missing_turns=False)) == []  # ParlAI's default drops it


def test_unknown_task_option_is_an_error(datapath):
    with pytest.raises(ValueError, match="unknown option 'seen'"):
        teacher_acts("docgraph:wow:seen", datapath)


def _episode_histories(acts) -> list:
    """The history string each message sees: its episode's texts so far, newline-joined
    (what a ``use_reply none`` agent such as the selector accumulates)."""
    out, seen = [], []
    for act in acts:
        seen.append(act["text"])
        out.append("\n".join(seen))
        if act["episode_done"]:
            seen = []
    return out


@pytest.mark.parametrize("task", ["docgraph:wow", "docgraph:sample"])
def test_knowledge_turns_only_drops_no_passage_turns_and_keeps_history(task, datapath):
    """Li et al. 3.2 train and predict on the turns that use knowledge only: with
    ``--knowledge-turns-only`` every 'no_passages_used' turn (real WoW marks them
    ``{"no_passages_used": "no_passages_used"}``) is gone, the others are the same messages,
    each sees the same dialogue history as before, and the teacher counts kept/total."""
    from parlai.core.params import ParlaiParser
    from parlai.core.teachers import create_task_agent_from_taskname

    if task == "docgraph:wow":
        _wow_datapath(datapath, real_file("wizard_of_wikipedia", "original_examples.json"))
    args = ("--label-type", "chosen_sent")
    full = teacher_acts(task, datapath, "train:ordered", *args)
    kept = teacher_acts(task, datapath, "train:ordered", *args, "--knowledge-turns-only", "true")
    nochosen = f"{NO_PASSAGE} {NO_PASSAGE}"
    uses = [i for i, a in enumerate(full) if a["labels"] != [nochosen]]
    assert 0 < len(uses) < len(full)  # the file has turns of both kinds
    assert len(kept) == len(uses) and all(a["labels"] != [nochosen] for a in kept)
    before, after = _episode_histories(full), _episode_histories(kept)
    for j, (i, act) in enumerate(zip(uses, kept)):
        assert act["labels"] == full[i]["labels"]
        assert act["label_candidates"] == full[i]["label_candidates"]
        assert after[j] == before[i]  # dropped turns' lines stay in the history
    assert sum(a["episode_done"] for a in kept) <= sum(a["episode_done"] for a in full)

    parser = ParlaiParser(True, False)
    opt = parser.parse_args(["-t", task, "--datapath", str(datapath), "-dt", "train:ordered",
                             *args, "--knowledge-turns-only", "true"])
    teacher = create_task_agent_from_taskname(opt)[0]
    while not teacher.epoch_done():
        teacher.act()
    counts = teacher.turn_counts
    assert (counts.kept, counts.total) == (len(uses), len(full))
    assert 0 < counts.in_first_pool <= counts.kept
    assert f"kept {len(uses)} of {len(full)} turns" in counts.summary()


def test_knowledge_turns_only_response_labels_keep_the_dropped_response(datapath):
    """With response labels the agent adds each label to its history: a dropped turn's
    text and response are carried into the next kept message's text."""
    args = ("--label-type", "response")
    full = teacher_acts("docgraph:sample", datapath, "train:ordered", *args)
    kept = teacher_acts("docgraph:sample", datapath, "train:ordered", *args,
                        "--knowledge-turns-only", "true")
    expected, carry = [], []
    for act in full:
        if act["title"] == NO_PASSAGE:
            carry += [act["text"], act["labels"][0]]
        else:
            expected.append(("\n".join(carry + [act["text"]]), act["labels"]))
            carry = []
        if act["episode_done"]:
            carry = []
    assert len(kept) == len(expected) < len(full)
    assert [(a["text"], a["labels"]) for a in kept] == expected
    assert any(a["text"] != f["text"] for a, f in zip(kept, full))


def _late_knowledge_dialogue() -> dict:
    """Apprentice first; the first Wizard turn uses no knowledge, the second uses a passage
    retrieved after the first turn."""
    def said(speaker, text, title, sents, **extra):
        return {"speaker": speaker, "text": text, "retrieved_topics": [title],
                "retrieved_passages": [{title: sents}], **extra}

    nothing = {"no_passages_used": "no_passages_used"}
    return {
        "chosen_topic": "Lighthouse", "persona": "i like the sea.", "wizard_eval": 5,
        "chosen_topic_passage": ["A lighthouse is a tower.", "It guides ships."],
        "dialog": [
            said("0_Apprentice", "Do you like lighthouses?", "Beacon", ["A beacon is a fire."]),
            said("1_Wizard", "Yes I do.", "Fog", ["Fog hides the coast."],
                 checked_sentence=nothing, checked_passage=nothing),
            said("0_Apprentice", "How do they shine?", "Lamp", ["A lamp gives light."]),
            said("1_Wizard", "A lamp gives the light.", "Lens", ["A lens bends light."],
                 checked_sentence={"partner_Lamp_0": "A lamp gives light."},
                 checked_passage={"partner_0_Lamp": "Lamp"}),
        ],
    }


def test_first_turn_pool_travels_when_the_first_turn_is_dropped(datapath):
    """Li et al. 3.1 build the WoW graph from the passages of the episode's first turn: with
    --knowledge-turns-only that turn may be dropped (its Wizard used no knowledge), so the
    first message served carries that turn's pool in first_turn_passages, and the selector's
    first_turn background starts from it instead of the served turn's (later) pool."""
    from parlai_docgraph.graphs.background import EpisodeBackground

    folder = datapath / "wizard_of_wikipedia"
    folder.mkdir()
    _write(folder / "train.json", [_late_knowledge_dialogue(), _dialogue(speaker_first="0_Apprentice")])
    args = ("--label-type", "chosen_sent")
    full = teacher_acts("docgraph:wow", datapath, "train:ordered", *args)
    kept = teacher_acts("docgraph:wow", datapath, "train:ordered", *args, "--knowledge-turns-only", "true")
    assert len(full) == 3 and len(kept) == 1  # the second dialogue's only Wizard turn: none
    first_pool = full[0]["knowledge_passages"]
    assert [t for t, _ in first_pool] == ["Lighthouse", "Beacon"]
    assert kept[0]["first_turn_passages"] == first_pool
    assert "first_turn_passages" not in full[0] and "first_turn_passages" not in full[1]
    served = [(t, s) for t, s in kept[0]["knowledge_passages"]]
    assert [t for t, _ in served] == ["Lighthouse", "Lamp", "Fog"]
    background = EpisodeBackground("first_turn")
    pool = background.observe(served, kept[0]["first_turn_passages"])
    # the first turn's pool, then the served turn's sentences it lacks (its candidates)
    assert pool == [("Lighthouse", ["A lighthouse is a tower.", "It guides ships."]),
                    ("Beacon", ["A beacon is a fire."]), ("Lamp", ["A lamp gives light."]),
                    ("Fog", ["Fog hides the coast."])]
    assert EpisodeBackground("first_turn").observe(served)[:2] == served[:2]  # without it
    per_turn = EpisodeBackground("per_turn").observe(served, kept[0]["first_turn_passages"])
    assert [t for t, _ in per_turn] == ["Lighthouse", "Beacon", "Lamp", "Fog"]


def test_add_missing_turns_counts_what_parlai_drops(datapath):
    """--add-missing-turns all keeps the last Wizard turn of a Wizard-first dialogue, which
    ParlAI's teacher drops by default; the teacher counts those turns."""
    from parlai.core.params import ParlaiParser
    from parlai.core.teachers import create_task_agent_from_taskname

    folder = datapath / "wizard_of_wikipedia"
    folder.mkdir()
    _write(folder / "train.json", [_dialogue(), _late_knowledge_dialogue(), _dialogue("Beacon")])
    counts = {}
    for missing in ("all", "none"):
        opt = ParlaiParser(True, False).parse_args(
            ["-t", "docgraph:wow", "--datapath", str(datapath), "-dt", "train:ordered",
             "--label-type", "chosen_sent", "--add-missing-turns", missing])
        teacher = create_task_agent_from_taskname(opt)[0]
        while not teacher.epoch_done():
            teacher.act()
        counts[missing] = teacher.turn_counts
    assert counts["all"].kept - counts["none"].kept == counts["all"].added == 2
    assert counts["none"].added == 0
    assert "kept 2 turns" in counts["all"].added_summary()

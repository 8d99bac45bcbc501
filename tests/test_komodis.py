"""
KOMODIS reader, split and teacher, on small delexicalised fixtures written here.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import teacher_acts
from parlai_docgraph.dataset_errors import BadRows, DatasetFormatError, MissingDatasetFile
from parlai_docgraph.tasks.docgraph.readers import komodis_split as reader
from parlai_docgraph.tasks.docgraph.readers.komodis import (
    clean_utterance,
    dialogue_episodes,
    read_komodis,
    speaker_of,
)
from parlai_docgraph.tasks.docgraph.readers.komodis_split import (
    SPLIT_FILE_NAME,
    compute_split,
    load_split,
)
from parlai_docgraph.tasks.docgraph.candidates import sample_candidates

ROOT = Path(__file__).resolve().parents[1]
MOVIES = ["The Glass Harbor", "Paper Moons", "Iron Orchard", "Salt and Static"]


def _dialogue(did: int, title: str, n_utts: int = 5) -> dict:
    utts = [
        "have you seen movie#0 ? [eou] it is by director#0",
        "yes ! actor#0 was great in it [EOU] [eou] did you like it",
        "i did . [eou] the plot about the lighthouse was nice",
        f"i think it came out in year#0 , right ? dialogue {did}",
        f"yes , and actor#1 played the harbor master {did}",
        "cool , thanks [eou]",
    ][:n_utts]
    return {
        "dialogue_id": did,
        "movie_title": title,
        "dialogue": [{"utterance": u, "speaker": "ignored extra key"} for u in utts],
        "facts": {
            "first_speaker": [
                {"subject": "movie#0", "relation": "has_trivia", "object": f"trivia of {title}"},
                {"subject": "movie#0", "relation": "has_release_year", "object": 2019},
            ],
            "second_speaker": [
                {"subject": "movie#0", "relation": "has_plot", "object": "a keeper finds letters"},
                {"subject": "actor#0", "relation": "has_trivia", "object": "actor#0 sails"},
            ],
        },
        "attitudes": {
            "first_speaker": [
                {"subject": "movie#0", "relation": "has_general_bot_attitude", "object": 4,
                 "source": "I really like movie#0."},
            ],
            "second_speaker": [
                {"subject": "movie#0", "relation": "has_general_bot_attitude", "object": 4,
                 "source": "I really like movie#0."},
                {"subject": "certificate#0", "relation": "has_bot_certificate_attitude",
                 "object": 2, "source": "I disagree with the age rating."},
            ],
        },
        "entity_dictionary": {"movie#0": title},
    }


def _dataset():
    out, did = [], 100
    for m, title in enumerate(MOVIES):
        for _ in range(2 if m % 2 == 0 else 3):
            did += 1
            out.append(_dialogue(did, title, n_utts=5 + did % 2))
    return out  # 10 dialogues, 4 movies


def _write(path: Path, dialogues) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[\n" + ",\n".join(json.dumps(d) for d in dialogues) + "\n]\n")
    return path


@pytest.fixture
def komodis_datapath(datapath: Path) -> Path:
    _write(datapath / "komodis" / "dataset.json", _dataset())
    return datapath


def _expected_titles():
    titles = sorted(MOVIES)
    random.Random(42).shuffle(titles)
    return {"train": titles[:2], "valid": titles[2:3], "test": titles[3:]}


# ---------------------------------------------------------------------------------------
# reader


def test_clean_utterance():
    assert clean_utterance("yes [eou] i did") == "yes. i did"
    assert clean_utterance("really ? [EOU] wow [eou]") == "really ? wow."
    assert clean_utterance("[eou] hi  there") == "hi there"
    assert clean_utterance("ok.[eou][eou] bye") == "ok. bye"
    assert clean_utterance("movie#0 is by director#0") == "movie#0 is by director#0"


def test_speaker_convention():
    # official loader: sample num (label = utterance num + 1) uses second_speaker when
    # num % 2 == 0, i.e. utterance n is second_speaker's when n is odd
    assert [speaker_of(n) for n in range(4)] == [
        "first_speaker", "second_speaker", "first_speaker", "second_speaker",
    ]


def test_read_and_episodes(komodis_datapath):
    path = komodis_datapath / "komodis" / "dataset.json"
    dialogues = read_komodis(str(path))
    assert len(dialogues) == 10
    d = dialogues[0]  # 6 utterances
    assert d.dialogue_id == 101 and d.movie_title == "The Glass Harbor" and d.line == 2
    assert d.utterances[0] == "have you seen movie#0 ? it is by director#0"
    assert d.utterances[1] == "yes ! actor#0 was great in it. did you like it"
    assert d.facts["first_speaker"][1] == ("movie#0", "has_release_year", "2019")
    assert d.attitudes["second_speaker"][1] == (
        "certificate#0", "has_bot_certificate_attitude", "2", "I disagree with the age rating.",
    )
    episodes = dialogue_episodes(d)
    assert [[t.utterance_index for t in e] for e in episodes] == [[1, 3, 5], [2, 4]]
    second, first = episodes
    assert all(t.speaker == "second_speaker" for t in second)
    assert all(t.speaker == "first_speaker" for t in first)
    assert second[0].text == d.utterances[0] and second[0].response == d.utterances[1]
    assert second[1].text == d.utterances[2] and second[1].response == d.utterances[3]
    assert first[0].text == f"{d.utterances[0]}\n{d.utterances[1]}"
    assert first[0].response == d.utterances[2]
    assert first[1].text == d.utterances[3]
    assert second[0].facts == d.facts["second_speaker"]
    assert first[0].attitudes == d.attitudes["first_speaker"]
    kg = second[0].kg_triples
    assert kg == first[0].kg_triples
    # both speakers' facts then attitudes, each once (the shared attitude appears once)
    assert len(kg) == 4 + 2 and kg[-1] == ("certificate#0", "has_bot_certificate_attitude", "2")
    assert sum(len(e) for e in episodes) == len(d.utterances) - 1


def test_sample_candidates():
    pool = [(g, f"utt {g}-{i}") for g in range(5) for i in range(4)] + [(3, "gold")]
    cands = sample_candidates("gold", pool, 0, 10, random.Random(0))
    assert len(cands) == 10 and cands.count("gold") == 1 and len(set(cands)) == 10
    assert not any(c.startswith("utt 0-") for c in cands)
    assert cands == sample_candidates("gold", pool, 0, 10, random.Random(0))
    small = sample_candidates("gold", pool[:6], 0, 20, random.Random(1))
    assert sorted(small) == sorted(["gold", "utt 1-0", "utt 1-1"])


# ---------------------------------------------------------------------------------------
# split


def test_split_by_title(komodis_datapath):
    path = komodis_datapath / "komodis" / "dataset.json"
    doc = compute_split(str(path))
    assert doc["titles"] == _expected_titles()
    title_of = {d["dialogue_id"]: d["movie_title"] for d in _dataset()}
    for split, ids in doc["dialogue_ids"].items():
        assert {title_of[i] for i in ids} == set(doc["titles"][split])
    assert sorted(i for ids in doc["dialogue_ids"].values() for i in ids) == sorted(title_of)
    assert doc["procedure"] == reader.SPLIT_PROCEDURE
    assert doc["dataset_sha256"] == reader.sha256_of(str(path))
    assert doc["counts"]["train"]["titles"] == 2


def test_split_fractions_on_many_titles():
    titles = [f"movie {i:03d}" for i in range(200)]
    split = reader.split_titles(titles)
    assert [len(split[s]) for s in ("train", "valid", "test")] == [140, 30, 30]
    assert split == reader.split_titles(reversed(titles))  # order of appearance is irrelevant
    with pytest.raises(ValueError):
        reader.split_titles(["a", "b"])


def test_split_cache_reuse_and_refresh(komodis_datapath, monkeypatch):
    path = str(komodis_datapath / "komodis" / "dataset.json")
    local = str(komodis_datapath / "komodis" / SPLIT_FILE_NAME)
    doc, notes = load_split(path, local)
    assert notes == [] and json.loads(Path(local).read_text()) == doc
    monkeypatch.setattr(reader, "compute_split", lambda p: pytest.fail("recomputed"))
    assert load_split(path, local) == (doc, [])
    monkeypatch.undo()
    # a changed dataset.json: the cache is re-created, with a note
    data = _dataset()
    data[0]["dialogue"][0]["utterance"] = "changed"
    _write(Path(path), data)
    doc2, notes = load_split(path, local)
    assert doc2["dataset_sha256"] != doc["dataset_sha256"] and "re-creating" in notes[0]
    assert json.loads(Path(local).read_text())["dataset_sha256"] == doc2["dataset_sha256"]


def test_shipped_split_preferred_when_sha_matches(komodis_datapath, tmp_path):
    path = str(komodis_datapath / "komodis" / "dataset.json")
    local = str(tmp_path / "local.json")
    shipped = compute_split(path)
    shipped["dialogue_ids"]["train"] = shipped["dialogue_ids"]["train"][:1]  # recognisable
    shipped_path = tmp_path / "komodis_split.json"
    shipped_path.write_text(json.dumps(shipped))
    doc, notes = load_split(path, local, str(shipped_path))
    assert doc == shipped and notes == [] and not os.path.exists(local)
    shipped["dataset_sha256"] = "0" * 64
    shipped_path.write_text(json.dumps(shipped))
    doc, notes = load_split(path, local, str(shipped_path))
    assert doc == compute_split(path) and "another dataset.json" in notes[0]


def test_make_split_script_matches_teacher(komodis_datapath, tmp_path):
    out = tmp_path / "komodis_split.json"
    script = ROOT / "tools" / "make_komodis_split.py"
    dataset = komodis_datapath / "komodis" / "dataset.json"
    res = subprocess.run(
        [sys.executable, str(script), str(dataset), str(out)], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    assert "train 2 titles" in res.stdout
    teacher_acts("docgraph:komodis", komodis_datapath, "valid")
    cached = komodis_datapath / "komodis" / SPLIT_FILE_NAME
    assert json.loads(out.read_text()) == json.loads(cached.read_text())


# ---------------------------------------------------------------------------------------
# malformed input


@pytest.mark.parametrize(
    "mutate, problem",
    [
        (lambda d: d.pop("attitudes"), "missing field 'attitudes'"),
        (lambda d: d["facts"].pop("second_speaker"), "facts.second_speaker"),
        (lambda d: d["facts"]["first_speaker"][0].pop("object"), "facts.first_speaker[0].object"),
        (lambda d: d["dialogue"][1].pop("utterance"), "dialogue[1].utterance"),
        (lambda d: d["dialogue"][2].__setitem__("utterance", " [eou] "), "is empty"),
        (lambda d: d.__setitem__("movie_title", None), "'movie_title' should be str"),
        (lambda d: d.__setitem__("dialogue_id", 101), "repeats the one on line 2"),
    ],
)
def test_malformed_dialogue_reports_file_and_line(tmp_path, mutate, problem):
    data = _dataset()
    mutate(data[3])
    path = _write(tmp_path / "dataset.json", data)
    with pytest.raises(DatasetFormatError) as info:
        read_komodis(str(path))
    assert info.value.path == str(path) and info.value.line == 5
    assert problem in str(info.value)
    bad = BadRows(skip=True)
    assert len(read_komodis(str(path), bad)) == 9 and [e.line for e in bad.errors] == [5]


def test_skip_bad_rows_through_the_teacher(komodis_datapath):
    from parlai.core.params import ParlaiParser
    from parlai.core.teachers import create_task_agent_from_taskname

    data = _dataset()
    split = compute_split(str(komodis_datapath / "komodis" / "dataset.json"))
    victim = split["dialogue_ids"]["train"][0]
    for d in data:
        if d["dialogue_id"] == victim:
            d["facts"] = []
    _write(komodis_datapath / "komodis" / "dataset.json", data)
    with pytest.raises(DatasetFormatError):
        teacher_acts("docgraph:komodis", komodis_datapath, "train:ordered")
    full = sum(len(d["dialogue"]) - 1 for d in _dataset() if d["dialogue_id"] in split["dialogue_ids"]["train"])
    opt = ParlaiParser(True, False).parse_args(
        ["-t", "docgraph:komodis", "--datapath", str(komodis_datapath), "-dt", "train:ordered",
         "--skip-bad-rows", "true"]
    )
    teacher = create_task_agent_from_taskname(opt)[0]
    lost = next(len(d["dialogue"]) - 1 for d in data if d["dialogue_id"] == victim)
    assert teacher.num_examples() == full - lost
    assert len(teacher.bad_rows.errors) == 1 and "'facts' should be dict" in str(teacher.bad_rows.errors[0])


# ---------------------------------------------------------------------------------------
# teacher


def test_teacher_messages(komodis_datapath):
    split = compute_split(str(komodis_datapath / "komodis" / "dataset.json"))
    by_id = {d["dialogue_id"]: d for d in _dataset()}
    seen_ids = set()
    for dt, name in (("train:ordered", "train"), ("valid", "valid"), ("test", "test")):
        acts = teacher_acts("docgraph:komodis", komodis_datapath, dt)
        ids = split["dialogue_ids"][name]
        assert len(acts) == sum(len(by_id[i]["dialogue"]) - 1 for i in ids)
        assert {a["dialogue_id"] for a in acts} == set(ids)
        seen_ids |= set(ids)
        split_utts = {clean_utterance(u["utterance"]) for i in ids for u in by_id[i]["dialogue"]}
        for act in acts:
            labels = act.get("labels", act.get("eval_labels"))
            cands = act["label_candidates"]
            assert labels[0] in cands and len(cands) == len(set(cands)) <= 20
            assert set(cands) <= split_utts  # distractors from the same split only
            raw = by_id[act["dialogue_id"]]
            n = act["utterance_index"]
            speaker = "second_speaker" if n % 2 else "first_speaker"
            assert act["speaker"] == speaker
            assert act["kg_facts"] == [
                [f["subject"], f["relation"], str(f["object"])] for f in raw["facts"][speaker]
            ]
            assert act["kg_attitudes"] == [
                [a["subject"], a["relation"], str(a["object"]), a["source"]]
                for a in raw["attitudes"][speaker]
            ]
            assert act["movie_title"] == raw["movie_title"]
            assert ["movie#0", "has_general_bot_attitude", "4"] in act["kg_triples"]
    assert seen_ids == set(by_id)
    first = teacher_acts("docgraph:komodis", komodis_datapath, "train:ordered")[0]
    assert first["text"] == "have you seen movie#0 ? it is by director#0"
    assert first["labels"] == ["yes ! actor#0 was great in it. did you like it"]
    # seeded candidates
    again = teacher_acts("docgraph:komodis", komodis_datapath, "train:ordered")
    assert first["label_candidates"] == again[0]["label_candidates"]
    few = teacher_acts("docgraph:komodis", komodis_datapath, "train:ordered", "--num-label-candidates", "3")
    assert all(len(a["label_candidates"]) == 3 for a in few)


def test_verify_data_zero_problems(komodis_datapath):
    from parlai.scripts.verify_data import setup_args, verify

    for dt in ("train", "valid", "test"):
        opt = setup_args().parse_args(["-t", "docgraph:komodis", "--datapath", str(komodis_datapath), "-dt", dt])
        counts = verify(opt)
        assert counts.pop("exs") > 0
        assert all(v == 0 for v in counts.values()), (dt, counts)


def test_missing_file_offline_names_file_and_url(datapath):
    with pytest.raises(MissingDatasetFile) as info:
        teacher_acts("docgraph:komodis", datapath, "train:ordered")
    msg = str(info.value)
    assert str(datapath / "komodis" / "dataset.json") in msg
    assert "https://github.com/fabiangal/komodis-dataset/raw/master/data/dataset.json" in msg


def test_teacher_kg_candidates_history_only(komodis_datapath):
    from parlai_docgraph.kg import fields as kg_fields

    acts = teacher_acts("docgraph:komodis", komodis_datapath, "train:ordered")
    with_cands = [a for a in acts if a["kg_candidates"]]
    assert with_cands, "some KOMODIS turns link entities of their dialogue's KG"
    for act in acts:
        triples = {tuple(t) for t in act["kg_triples"]}
        for path in act["kg_candidates"]:
            assert all(h.triple in triples for h in kg_fields.json_to_path(path))
        # linked entities come from the utterances before the response only
        for entity in act["kg_mentioned"]:
            assert any(entity in t for t in triples)
        for gold in act["kg_gold_paths"]:
            (hop,) = kg_fields.json_to_path(gold)
            assert list(hop.triple) in act["kg_facts"]
            assert hop.target.lower() in act["labels"][0].lower() or hop.source.lower() in act["labels"][0].lower()
    first = acts[0]  # its text is the whole history: utterance 0
    assert first["kg_history"] == [first["text"]]
    assert first["kg_mentioned"] == ["movie#0"]
    assert "actor#0" in first["labels"][0]  # mentioned by the response only: not linked
    assert all(not p[0][0].startswith("actor#0") for p in first["kg_candidates"])
    off = teacher_acts("docgraph:komodis", komodis_datapath, "train:ordered", "--kg-candidates", "false")
    assert "kg_candidates" not in off[0]

"""
OpenDialKG reader, split and teachers: real format, bad input, DialogGSR's split, the
bundled sample through ParlAI.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import logging as pylogging
import random
import re
import shutil
from pathlib import Path
from typing import Dict, List, Set

import pytest

from conftest import real_file, teacher_acts
from parlai_docgraph.kg.fields import load_kg
from parlai_docgraph.kg.store import KnowledgeGraph
from parlai_docgraph.tasks.docgraph.build import SAMPLE_DATAPATH
from parlai_docgraph.dataset_errors import BadRows, DatasetFormatError, MissingDatasetFile
from parlai_docgraph.tasks.docgraph.readers import opendialkg as odkg
from parlai_docgraph.tasks.docgraph.readers import opendialkg_split as odkg_split

TASKS = Path(odkg.__file__).resolve().parents[1]  # the package the teachers run from
REPO_TASKS = Path(__file__).resolve().parents[1] / "tasks" / "docgraph"  # generator scripts
SAMPLE = Path(SAMPLE_DATAPATH) / "opendialkg"
OFFICIAL_URL = "https://github.com/facebookresearch/opendialkg/raw/main/data/opendialkg.csv"


def _load_script(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write_csv(path: Path, rows: List[List[str]], header=odkg.HEADER) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _real_csv(tmp_path: Path) -> Path:
    raw = json.loads(real_file("opendialkg", "original_examples.json").read_text())
    return _write_csv(tmp_path / "opendialkg.csv", [[r[h] for h in odkg.HEADER] for r in raw])


# --------------------------------------------------------------------------------------
# reader on the real rows
# --------------------------------------------------------------------------------------


def test_real_sample_every_path_action_is_read(tmp_path):
    path = _real_csv(tmp_path)
    raw = json.loads(real_file("opendialkg", "original_examples.json").read_text())
    data = odkg.read_opendialkg(str(path))
    assert data.num_rows == 5 and [d.index for d in data.dialogues] == [0, 1, 2, 3, 4]
    dialogues = data.dialogues
    assert sum(len(d.path_actions) for d in dialogues) == 14
    assert sum(d.num_meta_messages for d in dialogues) == 3
    assert sum(d.num_chat_messages for d in dialogues) == 39
    for d, row in zip(dialogues, raw):
        expected = [
            (a["sender"], a["metadata"]["path"][0], [tuple(t) for t in a["metadata"]["path"][1]])
            for a in json.loads(row["Messages"])
            if a.get("action_id") == "kgwalk/choose_path"
        ]
        assert [(p.sender, p.score, p.triples) for p in d.path_actions] == expected
        assert d.user_rating == json.loads(row["User Rating"])
    scores = [p.score for d in dialogues for p in d.path_actions]
    assert any(type(s) is int for s in scores) and any(type(s) is float for s in scores)

    turns = odkg.assistant_turns(dialogues[0])
    assert [t.text for t in turns][0] == "Do you like Iron Man"
    assert turns[0].gold_path == [("Iron Man", "starred_actors", "Robert Downey Jr.")]
    assert turns[0].entities == ["Iron Man"]  # the start entity, not the answer
    # the user's own path grounds the user turn, not the assistant's response
    assert turns[1].user_paths[0].triples == [
        ("Robert Downey Jr.", "~starred_actors", "Zodiac (Crime Fiction Film)")
    ]
    zodiac = "Zodiac (Crime Fiction Film)"
    assert turns[1].gold_path == [(zodiac, "starred_actors", "Jake Gyllenhaal")]
    # turns without a path action have an empty gold path (no stale carry-over)
    assert turns[3].gold_path == [] and turns[4].gold_path == []
    assert len(turns[2].history) == 4 and turns[2].history[0] == "Do you like Iron Man"
    # a dialogue without any path action still yields its assistant turns
    assert len(odkg.assistant_turns(dialogues[2])) == 3


def _lines(name: str) -> Set[str]:
    return set(real_file("opendialkg", name).read_text("utf-8").split("\n"))


def test_real_sample_paths_use_kg_spelling(tmp_path):
    # no trailing newline in either file (datasets.md 3.4); the empty entity is a name
    entities = _lines("opendialkg_entities.txt")
    relations = _lines("opendialkg_relations.txt")
    data = odkg.read_opendialkg(str(_real_csv(tmp_path)))
    triples = [t for d in data.dialogues for p in d.path_actions for t in p.triples]
    assert len(triples) == 18
    for s, r, o in triples:
        assert s in entities and o in entities and r in relations, (s, r, o)


# --------------------------------------------------------------------------------------
# malformed input
# --------------------------------------------------------------------------------------


def _chat(sender, message):
    return {"message": message, "type": "chat", "sender": sender}


def _path(sender, triples, score=0.0):
    meta = {"path": [score, triples, "render"]}
    return {"metadata": meta, "type": "action", "sender": sender, "action_id": "kgwalk/choose_path"}


RATING = json.dumps({"dialog_rating": "5", "other_agent_rating": "4"})
GOOD = [
    _chat("user", "Do you like Jaws?"),
    _path("assistant", [["Jaws", "directed_by", "Steven Spielberg"]]),
    _chat("assistant", "Steven Spielberg directed it."),
]
SHORT_TRIPLE = [_chat("user", "hi"), _path("assistant", [["Jaws", "directed_by"]])]
NOT_A_LIST = [{**_path("assistant", []), "metadata": {"path": "Jaws directed_by X"}}]
UNKNOWN = [{"type": "action", "sender": "user", "action_id": "kgwalk/undo"}]

BAD_ROWS = {
    "bad_json": ([json.dumps(GOOD)[:-5], RATING, RATING], "invalid JSON"),
    "column_count": ([json.dumps(GOOD), RATING], "expected 3 columns"),
    "two_field_triple": ([json.dumps(SHORT_TRIPLE), RATING, RATING], "triple 0 should be"),
    "path_not_list": ([json.dumps(NOT_A_LIST), RATING, RATING], "metadata.path should be a list"),
    "unknown_action": ([json.dumps(UNKNOWN), RATING, RATING], "unknown action"),
    "rating_json": ([json.dumps(GOOD), "{dialog_rating: 5", RATING], "'User Rating': invalid"),
}


@pytest.mark.parametrize("case", sorted(BAD_ROWS))
def test_malformed_row_names_file_and_line(tmp_path, case):
    bad, problem = BAD_ROWS[case]
    # row 0 spans 3 physical lines (JSON with newlines inside the quoted field)
    multiline = json.dumps(GOOD, indent=None).replace("}, {", "},\n{")
    assert multiline.count("\n") == 2
    good = [json.dumps(GOOD), RATING, RATING]
    rows = [[multiline, RATING, RATING], good, bad, good]
    path = _write_csv(tmp_path / "opendialkg.csv", rows)
    with pytest.raises(DatasetFormatError) as err:
        odkg.read_opendialkg(str(path))
    # header: line 1; row 0: lines 2-4; row 1: line 5; row 2 starts on line 6
    assert err.value.path == str(path) and err.value.line == 6
    assert err.value.where == "row 2" and problem in err.value.problem
    assert f"{path}:6: row 2:" in str(err.value)

    bad_rows = BadRows(skip=True)
    data = odkg.read_opendialkg(str(path), bad_rows)
    assert [d.index for d in data.dialogues] == [0, 1, 3] and data.num_rows == 4
    assert len(bad_rows.errors) == 1 and bad_rows.errors[0].line == 6
    assert "skipped 1 malformed row(s) in opendialkg.csv" in bad_rows.summary()


def test_bad_header_is_reported(tmp_path):
    path = _write_csv(tmp_path / "x.csv", [], header=["Messages", "Rating"])
    with pytest.raises(DatasetFormatError, match=r"x.csv:1: header"):
        odkg.read_opendialkg(str(path))


def test_truncated_triples_line(tmp_path, caplog):
    """The package's one triple reader: strict names file:line; skipping logs each line."""
    path = tmp_path / "opendialkg_triples.txt"
    lines = [
        "Jaws\tdirected_by\tSteven Spielberg",
        "Steven Spielberg\t~directed_by\tJaws",
        "Jaws\thas_genre",  # line 3: truncated
        "Jaws\trelease_year\t1975",
        "X\tr\t",  # line 5: empty object
    ]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}:3:")) as err:
        KnowledgeGraph.from_file(path)
    assert "three non-empty fields" in str(err.value)
    with caplog.at_level(pylogging.WARNING, logger="parlai_docgraph.kg.reader"):
        kg = KnowledgeGraph.from_file(path, skip_bad=True)
    skipped = [r.getMessage() for r in caplog.records if "skipped malformed triple" in r.getMessage()]
    assert len(skipped) == kg.skipped_lines == 2
    assert f"{path}:3:" in skipped[0] and f"{path}:5:" in skipped[1]
    assert kg.num_triples == 2 and set(kg.relations) == {"directed_by", "release_year"}
    assert kg.has_triple("Jaws", "release_year", "1975") and not kg.has_triple("Jaws", "has_genre", "")
    # ``~r`` is the reverse of ``r``: both lines are one fact, asked in either spelling
    assert kg.has_triple("Steven Spielberg", "~directed_by", "Jaws")
    assert kg.has_triple("Jaws", "directed_by", "Steven Spielberg")
    assert not kg.has_triple("Jaws", "~directed_by", "Steven Spielberg")


# --------------------------------------------------------------------------------------
# split
# --------------------------------------------------------------------------------------


def _dialoggsr_reference(n: int) -> Dict[str, Set[int]]:
    """
    DialogGSR preprocess_data.py main(), lines 274-292, on n rows (no CSV needed).
    """
    dataset_idx = list(range(1000000, 1000000 + n))
    random.seed(42)
    random.shuffle(dataset_idx)
    a, b = int(len(dataset_idx) * 0.7), int(len(dataset_idx) * (0.7 + 0.15))
    parts = {"train": dataset_idx[:a], "valid": dataset_idx[a:b], "test": dataset_idx[b:]}
    return {k: {i - 1000000 for i in v} for k, v in parts.items()}


def test_shipped_split_is_dialoggsrs():
    shipped = json.loads((TASKS / "splits" / "opendialkg_split.json").read_text())
    assert shipped["seed"] == 42 and shipped["num_rows"] == 13802
    sets = {k: set(shipped[k]) for k in ("train", "valid", "test")}
    assert [len(shipped[k]) for k in ("train", "valid", "test")] == [9661, 2070, 2071]
    assert all(len(sets[k]) == len(shipped[k]) for k in sets)
    train, valid, test = sets["train"], sets["valid"], sets["test"]
    assert not (train & valid or train & test or valid & test)
    assert sets["train"] | sets["valid"] | sets["test"] == set(range(13802))
    assert sets == _dialoggsr_reference(13802)
    assert all(shipped[k] == sorted(shipped[k]) for k in sets)
    script = _load_script(REPO_TASKS.parent.parent / "tools" / "make_opendialkg_split.py")
    assert script.render() == (TASKS / "splits" / "opendialkg_split.json").read_text()
    split, note = odkg_split.split_rows(13802)
    assert note is None and split == {k: shipped[k] for k in sets}


class _Capture(pylogging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: List[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_other_csv_is_split_by_the_same_procedure_and_says_so(datapath):
    split, note = odkg_split.split_rows(50)
    assert split == odkg_split.split_rows(50)[0]
    assert {k: set(v) for k, v in split.items()} == _dialoggsr_reference(50)
    assert [len(split[k]) for k in ("train", "valid", "test")] == [35, 7, 8]
    assert note == (
        "opendialkg.csv has 50 rows, not the official 13,802: "
        "splitting with DialogGSR's seed-42 70/15/15 procedure"
    )
    # the official teacher on a user's own 50-row file in the official layout
    folder = datapath / "opendialkg"
    folder.mkdir()
    with open(SAMPLE / "opendialkg.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))[1:51]
    _write_csv(folder / "opendialkg.csv", rows)
    shutil.copy(SAMPLE / "opendialkg_triples.txt", folder / "opendialkg_triples.txt")
    from parlai.utils import logging as plog

    handler = _Capture()
    plog.logger.addHandler(handler)
    try:
        acts = teacher_acts("docgraph:opendialkg", datapath, "valid")
    finally:
        plog.logger.removeHandler(handler)
    assert any(note in line for line in handler.lines), handler.lines
    assert sorted({a["dialogue_id"] for a in acts}) == split["valid"]
    assert all(a["kg_file"] == str(folder / "opendialkg_triples.txt") for a in acts)


# --------------------------------------------------------------------------------------
# teachers on the bundled sample
# --------------------------------------------------------------------------------------


def _surface(entity: str) -> str:
    name = re.sub(r" \([^()]*\)$", "", entity)
    return name.replace(" Language", "")


@pytest.fixture(scope="module")
def sample_data():
    return odkg.read_opendialkg(str(SAMPLE / "opendialkg.csv"))


def _generator():
    return _load_script(REPO_TASKS.parent.parent / "tools" / "make_sample_kg.py")


def test_sample_generator_is_in_sync():
    gen = _generator()
    csv_text, kg_text, odds_text = gen.build()
    assert gen.verify(csv_text, kg_text) == []
    assert (SAMPLE / "opendialkg.csv").read_text("utf-8") == csv_text
    assert (SAMPLE / "opendialkg_triples.txt").read_text("utf-8") == kg_text
    assert (SAMPLE / gen.ODDS_NAME).read_text("utf-8") == odds_text


@pytest.mark.parametrize("start,used", [
    ("Amélie", {"Amélie"}),  # films: one and two hops
    ("Brad Pitt", {"Brad Pitt", "Se7en"}),  # a person, one work already said
    ("Film", {"Amélie", "Film"}),  # a class: no edge leads on (one hop only, or none)
])
def test_walk_odds_are_what_the_generator_draws(start, used):
    """Walker.odds (what path_odds.json and the kg_ceiling benchmark rest on) against the
    frequencies of the generator's own draws, a two-hop draw with probability TWO_HOP."""
    gen = _generator()
    walker = gen.Walker(gen.all_triples(gen.forward_facts()))
    odds = walker.odds(start, used)
    rng, counts, n = random.Random(0), {}, 0
    for _ in range(30000):
        walk = walker.path(rng, start, used, 2 if rng.random() < gen.TWO_HOP else 1)
        if walk:
            counts[tuple(walk)] = counts.get(tuple(walk), 0) + 1
            n += 1
    if not odds:
        assert n == 0
        return
    assert abs(sum(odds.values()) - 1) < 1e-9 and set(counts) <= set(odds)
    for walk, p in odds.items():
        assert abs(counts.get(walk, 0) / n - p) < 4 * (p * (1 - p) / n) ** 0.5 + 1e-3, walk


def test_walk_odds_of_the_sample_bound_path_at_k():
    """path_odds.json: one entry per assistant walk of each row, in order; best@1 <= best@3."""
    rows = json.loads((SAMPLE / _generator().ODDS_NAME).read_text("utf-8"))["rows"]
    data = odkg.read_opendialkg(str(SAMPLE / "opendialkg.csv"))
    assert len(rows) == data.num_rows == len(data.dialogues)
    for d in data.dialogues:
        walks = [[list(t) for t in a.triples] for a in d.path_actions if a.sender == "assistant"]
        assert [w["path"] for w in rows[d.index]] == walks
        for w in rows[d.index]:
            assert 0 < w["p"] <= w["best@1"] <= w["best@3"] <= 1


def test_sample_shape(sample_data):
    dialogues = sample_data.dialogues
    assert len(dialogues) >= 30
    assert all(4 <= d.num_chat_messages <= 10 for d in dialogues)
    actions = [p for d in dialogues for p in d.path_actions]
    assert {len(p.triples) for p in actions} == {1, 2}
    assert {type(p.score) for p in actions} == {int, float}
    assert sum(d.num_meta_messages for d in dialogues) > 0
    assert any(len(t.messages) > 1 for d in dialogues for t in d.turns)
    assert any(d.turns[0].sender == "assistant" for d in dialogues)
    triples_file = SAMPLE / "opendialkg_triples.txt"
    kg = KnowledgeGraph.from_file(triples_file)
    assert kg.num_triples >= 400
    rows = {tuple(line.split("\t")) for line in triples_file.read_text().splitlines()}
    for s, r, o in rows:  # both directions, as in the official file
        rev = (o, r[1:], s) if r.startswith("~") else (o, "~" + r, s)
        assert rev in rows, (s, r, o)
    for p in actions:
        assert all(kg.has_triple(*t) for t in p.triples), p.triples
    size = sum(f.stat().st_size for f in SAMPLE.iterdir())
    assert size < 200_000


def _future_only(dialogue: odkg.Dialogue) -> List[Set[str]]:
    """
    For each assistant turn, entities of later paths not grounded up to it.
    """
    out = []
    for k, turn in enumerate(odkg.assistant_turns(dialogue)):
        # index of this assistant turn among all turns
        idx = [i for i, t in enumerate(dialogue.turns) if t.sender == "assistant"][k]
        before = {e for t in dialogue.turns[:idx] for p in t.paths for e in p.entities()}
        before |= {p.start for p in dialogue.turns[idx].paths}
        later = {e for t in dialogue.turns[idx:] for p in t.paths for e in p.entities()}
        out.append(later - before)
    return out


@pytest.mark.parametrize("fold", ["train", "valid", "test"])
def test_sample_teacher_messages(datapath, sample_data, fold):
    datatype = "train:ordered" if fold == "train" else fold
    acts = teacher_acts("docgraph:sample_kg", datapath, datatype)
    split, note = odkg_split.split_rows(sample_data.num_rows)
    by_id = {d.index: d for d in sample_data.dialogues}
    expected = [t for i in split[fold] for t in odkg.assistant_turns(by_id[i])]
    assert len(acts) == len(expected) > 0
    assert {"train": 110, "valid": 27, "test": 25}[fold] == len(acts)
    kg = load_kg(acts[0]["kg_file"])[0]
    future = {}
    history: List[str] = []
    for act, turn in zip(acts, expected):
        assert isinstance(act["text"], str)
        assert act["dialogue_id"] == turn.dialogue_id and act["turn_id"] == turn.turn_index
        labels = act.get("labels", act.get("eval_labels"))
        assert list(labels) == [turn.response]
        cands = act["label_candidates"]
        assert len(cands) == 20 and len(set(cands)) == 20 and turn.response in cands
        assert all(c.strip() for c in cands)
        assert act["kg_path"] == [list(t) for t in turn.gold_path]
        assert all(kg.has_triple(*t) for t in act["kg_path"])
        assert all(kg.has_triple(*t) for p in act["kg_user_paths"] for t in p)
        if turn.dialogue_id not in future:
            future[turn.dialogue_id] = _future_only(by_id[turn.dialogue_id])
            history = []
        leaked = set(act["kg_entities"]) & future[turn.dialogue_id][turn.turn_index]
        assert not leaked, (turn.dialogue_id, turn.turn_index, leaked)
        seen = " ".join(history + [act["text"]]).lower()
        for entity in act["kg_entities"]:
            assert _surface(entity).lower() in seen, (entity, seen)
        history += [act["text"], turn.response]
    assert any(a["kg_path"] for a in acts) and any(not a["kg_path"] for a in acts)


def test_sample_teacher_candidates_option(datapath):
    acts = teacher_acts("docgraph:sample_kg", datapath, "valid", "--num-label-candidates", "0")
    assert acts and all("label_candidates" not in a for a in acts)
    again = teacher_acts("docgraph:sample_kg", datapath, "valid")
    once = teacher_acts("docgraph:sample_kg", datapath, "valid")
    assert [a["label_candidates"] for a in again] == [a["label_candidates"] for a in once]


def test_verify_data_reports_no_problem(datapath):
    from parlai.scripts.verify_data import VerifyData

    for fold in ("train", "valid", "test"):
        counts = VerifyData.main(task="docgraph:sample_kg", datatype=fold, datapath=str(datapath))
        problems = {k: v for k, v in counts.items() if k != "exs"}
        assert counts["exs"] > 0 and set(problems.values()) == {0}, (fold, counts)


def test_official_teacher_without_data_names_file_and_url(datapath):
    with pytest.raises(MissingDatasetFile) as err:
        teacher_acts("docgraph:opendialkg", datapath, "valid")
    message = str(err.value)
    assert str(datapath / "opendialkg" / "opendialkg.csv") in message
    assert OFFICIAL_URL in message

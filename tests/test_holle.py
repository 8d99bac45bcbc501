"""
Holl-E reader and teacher: SKT-style conversion, multi-reference test, bad input.

The main_data fixtures are written here (chats about made-up movies); the real
``multi_reference_test.json`` is read from ../shared/data/real when it is there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import real_file, teacher_acts
from parlai_docgraph.dataset_errors import BadRows, DatasetFormatError, MissingDatasetFile
from parlai_docgraph.tasks.docgraph.readers.holle import (
    HolleStats,
    build_pool,
    clean_pool_text,
    default_splitter,
    match_span,
    read_holle,
    read_multi_reference,
)
from parlai_docgraph.graphs.knowledge_lines import NO_PASSAGE

PLOT = (
    "Mara Quill is a lighthouse keeper on a remote island. One night she finds a wrecked "
    "ship full of glass bottles. Each bottle holds a letter from the future. She decides "
    "to answer the letters and changes the fate of the town. The harbor master, Eli "
    "Stone, does not believe her."
)
REVIEW = (
    "This is a quiet, beautiful film. The cinematography of the sea is stunning and the "
    "score never intrudes.\n\nSome viewers will find the pacing slow. I loved every "
    "minute of it."
)
DOCS = {
    "plot": PLOT,
    "review": REVIEW,
    "comments": [
        "Best lighthouse movie ever made.",
        "The letters from the future twist was clever!",
        "",
        "Best lighthouse movie ever made.",
        "Eli Stone was annoying but believable.",
    ],
    "fact_table": {
        "box_office": "$12,345,678",
        "awards": ["Best Cinematography, Harbor Film Festival 2019", ""],
        "taglines": ["Some messages are meant to be answered."],
        "similar_movies": ["The Lighthouse Letters", "Sea of Glass"],
        "kb_flat": "box office $12,345,678 awards ...",
    },
}
DOCS_NO_FACTS = {
    "plot": "Two kids build a moon out of paper. It floats away over the city.",
    "review": "Charming.",
    "comments": [],
    "fact_table": {"box_office": 5, "kb_flat": ""},  # 2 keys: empty, as SKT
}

EXPECTED_POOL = [
    (
        "plot",
        [
            "Mara Quill is a lighthouse keeper on a remote island.",
            "One night she finds a wrecked ship full of glass bottles.",
            "Each bottle holds a letter from the future.",
            "She decides to answer the letters and changes the fate of the town.",
            "The harbor master, Eli Stone, does not believe her.",
        ],
    ),
    (
        "review",
        [
            "This is a quiet, beautiful film.",
            "The cinematography of the sea is stunning and the score never intrudes.",
            "Some viewers will find the pacing slow.",
            "I loved every minute of it.",
        ],
    ),
    (
        "comments",
        [
            "Best lighthouse movie ever made.",
            "The letters from the future twist was clever!",
            "Eli Stone was annoying but believable.",
        ],
    ),
    (
        "fact_table",
        [
            "Best Cinematography, Harbor Film Festival 2019",
            "Some messages are meant to be answered.",
            "The Lighthouse Letters",
            "Sea of Glass",
            "$12,345,678",
        ],
    ),
]


def _chat(chat_id, movie, turns, docs=DOCS, tail=None):
    """
    ``turns``: (utterance, label, span) triples, Speaker1 first.
    """
    utts = [t[0] for t in turns] + ([tail] if tail else [])
    labels = [t[1] for t in turns] + ([4] if tail else [])
    spans = [t[2] for t in turns] + ([""] if tail else [])
    return {
        "chat_id": chat_id,
        "imdb_id": "tt0000000",
        "movie_name": movie,
        "chat": utts,
        "labels": labels,
        "spans": spans,
        "documents": docs,
    }


CHAT_A = [
    ("Have you seen The Glass Harbor?", 4, ""),
    ("Yes! Mara Quill is a lighthouse keeper on a remote island.", 0,
     "Mara Quill is a lighthouse keeper on a remote island."),
    ("What was the best part?", 4, ""),
    ("I think the cinematography of the sea is stunning.", 1,
     "The cinematography of the sea is stunning"),
    ("Did it win anything?", 4, ""),
    ("It won Best Cinematography at the Harbor Film Festival.", 3,
     "Best Cinematography , Harbor Film Festival 2019"),
    ("Cool, thanks.", 4, ""),
    ("You're welcome, enjoy!", 4, ""),
]
CHAT_B = [
    ("Is the story good?", 4, ""),
    ("She finds a wrecked ship full of glass bottles and each bottle holds a letter.", 0,
     "she finds a wrecked ship full of glass bottles. Each bottle holds a letter"),
    ("What do people say?", 4, ""),
    ("One comment said the letters from the future twist was clever.", 2,
     "The letters from the future twist was clever"),
    ("Any similar movies?", 4, ""),
    ("Try Sea of Glass.", 3, "Sea of Glass"),
    ("How much did it make?", 4, ""),
    ("About twelve million dollars.", 3, "$12,345,678"),
]
CHAT_C = [
    ("Tell me about the harbor master.", 4, ""),
    ("The harbor master does not trust Mara at all.", 0, "harbor master Eli Stone never trusts her"),
    ("And the review?", 4, ""),
    ("Reviewer said nothing.", 1, "zzz qqq"),
]
CHAT_D = [
    ("Paper Moons looks cute.", 4, ""),
    ("It made 5 dollars.", 3, "5"),
    ("Ha. What happens?", 4, ""),
    ("Two kids build a moon out of paper.", 0, "build a moon out of paper"),
]

#: (title, checked sentence, match kind) expected for each turn of CHAT_A..D
EXPECTED_GOLD = {
    "A": [
        ("plot", "Mara Quill is a lighthouse keeper on a remote island.", "exact"),
        ("review", "The cinematography of the sea is stunning and the score never intrudes.", "contained"),
        ("fact_table", "Best Cinematography, Harbor Film Festival 2019", "exact"),
        (NO_PASSAGE, NO_PASSAGE, "none"),
    ],
    "B": [
        ("plot", "One night she finds a wrecked ship full of glass bottles. "
                 "Each bottle holds a letter from the future.", "run"),
        ("comments", "The letters from the future twist was clever!", "exact"),
        ("fact_table", "Sea of Glass", "exact"),
        ("fact_table", "$12,345,678", "exact"),
    ],
    "C": [
        ("plot", "The harbor master, Eli Stone, does not believe her.", "overlap"),
        ("review", "zzz qqq", "unmatched"),
    ],
    "D": [
        ("fact_table", "5", "unmatched"),
        ("plot", "Two kids build a moon out of paper.", "contained"),
    ],
}


def _write_array(path: Path, items) -> Path:
    """
    A JSON array with one element per line (element k on line k + 2).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[\n" + ",\n".join(json.dumps(x) for x in items) + "\n]\n")
    return path


def _main_data():
    return [
        _chat("ts_0", "The Glass Harbor", CHAT_A, tail="Bye"),
        _chat("ts_1", "The Glass Harbor", CHAT_B),
        _chat("ts_2", "The Glass Harbor", CHAT_C),
        _chat("ts_3", "Paper Moons", CHAT_D, docs=DOCS_NO_FACTS),
    ]


MULTI = {
    # the own response twice (dropped), one paraphrase with a shorter span
    "ts_0_0": {
        "responses": [CHAT_A[1][0], "Mara is a keeper of a lighthouse on an island.", CHAT_A[1][0]],
        "spans": [CHAT_A[1][2], "lighthouse keeper on a remote island", CHAT_A[1][2]],
    },
    # an int span, and a reference with an empty span
    "ts_0_1": {
        "responses": ["It came out in 2019.", CHAT_A[3][0], "No idea, sorry."],
        "spans": [2019, CHAT_A[3][2], ""],
    },
    "ts_0_2": {"responses": [CHAT_A[5][0]], "spans": [CHAT_A[5][2]]},
    # ts_0_3 missing: that turn keeps its single reference
    "ts_1_0": {"responses": [CHAT_B[1][0], "Bottles from the future wash up."],
               "spans": [CHAT_B[1][2], "glass bottles"]},
    # own response absent: counted as a likely misaligned key
    "ts_1_1": {"responses": ["Something else entirely."], "spans": ["xyzzy"]},
    "ts_9_0": {"responses": ["unused"], "spans": ["unused"]},
}


@pytest.fixture
def holle_datapath(datapath: Path) -> Path:
    folder = datapath / "holl_e"
    _write_array(folder / "train_data.json", _main_data())
    _write_array(folder / "dev_data.json", _main_data()[:2])
    _write_array(folder / "test_data.json", _main_data())
    (folder / "multi_reference_test.json").write_text(json.dumps(MULTI))
    return datapath


# ---------------------------------------------------------------------------------------
# reader


def test_pool_structure_and_cleaning():
    assert build_pool(DOCS, default_splitter()) == EXPECTED_POOL
    pool = build_pool(DOCS_NO_FACTS, default_splitter())
    assert [t for t, _ in pool] == ["plot", "review"]


def test_every_turn_has_the_right_gold(holle_datapath):
    stats = HolleStats()
    chats = list(read_holle(str(holle_datapath / "holl_e" / "train_data.json"), stats=stats))
    assert [len(c) for c in chats] == [4, 4, 2, 2]  # the unpaired "Bye" is dropped
    for chat, key, raw in zip(chats, "ABCD", (CHAT_A, CHAT_B, CHAT_C, CHAT_D)):
        for k, (turn, (title, sentence, _)) in enumerate(zip(chat, EXPECTED_GOLD[key])):
            assert turn.text == raw[2 * k][0]
            assert turn.response == raw[2 * k + 1][0]
            assert turn.title == title
            assert turn.checked_sentence == sentence
            if turn.gold is None:
                assert turn.gold_flat_index() == -1
            else:
                p, s = turn.gold
                assert turn.passages[p] == (title, turn.passages[p][1])
                assert turn.passages[p][1][s] == sentence
                lines = turn.knowledge_lines()
                assert lines[turn.gold_flat_index()] == (title, sentence)
        assert chat[-1].episode_done and not any(t.episode_done for t in chat[:-1])
    kinds = [k for key in "ABCD" for _, _, k in EXPECTED_GOLD[key]]
    c = stats.counts
    assert c["turns"] == 12
    for kind in ("none", "exact", "contained", "run", "overlap", "unmatched"):
        assert c[kind] == kinds.count(kind), kind
    assert c["unmatched"] == 2
    assert "unmatched 2" in stats.summary()


def test_gold_is_not_moved_to_the_front(holle_datapath):
    chats = list(read_holle(str(holle_datapath / "holl_e" / "train_data.json")))
    a = chats[0]
    # the pool is in document order whatever the label: same pool for every exact turn
    assert a[0].passages == a[2].passages == EXPECTED_POOL
    assert a[1].gold == (1, 1) and a[2].gold == (3, 0)
    # a run is merged in place, only for that turn
    run = chats[1][0]
    assert run.gold == (0, 1)
    assert run.passages[0][1][0] == EXPECTED_POOL[0][1][0]
    assert len(run.passages[0][1]) == 4
    assert chats[1][1].passages == EXPECTED_POOL


def test_match_rule_order():
    pool = [("plot", ["A cat sat.", "The cat sat on the mat.", "Dogs bark loudly."])]
    assert match_span("the cat sat on the mat", "", pool).kind == "exact"
    m = match_span("cat sat", "", pool)  # in two sentences: the most specific one
    assert (m.kind, m.start) == ("contained", 0)
    m = match_span("on the mat. Dogs bark", "", pool)
    assert (m.kind, m.start, m.end) == ("run", 1, 3)
    m = match_span("", "dogs are loud and bark", pool)
    assert (m.kind, m.start) == ("overlap", 2)
    assert match_span("zebra", "giraffe", pool).kind == "unmatched"
    # runs only over prose, never across comments
    assert match_span("sat. The cat", "", [("comments", pool[0][1])]).kind == "overlap"
    assert clean_pool_text("  a\n\n b ") == "a b"


def test_multi_reference_fields(holle_datapath):
    folder = holle_datapath / "holl_e"
    multi = read_multi_reference(str(folder / "multi_reference_test.json"))
    assert multi["ts_0_1"].spans == ["2019", CHAT_A[3][2], ""] and multi["ts_0_1"].int_spans == 1
    stats = HolleStats()
    chats = list(read_holle(str(folder / "test_data.json"), multi=multi, stats=stats))
    a, b = chats[0], chats[1]
    plot, review, facts = EXPECTED_POOL[0][1], EXPECTED_POOL[1][1], EXPECTED_POOL[3][1]
    assert a[0].multi_responses == [CHAT_A[1][0], "Mara is a keeper of a lighthouse on an island."]
    assert a[0].multi_checked_sentences == [plot[0], plot[0]]
    assert a[1].multi_responses == [CHAT_A[3][0], "It came out in 2019.", "No idea, sorry."]
    assert a[1].multi_checked_sentences == [review[1], facts[0], NO_PASSAGE]
    assert a[2].multi_responses == [CHAT_A[5][0]]
    assert a[3].multi_responses == [CHAT_A[7][0]]  # no key ts_0_3
    assert a[3].multi_checked_sentences == [NO_PASSAGE]
    # the turn's own gold first (a merged run), then the reference's match in the
    # turn's pool, where the run is one entry
    merged = EXPECTED_GOLD["B"][0][1]
    assert b[0].multi_checked_sentences == [merged, merged]
    assert b[1].multi_responses == [CHAT_B[3][0], "Something else entirely."]
    c = stats.counts
    assert c["multi_turns"] == 5 and c["multi_missing"] == 7
    assert c["multi_gold_absent"] == 1 and c["multi_unused"] == 1
    assert c["multi_int_spans"] == 1 and c["multi_empty_spans"] == 1
    assert c["multi_unmatched"] == 1  # "xyzzy"


def test_real_multi_reference_file():
    path = real_file("holl_e", "multi_reference_test.json")
    multi = read_multi_reference(str(path))
    assert len(multi) == 4318
    assert sum(m.int_spans for m in multi.values()) == 90
    assert all(isinstance(s, str) for m in multi.values() for s in m.spans)
    episodes = {}
    for key in multi:
        _, ep, turn = key.split("_")
        episodes.setdefault(int(ep), []).append(int(turn))
    assert sorted(episodes) == list(range(913))
    # turn indices are contiguous from 0: SKT's counter equals the turn-pair index
    assert all(sorted(t) == list(range(len(t))) for t in episodes.values())


# ---------------------------------------------------------------------------------------
# malformed input


@pytest.mark.parametrize(
    "mutate, problem",
    [
        (lambda c: c.pop("spans"), "missing field 'spans'"),
        (lambda c: c["labels"].append(4), "differ in length"),
        (lambda c: c["labels"].__setitem__(1, 7), "labels[1] should be an int 0..4"),
        (lambda c: c["chat"].__setitem__(2, None), "chat[2] should be str"),
        (lambda c: c["documents"].pop("review"), "documents.review"),
        (lambda c: c["documents"]["fact_table"].pop("awards"), "fact_table.awards"),
        (lambda c: c.__setitem__("documents", []), "'documents' should be dict"),
    ],
)
def test_malformed_chat_reports_file_and_line(tmp_path, mutate, problem):
    chats = _main_data()
    chats[2] = json.loads(json.dumps(chats[2]))
    mutate(chats[2])
    path = _write_array(tmp_path / "train_data.json", chats)
    with pytest.raises(DatasetFormatError) as info:
        list(read_holle(str(path)))
    err = info.value
    assert err.path == str(path) and err.line == 4  # element 2 starts on line 4
    assert problem in str(err) and f"{path}:4" in str(err)


def test_skip_bad_rows_counts_and_keeps_the_rest(tmp_path):
    chats = _main_data()
    chats[1] = dict(chats[1], spans=chats[1]["spans"][:-1])
    chats[3] = "not a chat"
    path = _write_array(tmp_path / "train_data.json", chats)
    bad = BadRows(skip=True)
    kept = list(read_holle(str(path), bad))
    assert [c[0].dialogue_id for c in kept] == ["ts_0", "ts_2"]
    assert [e.line for e in bad.errors] == [3, 5]
    assert "skipped 2 malformed row(s) in train_data.json" in bad.summary()


def test_malformed_multi_reference(tmp_path):
    path = tmp_path / "multi_reference_test.json"
    path.write_text(
        '{\n"ts_0_0": {"responses": ["a"], "spans": ["a"]},\n'
        '"ts_0_1": {"responses": ["a", "b"], "spans": ["a"]}\n}\n'
    )
    with pytest.raises(DatasetFormatError) as info:
        read_multi_reference(str(path))
    assert info.value.line == 3 and "ts_0_1" in str(info.value)
    bad = BadRows(skip=True)
    assert list(read_multi_reference(str(path), bad)) == ["ts_0_0"] and len(bad.errors) == 1


# ---------------------------------------------------------------------------------------
# teacher


def test_teacher_messages(holle_datapath):
    acts = teacher_acts("docgraph:holle", holle_datapath, "train:ordered")
    assert len(acts) == 12
    first = acts[0]
    assert first["text"] == CHAT_A[0][0] and first["labels"] == [CHAT_A[1][0]]
    assert first["chosen_topic"] == "The Glass Harbor"
    assert first["title"] == "plot" and first["checked_sentence"] == EXPECTED_POOL[0][1][0]
    assert first["knowledge_passages"] == [[t, s] for t, s in EXPECTED_POOL]
    lines = first["knowledge"].splitlines()
    assert lines[first["checked_sentence_index"]] == f"plot {EXPECTED_POOL[0][1][0]}"
    assert "multi_eval_labels" not in first
    for act in acts:
        cands = act["label_candidates"]
        assert act["labels"][0] in cands and len(cands) == len(set(cands)) <= 20
    # seeded: the same candidates every time
    again = teacher_acts("docgraph:holle", holle_datapath, "train:ordered")
    assert [a["label_candidates"] for a in acts] == [a["label_candidates"] for a in again]
    assert [a["episode_done"] for a in acts[:4]] == [False, False, False, True]


def test_teacher_splits_and_multi(holle_datapath):
    assert len(teacher_acts("docgraph:holle", holle_datapath, "valid")) == 8
    plain = teacher_acts("docgraph:holle", holle_datapath, "test")
    assert not any("multi_eval_labels" in a for a in plain)
    multi = teacher_acts("docgraph:holle:multi", holle_datapath, "test")
    assert len(multi) == 12
    assert multi[0]["multi_eval_labels"] == [CHAT_A[1][0], MULTI["ts_0_0"]["responses"][1]]
    assert multi[1]["multi_checked_sentences"][1] == EXPECTED_POOL[3][1][0]
    assert all(a["multi_eval_labels"][0] == a["eval_labels"][0] for a in multi)
    # :multi changes nothing outside test
    assert not any("multi_eval_labels" in a for a in teacher_acts("docgraph:holle:multi", holle_datapath, "valid"))


def test_teacher_chosen_sent_labels(holle_datapath):
    acts = teacher_acts("docgraph:holle", holle_datapath, "valid", "--label-type", "chosen_sent")
    assert acts[0]["eval_labels"] == [f"plot {EXPECTED_POOL[0][1][0]}"]
    assert acts[3]["eval_labels"] == ["no_passages_used no_passages_used"]
    for act in acts:
        assert act["eval_labels"][0] in act["label_candidates"]


def test_verify_data_zero_problems(holle_datapath):
    from parlai.scripts.verify_data import setup_args, verify

    for task, dt in (("docgraph:holle", "train"), ("docgraph:holle:multi", "test")):
        opt = setup_args().parse_args(["-t", task, "--datapath", str(holle_datapath), "-dt", dt])
        counts = verify(opt)
        assert counts.pop("exs") == 12
        assert all(v == 0 for v in counts.values()), counts


def _teacher(task, datapath, datatype, *args):
    from parlai.core.params import ParlaiParser
    from parlai.core.teachers import create_task_agent_from_taskname

    opt = ParlaiParser(True, False).parse_args(
        ["-t", task, "--datapath", str(datapath), "-dt", datatype, *args]
    )
    return create_task_agent_from_taskname(opt)[0]


def test_skip_bad_rows_through_the_teacher(holle_datapath):
    path = holle_datapath / "holl_e" / "train_data.json"
    chats = _main_data()
    chats[0]["labels"] = chats[0]["labels"][:-1]
    _write_array(path, chats)
    with pytest.raises(DatasetFormatError):
        teacher_acts("docgraph:holle", holle_datapath, "train:ordered")
    teacher = _teacher("docgraph:holle", holle_datapath, "train:ordered", "--skip-bad-rows", "true")
    assert teacher.num_examples() == 8
    assert [e.line for e in teacher.bad_rows.errors] == [2]
    assert "skipped 1 malformed row(s) in train_data.json" in teacher.bad_rows.summary()
    assert teacher.stats.counts["unmatched"] == 2


def test_missing_file_offline_names_file_and_url(datapath):
    with pytest.raises(MissingDatasetFile) as info:
        teacher_acts("docgraph:holle", datapath, "train:ordered")
    msg = str(info.value)
    assert str(datapath / "holl_e" / "train_data.json") in msg
    assert "1XLrXU2_64FBVt3-3UwdprdyAGXOIc8ID" in msg and "drive.google.com" in msg
    folder = datapath / "holl_e"
    _write_array(folder / "test_data.json", _main_data())
    with pytest.raises(MissingDatasetFile) as info:
        teacher_acts("docgraph:holle:multi", datapath, "test")
    assert "multi_reference_test.json" in str(info.value)
    assert "1BIQ8VbXdndRSDaCkPEruaVv_8WegWeok" in str(info.value)
    with pytest.raises(MissingDatasetFile) as info:
        teacher_acts("docgraph:holle", datapath, "valid")
    assert "dev_data.json" in str(info.value) and "1xQBRDs5q_2xLOdOpbq7UeAmUM0Ht370A" in str(info.value)


def test_knowledge_turns_only(holle_datapath):
    """Holl-E shares the WoW label options: ``--knowledge-turns-only`` drops the
    'no_passages_used' turns and keeps the same candidates for the others."""
    args = ("--label-type", "chosen_sent")
    full = teacher_acts("docgraph:holle", holle_datapath, "valid", *args)
    kept = teacher_acts("docgraph:holle", holle_datapath, "valid", *args,
                        "--knowledge-turns-only", "true")
    nochosen = ["no_passages_used no_passages_used"]
    uses = [a for a in full if a["eval_labels"] != nochosen]
    assert 0 < len(uses) < len(full) and len(kept) == len(uses)
    assert [a["eval_labels"] for a in kept] == [a["eval_labels"] for a in uses]
    assert [a["label_candidates"] for a in kept] == [a["label_candidates"] for a in uses]


def test_movie_titles_as_skt(holle_datapath):
    """--holle-title movie: every passage, knowledge line and gold title is the movie name
    (SKT's conversion, which the papers follow); the gold line is still among the candidates
    and the sentences, gold and pool order are unchanged."""
    args = ("--label-type", "chosen_sent")
    source = teacher_acts("docgraph:holle", holle_datapath, "valid", *args)
    movie = teacher_acts("docgraph:holle", holle_datapath, "valid", *args, "--holle-title", "movie")
    assert len(source) == len(movie)
    for a, b in zip(source, movie):
        name = b["chosen_topic"]
        assert [s for _, s in b["knowledge_passages"]] == [s for _, s in a["knowledge_passages"]]
        assert {t for t, _ in b["knowledge_passages"]} == {name}
        assert all(line.startswith(name + " ") for line in b["knowledge"].splitlines())
        assert b["checked_sentence"] == a["checked_sentence"]
        assert b["checked_sentence_index"] == a["checked_sentence_index"]
        if a["title"] == "no_passages_used":
            assert b["title"] == "no_passages_used" and b["eval_labels"] == a["eval_labels"]
        else:
            assert b["title"] == name and b["eval_labels"] == [f"{name} {b['checked_sentence']}"]
        assert b["eval_labels"][0] in b["label_candidates"]
    assert source[0]["title"] == "plot"  # the default keeps the source names

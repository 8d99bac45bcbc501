"""
Entity linking (``parlai_docgraph.kg.linking``) and per-turn candidates
(``parlai_docgraph.kg.turns``): hand-written sentences, the real OpenDialKG entity list
(skipped when absent), leakage, and gold-path reachability on ``docgraph:sample_kg``.
"""

from __future__ import annotations

import os
import time
from typing import List

import pytest

from conftest import real_file
from parlai_docgraph.kg.linking import (
    DIALOGUE_STOP_WORDS,
    EntityLinker,
    normalize_with_offsets,
    split_suffix,
)
from parlai_docgraph.kg.store import KnowledgeGraph
from parlai_docgraph.kg.turns import canonical_triple, turn_candidates
from parlai_docgraph.tasks.docgraph.build import SAMPLE_DATAPATH
from parlai_docgraph.tasks.docgraph.readers import opendialkg as odkg
from parlai_docgraph.tasks.docgraph.readers import opendialkg_split

NAMES = [
    "Iron Man", "Iron Man 2", "Robert Downey Jr.", "Amélie", "Straße", "Film",
    "It", "The", "Up", "A", "2", "1999", "The Who", "",
    "Lincoln #12", "Lincoln", "Lincoln #3", "Hastings #12", "Hastings #7",
    "Zodiac (Crime Fiction Film)", "Gone Girl", "Gone Girl (Thriller Film)", "Yes",
]


@pytest.fixture(scope="module")
def linker() -> EntityLinker:
    return EntityLinker(NAMES)


def _pairs(linker: EntityLinker, text: str):
    out = []
    for m in linker.link(text):
        assert text[m.start:m.end] == m.surface
        out.append((m.surface, m.entity))
    return out


def test_longest_match_and_case(linker):
    text = "I loved iron man 2 more than IRON MAN, thanks to Robert Downey Jr.!"
    assert _pairs(linker, text) == [
        ("iron man 2", "Iron Man 2"), ("IRON MAN", "Iron Man"),
        ("Robert Downey Jr.", "Robert Downey Jr."),
    ]


def test_token_boundaries(linker):
    assert _pairs(linker, "Filmography of Ironman and Amélies") == []
    assert _pairs(linker, "(Film), 'Amélie'.") == [("Film", "Film"), ("Amélie", "Amélie")]


def test_stop_rule(linker):
    text = "Yes, it was up to the Who: a 2 hour film from 1999."
    assert _pairs(linker, text) == [("film", "Film")]
    assert _pairs(EntityLinker(NAMES, extra_stop_words=()), text)[0] == ("Yes", "Yes")
    numbers = EntityLinker(NAMES, link_numbers=True)
    assert ("1999", "1999") in _pairs(numbers, text)
    assert ("2", "2") not in _pairs(numbers, text)  # single character
    stop = DIALOGUE_STOP_WORDS | {"film"}
    assert _pairs(EntityLinker(NAMES, extra_stop_words=stop), text) == []


def test_suffix_and_qualifier_ranking(linker):
    assert split_suffix("The Unborn (Horror Film) #4") == ("The Unborn (Horror Film)", 4)
    (m,) = linker.link("Lincoln was tall.")
    assert m.entity == "Lincoln" and m.alternatives == ("Lincoln", "Lincoln #3", "Lincoln #12")
    (m,) = linker.link("hastings")
    assert m.entity == "Hastings #7" and m.alternatives == ("Hastings #7", "Hastings #12")
    m = linker.link("Zodiac, a crime fiction film")[0]  # qualifier-stripped alias
    assert m.entity == "Zodiac (Crime Fiction Film)" and m.surface == "Zodiac"
    (m,) = linker.link("Gone Girl")
    assert m.alternatives == ("Gone Girl", "Gone Girl (Thriller Film)")
    assert [x.entity for x in linker.link("zodiac (crime fiction film)")] == [
        "Zodiac (Crime Fiction Film)"
    ]


def test_unicode_normalisation(linker):
    full = "Ｉｒｏｎ Ｍａｎ"  # fullwidth -> NFKC ASCII
    assert _pairs(linker, f"see {full}!") == [(full, "Iron Man")]
    assert _pairs(linker, "the STRASSE") == [("STRASSE", "Straße")]  # casefold ß -> ss
    decomposed = "Ame\u0301lie"  # e + combining acute
    assert _pairs(linker, f"{decomposed} rocks") == [(decomposed, "Amélie")]
    norm, starts, ends = normalize_with_offsets("ﬁlm ß")
    assert norm == "film ss" and starts[:2] == [0, 0] and ends[-2:] == [5, 5]


def test_link_turns_order(linker):
    assert linker.link_turns(["Amélie?", "Iron Man and Amélie"]) == ["Amélie", "Iron Man"]


# ------------------------------------------------------------------------ real names
@pytest.fixture(scope="module")
def real_names() -> List[str]:
    path = real_file("opendialkg", "opendialkg_entities.txt")
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")


def test_real_entity_list(real_names):
    assert len(real_names) == 100_813
    start = time.perf_counter()
    real = EntityLinker(real_names)
    build = time.perf_counter() - start
    assert build < 30, build
    text = (
        "Do you like Iron Man? Robert Downey Jr. was also in Zodiac, a crime fiction "
        "film. I visited CHIȘINĂU and read The Unborn."
    )
    start = time.perf_counter()
    mentions = real.link(text)
    per_turn = time.perf_counter() - start
    assert per_turn < 0.5
    found = {m.entity for m in mentions}
    assert {"Iron Man", "Robert Downey Jr.", "Chișinău"} <= found
    alts = {a for m in mentions for a in m.alternatives}
    assert {"Zodiac (Crime Fiction Film)", "The Unborn (Horror Film) #4"} <= alts
    assert all(text[m.start:m.end] == m.surface for m in mentions)
    assert not {"It", "The", "Up"} & found
    assert not real.link("Yes, it is up to you, I think it's 2 or 3.")


# ------------------------------------------------------------------------ turns
SMALL = [
    ("Iron Man", "starred_actors", "Robert Downey Jr."),
    ("Zodiac (Crime Fiction Film)", "starred_actors", "Robert Downey Jr."),
    ("Zodiac (Crime Fiction Film)", "starred_actors", "Jake Gyllenhaal"),
    ("End of Watch", "starred_actors", "Jake Gyllenhaal"),
    ("End of Watch", "written_by", "David Ayer"),
]


def test_turn_candidates_small_kg_and_leakage():
    kg = KnowledgeGraph.from_triples(SMALL)
    linker = EntityLinker(kg.entities)
    dialogue = [
        "Do you like Iron Man",
        "Sure do! Robert Downey Jr. is a favorite.",
        "He was also in Zodiac a crime fiction film.",
        "Jake Gyllenhaal starred as well.",
        "He also starred in End of Watch.",
    ]
    gold = [["Robert Downey Jr.", "~starred_actors", "Zodiac (Crime Fiction Film)"]]
    first = turn_candidates(kg, linker, dialogue[:1], gold_path=gold)
    assert first.mentioned == ["Iron Man"]
    assert first.gold_reachable is False  # needs Robert Downey Jr. mentioned first
    later = turn_candidates(kg, linker, dialogue[:2], gold_path=gold)
    assert later.mentioned == ["Iron Man", "Robert Downey Jr."] and later.gold_reachable
    path = later.paths[later.gold_index]
    assert later.linearized[later.gold_index] == (
        "[Head] Robert Downey Jr. [Rev1] starred_actors [Rev2] Zodiac (Crime Fiction Film) [Tail]"
    )
    assert canonical_triple(kg, gold[0]) == path[0].triple
    for cut in range(1, len(dialogue)):
        c = turn_candidates(kg, linker, dialogue[:cut])
        future = set(linker.link_turns(dialogue[cut:])) - set(linker.link_turns(dialogue[:cut]))
        assert future and not future & set(c.mentioned)
        assert {p[0].source for p in c.paths} <= set(c.mentioned)
        assert len(c.linearized) == len(c.paths)
        on_paths = {e for p in c.paths for h in p for e in (h.source, h.target)}
        assert set(c.katz) <= on_paths and all(v > 0 for v in c.katz.values())
    assert turn_candidates(kg, linker, ["hello there"]).paths == []


def test_sample_kg_gold_reachability():
    folder = os.path.join(SAMPLE_DATAPATH, "opendialkg")
    kg = KnowledgeGraph.from_file(os.path.join(folder, "opendialkg_triples.txt"))
    linker = EntityLinker(kg.entities)
    data = odkg.read_opendialkg(os.path.join(folder, "opendialkg.csv"))
    split, _ = opendialkg_split.split_rows(data.num_rows)
    rows = set(split["train"])
    turns = with_gold = reachable = 0
    for dialogue in data.dialogues:
        if dialogue.index not in rows:
            continue
        texts = [t.text for t in dialogue.turns]
        for turn in odkg.assistant_turns(dialogue):
            history = turn.history + ([turn.text] if turn.text else [])
            c = turn_candidates(kg, linker, history, gold_path=turn.gold_path)
            same = turn_candidates(kg, linker, history)  # gold never changes candidates
            assert same.paths == c.paths and same.katz == c.katz
            assert set(c.mentioned) == set(linker.link_turns(history))
            assert {p[0].source for p in c.paths} <= set(c.mentioned)
            later = texts[len(history):]  # the response and every later turn
            future = set(linker.link_turns(later)) - set(linker.link_turns(history))
            assert not future & set(c.mentioned), (turn.dialogue_id, turn.turn_index)
            turns += 1
            if turn.gold_path:
                with_gold += 1
                reachable += bool(c.gold_reachable)
    share = reachable / with_gold
    print(f"sample_kg train: {turns} turns, {with_gold} with a gold path, "
          f"gold reachable {reachable}/{with_gold} = {share:.3f}")
    assert turns == 110 and share > 0.5

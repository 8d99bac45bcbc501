"""
Tests of the pure KG library ``parlai_docgraph.kg``: store, Katz,
candidate paths, linearization, trie and graph-constrained decoding.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import List

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parlai_docgraph.kg.constrained import GraphConstrainedLogitsProcessor
from parlai_docgraph.kg.katz import katz_scores, katz_vector
from parlai_docgraph.kg.linearize import Linearizer
from parlai_docgraph.kg.store import KnowledgeGraph
from parlai_docgraph.kg.subgraph import Hop, candidate_paths
from parlai_docgraph.kg.trie import PathTrie, build_path_trie, token_values

REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real" / "opendialkg"

MOVIES = [
    ("Iron Man", "starred_actors", "Robert Downey Jr."),
    ("Iron Man 2", "starred_actors", "Robert Downey Jr."),
    ("Iron Man", "directed_by", "Jon Favreau"),
    ("Iron Man", "has_genre", "Action"),
    ("The Avengers", "starred_actors", "Robert Downey Jr."),
    ("The Avengers", "has_genre", "Action"),
    ("Robert Downey Jr.", "~starred_actors", "Sherlock Holmes"),  # = (Sherlock Holmes, starred_actors, RDJ)
    ("Chef", "directed_by", "Jon Favreau"),
    ("Jon Favreau", "born_in", "Queens"),
]


@pytest.fixture
def kg() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples(MOVIES)


# --------------------------------------------------------------------------- store
def test_store_vocab_direction_and_dedup() -> None:
    g = KnowledgeGraph.from_triples(MOVIES + [("Jon Favreau", "~directed_by", "Chef")])
    assert g.num_triples == len(MOVIES)  # the ~ spelling of an existing edge collapses
    assert "~starred_actors" not in g.relations and g.num_relations == 4
    assert g.has_triple("Sherlock Holmes", "starred_actors", "Robert Downey Jr.")
    assert g.has_triple("Robert Downey Jr.", "~starred_actors", "Sherlock Holmes")
    assert not g.has_triple("Robert Downey Jr.", "starred_actors", "Sherlock Holmes")
    assert not g.has_triple("Iron Man", "nope", "Action")
    assert g.relation_id("~has_genre") == (g.relation_id("has_genre")[0], True)
    nb = g.neighbors("Jon Favreau")
    assert ("born_in", "Queens", True) in nb
    assert ("directed_by", "Iron Man", False) in nb and ("directed_by", "Chef", False) in nb


def test_store_sparse_views(kg: KnowledgeGraph) -> None:
    a = kg.A.toarray()
    assert (a == a.T).all() and set(np.unique(a)) <= {0.0, 1.0}
    i, j = kg.entity_id("Iron Man"), kg.entity_id("Robert Downey Jr.")
    assert a[i, j] == a[j, i] == 1
    fwd, bwd = kg.forward, kg.backward
    assert fwd.nnz == bwd.nnz == kg.num_triples
    row = fwd.getrow(i)
    assert set(zip(row.indices.tolist(), row.data.tolist())) == {
        (kg.entity_id(t), kg.relation_id(r)[0]) for h, r, t in MOVIES if h == "Iron Man"
    }
    f, b = fwd.tocoo(), bwd.tocoo()  # explicit entries, relation id 0 included
    assert sorted(zip(f.col.tolist(), f.row.tolist(), f.data.tolist())) == sorted(
        zip(b.row.tolist(), b.col.tolist(), b.data.tolist())
    )
    rels, heads = kg.in_edges(j)
    assert {kg.entities[h] for h in heads.tolist()} == {
        "Iron Man", "Iron Man 2", "The Avengers", "Sherlock Holmes"
    }


def test_store_seeded_vocabulary_keeps_ids() -> None:
    g = KnowledgeGraph.from_triples([("b", "r", "c")], entities=["", "a", "b"])
    assert g.entities == ["", "a", "b", "c"] and g.entity_id("b") == 2
    with pytest.raises(ValueError):
        KnowledgeGraph.from_triples([], entities=["a", "a"])


def test_from_file_errors_and_skip(tmp_path: Path) -> None:
    p = tmp_path / "kg.txt"
    p.write_text("a\tr\tb\n\nb\t~r\tc\nbroken line\na\t\tb\nc\tr\ta\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"kg\.txt:4"):
        KnowledgeGraph.from_file(p)
    g = KnowledgeGraph.from_file(p, skip_bad=True)
    assert g.skipped_lines == 2 and g.num_triples == 3
    assert g.has_triple("c", "r", "b") and g.has_triple("c", "r", "a")
    q = tmp_path / "ok.txt"
    q.write_text("\n".join("\t".join(t) for t in MOVIES), encoding="utf-8")
    assert sorted(KnowledgeGraph.from_file(q).triples()) == sorted(
        KnowledgeGraph.from_triples(MOVIES).triples()
    )


_triples = st.lists(
    st.tuples(st.integers(0, 6), st.sampled_from(["r", "s", "~r", "~s", "t"]), st.integers(0, 6)),
    max_size=30,
)


@settings(max_examples=60, deadline=None, database=None)
@given(raw=_triples)
def test_store_matches_brute_force(raw) -> None:
    triples = [(f"e{a}", r, f"e{b}") for a, r, b in raw]
    g = KnowledgeGraph.from_triples(triples)
    facts = {(t, r[1:], h) if r.startswith("~") else (h, r, t) for h, r, t in triples}
    assert set(g.triples()) == facts and g.num_triples == len(facts)
    for h, r, t in triples:
        assert g.has_triple(h, r, t)
    for e in g.entities:
        expect = {(r, t, True) for h, r, t in facts if h == e} | {(r, h, False) for h, r, t in facts if t == e}
        assert set(g.neighbors(e)) == expect and len(g.neighbors(e)) == len(expect)
    dense = np.zeros((g.num_entities,) * 2)
    for h, _, t in facts:
        dense[g.entity_id(h), g.entity_id(t)] = dense[g.entity_id(t), g.entity_id(h)] = 1
    assert (g.A.toarray() == dense).all()


@pytest.mark.skipif(not (REAL / "opendialkg_entities.txt").exists(), reason="real lists absent")
def test_generated_kg_over_real_names(tmp_path: Path) -> None:
    ents = (REAL / "opendialkg_entities.txt").read_text(encoding="utf-8").split("\n")
    rels = (REAL / "opendialkg_relations.txt").read_text(encoding="utf-8").split("\n")
    assert len(ents) == 100_813 and len(rels) == 1_358
    names = [e for e in ents if e]
    rng = np.random.default_rng(0)
    n = 200_000
    h, r, t = (rng.integers(0, m, n).tolist() for m in (len(names), len(rels), len(names)))
    p = tmp_path / "triples.txt"
    p.write_text("\n".join(f"{names[a]}\t{rels[b]}\t{names[c]}" for a, b, c in zip(h, r, t)), "utf-8")
    g = KnowledgeGraph.from_file(p, entities=ents)
    assert g.num_entities == len(ents) and g.entity_id(ents[5]) == 5
    assert g.num_relations == 679  # ~r collapses onto r
    for a, b, c in list(zip(h, r, t))[:200]:
        assert g.has_triple(names[a], rels[b], names[c])
    ids = [g.entity_id(names[x]) for x in h[:3]]
    vec = katz_vector(g, ids, 0.1, 2)
    adj = g.adjacency("count")
    cols = adj[:, sorted(set(ids))].toarray()  # A x and A (A x) by hand, for 3 columns only
    one = cols.mean(axis=1)
    assert np.allclose(vec, 0.1 * one + 0.01 * (adj @ one))


# --------------------------------------------------------------------------- Katz
def _dense_katz(adj: np.ndarray, ids: List[int], beta: float, k: int) -> np.ndarray:
    """Eq. 6 by dense powers: mean over mentioned m of sum_l beta^l (A^l)[m, i] (the row:
    walks leaving m; for a symmetric A the printed column (A^l)[i, m] is the same)."""
    total = np.zeros_like(adj)
    power = np.eye(adj.shape[0])
    for level in range(1, k + 1):
        power = power @ adj
        total += beta ** level * power
    return total[sorted(set(ids)), :].mean(axis=0)


def _dense_adjacency(n: int, triples, kind: str) -> np.ndarray:
    adj = np.zeros((n, n))
    for a, _, b in set(triples):  # the store keeps each triple once
        if kind == "binary":
            adj[a, b] = adj[b, a] = 1.0
        elif kind == "directed":
            adj[a, b] += 1.0
        else:  # count: each relation joins both ways; a self-loop is one relation
            adj[a, b] += 1.0
            if a != b:
                adj[b, a] += 1.0
    return adj


@settings(max_examples=60, deadline=None, database=None)
@given(
    n=st.integers(2, 9),
    edges=st.lists(st.tuples(st.integers(0, 8), st.integers(0, 2), st.integers(0, 8)), max_size=25),
    mentioned=st.lists(st.integers(0, 8), min_size=1, max_size=4),
    beta=st.floats(0.01, 1.0),
    k=st.integers(1, 3),
    kind=st.sampled_from(["binary", "count", "directed"]),
)
def test_katz_matches_dense(n: int, edges, mentioned, beta: float, k: int, kind: str) -> None:
    names = [f"e{i}" for i in range(n)]
    triples = [(a % n, r, b % n) for a, r, b in edges]
    g = KnowledgeGraph.from_triples([(names[a], f"r{r}", names[b]) for a, r, b in triples],
                                    entities=names)
    assert (g.adjacency(kind).toarray() == _dense_adjacency(n, triples, kind)).all()
    ids = [m % n for m in mentioned]
    expected = _dense_katz(_dense_adjacency(n, triples, kind), ids, beta, k)
    got = katz_scores(g, [names[i] for i in ids], beta, k, adjacency=kind)
    assert np.allclose([got.get(x, 0.0) for x in names], expected, rtol=1e-9, atol=1e-12)
    assert all(v != 0 for v in got.values())


def test_katz_counts_parallel_relations_and_direction() -> None:
    """Park Eq. 6: A^k counts paths. Two relations joining the same pair are two paths
    (binary 0/1 collapsed them); directed counts only walks leaving the mentioned entity
    along relation directions."""
    kg = KnowledgeGraph.from_triples([
        ("Inception", "directed_by", "Nolan"), ("Inception", "written_by", "Nolan"),
        ("Inception", "starred_actors", "DiCaprio"), ("Tenet", "directed_by", "Nolan"),
    ])
    count = katz_scores(kg, ["Inception"], beta=0.5, k=1, adjacency="count")
    binary = katz_scores(kg, ["Inception"], beta=0.5, k=1, adjacency="binary")
    assert count["Nolan"] == pytest.approx(2 * count["DiCaprio"]) == pytest.approx(1.0)
    assert binary["Nolan"] == pytest.approx(binary["DiCaprio"])
    assert katz_scores(kg, ["Inception"], 0.5, 1) == count  # count is the default
    # from Nolan, whose relations all point at him: no directed walk leaves
    assert katz_scores(kg, ["Nolan"], 0.5, 2, adjacency="directed") == {}
    assert katz_scores(kg, ["Nolan"], 0.5, 2, adjacency="count")["Tenet"] == pytest.approx(0.5)
    directed = katz_scores(kg, ["Inception"], 0.5, 2, adjacency="directed")
    assert directed == {"Nolan": pytest.approx(1.0), "DiCaprio": pytest.approx(0.5)}
    with pytest.raises(ValueError, match="adjacency"):
        kg.adjacency("weighted")


def test_katz_is_not_constant(kg: KnowledgeGraph) -> None:
    s = katz_scores(kg, ["Iron Man"], beta=0.1, k=2)
    assert len(set(round(v, 12) for v in s.values())) > 2
    assert s["Robert Downey Jr."] > s["The Avengers"] > 0  # 1 hop beats 2 hops
    assert s["Robert Downey Jr."] == pytest.approx(0.1)  # no 2-walk Iron Man -> RDJ
    assert s["The Avengers"] == pytest.approx(0.02)  # via RDJ and via Action
    assert "Queens" in s and "Sherlock Holmes" in s and s["Queens"] == pytest.approx(0.01)
    assert katz_scores(kg, ["not an entity"], 0.1) == {}


# --------------------------------------------------------------------------- candidate paths
def test_candidate_paths_directions_and_validity(kg: KnowledgeGraph) -> None:
    paths = candidate_paths(kg, ["Robert Downey Jr.", "nobody", "Robert Downey Jr."])
    assert paths == candidate_paths(kg, ["Robert Downey Jr."])  # deterministic, deduped
    one = [p for p in paths if len(p) == 1]
    assert {p[0].target for p in one} == {"Iron Man", "Iron Man 2", "The Avengers", "Sherlock Holmes"}
    assert all(p[0].reverse for p in one)  # RDJ is only ever a tail
    assert max(i for i, p in enumerate(paths) if len(p) == 1) < min(
        i for i, p in enumerate(paths) if len(p) == 2
    )
    for p in paths:
        assert p[0].source == "Robert Downey Jr."
        ents = [p[0].source] + [h.target for h in p]
        assert len(set(ents)) == len(ents)  # simple paths
        for a, b in zip(p, p[1:]):
            assert a.target == b.source
        for h in p:
            assert kg.has_triple(*h.triple)
    assert (
        Hop("Robert Downey Jr.", "starred_actors", "Iron Man", True),
        Hop("Iron Man", "directed_by", "Jon Favreau", False),
    ) in paths


def test_candidate_paths_caps() -> None:
    triples = [("hub", "r", f"x{i:02d}") for i in range(30)] + [("hub", "s", f"y{i}") for i in range(5)]
    triples += [(f"x{i:02d}", "q", f"z{i}") for i in range(30)]
    g = KnowledgeGraph.from_triples(triples)
    paths = candidate_paths(g, ["hub"], max_paths_per_entity=20, max_per_relation=4)
    assert len(paths) == 12  # 4 + 4 one-hop; x00..x03 each lead on to one z
    one = [p[0].target for p in paths if len(p) == 1]
    assert one == ["x00", "x01", "x02", "x03", "y0", "y1", "y2", "y3"]
    assert [p[-1].target for p in paths if len(p) == 2] == ["z0", "z1", "z2", "z3"]
    capped = candidate_paths(g, ["hub"], max_paths_per_entity=3, max_per_relation=4)
    assert [p[-1].target for p in capped] == ["x00", "x01", "x02", "z0", "z1", "z2"]
    assert len(candidate_paths(g, ["hub"], hops=1, max_paths_per_entity=100, max_per_relation=100)) == 35


@settings(max_examples=40, deadline=None, database=None)
@given(raw=_triples, start=st.integers(0, 6))
def test_candidate_paths_match_networkx(raw, start) -> None:
    import networkx as nx

    triples = [(f"e{a}", r, f"e{b}") for a, r, b in raw]
    g = KnowledgeGraph.from_triples(triples)
    m = f"e{start}"
    got = candidate_paths(g, [m], max_paths_per_entity=10**6, max_per_relation=10**6)
    assert len(set(got)) == len(got)
    multi = nx.MultiGraph()
    for h, r, t in g.triples():
        multi.add_edge(h, t, key=(h, r, t))
    expect = set()
    if m in multi:
        for path in nx.all_simple_edge_paths(multi, m, [n for n in multi if n != m], cutoff=2):
            cur, hops = m, []
            for u, v, (h, r, t) in path:
                nxt = v if u == cur else u
                hops.append(Hop(cur, r, nxt, reverse=(h != cur or (h == t))))
                cur = nxt
            expect.add(tuple(hops))
    assert set(got) == expect


# --------------------------------------------------------------------------- linearization
def test_linearize_paper_example_and_slots() -> None:
    lin = Linearizer()
    path = (Hop("e2", "r2", "e3", reverse=True),)
    assert lin.linearize_path(path) == "[Head] e2 [Rev1] r2 [Rev2] e3 [Tail]"
    assert lin.parse_triples("[Head] e2 [Rev1] r2 [Rev2] e3 [Tail]") == [("e3", "r2", "e2")]
    two = (Hop("e1", "r1", "e2"), Hop("e2", "r2", "e3", True))
    lin2 = Linearizer(slot_tokens=2)
    text = lin2.linearize([two, path])
    assert text == (
        "[Head] e1 [Int1_1] [Int1_2] r1 [Int2_1] [Int2_2] e2 [Rev3_1] [Rev3_2] r2 [Rev4_1] [Rev4_2] e3"
        " [Tail] [SEP] [Head] e2 [Rev1_1] [Rev1_2] r2 [Rev2_1] [Rev2_2] e3 [Tail]"
    )
    assert lin2.parse_paths(text) == [two, path]
    assert len(lin2.special_tokens()) == 3 + 2 * 2 * 4 and len(set(lin2.special_tokens())) == 19
    assert lin2.parse_paths(text.replace(" ", "")) == [two, path]  # decoded text may lose spaces


def test_linearize_three_triples_is_closed() -> None:
    lin = Linearizer(max_hops=3)
    p = (Hop("a", "r", "b"), Hop("b", "s", "c", True), Hop("c", "t", "d"))
    text = lin.linearize([p, p[:1]])
    assert text.count("[Head]") == text.count("[Tail]") == 2
    assert text.split(" [SEP] ")[0].endswith("d [Tail]") and "[Int5] t [Int6] d" in text
    assert lin.parse_paths(text) == [p, p[:1]]
    with pytest.raises(ValueError):
        Linearizer(max_hops=2).linearize([p])


def test_parse_malformed() -> None:
    lin = Linearizer()
    bad = "[Head] a [Int1] r [Rev2] b [Tail] [SEP] [Head] a [Int1] r [Int2] b [Tail] [SEP] [Head] a [Int1] r"
    with pytest.raises(ValueError):
        lin.parse_paths(bad)
    assert lin.parse_triples(bad, strict=False) == [("a", "r", "b")]
    assert lin.parse_paths("") == [] and lin.parse_paths("junk", strict=False) == []
    for name in ["", " a", "x [Tail] y"]:
        with pytest.raises(ValueError):
            lin.linearize([(Hop(name, "r", "b"),)])


_name = st.text(st.sampled_from("ab[]_ /~#Ü1"), min_size=1, max_size=8).map(str.strip).filter(bool)


@settings(max_examples=80, deadline=None, database=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    slot_tokens=st.integers(1, 3),
    paths=st.lists(
        st.tuples(_name, st.lists(st.tuples(_name, _name, st.booleans()), min_size=1, max_size=3)),
        min_size=1,
        max_size=4,
    ),
)
def test_linearize_round_trip(slot_tokens: int, paths) -> None:
    lin = Linearizer(slot_tokens=slot_tokens, max_hops=3)
    built = []
    for start, steps in paths:
        hops, cur = [], start
        for rel, nxt, rev in steps:
            hops.append(Hop(cur, rel, nxt, rev))
            cur = nxt
        built.append(tuple(hops))
    try:
        text = lin.linearize(built)
    except ValueError:  # a generated name spells a special token, e.g. "[Int1]"
        return
    assert lin.parse_paths(text) == built
    assert lin.parse_triples(text) == [h.triple for p in built for h in p]


# --------------------------------------------------------------------------- trie
def make_tokenizer(lin: Linearizer, texts: List[str]):
    """A WordLevel fast tokenizer over the words of ``texts`` plus the special tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    special = set(lin.special_tokens())
    words = ["<pad>", "</s>", "<unk>"] + sorted({w for t in texts for w in t.split()} - special)
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens(lin.special_tokens())
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )


DIALOG = ["do you like Robert Downey Jr. ?", "who directed Iron Man ? Jon Favreau did"]


def _setup(slot_tokens: int = 1):
    g = KnowledgeGraph.from_triples(MOVIES)
    lin = Linearizer(slot_tokens=slot_tokens)
    texts = DIALOG + [" ".join(t) for t in MOVIES] + [" ".join(t) for t in g.triples()]
    return g, lin, make_tokenizer(lin, texts)


def test_path_trie_basics() -> None:
    t = PathTrie()
    t.insert([1, 2, 3], ["a", "a", None])
    t.insert([1, 2, 4], ["b", "b", "b"])
    t.insert([5])
    assert sorted(t.allowed([])) == [1, 5] and sorted(t.allowed([1, 2])) == [3, 4]
    assert t.allowed([1, 2, 3]) == [] and t.allowed([9]) == [] and t.node([9]) is None
    n = t.node([1])
    assert t.values(n) == ("a", "b") and t.values(t.node([1, 2, 4])) == ("b",)
    assert t.num_sequences == 3 and t.num_nodes == 6
    # the token after an entity span counts for that entity
    text = "[H] ab cd [T] e"
    offs = [(0, 3), (4, 6), (7, 9), (10, 13), (14, 15)]
    assert token_values(text, offs, [(4, 9, "X")]) == [None, "X", "X", "X", None]
    offs = [(0, 3), (3, 4), (4, 6), (7, 9), (9, 10), (10, 13), (14, 15)]  # lone-space tokens
    assert token_values(text, offs, [(4, 9, "X")]) == [None, None, "X", "X", "X", "X", None]


def test_build_path_trie_values() -> None:
    g, lin, tok = _setup()
    paths = candidate_paths(g, ["Robert Downey Jr."])
    trie = build_path_trie(paths, lin, tok)
    assert trie.num_sequences == len(paths)
    ids = tok("[Head] Robert Downey Jr. [Rev1] starred_actors [Rev2] Iron", add_special_tokens=False)["input_ids"]
    node = trie.node(ids)
    assert set(trie.values(node)) == {"Iron Man", "Iron Man 2"}
    man = trie.children(trie.node(ids + [tok.convert_tokens_to_ids("Man")]))
    by_tok = {tok.convert_ids_to_tokens(k): trie.values(v) for k, v in man.items()}
    assert by_tok == {"[Tail]": ("Iron Man",), "2": ("Iron Man 2",), "[Int3]": ("Iron Man",)}
    for p in paths:  # every inserted sequence is walkable and ends in </s>
        seq = tok(lin.linearize_path(p), add_special_tokens=False)["input_ids"]
        assert trie.allowed(seq) == [tok.eos_token_id]


def test_trie_with_sentencepiece_style_tokenizer() -> None:
    """A Unigram + Metaspace tokenizer trained here: decoded trie sequences parse back."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    g, lin, _ = _setup(2)
    raw = Tokenizer(models.Unigram())
    raw.pre_tokenizer, raw.decoder = pre_tokenizers.Metaspace(), decoders.Metaspace()
    specials = ["<pad>", "</s>", "<unk>"] + lin.special_tokens()
    trainer = trainers.UnigramTrainer(vocab_size=150, special_tokens=specials, unk_token="<unk>")
    raw.train_from_iterator(DIALOG + [" ".join(t) for t in MOVIES], trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    paths = candidate_paths(g, ["Robert Downey Jr.", "Jon Favreau"])
    trie = build_path_trie(paths, lin, tok)
    for p in paths:
        ids = tok(lin.linearize_path(p), add_special_tokens=False)["input_ids"]
        assert trie.allowed(ids) == [tok.eos_token_id]
        assert lin.parse_paths(tok.decode(ids, skip_special_tokens=False)) == [p]
    head = tok("[Head] Robert Downey Jr. [Rev1_1] [Rev1_2] starred_actors [Rev2_1] [Rev2_2] Iron Man",
               add_special_tokens=False)["input_ids"]
    node = trie.node(head)
    # every continuation after "... Iron Man" is attributed to an entity: ending the name
    # (then [Tail] / [Int3..]) counts for Iron Man, going on counts for Iron Man 2
    seen = set()
    stack = [node]
    while stack:
        n = stack.pop()
        for tid, child in trie.children(n).items():
            vals = trie.values(child)
            assert vals, tok.convert_ids_to_tokens(tid)
            seen.update(vals)
            if tok.convert_ids_to_tokens(tid).strip("\u2581") == "":
                stack.append(child)
    assert seen == {"Iron Man", "Iron Man 2"}


# --------------------------------------------------------------------------- constrained decoding
def _finite(out: torch.Tensor) -> List[int]:
    return torch.isfinite(out[0]).nonzero().flatten().tolist()


def test_processor_signature_is_read_not_rebuilt() -> None:
    """What ``LogitsProcessorList`` inspects at each step is the instance's plain function
    with a stored ``(input_ids, scores)`` signature (not a bound method, whose signature
    inspect rebuilds per call), and calling through the list equals calling the processor."""
    import copy
    import inspect
    import pickle
    import types

    from transformers import LogitsProcessorList

    trie = PathTrie()
    trie.insert([5, 6, 1], [None, "X", None])
    trie.insert([5, 7, 1], [None, "Y", None])
    ids, scores = torch.tensor([[0, 5]]), torch.randn(1, 10)

    def make():
        return GraphConstrainedLogitsProcessor([trie], 1, entity_scores=[{"X": 3.0, "Y": 1.0}])

    proc = make()
    assert isinstance(proc.__call__, types.FunctionType) and "__signature__" in vars(proc.__call__)
    assert list(inspect.signature(proc.__call__).parameters) == ["input_ids", "scores"]
    assert torch.equal(LogitsProcessorList([proc])(ids, scores), make()(ids, scores))
    assert _finite(make()(ids, scores)) == [6, 7]
    clone = copy.deepcopy(make())  # a copy's call function is its own, not the original's
    clone.__call__(ids, scores)
    assert len(clone._nodes[0]) > 1 and torch.equal(LogitsProcessorList([clone])(ids, scores), make()(ids, scores))
    original = make()
    pickle.loads(pickle.dumps(original)).__call__(ids, scores)
    assert len(original._nodes[0]) == 1  # the unpickled one looked up its own prefixes


def test_processor_mask_mixing_and_safety() -> None:
    trie = PathTrie()
    trie.insert([5, 6, 1], [None, "X", None])
    trie.insert([5, 7, 1], [None, "Y", None])
    katz = [{"X": 3.0, "Y": 1.0}]
    scores = torch.zeros(1, 10)  # uniform p_LM: log p = -log 10

    def run(prefix: List[int], table=katz, alpha: float = 0.8, norm: str = "vocab") -> torch.Tensor:
        proc = GraphConstrainedLogitsProcessor([trie], 1, num_beams=1, entity_scores=table,
                                               alpha=alpha, lm_norm=norm)
        return proc(torch.tensor([[0] + prefix]), scores)

    out = run([])
    assert _finite(out) == [5] and out[0, 5].item() == pytest.approx(0.8 * -math.log(10))
    out = run([5])  # entity branch: p_graph = (3/4, 1/4)
    assert _finite(out) == [6, 7]
    assert (out[0, 6] - out[0, 7]).item() == pytest.approx(0.2 * math.log(3.0))
    assert out[0, 6].item() == pytest.approx(0.8 * -math.log(10) + 0.2 * math.log(0.75))
    hard = run([5], table=None)
    assert hard[0, 6].item() == hard[0, 7].item() == pytest.approx(0.8 * -math.log(10))
    # Park Eq. 3 as the paper restricts p_LM to the valid set (lm_norm="allowed", default):
    # p_LM renormalised over the allowed tokens, so a forced step costs nothing
    only = run([], norm="allowed")
    assert _finite(only) == [5] and only[0, 5].item() == pytest.approx(0.0, abs=1e-6)
    both = run([5], norm="allowed")
    assert both[0, 6].item() == pytest.approx(0.8 * -math.log(2) + 0.2 * math.log(0.75))
    skewed = torch.zeros(1, 10)
    skewed[0, 6], skewed[0, 3] = math.log(3.0), 5.0  # token 3 is outside the trie
    proc = GraphConstrainedLogitsProcessor([trie], 1, num_beams=1, entity_scores=None)
    assert proc.lm_norm == "allowed"
    got = proc(torch.tensor([[0, 5]]), skewed)
    assert got[0, 6].item() == pytest.approx(0.8 * math.log(0.75))  # 3 : 1 among {6, 7}
    assert got[0, 7].item() == pytest.approx(0.8 * math.log(0.25))
    with pytest.raises(ValueError, match="lm_norm"):
        GraphConstrainedLogitsProcessor([trie], 1, lm_norm="softmax")
    zero = run([5], table=[{}])  # equal (zero) informativeness: uniform p_graph
    assert zero[0, 6].item() == zero[0, 7].item()
    for prefix in ([5, 6, 1], [9], [5, 9, 9]):  # ended, or off the trie: EOS only
        assert _finite(run(prefix)) == [1]
    proc = GraphConstrainedLogitsProcessor([trie, trie], 1, num_beams=2, entity_scores=katz * 2)
    batch = proc(torch.tensor([[0, 5], [0, 9], [0, 5], [0, 5]]), torch.randn(4, 10))
    assert torch.isfinite(batch).any(dim=1).all()
    assert torch.isfinite(batch).sum(dim=1).tolist() == [2, 1, 2, 2]
    with pytest.raises(ValueError):
        proc(torch.tensor([[0, 5]] * 3), torch.randn(3, 10))


def _tiny_t5(vocab: int, pad: int, eos: int):
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    cfg = T5Config(
        vocab_size=vocab, d_model=32, d_ff=64, d_kv=8, num_heads=4, num_layers=2,
        num_decoder_layers=2, pad_token_id=pad, eos_token_id=eos, decoder_start_token_id=pad,
    )
    return T5ForConditionalGeneration(cfg).eval()


def _path_valid(g: KnowledgeGraph, lin: Linearizer, tok, seqs: torch.Tensor, strict: bool):
    """Per output: parsed paths (or None when unparsable / not in the KG)."""
    out = []
    for row in seqs.tolist():
        row = row[1:]
        if tok.eos_token_id in row:
            row = row[: row.index(tok.eos_token_id)]
        text = tok.decode([i for i in row if i != tok.pad_token_id], skip_special_tokens=False)
        try:
            paths = lin.parse_paths(text, strict=True)
        except ValueError:
            if strict:
                raise
            paths = []
        ok = bool(paths) and all(g.has_triple(*h.triple) for p in paths for h in p)
        out.append(paths if ok else None)
    return out


@pytest.mark.parametrize("slot_tokens", [1, 2])
def test_constrained_generation_only_yields_kg_paths(slot_tokens: int) -> None:
    from transformers import LogitsProcessorList

    g, lin, tok = _setup(slot_tokens)
    model = _tiny_t5(len(tok), tok.pad_token_id, tok.eos_token_id)
    mentioned = [["Robert Downey Jr."], ["Jon Favreau", "Iron Man"]]
    cands = [candidate_paths(g, m) for m in mentioned]
    tries = [build_path_trie(c, lin, tok) for c in cands]
    scores = [katz_scores(g, m, beta=0.1, k=2) for m in mentioned]
    enc = tok(DIALOG, return_tensors="pt", padding=True)
    proc = GraphConstrainedLogitsProcessor(tries, tok.eos_token_id, num_beams=5, entity_scores=scores)
    kw = dict(num_beams=5, num_return_sequences=5, max_new_tokens=40, do_sample=False)
    with torch.no_grad():
        cons = model.generate(**enc, logits_processor=LogitsProcessorList([proc]), **kw)
        free = model.generate(**enc, **kw)
    got = _path_valid(g, lin, tok, cons, strict=True)
    assert len(got) == 10 and all(p is not None for p in got)  # path_valid = 1.0
    for i, paths in enumerate(got):
        assert len(paths) == 1 and paths[0] in cands[i // 5]  # the row's own candidates
    assert len({tuple(p[0]) for p in got[:5]}) == 5  # 5 distinct beams
    free_valid = _path_valid(g, lin, tok, free, strict=False)
    assert sum(p is not None for p in free_valid) / len(free_valid) < 1.0


def test_constrained_generation_with_fewer_paths_than_beams() -> None:
    from transformers import LogitsProcessorList

    g, lin, tok = _setup()
    model = _tiny_t5(len(tok), tok.pad_token_id, tok.eos_token_id)
    cands = candidate_paths(g, ["Queens"], hops=1)
    assert len(cands) == 1
    proc = GraphConstrainedLogitsProcessor([build_path_trie(cands, lin, tok)], tok.eos_token_id, 5)
    with torch.no_grad():
        out = model.generate(
            **tok(DIALOG[:1], return_tensors="pt"), logits_processor=LogitsProcessorList([proc]),
            num_beams=5, num_return_sequences=5, max_new_tokens=30, output_scores=True,
            return_dict_in_generate=True,
        )
    assert all(p == [cands[0]] for p in _path_valid(g, lin, tok, out.sequences, strict=True))
    scores = out.sequences_scores.tolist()
    assert scores[0] > -1e3 and all(s < -1e6 for s in scores[1:])  # surplus beams: ~ -inf


def _reference_step(trie: PathTrie, table, prefix: List[int], logp: torch.Tensor, eos: int,
                    alpha: float, norm: str, min_score: float = 1e-6) -> dict:
    """One beam's output of Park Eq. 3-4 computed token by token as the module doc states
    it (the processor's arithmetic before its vectorisation): ``{token: score}``."""
    node = trie.node(prefix)
    kids = trie.children(node) if node is not None else {}
    if not kids:
        kids = {eos: None}
    graph = [0.0] * len(kids)
    raw = [None if n is None or table is None or not trie.values(n)
           else max(table.get(e, 0.0) for e in trie.values(n)) for n in kids.values()]
    known = [s for s in raw if s is not None]
    if known and alpha != 1.0:
        vals = [sum(known) / len(known) if s is None else s for s in raw]
        top = max(vals)
        if top <= 0.0:
            graph = [-math.log(len(vals))] * len(vals)
        else:
            vals = [max(s, min_score * top) for s in vals]
            graph = [math.log(s) - math.log(sum(vals)) for s in vals]
    lm = [float(logp[t]) for t in kids]
    if norm == "allowed":
        z = max(lm) + math.log(sum(math.exp(v - max(lm)) for v in lm))
        lm = [v - z for v in lm]
    return {t: alpha * v + (1 - alpha) * g for t, v, g in zip(kids, lm, graph)}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), norm=st.sampled_from(["allowed", "vocab"]),
       alpha=st.sampled_from([0.8, 1.0, 0.5]), scored=st.booleans())
def test_processor_matches_the_per_token_arithmetic(seed, norm, alpha, scored) -> None:
    """The vectorised processor (one block per step, Katz rows precomputed per trie, prefixes
    memoised) against the per-token arithmetic of the module doc: two examples, three beams,
    beams inside, at the end of and off their tries, over several steps; its numpy and
    tensor arithmetic agree."""
    rng = np.random.default_rng(seed)
    eos, vocab = 1, 40
    tries, tables = [], []
    for _ in range(2):
        trie = PathTrie()
        for _ in range(int(rng.integers(1, 7))):
            seq = rng.integers(2, 12, int(rng.integers(1, 5))).tolist() + [eos]
            trie.insert(seq, [None if rng.random() < 0.3 else f"e{t}" for t in seq])
        tries.append(trie)
        tables.append({f"e{t}": float(rng.choice([0.0, rng.random()])) for t in range(12)})
    proc = GraphConstrainedLogitsProcessor(tries, eos, num_beams=3, alpha=alpha, lm_norm=norm,
                                           entity_scores=tables if scored else None)
    prefixes = [[] for _ in range(6)]
    for _ in range(5):
        scores = torch.randn(6, vocab)
        ids = torch.tensor([[0] + p for p in prefixes])
        out = proc(ids, scores)  # float32 on the CPU: numpy
        twin = proc(ids, scores.double())  # any other dtype or device: tensor operations
        assert twin.dtype == torch.float64
        assert torch.equal(torch.isfinite(twin), torch.isfinite(out))
        assert torch.allclose(twin[torch.isfinite(out)].float(), out[torch.isfinite(out)], atol=1e-5)
        logp = torch.log_softmax(scores, dim=-1)
        for row, prefix in enumerate(prefixes):
            want = _reference_step(tries[row // 3], tables[row // 3] if scored else None, prefix,
                                   logp[row], eos, alpha, norm)
            assert _finite(out[row:row + 1]) == sorted(want)
            for token, value in want.items():
                assert out[row, token].item() == pytest.approx(value, abs=1e-5)
            # next step: an allowed token mostly, sometimes one that leaves the trie
            allowed = sorted(want)
            prefixes[row] = prefix + [int(rng.choice(allowed)) if rng.random() < 0.85
                                      else int(rng.integers(2, vocab))]


def test_processor_arithmetic_runs_in_numpy_for_float32_cpu_scores(monkeypatch) -> None:
    """Float32 scores on the CPU take the numpy arithmetic, other dtypes the tensor one
    (the path a GPU takes), for single-continuation and branching steps alike."""
    trie = PathTrie()
    trie.insert([5, 6, 1], [None, "X", None])
    trie.insert([5, 7, 1], [None, "Y", None])
    calls: List[str] = []
    real = GraphConstrainedLogitsProcessor._mixed_tensor

    def tensor(self, *args):
        calls.append("tensor")
        return real(self, *args)

    monkeypatch.setattr(GraphConstrainedLogitsProcessor, "_mixed_tensor", tensor)
    proc = GraphConstrainedLogitsProcessor([trie], 1, entity_scores=[{"X": 3.0, "Y": 1.0}])
    for prefix in ([0], [0, 5]):  # one continuation (5), then two (6, 7)
        ids, scores = torch.tensor([prefix]), torch.randn(1, 10)
        fast = proc(ids, scores)
        assert calls == [] and fast.dtype == torch.float32
        slow = proc(ids, scores.half())
        assert calls == ["tensor"] and slow.dtype == torch.float16
        calls.clear()
        assert _finite(fast) == _finite(slow) == ([5] if prefix == [0] else [6, 7])
        assert torch.allclose(slow.float()[torch.isfinite(fast)], fast[torch.isfinite(fast)], atol=1e-2)

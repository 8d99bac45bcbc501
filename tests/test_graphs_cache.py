"""
The content-hash keyed graph store: hits, atomic writes, corrupt/stale entries, shards.
"""

from __future__ import annotations

import json

import pytest

from parlai_docgraph.graphs import build_document_graph, build_multilevel_graph
from parlai_docgraph.graphs.cache import GraphStore, graph_key, in_shard
from parlai_docgraph.graphs.coref import RuleCoref
from parlai_docgraph.graphs.parsers import get_parser

DOCS = [
    [("Bach", ["Johann Sebastian Bach was a composer.", "He lived in Leipzig."])],
    [("Tower", ["Smeaton's Tower stands on Plymouth Hoe.", "It was moved there."])],
    [("Keeper", ["The keeper lit the lamp."]), ("Lamp", ["The lamp burned oil."])],
    [("Empty", [])],
]


@pytest.fixture(scope="module")
def dep():
    parser = get_parser("dep")
    parser.nlp
    return parser


def test_get_or_build_stores_and_hits(tmp_path, dep):
    store = GraphStore(tmp_path)
    first = store.get_or_build(DOCS[0], parser=dep)
    assert first == build_document_graph(DOCS[0], parser=dep)
    [key] = list(store.keys())
    assert store.path(key).parent.parent.name == "graphs-v1"
    calls = []
    dep_parse = dep.parse
    try:
        dep.parse = lambda s: calls.append(s) or dep_parse(s)
        assert store.get_or_build(DOCS[0], parser=dep) == first
        assert calls == []  # loaded, not rebuilt
        store.get_or_build(DOCS[0], parser=dep, homogeneous=True)
        assert len(calls) == 1 and len(list(store.keys())) == 2  # options are part of the key
    finally:
        del dep.parse
    multi = store.get_or_build(DOCS[0], builder="multilevel")
    assert multi == build_multilevel_graph(DOCS[0])
    assert store.get_or_build(DOCS[0], builder="multilevel") == multi
    with pytest.raises(ValueError, match="unknown graph builder"):
        store.get_or_build(DOCS[0], builder="amr")


def test_keys_depend_on_inputs():
    base = graph_key(DOCS[0], "semantic", {}, ["dep:x", "rule-v1"])
    assert base == graph_key(DOCS[0], "semantic", {}, ["dep:x", "rule-v1"])
    assert len({
        base, graph_key(DOCS[1], "semantic", {}, ["dep:x", "rule-v1"]),
        graph_key(DOCS[0], "semantic", {"homogeneous": True}, ["dep:x", "rule-v1"]),
        graph_key(DOCS[0], "semantic", {}, ["dep:y", "rule-v1"]),
        graph_key(DOCS[0], "multilevel", {}, ["dep:x", "rule-v1"]),
    }) == 5


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # killed mid-write by a non-atomic writer
        lambda text: text.replace("Leipzig", "Leipzic"),  # checksum mismatch
        lambda text: json.dumps({**json.loads(text), "schema_version": 0}),  # stale
        lambda text: json.dumps({**json.loads(text), "key": "0" * 64}),  # misplaced
        lambda text: "",
    ],
)
def test_corrupt_or_stale_entries_are_rebuilt_not_loaded(tmp_path, dep, damage):
    store = GraphStore(tmp_path)
    good = store.get_or_build(DOCS[0], parser=dep)
    [key] = list(store.keys())
    path = store.path(key)
    path.write_text(damage(path.read_text(encoding="utf-8")), encoding="utf-8")
    assert store.load(key) is None and not path.exists()
    assert store.get_or_build(DOCS[0], parser=dep) == good
    assert store.load(key) == good


def test_atomic_writes_resume_and_clean(tmp_path, dep, monkeypatch):
    store = GraphStore(tmp_path)
    graph = build_document_graph(DOCS[1], parser=dep)
    key = graph_key(DOCS[1], "semantic", {}, ["x"])

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("parlai_docgraph.atomic.os.replace", killed)
    with pytest.raises(KeyboardInterrupt):
        store.save(key, graph)
    monkeypatch.undo()
    assert key not in store and not list(store.root.glob("*/.*.tmp"))
    stray = store.path(key).parent / f".{key[:8]}-dead.tmp"
    stray.write_text("{partial")
    assert list(store.keys()) == [] and store.clean() == 1 and not stray.exists()
    store.save(key, graph)
    assert store.load(key) == graph


def test_shards_partition_keys_and_merge(tmp_path, dep):
    full = GraphStore(tmp_path / "full")
    shards = [GraphStore(tmp_path / f"shard{i}") for i in range(2)]
    for doc in DOCS:
        full.get_or_build(doc, parser=dep)
    keys = list(full.keys())
    assert all(sum(in_shard(k, (i, 2)) for i in range(2)) == 1 for k in keys)
    for doc in DOCS:
        key = graph_key(doc, "semantic", {}, [dep.describe(), RuleCoref.version])
        assert key in keys
        for i, shard in enumerate(shards):
            if in_shard(key, (i, 2)):
                shard.get_or_build(doc, parser=dep)
    merged = GraphStore(tmp_path / "merged")
    assert sum(merged.merge_from(s) for s in shards) == len(keys)
    assert list(merged.keys()) == keys
    assert all(merged.load(k) == full.load(k) for k in keys)
    assert merged.merge_from(shards[0]) == 0
    with pytest.raises(ValueError, match="shard 2/2"):
        in_shard(keys[0], (2, 2))


def test_benchmark_figures_quick():
    from parlai_docgraph.bench.graphs import graph_benchmark

    figures = graph_benchmark(DOCS, quick=True)
    assert json.loads(json.dumps(figures)) == figures
    assert figures["graph_build_vs_spacy"] > 0 and figures["cache_load_ms_per_graph"] > 0
    assert set(figures["build_s_by_sentences"]) == {"10", "50"}
    assert figures["pools"] == 4 and figures["quick"] is True
    with pytest.raises(ValueError, match="at least one"):
        graph_benchmark([])

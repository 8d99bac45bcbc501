"""
The content-hash keyed graph store: hits, atomic writes, corrupt/stale entries, shards.
"""

from __future__ import annotations

import json

import pytest

from parlai_docgraph.graphs import build_document_graph, build_multilevel_graph
from parlai_docgraph.graphs.factory import graph_key
from parlai_docgraph.graphs.store import GraphStore, in_shard
from parlai_docgraph.graphs.config import GraphConfig
from parlai_docgraph.graphs.coref import RuleCoref
from parlai_docgraph.graphs.factory import GraphFactory
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


@pytest.fixture(scope="module")
def full(dep):
    return GraphFactory(GraphConfig()).load()


def test_get_or_build_stores_and_hits(tmp_path, dep, full):
    store = GraphStore(tmp_path)
    first = store.get_or_build(DOCS[0], full)
    assert first.built and first.graph == build_document_graph(DOCS[0], parser=dep)
    [key] = list(store.keys())
    assert first.key == key == full.key(DOCS[0])
    assert store.path(key).parent.parent.name == "graphs-v1"
    built = full.built
    again = store.get_or_build(DOCS[0], full)
    assert again == (key, first.graph, False) and full.built == built  # loaded, not rebuilt
    homogeneous = store.get_or_build(DOCS[0], GraphFactory(GraphConfig("homogeneous")))
    assert homogeneous.built and len(list(store.keys())) == 2  # options are part of the key
    # paths reads the full graph: same key, nothing built
    assert store.get_or_build(DOCS[0], GraphFactory(GraphConfig("paths"))) == again
    multilevel = GraphFactory(GraphConfig("multilevel"))
    multi = store.get_or_build(DOCS[0], multilevel)
    assert multi.graph == build_multilevel_graph(DOCS[0])
    assert store.get_or_build(DOCS[0], multilevel) == (multi.key, multi.graph, False)
    missing = store.get_or_build(DOCS[1], full, build=False)
    assert missing.graph is None and missing.key not in store
    with pytest.raises(ValueError, match="none has no graph"):
        GraphFactory(GraphConfig("none"))


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
def test_corrupt_or_stale_entries_are_rebuilt_not_loaded(tmp_path, full, damage):
    store = GraphStore(tmp_path)
    good = store.get_or_build(DOCS[0], full).graph
    [key] = list(store.keys())
    path = store.path(key)
    path.write_text(damage(path.read_text(encoding="utf-8")), encoding="utf-8")
    assert store.load(key) is None and not path.exists()
    assert store.get_or_build(DOCS[0], full) == (key, good, True)
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


def test_shards_partition_keys_and_merge(tmp_path, dep, full):
    whole = GraphStore(tmp_path / "full")
    shards = [GraphStore(tmp_path / f"shard{i}") for i in range(2)]
    for doc in DOCS:
        whole.get_or_build(doc, full)
    keys = list(whole.keys())
    assert all(sum(in_shard(k, (i, 2)) for i in range(2)) == 1 for k in keys)
    for doc in DOCS:
        key = graph_key(doc, "semantic", {}, [dep.describe(), RuleCoref.version])
        assert key in keys
        for i, shard in enumerate(shards):
            if in_shard(key, (i, 2)):
                shard.get_or_build(doc, full)
    merged = GraphStore(tmp_path / "merged")
    assert sum(merged.merge_from(s) for s in shards) == len(keys)
    assert list(merged.keys()) == keys
    assert all(merged.load(k) == whole.load(k) for k in keys)
    assert merged.merge_from(shards[0]) == 0
    with pytest.raises(ValueError, match="shard 2/2"):
        in_shard(keys[0], (2, 2))


def test_benchmark_figures_quick():
    from parlai_docgraph.bench.graphs import graph_benchmark

    figures = graph_benchmark(DOCS, quick=True)
    assert json.loads(json.dumps(figures)) == figures
    assert figures["graph_build_vs_spacy"] > 0 and figures["cache_load_ms_per_graph"] > 0
    for key in ("graph_build_vs_spacy", "graph_build_vs_spacy_no_parse_cache"):
        sp = figures[key + "_spread"]  # the median of >= 5 alternated repetitions
        assert sp["median"] == figures[key] and sp["reps"] >= 5
        assert sp["min"] <= sp["median"] <= sp["max"]
    parts = figures["build_parts_s"]
    assert parts["distinct_sentences"] <= figures["sentences"]
    assert all(parts[k] >= 0 for k in ("spacy", "roles", "parse_cache", "coref_and_assembly"))
    assert set(figures["build_s_by_sentences"]) == {"10", "50"}
    assert figures["pools"] == 4 and figures["quick"] is True
    with pytest.raises(ValueError, match="at least one"):
        graph_benchmark([])


def test_one_memo_and_one_corruption_policy(tmp_path):
    """``LRUMemo`` (every in-process memo) drops the least recently used item;
    ``read_verified`` (every on-disk cache) deletes an entry that fails its check."""
    from parlai_docgraph.atomic import read_verified, verified
    from parlai_docgraph.memo import LRUMemo

    memo = LRUMemo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a") == 1  # "b" is now the least recent
    memo.put("c", 3)
    assert "b" not in memo and memo.get("a") == 1 and len(memo) == 2
    assert memo.get("b") is None and (memo.hits, memo.misses) == (2, 1)
    off = LRUMemo(0)
    assert off.put("a", 1) == 1 and len(off) == 0
    entry = tmp_path / "entry.json"
    assert read_verified(entry, json.loads) is None  # absent
    entry.write_text('{"x": 1}')
    assert read_verified(entry, json.loads) == {"x": 1}
    entry.write_text('{"x": ')
    assert read_verified(entry, json.loads) is None and not entry.exists()
    assert verified('{"x": 1}', json.loads) == {"x": 1} and verified("[", json.loads) is None

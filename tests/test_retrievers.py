"""
The retriever interface (issue 40, :mod:`parlai_docgraph.graphs.retrievers`): ``bm25``,
``dense`` and ``hybrid`` behind ``--retriever``; dense vectors of the frozen MiniLM cached
per document SHA-256 (atomic, damage recomputed); a large collection embedded in the
background while BM25 ranks; reciprocal-rank fusion.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parlai_docgraph.graphs.retrieval import DocumentIndex, retrieval_summary
from parlai_docgraph.graphs.retrievers import (
    BM25Retriever, DenseRetriever, HybridRetriever, SentenceEmbedder, reciprocal_rank_fusion,
    retriever_factory,
)

RULES = """# Kingmaker rules

## Players

Kingmaker is a card game for two to five players. It takes an hour.

## Order of play

The youngest player goes first. Play passes to the left.

## Cards

Shuffle the deck and deal seven cards to each player. Put the rest face down.
"""
CLINIC = """# Letter from the Elm Street clinic

## Visits

Children under sixteen must be accompanied by an adult. Our phone line is open from 8.30 \
until noon.

## Parking

Parking is free for patients behind the main building.
"""
HISTORY = """# A short history of Linden

## The hospital

The hospital opened in 1908 on the old market square. It was paid for by the wool merchants.

## The hill

The wealthy families moved to the hill on the north side of the town because the river \
flooded the lower streets every spring.
"""


@pytest.fixture(scope="module")
def embedder():
    from parlai_docgraph.models.encoders import MINILM, load_encoder

    encoder, tokenizer = load_encoder(MINILM)
    encoder.requires_grad_(False).eval()
    return SentenceEmbedder(encoder, tokenizer)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in (("rules.md", RULES), ("clinic.md", CLINIC), ("history.md", HISTORY)):
        (docs / name).write_text(text, encoding="utf-8")
    return docs


def pool_sentences(pool):
    return [s for _, ss in pool for s in ss]


def index_of(kind, folder, embedder, cache=None, **kw) -> DocumentIndex:
    index = DocumentIndex(cache_root=cache, progress=False, retriever=retriever_factory(
        kind, embedder, cache, progress=False, **kw))
    index.load([str(folder)])
    return index


def test_factory_kinds_and_errors(embedder):
    assert isinstance(retriever_factory("bm25"), BM25Retriever)
    assert isinstance(retriever_factory("dense", embedder), DenseRetriever)
    assert isinstance(retriever_factory("hybrid", embedder), HybridRetriever)
    with pytest.raises(ValueError, match="needs a sentence encoder"):
        retriever_factory("dense")
    with pytest.raises(ValueError, match="choose from bm25, dense, hybrid"):
        retriever_factory("tfidf")


def test_dense_and_hybrid_find_what_shares_no_word(folder: Path, embedder):
    """The issue's misses: questions that share no word with their answer sentence."""
    asked = {"Who starts the game?": "The youngest player goes first.",
             "Can my fourteen-year-old son come on his own?":
                 "Children under sixteen must be accompanied by an adult."}
    bm25 = index_of("bm25", folder, embedder)
    for question, answer in asked.items():
        assert answer not in pool_sentences(bm25.retrieve([question], budget=2))
        for kind, budget in (("dense", 2), ("hybrid", 4)):  # hybrid: each ranking's best
            index = index_of(kind, folder, embedder, rrf_k=1)
            assert answer in pool_sentences(index.retrieve([question], budget)), (kind,
                                                                                  question)


def test_reciprocal_rank_fusion():
    assert reciprocal_rank_fusion([[3, 1, 2], [1, 4]], k=60) == [1, 3, 4, 2]
    # a small k lets either ranking's first item lead
    assert reciprocal_rank_fusion([[3, 1, 2], [4, 1]], k=0)[:2] == [1, 3]


def test_vectors_are_cached_per_document_and_damage_is_recomputed(folder: Path, embedder,
                                                                 tmp_path: Path):
    cache = tmp_path / "cache"
    first = index_of("dense", folder, embedder, cache)
    assert first.retriever.stats["embedded"] == first.num_sentences
    entries = sorted((cache / "dense-v1").rglob("*.json"))
    assert len(entries) == 3  # one per document, named by the SHA-256 of its bytes
    assert {e.stem for e in entries} == {d.sha256 for d in first.documents}
    renamed = tmp_path / "again"
    renamed.mkdir()
    for doc in folder.iterdir():
        (renamed / f"copy_{doc.name}").write_text(doc.read_text(encoding="utf-8"),
                                                  encoding="utf-8")
    again = index_of("dense", renamed, embedder, cache)
    assert again.retriever.stats["embedded"] == 0  # every vector read from the cache
    question = ["When did the hospital open?"]
    assert again.retrieve(question, budget=2) == first.retrieve(question, budget=2)
    body = json.loads(entries[0].read_text(encoding="utf-8"))
    body["data"] = body["data"][:-8] + "AAAAAAA="  # damaged bytes: the checksum fails
    entries[0].write_text(json.dumps(body), encoding="utf-8")
    third = index_of("dense", folder, embedder, cache)
    assert 0 < third.retriever.stats["embedded"] < third.num_sentences


class Gated:
    """The embedder, held back until the test opens the gate (a slow background build)."""

    def __init__(self, embedder) -> None:
        import threading

        self.inner, self.gate = embedder, threading.Event()
        self.encoder, self.tag = embedder.encoder, embedder.tag

    def __call__(self, texts, progress=None):
        if len(texts) > 1:  # the documents' lines wait; a query (one text) does not
            assert self.gate.wait(timeout=120)
        return self.inner(texts, progress)


def test_a_large_collection_is_embedded_in_the_background(folder: Path, embedder):
    gated = Gated(embedder)
    index = index_of("hybrid", folder, gated, background_over=1)
    dense = index.retriever.dense
    assert dense.stats["background"] == 1.0 and not index.retriever.ready
    summary = retrieval_summary(index)
    assert "retriever hybrid" in summary and "BM25 alone" in summary
    assert "building in the background: 0 of" in summary
    # until the vectors are ready, the turns are served by BM25's ranking
    lexical = index.retriever.bm25.ranking("Who starts the game?", "", 0.5)
    assert index.retriever.ranking("Who starts the game?", "", 0.5) == lexical
    assert "The youngest player goes first." not in pool_sentences(
        index.retrieve(["Who starts the game?"], budget=4))
    gated.gate.set()
    assert dense.wait(timeout=120) and index.retriever.ready
    assert dense.stats["seconds"] > 0
    index.last_pool = None
    assert "The youngest player goes first." in pool_sentences(
        index.retrieve(["Who starts the game?"], budget=4))


def test_a_background_build_stops_when_asked(folder: Path, embedder):
    """``stop()`` (also run at process exit) ends a background build after its batch."""
    import threading

    gated = Gated(embedder)
    index = index_of("dense", folder, gated, background_over=1)
    dense = index.retriever
    threading.Timer(0.5, gated.gate.set).start()  # the batch in flight then completes
    dense.stop(timeout=120)
    assert not dense.thread.is_alive() and not dense.ready
    assert index.retriever.ranking("Who starts the game?", "", 0.5) == \
        dense.bm25.ranking("Who starts the game?", "", 0.5)


def test_a_fork_shares_the_dense_index_until_it_grows(folder: Path, embedder, tmp_path: Path):
    base = DocumentIndex(cache_root=None, progress=False,
                         retriever=retriever_factory("dense", embedder))
    base.add([str(folder / "rules.md"), str(folder / "clinic.md")])
    fork = base.fork()
    assert fork.retriever is base.retriever
    fork.add([str(folder / "history.md")])
    assert fork.retriever is not base.retriever and base.retriever.ready
    asked = ["Why did the rich move away?"]
    assert any("wealthy families" in s for s in pool_sentences(fork.retrieve(asked, budget=2)))
    assert not any("wealthy" in s for s in pool_sentences(base.retrieve(asked, budget=2)))


def test_a_turn_without_content_words_keeps_the_pool(folder: Path, embedder):
    index = index_of("hybrid", folder, embedder)
    pool = index.retrieve(["When did the hospital open?"], budget=2)
    assert index.retrieve(["When did the hospital open?", "In 1908.", "and then?"],
                          budget=2) == pool


def test_removed_documents_leave_the_dense_index(folder: Path, embedder):
    """A build keeps only its documents' vectors, and a build it superseded, finishing
    after it dropped one of them, ends without error and leaves the newer index alone."""
    index = index_of("dense", folder, embedder)
    dense = index.retriever
    old_keys = sorted(dense._vectors)
    assert len(old_keys) == 3
    assert index.remove([str(folder / "clinic.md")]) == 1
    assert len(dense._vectors) == 2 and set(dense._vectors) < set(old_keys)
    matrix = dense._matrix
    dense._run(dense._generation - 1, old_keys, [])  # the older build's last step
    assert dense._matrix is matrix and dense.ready

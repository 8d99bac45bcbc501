r"""
The first stage of retrieve-then-graph: how the passages of a :class:`~.retrieval.DocumentIndex`
are scored for a dialogue, one option (``--retriever``) in the pattern of ParlAI's
``retriever_factory`` (``parlai/agents/rag/retrievers.py``: one factory, one class per kind):

* ``bm25``: Okapi BM25 over each passage's title and sentences (:mod:`bm25s`, Lucene's
  variant, k1 = 1.5, b = 0.75, all given explicitly; tokens are bm25s's lower-cased
  ``\w\w+`` words without its English stop words, stemmed by NLTK's Snowball stemmer). A
  passage that shares no term with the query scores 0 and is never retrieved.
* ``dense``: cosine similarity of sentence embeddings of a frozen encoder, a passage scoring
  its best sentence (:mod:`parlai_docgraph.graphs.dense_index`: the vectors, their cache
  per document SHA-256, the background build).
* ``hybrid``: reciprocal-rank fusion of the two rankings (Cormack et al., 2009):
  :math:`\mathrm{rrf}(p) = \sum_r 1 / (k + \mathrm{rank}_r(p))` over the retrievers that
  rank ``p`` (BM25 ranks only passages with a score above zero), ``k`` = ``--rrf-k``.

Until a dense index built in the background is ready, ``dense`` and ``hybrid`` rank with
BM25 alone.

No ParlAI imports.
"""

from __future__ import annotations

import copy
import os
from functools import lru_cache
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from parlai_docgraph.graphs.dense_index import (
    DEFAULT_BACKGROUND_OVER, DenseRetriever, SentenceEmbedder,
)

RETRIEVERS = ("bm25", "dense", "hybrid")
#: ``--retriever`` and ``--rrf-k`` defaults, chosen on the docgraph:docqa valid collection
#: alone (124 questions asked against all 13 valid documents at once, 32 sentences; zoo
#: selector trained on multi-document pools): retrieval recall / recall on the 20 questions that share no
#: content word with their answer / zoo accuracy: bm25 0.976 / 0.850 / -; dense 1.000 /
#: 1.000 / 0.871; hybrid k 60 (Cormack et al.'s) 0.984 / 0.900 / 0.863; hybrid k 1 1.000
#: / 1.000 / 0.871 (24 sentences: the same). hybrid k 1 ties dense on valid and keeps
#: BM25's exact-word matches (names, numbers) in every pool; with k 60 a passage BM25
#: misses ranks below every passage both rankings hold (docs/guide/long_documents.md)
DEFAULT_RETRIEVER = "hybrid"
DEFAULT_RRF_K = 1
#: BM25 parameters (bm25s's defaults, named so that no default is inherited unstated)
BM25_METHOD, BM25_K1, BM25_B = "lucene", 1.5, 0.75
Lines = List[str]


@lru_cache(maxsize=1)
def _stemmer() -> Callable[[List[str]], List[str]]:
    from nltk.stem.snowball import SnowballStemmer

    stem = SnowballStemmer("english").stem
    return lambda words: [stem(w) for w in words]


def query_terms(text: str, stem: Optional[Callable[[List[str]], List[str]]] = None) -> List[str]:
    """The BM25 terms of ``text`` (empty for a turn of stop words only: "and then?")."""
    import bm25s

    return bm25s.tokenize([text], stopwords="en", stemmer=stem or _stemmer(),
                          return_ids=False, show_progress=False)[0]


class BM25Retriever:
    """Okapi BM25 over the passages (module docstring)."""

    name = "bm25"

    def __init__(self) -> None:
        self._bm25: Any = None
        self._stem = _stemmer()
        self.size = 0

    @property
    def ready(self) -> bool:
        return True

    def build(self, passages: Sequence[Tuple[str, Sequence[str]]],
              documents: Sequence[Tuple[str, Lines]] = ()) -> None:
        """Index every passage (title and sentences); ``documents`` is not read."""
        import bm25s

        texts = [f"{title} {' '.join(sents)}" for title, sents in passages]
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self._stem, return_ids=False,
                                show_progress=False)
        bm25 = bm25s.BM25(method=BM25_METHOD, k1=BM25_K1, b=BM25_B)
        bm25.index(tokens, show_progress=False)
        self._bm25, self.size = bm25, len(texts)

    def terms(self, text: str) -> List[str]:
        return query_terms(text, self._stem)

    def scores(self, text: str) -> np.ndarray:
        """BM25 score of every passage for ``text`` (zeros when it shares no term)."""
        query = self.terms(text)
        if self._bm25 is None or not query:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._bm25.get_scores(query), dtype=np.float32)

    def ranked(self, scores: np.ndarray) -> List[int]:
        """Passages best first, those with a score above zero only."""
        order = np.argsort(-scores, kind="stable")
        return [int(i) for i in order if scores[i] > 0.0]

    @property
    def bm25(self) -> "BM25Retriever":
        return self

    def ranking(self, last: str, earlier: str, weight: float) -> List[int]:
        """Passages best first for a dialogue (:func:`dialogue_scores`)."""
        return self.ranked(dialogue_scores(self, last, earlier, weight))

    def fork(self) -> "BM25Retriever":
        """A copy sharing this index until it is built again (a build replaces it)."""
        return copy.copy(self)


def dialogue_scores(part: Any, last: str, earlier: str, weight: float) -> np.ndarray:
    """``part``'s score of the last turn plus ``weight`` times its score of the ``earlier``
    turns (joined)."""
    score = part.scores(last)
    if earlier and weight > 0:
        score = score + weight * part.scores(earlier)
    return score


def make_dense(embedder: SentenceEmbedder, cache_root: Optional[os.PathLike] = None,
               background_over: int = DEFAULT_BACKGROUND_OVER, progress: bool = True
               ) -> DenseRetriever:
    """A :class:`~.dense_index.DenseRetriever` ranking with BM25 until its vectors are
    ready."""
    return DenseRetriever(embedder, cache_root, background_over, progress,
                          fallback=BM25Retriever(), rank_with=dialogue_scores)


class HybridRetriever:
    """Reciprocal-rank fusion of the BM25 and the dense rankings (module docstring)."""

    name = "hybrid"

    def __init__(self, dense: DenseRetriever, k: int = DEFAULT_RRF_K) -> None:
        self.dense, self.k = dense, k

    @property
    def bm25(self) -> BM25Retriever:
        return self.dense.bm25

    @property
    def ready(self) -> bool:
        return self.dense.ready

    def build(self, passages: Sequence[Tuple[str, Sequence[str]]],
              documents: Sequence[Tuple[str, Lines]]) -> None:
        self.dense.build(passages, documents)

    def ranking(self, last: str, earlier: str, weight: float) -> List[int]:
        """The fused ranking for a dialogue; BM25's until the dense index is ready."""
        lexical = self.bm25.ranking(last, earlier, weight)
        if not self.dense.ready:
            return lexical
        return reciprocal_rank_fusion([lexical, self.dense.ranking(last, earlier, weight)],
                                      self.k)

    def fork(self) -> "HybridRetriever":
        return HybridRetriever(self.dense.fork(), self.k)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int]], k: int) -> List[int]:
    """Items by :math:`\\sum_r 1 / (k + \\mathrm{rank}_r)` over the rankings that hold
    them (ranks from 1), best first; ties in item order."""
    fused: Dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(fused, key=lambda item: (-fused[item], item))


Retriever = Any  # BM25Retriever | DenseRetriever | HybridRetriever


def retriever_factory(kind: str, embedder: Optional[SentenceEmbedder] = None,
                      cache_root: Optional[os.PathLike] = None, *,
                      rrf_k: int = DEFAULT_RRF_K,
                      background_over: int = DEFAULT_BACKGROUND_OVER,
                      progress: bool = True) -> Retriever:
    """The retriever ``kind`` (:data:`RETRIEVERS`); ``dense`` and ``hybrid`` need the
    ``embedder`` the agent passes in (``ValueError`` otherwise)."""
    if kind not in RETRIEVERS:
        raise ValueError(f"--retriever {kind!r}: choose from {', '.join(RETRIEVERS)}")
    if kind == "bm25":
        return BM25Retriever()
    if embedder is None:
        raise ValueError(f"--retriever {kind} needs a sentence encoder (none was given)")
    dense = make_dense(embedder, cache_root, background_over, progress)
    return dense if kind == "dense" else HybridRetriever(dense, rrf_k)


__all__ = ["BM25Retriever", "DEFAULT_BACKGROUND_OVER", "DEFAULT_RETRIEVER", "DEFAULT_RRF_K", "DenseRetriever",
           "HybridRetriever", "RETRIEVERS", "SentenceEmbedder", "dialogue_scores",
           "query_terms", "reciprocal_rank_fusion", "retriever_factory"]

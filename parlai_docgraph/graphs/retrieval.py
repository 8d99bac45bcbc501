"""
Retrieve, then graph: the user's documents indexed once, and each turn's knowledge pool
retrieved from them.

Li et al. (2022, section 3.1) build a document graph over the passages *retrieved for a
dialogue*, not over a corpus; a graph over every sentence of a book does not fit in memory
(5 MB of text was killed at 22 GB) and costs minutes per turn. :class:`DocumentIndex`:

* reads documents with :func:`~parlai_docgraph.graphs.corpus.parse_document` (the reader of
  ``docgraph:docqa`` and ``build_graphs --corpus``), with a progress bar that shows the
  sentences/s rate; for retrieval, a paragraph longer than ``max_passage_sentences`` is cut
  into passages of that many sentences (same title), so no single passage fills a turn's
  pool;
* keeps each document's passages on disk (``<datapath>/docgraph_cache/documents-v1``, beside
  the graph store and the parse cache), keyed by the SHA-256 of the file's bytes and the
  reader's settings, written atomically: a document is split once, whatever its name;
* indexes every passage (title and sentences) with Okapi BM25 (:mod:`bm25s`, Lucene's
  variant, k1 = 1.5, b = 0.75, all given explicitly; tokens are bm25s's lower-cased
  ``\w\w+`` words without its English stop words, stemmed by NLTK's Snowball stemmer).

:meth:`DocumentIndex.retrieve` returns a turn's pool: every passage while the documents
have at most ``budget`` sentences (small documents keep the whole-document pool, their
paragraphs uncut, exactly as before); otherwise the passages with the best BM25 score for
the dialogue (the user's last turn, plus ``history_weight`` times the score of the
``history_turns`` turns before it), taken best first while their sentences fit ``budget``
(passages with a score above zero only), returned in document order so the graph's
narrative-order edges and the coreference rules read them as written. A turn that shares
no word with any passage ("and then?") keeps the previous turn's pool.

Why lexical retrieval first: the frozen MiniLM encoder embeds about 340 sentences/s of 64
characters on 2 idle CPU cores (1,000 in 3.0 s, batches of 64; 20/s with the cores busy), so
dense vectors for the ~42,000 longer sentences of 5 MB would take several minutes before the
first reply; BM25 indexes them in about 7 s. The frozen encoder then reads only the retrieved
sentences (node features and the selector's similarity terms, cached by text).

No ParlAI imports.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from parlai_docgraph.atomic import read_verified, write_text_atomic
from parlai_docgraph.graphs.corpus import Pool, document_paths, language_note, parse_document
from parlai_docgraph.textnorm import decode_text, replaced_note

#: bump when the cached layout or the reader's output changes
INDEX_FORMAT_VERSION = 1
#: the default sentence budget of a turn's pool (``--retrieval-sentences``): chosen on the
#: docgraph:docqa valid questions asked against all 13 valid documents at once (zoo model
#: accuracy 0.839 / 0.847 / 0.839 at 24 / 32 / 40 sentences; retrieval recall 0.960 / 0.976 / 0.976)
DEFAULT_BUDGET = 32
#: BM25 parameters (bm25s's defaults, named so that no default is inherited unstated)
BM25_METHOD, BM25_K1, BM25_B = "lucene", 1.5, 0.75


def window_passages(passages: Pool, size: int) -> Pool:
    """``passages`` with every passage of more than ``size`` sentences cut into
    consecutive passages of at most ``size`` sentences under the same title."""
    if size <= 0:
        return [(t, list(s)) for t, s in passages]
    return [(title, list(sents[i:i + size]))
            for title, sents in passages for i in range(0, len(sents), size)]


@dataclass
class IndexedDocument:
    """One document of the index: its path, language and passages."""

    path: str
    lang: str
    passages: Pool
    cached: bool = False  # read from the on-disk cache
    replaced: int = 0  # characters that were not text, replaced (textnorm.decode_text)


def _stemmer() -> Callable[[List[str]], List[str]]:
    from nltk.stem.snowball import SnowballStemmer

    stem = SnowballStemmer("english").stem
    return lambda words: [stem(w) for w in words]


class _Progress:
    """A tqdm bar over a document's characters with the sentences/s rate as its postfix."""

    def __init__(self, total: int, desc: str, enabled: bool) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit="B", unit_scale=True, desc=desc, disable=not enabled,
                        leave=False, mininterval=0.5)
        self.start = time.perf_counter()
        self.done = 0

    def __call__(self, chars: int, sentences: int) -> None:
        self.bar.update(chars - self.done)
        self.done = chars
        rate = sentences / max(time.perf_counter() - self.start, 1e-6)
        self.bar.set_postfix_str(f"{sentences} sentences, {rate:,.0f} sentences/s",
                                 refresh=False)

    def close(self) -> None:
        self.bar.close()


@dataclass
class DocumentIndex:
    """
    The passages of a set of documents and their BM25 index (see the module docstring).
    ``cache_root``: folder of the on-disk passage cache (``None``: no cache).
    """

    cache_root: Optional[Union[str, Path]] = None
    max_passage_sentences: int = 8
    history_weight: float = 0.5
    history_turns: int = 2  # the turns before the last that count (Li Eq. 1 reads two)
    progress: bool = True
    documents: List[IndexedDocument] = field(default_factory=list)
    #: every passage as the reader gives it (the pool of small documents)
    whole: Pool = field(default_factory=list)
    #: the passages retrieval ranks (``whole`` with long paragraphs cut)
    passages: Pool = field(default_factory=list)
    last_pool: Optional[List[int]] = None
    #: seconds and sentences of the last :meth:`add` (``index_seconds``, ``sentences``, ...)
    stats: Dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._bm25: Any = None
        self._stem: Optional[Callable[[List[str]], List[str]]] = None

    def fork(self) -> "DocumentIndex":
        """A copy that shares this index's passages and BM25 index until documents are
        added to it (one server's ``--documents`` indexed once for every chat session)."""
        twin = DocumentIndex(self.cache_root, self.max_passage_sentences, self.history_weight,
                             self.history_turns, self.progress, list(self.documents),
                             list(self.whole), list(self.passages), None, dict(self.stats))
        twin._bm25, twin._stem = self._bm25, self._stem
        return twin

    # ------------------------------------------------------------------ reading
    @property
    def num_sentences(self) -> int:
        return sum(len(s) for _, s in self.passages)

    def _cache_file(self, data: bytes) -> Optional[Path]:
        if self.cache_root is None:
            return None
        key = hashlib.sha256(json.dumps(
            [INDEX_FORMAT_VERSION]).encode() + b"\0" + data)
        return Path(self.cache_root) / f"documents-v{INDEX_FORMAT_VERSION}" / f"{key.hexdigest()}.json"

    def read(self, path: str) -> IndexedDocument:
        """One document (from the cache when its bytes were read before); ``OSError`` /
        ``ValueError`` name the file. Bytes that are not UTF-8 and characters no later stage
        can encode are replaced (:func:`~parlai_docgraph.textnorm.decode_text`)."""
        data = Path(path).read_bytes()
        cache = self._cache_file(data)
        if cache is not None:
            hit = read_verified(cache, _check_cached)
            if hit is not None:
                return IndexedDocument(path, hit["lang"], hit["passages"], cached=True,
                                       replaced=hit["replaced"])
        text, replaced = decode_text(data, path)
        bar = _Progress(len(text), Path(path).name, self.progress and len(text) > 200_000)
        try:
            passages, lang = parse_document(text, path, bar)
        finally:
            bar.close()
        if cache is not None:
            write_text_atomic(cache, json.dumps({"lang": lang, "passages": passages,
                                                 "replaced": replaced}, ensure_ascii=False))
        return IndexedDocument(path, lang, passages, replaced=replaced)

    def load(self, specs: Sequence[str]) -> List[str]:
        """
        Index the documents that ``specs`` name (files, folders, globs:
        :func:`~parlai_docgraph.graphs.corpus.document_paths`); one note per spec that names
        nothing and per document that could not be used or is not English (never raises for
        bad input).
        """
        files, notes = document_paths(specs)
        return notes + (self.add(files) if files else [])

    def add(self, paths: Sequence[str]) -> List[str]:
        """
        Read and index the documents at ``paths`` (existing files); returns one note per
        document that could not be used, had characters replaced or is not English. A path
        indexed before is read again and replaces its earlier version (in place); when its
        new version cannot be used, the earlier one stays. The BM25 index is rebuilt over
        every passage.
        """
        notes: List[str] = []
        start = time.perf_counter()
        added = 0
        for path in paths:
            try:
                doc = self.read(path)
            except (OSError, ValueError) as err:  # UnicodeDecodeError is a ValueError
                notes.append(f"document not used: {err}")
                continue
            earlier = [i for i, d in enumerate(self.documents) if d.path == path]
            if earlier:
                self.documents[earlier[0]] = doc
            else:
                self.documents.append(doc)
            added += sum(len(s) for _, s in doc.passages)
            if doc.replaced:
                notes.append(replaced_note(path, doc.replaced))
            note = language_note(path, doc.lang)
            if note:
                notes.append(note)
        read_s = time.perf_counter() - start
        if added:
            self._rebuild()
        self.last_pool = None
        total = time.perf_counter() - start
        self.stats = {"read_seconds": read_s, "bm25_seconds": total - read_s,
                      "index_seconds": total, "sentences": float(added),
                      "sentences_per_second": added / max(total, 1e-9)}
        return notes

    def remove(self, paths: Sequence[str]) -> int:
        """Drop the documents at ``paths`` from the index; how many were dropped."""
        before, gone = len(self.documents), set(paths)
        self.documents = [d for d in self.documents if d.path not in gone]
        if len(self.documents) != before:
            self._rebuild()
            self.last_pool = None
        return before - len(self.documents)

    def _rebuild(self) -> None:
        """``whole``, ``passages`` and the BM25 index from ``documents``."""
        self.whole = [p for d in self.documents for p in d.passages]
        self.passages = [p for d in self.documents
                         for p in window_passages(d.passages, self.max_passage_sentences)]
        if self.passages:
            self._index()
        else:
            self._bm25 = None

    def _index(self) -> None:
        import bm25s

        if self._stem is None:
            self._stem = _stemmer()
        texts = [f"{title} {' '.join(sents)}" for title, sents in self.passages]
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self._stem, return_ids=False,
                                show_progress=False)
        bm25 = bm25s.BM25(method=BM25_METHOD, k1=BM25_K1, b=BM25_B)
        bm25.index(tokens, show_progress=False)
        self._bm25 = bm25

    # ------------------------------------------------------------------ retrieval
    def scores(self, text: str) -> np.ndarray:
        """BM25 score of every passage for ``text`` (zeros when it shares no term)."""
        import bm25s

        query = bm25s.tokenize([text], stopwords="en", stemmer=self._stem, return_ids=False,
                               show_progress=False)[0]
        if self._bm25 is None or not query:
            return np.zeros(len(self.passages), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(query), dtype=np.float32)

    def retrieve(self, turns: Sequence[str], budget: int = DEFAULT_BUDGET) -> Pool:
        """
        The knowledge pool of a turn: ``turns`` is the dialogue so far, the user's last turn
        last (see the module docstring); ``budget`` <= 0 keeps every passage.
        """
        if budget <= 0 or self.num_sentences <= budget:
            return [(t, list(s)) for t, s in self.whole]
        score = self.scores(turns[-1]) if turns else np.zeros(len(self.passages))
        earlier = list(turns[-1 - self.history_turns:-1]) if self.history_turns > 0 else []
        if earlier and self.history_weight > 0:
            score = score + self.history_weight * self.scores(" ".join(earlier))
        if float(score.max(initial=0.0)) <= 0.0 and self.last_pool is not None:
            chosen = self.last_pool
        else:
            chosen, used = [], 0
            for i in np.argsort(-score, kind="stable").tolist():
                if score[i] <= 0.0 and chosen:
                    break  # only passages that share a term with the dialogue
                size = len(self.passages[i][1])
                if used + size > budget:
                    if used:
                        continue
                    # a first passage larger than the budget (windowing off): keep it whole
                chosen.append(i)
                used += size
                if used >= budget:
                    break
            chosen.sort()
        self.last_pool = chosen
        return [(self.passages[i][0], list(self.passages[i][1])) for i in chosen]


def _check_cached(body: str) -> Dict[str, Any]:
    data = json.loads(body)
    passages = [(str(t), [str(s) for s in sents]) for t, sents in data["passages"]]
    if not passages or not isinstance(data["lang"], str):
        raise ValueError("empty cached document")
    return {"lang": data["lang"], "passages": passages, "replaced": int(data.get("replaced", 0))}


def retrieval_summary(index: DocumentIndex) -> str:
    """One line for the user about what the index holds and how long it took."""
    s = index.stats
    return (f"{len(index.documents)} documents, {len(index.passages)} passages, "
            f"{index.num_sentences} sentences indexed "
            f"({s.get('index_seconds', 0.0):.1f} s, "
            f"{s.get('sentences_per_second', 0.0):,.0f} sentences/s)")


__all__ = ["DEFAULT_BUDGET", "DocumentIndex", "IndexedDocument", "retrieval_summary",
           "window_passages"]

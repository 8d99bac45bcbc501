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
* keeps each document's passages on disk (``<datapath>/docgraph_cache/documents-v2``, beside
  the graph store and the parse cache), keyed by the SHA-256 of the file's bytes and the
  reader's version, written atomically: a document is split once, whatever its name;
* scores the passages with its ``retriever`` (:mod:`parlai_docgraph.graphs.retrievers`:
  ``bm25``, ``dense`` or ``hybrid``, :func:`~parlai_docgraph.graphs.retrievers.retriever_factory`;
  BM25 when none is given).

:meth:`DocumentIndex.retrieve` returns a turn's pool: every passage while the documents
have at most ``budget`` sentences (small documents keep the whole-document pool, their
paragraphs uncut); otherwise the retriever's ranking for the dialogue
(the user's last turn, plus ``history_weight`` times the score of the ``history_turns``
turns before it), taken best first while their sentences fit ``budget``, returned in
document order so the graph's narrative-order edges and the coreference rules read them as
written. A turn without a content word ("and then?"), or, under BM25, one that shares no
term with any passage, keeps the previous turn's pool.

No ParlAI imports.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from parlai_docgraph.atomic import read_verified, write_text_atomic
from parlai_docgraph.graphs.corpus import Pool, document_paths, language_note, parse_document
from parlai_docgraph.graphs.retrievers import BM25Retriever, Retriever
from parlai_docgraph.textnorm import decode_text, replaced_note

#: bump when the cached layout or the reader's output changes (2: passage titles name their
#: document, plain-text headings are titles)
INDEX_FORMAT_VERSION = 2
#: the default sentence budget of a turn's pool (``--retrieval-sentences``): chosen on the
#: docgraph:docqa valid questions asked against all 13 valid documents at once (BM25 with a
#: selector trained on single-document pools: accuracy 0.839 / 0.847 / 0.839 at 24 / 32 / 40
#: sentences; retrieval recall 0.960 / 0.976 / 0.976); with the hybrid retriever and the zoo
#: selector of multi-document pools 24 and 32 tie (recall 1.000, accuracy 0.871)
DEFAULT_BUDGET = 32


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
    sha256: str = ""  # of the file's bytes (the key of its cached dense vectors)
    replaced: int = 0  # characters that were not text, replaced (textnorm.decode_text)

    @property
    def lines(self) -> List[str]:
        """Its candidate lines, ``"{title} {sentence}"``, in order."""
        return [f"{t} {s}" for t, ss in self.passages for s in ss]


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
    The passages of a set of documents and their retriever (see the module docstring).
    ``cache_root``: folder of the on-disk passage cache (``None``: no cache);
    ``retriever``: a :mod:`~parlai_docgraph.graphs.retrievers` retriever (``None``: BM25).
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
    retriever: Optional[Retriever] = None

    def __post_init__(self) -> None:
        if self.retriever is None:
            self.retriever = BM25Retriever()
        self._shares_retriever = False

    def fork(self) -> "DocumentIndex":
        """A copy that shares this index's passages and retriever until documents are
        added to it (one server's ``--documents`` indexed once for every chat session)."""
        twin = DocumentIndex(self.cache_root, self.max_passage_sentences, self.history_weight,
                             self.history_turns, self.progress, list(self.documents),
                             list(self.whole), list(self.passages), None, dict(self.stats),
                             self.retriever)
        twin._shares_retriever = True
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
        sha = hashlib.sha256(data).hexdigest()
        cache = self._cache_file(data)
        if cache is not None:
            hit = read_verified(cache, _check_cached)
            if hit is not None:
                return IndexedDocument(path, hit["lang"], hit["passages"], cached=True,
                                       sha256=sha, replaced=hit["replaced"])
        text, replaced = decode_text(data, path)
        bar = _Progress(len(text), Path(path).name, self.progress and len(text) > 200_000)
        try:
            passages, lang = parse_document(text, path, bar)
        finally:
            bar.close()
        if cache is not None:
            write_text_atomic(cache, json.dumps({"lang": lang, "passages": passages,
                                                 "replaced": replaced}, ensure_ascii=False))
        return IndexedDocument(path, lang, passages, sha256=sha, replaced=replaced)

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
        new version cannot be used, the earlier one stays. The retriever is rebuilt over
        every passage (a dense one reads the vectors of documents it has seen, or their
        cache, and embeds the others).
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
        self.stats = {"read_seconds": read_s, "retriever_seconds": total - read_s,
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
        """``whole``, ``passages`` and the retriever from ``documents``. With no passage left
        the retriever keeps its old state: :meth:`retrieve` does not consult it then."""
        self.whole = [p for d in self.documents for p in d.passages]
        self.passages = [p for d in self.documents
                         for p in window_passages(d.passages, self.max_passage_sentences)]
        if not self.passages:
            return
        if self._shares_retriever:  # a fork builds on a copy of its own
            self.retriever, self._shares_retriever = self.retriever.fork(), False
        self.retriever.build(self.passages, [
            (d.sha256 or d.path, d.lines) for d in self.documents])

    # ------------------------------------------------------------------ retrieval
    def ranking(self, turns: Sequence[str]) -> Optional[List[int]]:
        """The retriever's passages best first for the dialogue ``turns`` (last turn last),
        or ``None`` when the last turn has nothing to search with (no content word; under
        BM25, no term any passage has)."""
        last = turns[-1] if turns else ""
        if not self.retriever.bm25.terms(last):
            return None
        earlier = list(turns[-1 - self.history_turns:-1]) if self.history_turns > 0 else []
        order = self.retriever.ranking(last, " ".join(earlier), self.history_weight)
        if self.retriever.name == "bm25" or not self.retriever.ready:
            # BM25 ranks only passages that share a term with the dialogue: none of the
            # last turn's terms in any passage means nothing to search with
            if not any(self.retriever.bm25.scores(last) > 0):
                return None
        return order

    def retrieve(self, turns: Sequence[str], budget: int = DEFAULT_BUDGET) -> Pool:
        """
        The knowledge pool of a turn: ``turns`` is the dialogue so far, the user's last turn
        last (see the module docstring); ``budget`` <= 0 keeps every passage.
        """
        if budget <= 0 or self.num_sentences <= budget:
            return [(t, list(s)) for t, s in self.whole]
        order = self.ranking(turns)
        if order is None and self.last_pool is not None:
            chosen = self.last_pool
        else:
            chosen, used = [], 0
            for i in order or [0]:  # nothing to search with, no earlier pool: the first passage
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
    """One line for the user about what the index holds, how long it took and, for a dense
    retriever, whether its vectors are ready."""
    s = index.stats
    line = (f"{len(index.documents)} documents, {len(index.passages)} passages, "
            f"{index.num_sentences} sentences indexed "
            f"({s.get('index_seconds', 0.0):.1f} s, "
            f"{s.get('sentences_per_second', 0.0):,.0f} sentences/s), "
            f"retriever {index.retriever.name}")
    return line + ("" if index.retriever.ready else f" (dense index {dense_status(index)}; "
                   "until it is ready, passages are ranked by BM25 alone)")


def dense_status(index: DocumentIndex) -> str:
    """The dense index's state
    (:attr:`~parlai_docgraph.graphs.dense_index.DenseRetriever.status`), ``""`` for BM25."""
    dense = getattr(index.retriever, "dense", index.retriever)
    return getattr(dense, "status", "")


__all__ = ["DEFAULT_BUDGET", "DocumentIndex", "IndexedDocument", "dense_status",
           "retrieval_summary", "window_passages"]

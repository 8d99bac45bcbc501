r"""
The dense first stage of retrieve-then-graph (``--retriever dense``, and half of
``hybrid``; :mod:`parlai_docgraph.graphs.retrievers`): cosine similarity of mean-pooled,
unit-length sentence embeddings of a frozen encoder (the graph selector's frozen copy, else
MiniLM; the agent passes it in, this layer imports no model code).

* Every candidate line ``"{title} {sentence}"`` is embedded once (its first
  :data:`DENSE_MAX_TOKENS` tokens); a passage scores the best cosine of its sentences (a
  question is answered by one sentence, which a whole-passage vector would dilute).
* The vectors are cached per document under ``<cache root>/dense-v<N>/<encoder
  tag>/<sha256 of the document's bytes>.json`` (float16, checksummed, written atomically,
  read through :func:`~parlai_docgraph.atomic.read_verified`: a damaged entry is deleted
  and recomputed), beside the passage cache; the encoder tag hashes
  :func:`~parlai_docgraph.graphs.embed_cache.describe_encoder`, so another or a re-trained
  encoder never reads these vectors.
* Building costs one encoder pass over every sentence not cached yet (MiniLM: a few hundred
  sentences/s on 2 idle CPU cores). Up to ``background_over`` such sentences are embedded
  before the first turn, with a progress bar; a larger collection is embedded in a
  background thread (at a lower scheduling priority, logging every tenth) while the chat
  goes on: until it is ready the retriever ranks with its ``fallback`` (BM25), and
  :attr:`DenseRetriever.status` says how far it is. A build still running when the process
  exits is stopped after its current batch (an ``atexit`` hook): a daemon thread left inside
  torch at interpreter shutdown aborts the process ("terminate called without an active
  exception").

No ParlAI imports.
"""

from __future__ import annotations

import atexit
import base64
import copy
import hashlib
import json
import logging
import os
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from parlai_docgraph.atomic import read_verified, write_text_atomic

#: bump when what is embedded or the cached layout changes
DENSE_FORMAT_VERSION = 1
#: ``--dense-background-over`` default: larger collections are embedded in the background
DEFAULT_BACKGROUND_OVER = 3000
#: tokens of a candidate line the dense encoder reads (its start)
DENSE_MAX_TOKENS = 128
logger = logging.getLogger(__name__)
Lines = List[str]


class SentenceEmbedder:
    """
    Unit-length mean-pooled embeddings of a frozen encoder (the pooling of
    all-MiniLM-L6-v2), in length-sorted batches without gradients. It keeps its own copy of
    the tokenizer: a Hugging Face fast tokenizer changes its truncation settings on every
    call and must not be shared with a thread that encodes at the same time.
    """

    def __init__(self, encoder: Any, tokenizer: Any, batch_size: int = 64,
                 max_length: int = DENSE_MAX_TOKENS) -> None:
        from parlai_docgraph.graphs.embed_cache import describe_encoder

        self.encoder, self.tokenizer = encoder, copy.deepcopy(tokenizer)
        self.batch_size, self.max_length = batch_size, max_length
        self.tag = describe_encoder(encoder, tokenizer, max_length)
        self._lock = threading.Lock()  # forks of an index (web sessions) share the embedder

    def __call__(self, texts: Sequence[str],
                 progress: Optional[Callable[[int], None]] = None) -> np.ndarray:
        """``[len(texts), dim]`` float32; ``progress(n)`` after each batch of ``n``."""
        from parlai_docgraph.graphs.embed import sentence_vectors

        dim = self.encoder.config.hidden_size
        out = np.zeros((len(texts), dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            with self._lock:
                vectors = sentence_vectors([texts[i] for i in rows], self.encoder,
                                           self.tokenizer, batch_size=self.batch_size,
                                           max_length=self.max_length)
            out[rows] = vectors.float().cpu().numpy()
            if progress is not None:
                progress(len(rows))
        return out


class DenseVectorCache:
    """One document's sentence vectors per file, keyed by the SHA-256 of its bytes (module
    docstring); a damaged entry is deleted and recomputed."""

    def __init__(self, root: Optional[os.PathLike], encoder_tag: str) -> None:
        tag = hashlib.sha256(encoder_tag.encode("utf-8")).hexdigest()[:16]
        self.folder = (Path(root) / f"dense-v{DENSE_FORMAT_VERSION}" / tag
                       if root is not None else None)
        self.encoder_tag = encoder_tag

    def _path(self, sha: str) -> Optional[Path]:
        return None if self.folder is None or not sha else self.folder / f"{sha}.json"

    def load(self, sha: str, lines: Lines) -> Optional[np.ndarray]:
        path = self._path(sha)
        if path is None:
            return None
        want = hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()

        def check(body: str) -> np.ndarray:
            entry = json.loads(body)
            if entry["version"] != DENSE_FORMAT_VERSION or entry["encoder"] != self.encoder_tag \
                    or entry["lines_sha256"] != want:
                raise ValueError("stale entry")
            raw = base64.b64decode(entry["data"].encode("ascii"), validate=True)
            if hashlib.sha256(raw).hexdigest() != entry["checksum"]:
                raise ValueError("checksum mismatch")
            rows, dim = (int(n) for n in entry["shape"])
            if rows != len(lines) or len(raw) != rows * dim * 2:
                raise ValueError("shape mismatch")
            return np.frombuffer(raw, dtype=np.float16).reshape(rows, dim).astype(np.float32)

        return read_verified(path, check)

    def save(self, sha: str, lines: Lines, vectors: np.ndarray) -> None:
        path = self._path(sha)
        if path is None:
            return
        raw = vectors.astype(np.float16).tobytes()
        write_text_atomic(path, json.dumps({
            "version": DENSE_FORMAT_VERSION, "encoder": self.encoder_tag,
            "lines_sha256": hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest(),
            "shape": list(vectors.shape), "checksum": hashlib.sha256(raw).hexdigest(),
            "data": base64.b64encode(raw).decode("ascii")}, separators=(",", ":")))


class DenseRetriever:
    """
    Sentence vectors of a frozen encoder, a passage scoring its best sentence (module
    docstring). ``embedder``: a :class:`SentenceEmbedder`; ``cache_root``: the folder of the
    vector cache (``None``: none); ``background_over``: embed in a background thread when
    more sentences than this are not cached (``0``: always in the foreground). Made by
    :func:`~parlai_docgraph.graphs.retrievers.retriever_factory`.
    """

    name = "dense"

    def __init__(self, embedder: "SentenceEmbedder", cache_root: Optional[os.PathLike] = None,
                 background_over: int = DEFAULT_BACKGROUND_OVER, progress: bool = True, *,
                 fallback: Any, rank_with: Callable[..., np.ndarray]) -> None:
        #: the lexical retriever that ranks while the vectors are not ready (and tells which
        #: turns have no terms); ``rank_with(retriever, last, earlier, weight)`` scores a
        #: dialogue
        self.bm25, self._dialogue_scores = fallback, rank_with
        self.embedder = embedder
        self.cache = DenseVectorCache(cache_root, embedder.tag)
        self.background_over, self.progress = background_over, progress
        self._vectors: Dict[str, np.ndarray] = {}  # document key -> its sentence vectors
        self._matrix: Optional[np.ndarray] = None
        self._owner = np.zeros(0, dtype=np.int64)  # passage of each matrix row
        self._size = 0
        self._lock = threading.Lock()
        self._generation = 0
        self.thread: Optional[threading.Thread] = None
        #: what the last build did: ``sentences``, ``embedded``, ``seconds``, ``background``
        self.stats: Dict[str, float] = {}
        self.done = 0  # sentences embedded so far by the running build
        self._stop = threading.Event()  # set: a background build ends after its batch
        self.todo = 0

    @property
    def ready(self) -> bool:
        return self._matrix is not None

    @property
    def status(self) -> str:
        """Where the dense index stands, for the user."""
        if self.ready:
            return "ready"
        return f"building in the background: {self.done:,} of {self.todo:,} sentences embedded"

    def build(self, passages: Sequence[Tuple[str, Sequence[str]]],
              documents: Sequence[Tuple[str, Lines]]) -> None:
        """
        Vectors for ``documents`` (``(key, candidate lines)`` each, key the SHA-256 of the
        document's bytes; their lines in order are the sentences of ``passages``): cached
        ones loaded, the rest embedded in the foreground or the background.
        """
        self.bm25.build(passages)
        owner = np.asarray([p for p, (_, sents) in enumerate(passages) for _ in sents],
                           dtype=np.int64)
        if len(owner) != sum(len(lines) for _, lines in documents):
            raise ValueError("the documents' lines are not the passages' sentences")
        with self._lock:
            self._generation += 1
            generation = self._generation
            self._matrix, self._owner, self._size = None, owner, len(passages)
            # a removed or replaced document's vectors go (set() copies the keys at once,
            # while a superseded background build may still be adding one)
            for stale in set(self._vectors) - {key for key, _ in documents}:
                self._vectors.pop(stale, None)
        missing = []
        for key, lines in documents:
            if key not in self._vectors:
                hit = self.cache.load(key, lines)
                if hit is not None:
                    self._vectors[key] = hit
                else:
                    missing.append((key, lines))
        todo = sum(len(lines) for _, lines in missing)
        self.todo, self.done = todo, 0
        background = bool(self.background_over) and todo > self.background_over
        self.stats = {"sentences": float(len(owner)), "embedded": float(todo),
                      "background": float(background), "seconds": 0.0}
        job = (generation, [key for key, _ in documents], missing)
        if background:
            logger.info("dense index: embedding %d sentences in the background", todo)
            _BUILDS.add(self)
            self.thread = threading.Thread(target=self._run, args=job, daemon=True,
                                           name="docgraph-dense-index")
            self.thread.start()
        else:
            self._run(*job)

    def _run(self, generation: int, keys: List[str], missing: List[Tuple[str, Lines]]) -> None:
        start = time.perf_counter()
        background = threading.current_thread() is not threading.main_thread() \
            and self.thread is threading.current_thread()
        if background:
            try:  # Linux: niceness is per thread; the chat's own turns come first
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
            except (AttributeError, OSError):
                pass
        from tqdm import tqdm

        bar = tqdm(total=self.todo, unit="sentence", desc="dense index", leave=False,
                   disable=not self.progress or background or not self.todo, mininterval=0.5)
        step = max(self.todo // 10, 1)

        def advance(n: int) -> None:
            if background and self._stop.is_set():
                raise _Stopped
            self.done += n
            bar.update(n)
            if background and (self.done // step) != ((self.done - n) // step):
                logger.info("dense index: %d of %d sentences embedded", self.done, self.todo)

        try:
            for key, lines in missing:
                if generation != self._generation:
                    return  # superseded by a newer build (documents were added)
                vectors = self.embedder(lines, advance)
                self.cache.save(key, lines, vectors)
                self._vectors[key] = vectors
        except _Stopped:
            return
        finally:
            bar.close()
        dim = self.embedder.encoder.config.hidden_size
        parts = [self._vectors.get(key) for key in keys]
        if any(part is None for part in parts):
            return  # superseded: a newer build dropped one of these documents
        matrix = np.concatenate(parts) if parts else np.zeros((0, dim), dtype=np.float32)
        with self._lock:
            if generation == self._generation:
                self._matrix = matrix
                self.stats["seconds"] = time.perf_counter() - start
        if background:
            logger.info("dense index ready: %d sentences in %.1f s", len(matrix),
                        time.perf_counter() - start)

    def stop(self, timeout: Optional[float] = 30.0) -> None:
        """End a background build after its current batch (it stays not ready)."""
        self._stop.set()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Wait for a background build; whether the index is ready."""
        if self.thread is not None:
            self.thread.join(timeout)
        return self.ready

    def scores(self, text: str) -> np.ndarray:
        """Every passage's best sentence cosine with ``text`` (zeros until ready)."""
        out = np.zeros(self._size, dtype=np.float32)
        matrix, owner = self._matrix, self._owner
        if matrix is None or not len(matrix) or not text.strip():
            return out
        sims = matrix @ self.embedder([text])[0]
        starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        if len(starts) == self._size:  # every passage has sentences, in order: one pass
            return np.maximum.reduceat(sims, starts).astype(np.float32)
        out[:] = -1.0
        np.maximum.at(out, owner, sims)
        return out

    def ranked(self, scores: np.ndarray) -> List[int]:
        """Every passage, best first."""
        return [int(i) for i in np.argsort(-scores, kind="stable")]

    def ranking(self, last: str, earlier: str, weight: float) -> List[int]:
        """Passages best first for a dialogue; BM25's ranking until the vectors are ready."""
        if not self.ready:
            return self.bm25.ranking(last, earlier, weight)
        return self.ranked(self._dialogue_scores(self, last, earlier, weight))

    def fork(self) -> "DenseRetriever":
        """A copy to build on (documents were added to a fork of its index): it shares the
        vectors read so far and, until it is built, this index's matrix."""
        twin = copy.copy(self)
        twin._vectors = dict(self._vectors)
        twin.bm25 = self.bm25.fork()
        twin._lock, twin.thread, twin._stop = threading.Lock(), None, threading.Event()
        return twin


class _Stopped(Exception):
    """A background build was asked to stop (:meth:`DenseRetriever.stop`)."""


#: the retrievers whose background build may still run, stopped at process exit
_BUILDS: "weakref.WeakSet[DenseRetriever]" = weakref.WeakSet()


@atexit.register
def _stop_builds() -> None:
    for retriever in list(_BUILDS):
        retriever.stop()


__all__ = ["DEFAULT_BACKGROUND_OVER", "DenseRetriever", "DenseVectorCache", "SentenceEmbedder"]

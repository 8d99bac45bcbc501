"""
An in-memory knowledge graph of ``(head, relation, tail)`` triples.

Edges are kept once, in *forward* orientation, as numpy id arrays sorted by
``(head, relation, tail)``; a second permutation sorted by ``(tail, relation, head)``
answers reverse queries. OpenDialKG writes every fact twice, ``(h, r, t)`` and
``(t, ~r, h)``; with ``reverse_prefix="~"`` a triple whose relation starts with ``~`` is
stored as the forward triple ``(t, r, h)``, so both spellings collapse into one edge and
``~r`` is answered from the reverse index. Memory is a few int32/int64 arrays per edge
(no Python object per edge), so OpenDialKG's 1.19M triples over 100k entities load in
seconds.

Sparse views (``scipy.sparse.csr_matrix``, ``N x N`` for ``N`` entities):

* :attr:`KnowledgeGraph.forward` -- row ``h``, column ``t``, data = relation id, one
  explicit entry per edge (a pair joined by several relations has several entries; data
  may be an explicit ``0``, relation id 0).
* :attr:`KnowledgeGraph.backward` -- the same edges indexed by tail (row ``t``, column ``h``).
* :attr:`KnowledgeGraph.A` -- symmetric 0/1 float adjacency: ``A[i, j] = 1`` iff some
  relation joins ``i`` and ``j`` in either direction (a self-loop triple ``(e, r, e)`` sets
  ``A[e, e]``).
* :meth:`KnowledgeGraph.adjacency` -- the ``A`` of Park et al. Eq. 6 by kind: ``binary``
  (:attr:`A`), ``count`` (symmetric, ``A[i, j]`` = the number of relations joining ``i``
  and ``j`` in either direction, so ``A^k`` counts paths that may run a relation either
  way) or ``directed`` (``A[h, t]`` = the number of relations ``h -> t``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import scipy.sparse as sp

from parlai_docgraph.kg.reader import Columns, Interner, triple_chunks, tsv_chunks

Triple = Tuple[str, str, str]


class KnowledgeGraph:
    """
    Entity/relation vocabularies and deduplicated forward edges with sparse adjacency.

    Build with :meth:`from_triples` or :meth:`from_file`. Entity ids are the positions in
    :attr:`entities`; relation ids index :attr:`relations`, which holds forward names only.
    """

    def __init__(
        self,
        entities: Sequence[str],
        relations: Sequence[str],
        heads: np.ndarray,
        rels: np.ndarray,
        tails: np.ndarray,
        reverse_prefix: Optional[str] = "~",
    ) -> None:
        self.entities: List[str] = list(entities)
        self.relations: List[str] = list(relations)
        self.reverse_prefix = reverse_prefix
        self._entity_ids: Dict[str, int] = {e: i for i, e in enumerate(self.entities)}
        if len(self._entity_ids) != len(self.entities):
            raise ValueError("duplicate entity names")
        self._relation_ids: Dict[str, int] = {r: i for i, r in enumerate(self.relations)}
        if len(self._relation_ids) != len(self.relations):
            raise ValueError("duplicate relation names")
        n, m = max(len(self.entities), 1), max(len(self.relations), 1)
        if n * m * n >= 2**63:
            raise ValueError("graph too large for int64 triple keys")
        keys = (
            np.asarray(heads, dtype=np.int64) * m + np.asarray(rels, dtype=np.int64)
        ) * n + np.asarray(tails, dtype=np.int64)
        keys = np.sort(keys)  # by (head, relation, tail); then drop duplicates
        if keys.shape[0] > 1:
            keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
        self._keys = keys
        self.heads = (keys // (m * n)).astype(np.int32)
        self.rels = ((keys // n) % m).astype(np.int32)
        self.tails = (keys % n).astype(np.int32)
        self._rev_order = np.lexsort((self.heads, self.rels, self.tails)).astype(np.int64)
        self._out_ptr = _indptr(self.heads, len(self.entities))
        self._in_ptr = _indptr(self.tails[self._rev_order], len(self.entities))
        self.skipped_lines = 0
        self._forward: Optional[sp.csr_matrix] = None
        self._backward: Optional[sp.csr_matrix] = None
        self._adjacency: Optional[sp.csr_matrix] = None
        self._counted: Dict[str, sp.csr_matrix] = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_triples(
        cls,
        triples: Iterable[Sequence[str]],
        entities: Optional[Sequence[str]] = None,
        reverse_prefix: Optional[str] = "~",
    ) -> "KnowledgeGraph":
        """
        Build from ``(head, relation, tail)`` string triples.

        ``entities`` optionally fixes the entity vocabulary order (e.g. OpenDialKG's
        entities file, so ids are its line numbers); unseen names are appended in order
        of first appearance (heads, then tails). A relation ``~r`` (``reverse_prefix`` +
        ``r``) is stored as forward ``(t, r, h)``; ``reverse_prefix=None`` keeps every
        relation name as given.
        """
        return cls._from_chunks(triple_chunks(triples), entities, reverse_prefix)

    @classmethod
    def from_file(
        cls,
        path: Union[str, Path],
        entities: Optional[Sequence[str]] = None,
        skip_bad: bool = False,
        reverse_prefix: Optional[str] = "~",
    ) -> "KnowledgeGraph":
        """
        Load a UTF-8 file of ``subject\\trelation\\tobject`` lines (OpenDialKG format).

        Empty lines are ignored. A line without exactly three non-empty tab-separated
        fields raises ``ValueError`` naming the file and line, unless ``skip_bad``; then
        it is skipped, logged with its ``file:line`` (warning) and counted in
        :attr:`skipped_lines`. ``reverse_prefix="~"`` folds OpenDialKG's ``~r`` lines onto
        their forward fact (the file lists every fact both ways).
        """
        bad = [0]
        kg = cls._from_chunks(tsv_chunks(path, skip_bad, bad), entities, reverse_prefix)
        kg.skipped_lines = bad[0]
        return kg

    @classmethod
    def _from_chunks(
        cls, chunks: Iterable[Columns], entities: Optional[Sequence[str]], reverse_prefix: Optional[str]
    ) -> "KnowledgeGraph":
        """Intern chunks of name columns and canonicalise ``~r`` triples to forward ones."""
        ents, rels = Interner(entities or ()), Interner()
        hs: List[np.ndarray] = []
        rs: List[np.ndarray] = []
        ts: List[np.ndarray] = []
        for heads, relations, tails in chunks:
            hs.append(ents.add(heads))
            ts.append(ents.add(tails))
            rs.append(rels.add(relations))
        cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.int64)  # noqa: E731
        ent_names, (h, t) = ents.finish([cat(hs), cat(ts)])
        raw_names, (r_raw,) = rels.finish([cat(rs)])
        fwd_names: Dict[str, int] = {}
        raw_to_fwd = np.zeros(len(raw_names), dtype=np.int32)
        raw_is_rev = np.zeros(len(raw_names), dtype=bool)
        plen = len(reverse_prefix) if reverse_prefix else 0
        for i, name in enumerate(raw_names):  # a few thousand names at most
            rev = bool(plen) and len(name) > plen and name.startswith(reverse_prefix or "")
            raw_to_fwd[i] = fwd_names.setdefault(name[plen:] if rev else name, len(fwd_names))
            raw_is_rev[i] = rev
        flip = raw_is_rev[r_raw]
        h2, t2 = np.where(flip, t, h), np.where(flip, h, t)
        return cls(ent_names, list(fwd_names), h2, raw_to_fwd[r_raw], t2, reverse_prefix)

    # ------------------------------------------------------------------ vocabularies
    @property
    def num_entities(self) -> int:
        return len(self.entities)

    @property
    def num_relations(self) -> int:
        return len(self.relations)

    @property
    def num_triples(self) -> int:
        return int(self.heads.shape[0])

    def entity_id(self, name: str) -> int:
        """Id of entity ``name`` (``KeyError`` if unknown)."""
        return self._entity_ids[name]

    def has_entity(self, name: str) -> bool:
        return name in self._entity_ids

    def relation_id(self, name: str) -> Tuple[int, bool]:
        """``(forward relation id, is_reverse)`` for ``r`` or ``~r`` (``KeyError`` if unknown)."""
        p = self.reverse_prefix
        if name in self._relation_ids:
            return self._relation_ids[name], False
        if p and name.startswith(p) and name[len(p):] in self._relation_ids:
            return self._relation_ids[name[len(p):]], True
        raise KeyError(name)

    # ------------------------------------------------------------------ edges
    def has_triple(self, head: str, relation: str, tail: str) -> bool:
        """Whether the KG holds ``(head, relation, tail)``; ``~r`` asks for ``(tail, r, head)``."""
        try:
            h, t = self._entity_ids[head], self._entity_ids[tail]
            r, rev = self.relation_id(relation)
        except KeyError:
            return False
        if rev:
            h, t = t, h
        n, m = max(self.num_entities, 1), max(self.num_relations, 1)
        key = (h * m + r) * n + t
        i = int(np.searchsorted(self._keys, key))
        return i < self._keys.shape[0] and int(self._keys[i]) == key

    def out_edges(self, entity_id: int) -> Tuple[np.ndarray, np.ndarray]:
        """``(relation ids, tail ids)`` of edges ``(entity, r, t)``, sorted by ``(r, t)``."""
        a, b = self._out_ptr[entity_id], self._out_ptr[entity_id + 1]
        return self.rels[a:b], self.tails[a:b]

    def in_edges(self, entity_id: int) -> Tuple[np.ndarray, np.ndarray]:
        """``(relation ids, head ids)`` of edges ``(h, r, entity)``, sorted by ``(r, h)``."""
        idx = self._rev_order[self._in_ptr[entity_id]:self._in_ptr[entity_id + 1]]
        return self.rels[idx], self.heads[idx]

    def neighbors(self, entity: str) -> List[Tuple[str, str, bool]]:
        """
        ``(relation, neighbour, forward)`` for every edge at ``entity``: ``forward`` is
        True for ``(entity, relation, neighbour)`` and False for ``(neighbour, relation,
        entity)`` (i.e. ``(entity, ~relation, neighbour)``). Outgoing edges first.
        """
        e = self._entity_ids[entity]
        out: List[Tuple[str, str, bool]] = []
        for forward, (rs, ns) in ((True, self.out_edges(e)), (False, self.in_edges(e))):
            out.extend(
                (self.relations[r], self.entities[x], forward)
                for r, x in zip(rs.tolist(), ns.tolist())
            )
        return out

    def triples(self) -> Iterator[Triple]:
        """All stored (forward) triples, sorted by ids."""
        for h, r, t in zip(self.heads.tolist(), self.rels.tolist(), self.tails.tolist()):
            yield self.entities[h], self.relations[r], self.entities[t]

    # ------------------------------------------------------------------ sparse views
    @property
    def forward(self) -> sp.csr_matrix:
        """Head-indexed CSR (row head, column tail, data relation id), one entry per edge."""
        if self._forward is None:
            n = self.num_entities
            self._forward = sp.csr_matrix((self.rels, self.tails, self._out_ptr), shape=(n, n))
        return self._forward

    @property
    def backward(self) -> sp.csr_matrix:
        """Tail-indexed CSR (row tail, column head, data relation id), one entry per edge."""
        if self._backward is None:
            n, o = self.num_entities, self._rev_order
            self._backward = sp.csr_matrix(
                (self.rels[o], self.heads[o], self._in_ptr), shape=(n, n)
            )
        return self._backward

    @property
    def A(self) -> sp.csr_matrix:
        """Symmetric 0/1 entity adjacency (float64), built on first use."""
        if self._adjacency is None:
            n = self.num_entities
            rows = np.concatenate([self.heads, self.tails])
            cols = np.concatenate([self.tails, self.heads])
            adj = sp.csr_matrix((np.ones(rows.shape[0]), (rows, cols)), shape=(n, n))
            adj.sum_duplicates()
            adj.data[:] = 1.0
            self._adjacency = adj
        return self._adjacency

    def adjacency(self, kind: str = "count") -> sp.csr_matrix:
        """
        The float64 adjacency of ``kind`` (see the module docstring), built on first use:
        ``binary`` = :attr:`A`; ``directed``: ``D[h, t]`` = relations ``h -> t`` (one per
        stored edge: OpenDialKG's ``~r`` spelling of a fact is the same edge); ``count`` =
        ``D + D^T`` less ``D``'s diagonal once (a self-loop is one relation, not two).
        """
        if kind == "binary":
            return self.A
        if kind not in ADJACENCY_KINDS:
            raise ValueError(f"adjacency {kind!r}: one of {', '.join(ADJACENCY_KINDS)}")
        if kind not in self._counted:
            n = self.num_entities
            directed = sp.csr_matrix(
                (np.ones(self.heads.shape[0]), (self.heads, self.tails)), shape=(n, n))
            directed.sum_duplicates()
            if kind == "directed":
                self._counted[kind] = directed
            else:
                both = (directed + directed.T - sp.diags(directed.diagonal())).tocsr()
                both.eliminate_zeros()
                self._counted[kind] = both
        return self._counted[kind]


#: kinds of :meth:`KnowledgeGraph.adjacency`
ADJACENCY_KINDS = ("binary", "count", "directed")


def _indptr(sorted_rows: np.ndarray, n: int) -> np.ndarray:
    """CSR row pointer of a row-sorted id array."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(sorted_rows, minlength=n), out=ptr[1:])
    return ptr

"""
Token-level prefix trie over tokenized linearized paths (the constraint ``C_M`` of Eq. 3).

Nodes are integers; node 0 is the root (empty prefix). Each node has its children
(``token id -> node``) and the entities the token leading into it is *spelling*: the
entity whose name the token is part of, and also, for the tokens after a name up to the
first non-blank one (a slot token or ``[Tail]``), that name's entity -- choosing them is
what commits to the name rather than a longer one sharing its prefix (``Iron Man`` vs
``Iron Man 2``). A node shared by several paths keeps every distinct entity (unlike the
public code, where the first inserted path won), so :mod:`.constrained` can look
``p_graph`` up per continuation.

Storage (measured reason, ``parlai-docgraph bench --only trie``): a Python ``dict`` per
node filled by one ``insert`` per path costs, on an OpenDialKG-size KG (1.19M triples, ~300
candidate paths and ~6k nodes per turn), ~80 ms per turn and ~2 MB per trie. Sequences are
therefore collected and the trie is built in one go with
numpy on first use: rows sorted lexicographically, a node wherever a row leaves its
predecessor's prefix, nodes numbered depth-major so that every node's children are one
contiguous, token-sorted id range (``int32`` arrays: token, child range, entity list).
Only the nodes a search visits get a ``dict`` of children (cached), so decoding walks a
prefix with one dict lookup per token. ``marisa-trie`` was considered: it
stores byte-string keys without per-node values or child enumeration by token, which the
``LogitsProcessor`` needs at every step.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from parlai_docgraph.kg.linearize import Linearizer
from parlai_docgraph.kg.path_ids import PathEncoder, token_values
from parlai_docgraph.kg.subgraph import Hop

__all__ = ["PathTrie", "build_path_trie", "token_values"]


class PathTrie:
    """A prefix trie of token-id sequences with per-node entity values (see module doc)."""

    def __init__(self) -> None:
        # blocks of (ids, flat values, remap): remap = (sorted value indices, this trie's
        # entity ids for them), None when the values already are this trie's ids
        self._pending: List[Tuple[List[List[int]], np.ndarray, Optional[Tuple[np.ndarray, np.ndarray]]]] = []
        self._entities: List[str] = []
        self._entity_ids: Dict[str, int] = {}
        self._arrays: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = None
        self._kids: Dict[int, Dict[int, int]] = {}
        self.num_sequences = 0

    # ------------------------------------------------------------------ building
    def _entity(self, name: Optional[str]) -> int:
        if name is None:
            return -1
        i = self._entity_ids.get(name)
        if i is None:
            i = self._entity_ids[name] = len(self._entities)
            self._entities.append(name)
        return i

    def insert(self, ids: Sequence[int], values: Optional[Sequence[Optional[str]]] = None) -> None:
        """Insert one sequence; ``values[i]`` is the entity token ``ids[i]`` spells (or None)."""
        if values is not None and len(values) != len(ids):
            raise ValueError("values must align with ids")
        vals = [-1] * len(ids) if values is None else [-1 if v is None else self._entity(v) for v in values]
        self._add([list(ids)], [vals], np.asarray(vals, dtype=np.int64), None)

    def extend(self, ids: List[List[int]], values: List[List[int]], entities: Sequence[str]) -> None:
        """
        Insert many sequences at once: ``values[k][i]`` indexes ``entities`` (``-1``: no
        entity), as :meth:`~.path_ids.PathEncoder.encode` returns them.
        """
        flat = np.fromiter(chain.from_iterable(values), dtype=np.int64)
        if len(flat) and int(flat.min()) < -1:
            raise ValueError("entity indices must be >= -1")
        used = np.sort(flat[flat >= 0])
        used = used[np.concatenate(([True], used[1:] != used[:-1]))] if len(used) else used
        mine = np.asarray([self._entity(entities[e]) for e in used.tolist()], dtype=np.int64)
        self._add(ids, values, flat, (used, mine))

    def _add(self, ids: List[List[int]], values: List[List[int]], flat: np.ndarray,
             remap: Optional[Tuple[np.ndarray, np.ndarray]]) -> None:
        if len(ids) != len(values) or any(len(i) != len(v) for i, v in zip(ids, values)):
            raise ValueError("values must align with ids")
        if self._arrays is not None:  # grow a built trie: its nodes go in again first
            self._pending.append(self._node_block())
            self._arrays = None
            self._kids = {}
        self._pending.append((ids, flat, remap))
        self.num_sequences += len(ids)

    def _node_block(self) -> Tuple[List[List[int]], np.ndarray, None]:
        """
        One sequence per (node, entity) of the built trie: the node's prefix, the entity
        on its last token (-1 without one). Re-inserted, they rebuild the same nodes and
        entity sets, so the built arrays need no copy of the inserted sequences.
        """
        token, child_start, value_start, value_entity = self._arrays  # type: ignore[misc]
        parent = np.repeat(np.arange(len(token)), np.diff(child_start)[: len(token)]).tolist()
        tokens = token.tolist()
        prefix: List[List[int]] = [[]]
        ids: List[List[int]] = []
        vals: List[List[int]] = []
        for node in range(1, len(tokens)):
            seq = prefix[parent[node - 1]] + [tokens[node]]
            prefix.append(seq)
            for e in value_entity[value_start[node] : value_start[node + 1]].tolist() or [-1]:
                ids.append(seq)
                vals.append([-1] * (len(seq) - 1) + [e])
        return ids, np.fromiter(chain.from_iterable(vals), dtype=np.int64), None

    def _matrix(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All sequences as ``-1``-padded ``[n, L]`` id and value matrices plus lengths."""
        seqs = [s for block, _, _ in self._pending for s in block]
        lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
        width = int(lengths.max(initial=0))
        ids = np.full((len(seqs), width), -1, dtype=np.int64)
        vals = np.full((len(seqs), width), -1, dtype=np.int64)
        mask = np.arange(width)[None, :] < lengths[:, None]
        total = int(lengths.sum())
        ids[mask] = np.fromiter(chain.from_iterable(seqs), dtype=np.int64, count=total)
        flat_vals = [flat if remap is None else _remap(flat, *remap) for _, flat, remap in self._pending]
        vals[mask] = np.concatenate(flat_vals) if flat_vals else np.zeros(0, dtype=np.int64)
        return ids, vals, lengths

    def _build(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(token, child_start, value_start, value_entity)`` arrays (see module doc)."""
        if self._arrays is not None:
            return self._arrays
        ids, vals, lengths = self._matrix()
        n, width = ids.shape
        order = np.lexsort(ids.T[::-1]) if n and width else np.arange(n)
        ids, vals, lengths = ids[order], vals[order], lengths[order]
        valid = np.arange(width)[None, :] < lengths[:, None]
        # first column where row i differs from row i - 1 (padding -1 differs from any token)
        eq = ids[1:] == ids[:-1]
        lcp = np.where(eq.all(axis=1), width, eq.argmin(axis=1)) if n > 1 else np.zeros(0, dtype=np.int64)
        first = np.concatenate(([0], lcp)) if n else np.zeros(0, dtype=np.int64)
        new_t = (valid & (np.arange(width)[None, :] >= first[:, None])).T  # [depth, row]
        created = np.where(new_t, np.cumsum(new_t.ravel()).reshape(new_t.shape), 0)
        node_t = np.maximum.accumulate(created, axis=1) if n else created  # node of each cell
        num = int(new_t.sum())
        token = np.full(num + 1, -1, dtype=np.int32)
        token[1:] = ids.T[new_t]
        parent_t = np.zeros_like(node_t)
        parent_t[1:] = node_t[:-1]
        parent = parent_t[new_t]  # non-decreasing: depth-major numbering, sorted rows
        child_start = (np.searchsorted(parent, np.arange(num + 2)) + 1).astype(np.int32)
        has = valid.T & (vals.T >= 0)
        pairs = np.sort(node_t[has] * (len(self._entities) + 1) + vals.T[has])
        pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))] if len(pairs) else pairs
        pair_node = pairs // (len(self._entities) + 1)
        value_start = np.searchsorted(pair_node, np.arange(num + 2)).astype(np.int32)
        value_entity = (pairs % (len(self._entities) + 1)).astype(np.int32)
        self._pending = []
        self._arrays = (token, child_start, value_start, value_entity)
        return self._arrays

    # ------------------------------------------------------------------ queries
    @property
    def num_nodes(self) -> int:
        return len(self._build()[0])

    @property
    def nbytes(self) -> int:
        """Bytes of the built arrays (the trie proper, without the cached child dicts)."""
        return sum(a.nbytes for a in self._build())

    def children(self, node: int) -> Dict[int, int]:
        """``token id -> child node`` of ``node`` (token-sorted; cached per node)."""
        kids = self._kids.get(node)
        if kids is None:
            token, child_start = self._build()[:2]
            a, b = int(child_start[node]), int(child_start[node + 1])
            kids = self._kids[node] = dict(zip(token[a:b].tolist(), range(a, b)))
        return kids

    def node(self, prefix: Sequence[int]) -> Optional[int]:
        """Node reached by ``prefix``, or None if the prefix leaves the trie."""
        node: Optional[int] = 0
        for tok in prefix:
            node = self.children(node).get(tok)  # type: ignore[arg-type]
            if node is None:
                return None
        return node

    def layout(self) -> Tuple[np.ndarray, np.ndarray]:
        """``(token, child_start)``: the token leading into each node, and the children of
        node ``v`` as the id range ``child_start[v] .. child_start[v + 1] - 1`` (token-sorted,
        the order of :meth:`children`)."""
        token, child_start = self._build()[:2]
        return token, child_start

    def node_scores(self, table: Mapping[str, float]) -> np.ndarray:
        """``[num_nodes]`` float64: per node, the largest ``table`` value (0 for a name not in
        it) among the entities the token into the node spells (:meth:`values`); NaN where it
        spells none."""
        _, _, start, ent = self._build()
        out = np.full(len(start) - 1, np.nan)
        if not len(ent):
            return out
        scores = np.asarray([table.get(e, 0.0) for e in self._entities], dtype=np.float64)
        has = np.flatnonzero(np.diff(start) > 0)
        out[has] = np.maximum.reduceat(scores[ent], start[has])
        return out

    def values(self, node: int) -> Tuple[str, ...]:
        """Entities spelled by the token that leads into ``node``."""
        _, _, start, ent = self._build()
        return tuple(self._entities[e] for e in ent[start[node] : start[node + 1]].tolist())

    def allowed(self, prefix: Sequence[int]) -> List[int]:
        """Token ids that may follow ``prefix`` (empty if ``prefix`` left the trie or ended)."""
        node = self.node(prefix)
        return [] if node is None else list(self.children(node))


def _remap(flat: np.ndarray, used: np.ndarray, mine: np.ndarray) -> np.ndarray:
    """``mine[k]`` where ``flat == used[k]``, ``-1`` where ``flat`` is ``-1``."""
    if not len(used):
        return flat
    return np.where(flat >= 0, mine[np.searchsorted(used, flat).clip(0, len(used) - 1)], -1)


def build_path_trie(
    paths: Sequence[Sequence[Hop]], linearizer: Linearizer, tokenizer: Any, eos_id: Optional[int] = None,
    encoder: Optional[PathEncoder] = None,
) -> PathTrie:
    """
    Trie of ``tokenizer(linearize_path(p), add_special_tokens=False)`` + ``[eos]`` for
    each path (``eos_id`` defaults to ``tokenizer.eos_token_id``; None appends nothing).

    ``tokenizer`` must be a fast (``tokenizers``-backed) HF tokenizer, for offsets. Train
    the retriever on the same ids (for T5, ``tokenizer(text)`` appends the same ``</s>``).
    Pass a long-lived ``encoder`` (:class:`~.path_ids.PathEncoder` of the same linearizer
    and tokenizer) to reuse its name cache across calls.
    """
    trie = PathTrie()
    if not paths:
        return trie
    if eos_id is None:
        eos_id = getattr(tokenizer, "eos_token_id", None)
    encoder = encoder or PathEncoder(linearizer, tokenizer)
    ids, values, entities = encoder.encode(paths)
    if eos_id is not None:
        ids = [i + [eos_id] for i in ids]
        values = [v + [-1] for v in values]
    trie.extend(ids, values, entities)
    return trie

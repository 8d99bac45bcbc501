"""
Token-level prefix trie over tokenized linearized paths (the constraint ``C_M`` of Eq. 3).

Nodes are integers; node 0 is the root (empty prefix). Each node stores its children
(``token id -> node``) and the entities the token leading into it is *spelling*: the
entity whose name the token is part of, and also, for the tokens after a name up to the
first non-blank one (a slot token or ``[Tail]``), that name's entity -- choosing them is
what commits to the name rather than a longer one sharing its prefix (``Iron Man`` vs
``Iron Man 2``). A node
shared by several paths keeps every distinct entity (unlike the public code, where the
first inserted path won), so :mod:`.constrained` can look ``p_graph`` up per
continuation.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from .linearize import Linearizer
from .subgraph import Hop


class PathTrie:
    """A prefix trie of token-id sequences with per-node entity values."""

    def __init__(self) -> None:
        self._children: List[Dict[int, int]] = [{}]
        self._values: List[List[str]] = [[]]
        self.num_sequences = 0

    @property
    def num_nodes(self) -> int:
        return len(self._children)

    def insert(self, ids: Sequence[int], values: Optional[Sequence[Optional[str]]] = None) -> None:
        """Insert one sequence; ``values[i]`` is the entity token ``ids[i]`` spells (or None)."""
        if values is not None and len(values) != len(ids):
            raise ValueError("values must align with ids")
        children, vals = self._children, self._values
        node = 0
        for i, tok in enumerate(ids):
            nxt = children[node].get(tok)
            if nxt is None:
                nxt = len(children)
                children[node][tok] = nxt
                children.append({})
                vals.append([])
            node = nxt
            v = values[i] if values is not None else None
            if v is not None and v not in vals[node]:
                vals[node].append(v)
        self.num_sequences += 1

    def node(self, prefix: Sequence[int]) -> Optional[int]:
        """Node reached by ``prefix``, or None if the prefix leaves the trie."""
        node: Optional[int] = 0
        children = self._children
        for tok in prefix:
            node = children[node].get(tok)  # type: ignore[index]
            if node is None:
                return None
        return node

    def children(self, node: int) -> Dict[int, int]:
        """``token id -> child node`` of ``node``."""
        return self._children[node]

    def values(self, node: int) -> Tuple[str, ...]:
        """Entities spelled by the token that leads into ``node``."""
        return tuple(self._values[node])

    def allowed(self, prefix: Sequence[int]) -> List[int]:
        """Token ids that may follow ``prefix`` (empty if ``prefix`` left the trie or ended)."""
        node = self.node(prefix)
        return [] if node is None else list(self._children[node])


def token_values(
    text: str, offsets: Sequence[Tuple[int, int]], spans: Sequence[Tuple[int, int, str]]
) -> List[Optional[str]]:
    """
    Entity spelled by each token of ``text``, from token character ``offsets`` and entity
    ``spans`` (both sorted): the entity whose span the token overlaps; after a span, the
    tokens up to and including the first one with non-blank text (a slot token or
    ``[Tail]``; a whitespace-only token such as SentencePiece's lone ``\u2581`` may come
    first) also count for that entity, since choosing them ends the name.
    """
    out: List[Optional[str]] = []
    k = 0
    pending: Optional[str] = None  # entity whose span just ended, not yet committed
    for a, b in offsets:
        while k < len(spans) and spans[k][1] <= a:
            k += 1
        if k < len(spans) and b > a and spans[k][0] < b and a < spans[k][1]:
            out.append(spans[k][2])
            pending = spans[k][2]
        else:
            out.append(pending)
            if text[a:b].strip():
                pending = None
    return out


def build_path_trie(
    paths: Sequence[Sequence[Hop]], linearizer: Linearizer, tokenizer: Any, eos_id: Optional[int] = None
) -> PathTrie:
    """
    Trie of ``tokenizer(linearize_path(p), add_special_tokens=False)`` + ``[eos]`` for
    each path (``eos_id`` defaults to ``tokenizer.eos_token_id``; None appends nothing).

    ``tokenizer`` must be a fast (``tokenizers``-backed) HF tokenizer, for offsets. Train
    the retriever on the same ids (for T5, ``tokenizer(text)`` appends the same ``</s>``).
    """
    trie = PathTrie()
    if not paths:
        return trie
    if eos_id is None:
        eos_id = getattr(tokenizer, "eos_token_id", None)
    pairs = [linearizer.linearize_path_with_spans(p) for p in paths]
    enc = tokenizer(
        [t for t, _ in pairs], add_special_tokens=False, return_offsets_mapping=True
    )
    for ids, offsets, (text, spans) in zip(enc["input_ids"], enc["offset_mapping"], pairs):
        values = token_values(text, offsets, spans)
        if eos_id is not None:
            ids, values = list(ids) + [eos_id], values + [None]
        trie.insert(ids, values)
    return trie

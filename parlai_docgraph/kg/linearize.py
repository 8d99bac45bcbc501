"""
Structure-aware KG linearization (Park et al., Eq. 2 and appendix A.1) and its inverse.

A path ``e_1 -r_1-> e_2 -r_2-> e_3`` is written

    ``[Head] e_1 [Int1] r_1 [Int2] e_2 [Int3] r_2 [Int4] e_3 [Tail]``

hop ``j`` using the slot pair at positions ``2j-1`` (before the relation) and ``2j``
(before the entity it reaches). A hop walked *against* a KG edge -- the start entity is
the tail of the first triple, or two consecutive triples meet head-to-head or
tail-to-tail -- uses ``[Rev{2j-1}] r [Rev{2j}]`` instead, with the relation name unchanged:
the KG triple ``(e_3, r_2, e_2)`` walked from ``e_2`` is ``[Head] e_2 [Rev1] r_2 [Rev2]
e_3 [Tail]``. Paths are joined with ``[SEP]``. With ``slot_tokens = n > 1`` every slot is
``n`` consecutive learnable tokens, ``[Int1_1] [Int1_2] ...``. Every path is closed by
``[Tail]`` whatever its length (the public code left paths of >= 3 triples unclosed).

Tokens are separated by single spaces. :meth:`Linearizer.parse_paths` inverts
:meth:`Linearizer.linearize` exactly for names that are non-empty, have no leading or
trailing whitespace and contain no special token; it tolerates any whitespace around the
special tokens (as decoded text has). Relation names are kept verbatim (no ``_`` -> space
rewriting), so parsed triples can be looked up in the KG directly.
"""

from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

from parlai_docgraph.kg.store import Triple
from parlai_docgraph.kg.subgraph import Hop, Path

Span = Tuple[int, int, str]


class Linearizer:
    """Writes paths as special-token sequences and parses them back."""

    def __init__(self, slot_tokens: int = 1, max_hops: int = 2) -> None:
        if slot_tokens < 1 or max_hops < 1:
            raise ValueError("slot_tokens and max_hops must be >= 1")
        self.slot_tokens = slot_tokens
        self.max_hops = max_hops
        self.head, self.tail, self.sep = "[Head]", "[Tail]", "[SEP]"
        self._slot_of = {}  # token -> (kind, position, sub-index)
        for pos in range(1, 2 * max_hops + 1):
            for kind in ("Int", "Rev"):
                for sub, tok in enumerate(self.slot(kind, pos), 1):
                    self._slot_of[tok] = (kind, pos, sub)
        toks = sorted(self.special_tokens(), key=len, reverse=True)
        self._split = re.compile("(" + "|".join(re.escape(t) for t in toks) + ")")

    def slot(self, kind: str, position: int) -> List[str]:
        """The ``slot_tokens`` tokens of slot ``kind`` (``Int``/``Rev``) at ``position``."""
        if self.slot_tokens == 1:
            return [f"[{kind}{position}]"]
        return [f"[{kind}{position}_{i}]" for i in range(1, self.slot_tokens + 1)]

    def special_tokens(self) -> List[str]:
        """All special tokens, to add to a tokenizer (``[Head] [Tail] [SEP]``, then slots)."""
        out = [self.head, self.tail, self.sep]
        for pos in range(1, 2 * self.max_hops + 1):
            out += self.slot("Int", pos) + self.slot("Rev", pos)
        return out

    # ------------------------------------------------------------------ writing
    def check_name(self, name: str) -> str:
        """``name`` if it can be linearized reversibly, else ``ValueError``."""
        if not name or name != name.strip() or self._split.search(name):
            raise ValueError(f"name cannot be linearized reversibly: {name!r}")
        return name

    @property
    def _slot_pieces(self) -> dict:
        """``(reverse, hop j) -> (pieces before the relation, pieces after it)``, cached."""
        cache = self.__dict__.get("_slot_pieces_cache")
        if cache is None:
            cache = self.__dict__["_slot_pieces_cache"] = {
                (rev, j): tuple([(t, None) for t in self.slot("Rev" if rev else "Int", 2 * j - o)] for o in (1, 0))
                for rev in (False, True) for j in range(1, self.max_hops + 1)
            }
        return cache

    def pieces(self, path: Sequence[Hop]) -> List[Tuple[str, Optional[str]]]:
        """
        The space-separated pieces of one path, in order: ``(token, None)`` for a special
        token (``[Head]``, slot tokens, ``[Tail]``), ``(name, entity)`` for an entity name
        and ``(relation, None)`` for a relation name.
        """
        if not path:
            raise ValueError("empty path")
        if len(path) > self.max_hops:
            raise ValueError(f"path of {len(path)} hops > max_hops={self.max_hops}")
        slots = self._slot_pieces
        out: List[Tuple[str, Optional[str]]] = [(self.head, None), (self.check_name(path[0].source), path[0].source)]
        for j, hop in enumerate(path, 1):
            if j > 1 and hop.source != path[j - 2].target:
                raise ValueError(f"hop {j} does not continue the path: {hop}")
            before, after = slots[(hop.reverse, j)]
            out += before
            out.append((self.check_name(hop.relation), None))
            out += after
            out.append((self.check_name(hop.target), hop.target))
        out.append((self.tail, None))
        return out

    def linearize_path_with_spans(self, path: Sequence[Hop]) -> Tuple[str, List[Span]]:
        """
        Text of one path, plus ``(start, end, entity)`` character spans of its entity
        names (used to know which entity each token spells).
        """
        pieces = self.pieces(path)
        spans: List[Span] = []
        length = -1
        for piece, entity in pieces:
            length += 1  # the separating space
            if entity is not None:
                spans.append((length, length + len(piece), entity))
            length += len(piece)
        return " ".join(p for p, _ in pieces), spans

    def linearize_path(self, path: Sequence[Hop]) -> str:
        """Text of one path (Eq. 2 without ``[SEP]``)."""
        return self.linearize_path_with_spans(path)[0]

    def linearize(self, paths: Sequence[Sequence[Hop]]) -> str:
        """``z_G`` of Eq. 2: the paths joined by ``[SEP]``."""
        return f" {self.sep} ".join(self.linearize_path(p) for p in paths)

    # ------------------------------------------------------------------ parsing
    def _items(self, text: str) -> List[Tuple[bool, str]]:
        """``(is_special, text)`` items; whitespace between specials dropped, names stripped."""
        items: List[Tuple[bool, str]] = []
        for i, piece in enumerate(self._split.split(text)):
            if i % 2:
                items.append((True, piece))
            elif piece.strip():
                items.append((False, piece.strip()))
        return items

    def _parse_one(self, items: List[Tuple[bool, str]]) -> Path:
        """Parse the items of one path (no ``[SEP]``); ``ValueError`` if malformed."""
        pos = 0

        def take(special: bool) -> str:
            nonlocal pos
            if pos >= len(items) or items[pos][0] != special:
                raise ValueError(f"malformed path at item {pos}: {items}")
            pos += 1
            return items[pos - 1][1]

        def take_slot(position: int) -> str:
            kind = None
            for sub in range(1, self.slot_tokens + 1):
                got = self._slot_of.get(take(True))
                if got is None or got[1:] != (position, sub) or kind not in (None, got[0]):
                    raise ValueError(f"unexpected slot token at item {pos - 1}: {items}")
                kind = got[0]
            return kind  # type: ignore[return-value]

        if take(True) != self.head:
            raise ValueError(f"path must start with {self.head}: {items}")
        cur = take(False)
        hops: List[Hop] = []
        while pos < len(items) and items[pos] != (True, self.tail):
            j = len(hops) + 1
            kind = take_slot(2 * j - 1)
            rel = take(False)
            if take_slot(2 * j) != kind:
                raise ValueError(f"slot kinds of hop {j} differ: {items}")
            nxt = take(False)
            hops.append(Hop(cur, rel, nxt, kind == "Rev"))
            cur = nxt
        if take(True) != self.tail or pos != len(items) or not hops:
            raise ValueError(f"path must be closed by {self.tail} after >= 1 hop: {items}")
        return tuple(hops)

    def parse_paths(self, text: str, strict: bool = True) -> List[Path]:
        """
        Inverse of :meth:`linearize`. A malformed path raises ``ValueError`` if
        ``strict``, else it is dropped (e.g. a beam cut off by ``max_new_tokens``).
        """
        groups: List[List[Tuple[bool, str]]] = [[]]
        for item in self._items(text):
            if item == (True, self.sep):
                groups.append([])
            else:
                groups[-1].append(item)
        if groups == [[]]:
            return []
        out: List[Path] = []
        for g in groups:
            try:
                out.append(self._parse_one(g))
            except ValueError:
                if strict:
                    raise
        return out

    def parse_triples(self, text: str, strict: bool = True) -> List[Triple]:
        """KG-oriented triples of all paths in ``text``, in order."""
        return [h.triple for p in self.parse_paths(text, strict) for h in p]

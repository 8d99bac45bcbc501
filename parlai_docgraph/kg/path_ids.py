"""
Token ids of linearized paths, and the entity each token spells, for the path trie.

The reference is :meth:`PathEncoder.encode_text`: ``tokenizer(linearize_path(p),
add_special_tokens=False)`` with offsets, and :func:`token_values` over the entity spans.
That is what the retriever is trained on (``GSRInputs.path_target``).

:meth:`PathEncoder.encode` gives the same ids and values faster by tokenizing every
distinct entity or relation name once (cached across calls) and joining the pieces.
Measured reason (``parlai-docgraph bench --only trie``, OpenDialKG-size KG): tokenizing
each turn's ~300 full path strings with offsets, then walking every token in Python, was
~3/4 of the per-turn trie build time, while the same few hundred names and ~1k relation
names recur across paths and turns. It is exact because a fast (``tokenizers``) tokenizer
splits the text on added special tokens *before* normalising and pre-tokenizing, and the
structural tokens of the linearization (``[Head]``, slots, ``[Tail]``) are such tokens:
the text between two of them, ``" name "``, is tokenized on its own. Each name is
therefore tokenized once inside the probe ``"[Head] name [Tail]"``. Whether a tokenizer
really behaves so is checked, not assumed: structural tokens must encode to one id each,
and the first paths of every encoder are encoded both ways and compared; any difference
(e.g. plain-text markers, :class:`~parlai_docgraph.models.gsr.inputs.PlainLinearizer`)
switches the encoder to :meth:`encode_text` for good.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Sequence, Tuple

from parlai_docgraph.kg.linearize import Linearizer
from parlai_docgraph.kg.subgraph import Hop

LOG = logging.getLogger(__name__)
#: per path token ids, per path entity index per token (-1: none), entity names
Batch = Tuple[List[List[int]], List[List[int]], List[str]]


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


class PathEncoder:
    """
    Paths -> token ids and the entity each token spells; names tokenized once (see module
    doc). Results are ``(ids, values, entities)``: per path a list of ids and a list of
    entity indices into ``entities`` (``-1``: the token spells no entity).
    """

    #: paths of the first call encoded both ways to check the piecewise encoding
    CHECK_PATHS = 16

    def __init__(self, linearizer: Linearizer, tokenizer: Any, max_cache: int = 1_000_000) -> None:
        self.lin = linearizer
        self.tok = tokenizer
        self.max_cache = max_cache
        # name -> (index, ids, values as the path's entity, values as a relation)
        self._names: Dict[str, Tuple[int, Tuple[int, ...], Tuple[int, ...], Tuple[int, ...]]] = {}
        self._entities: List[str] = []
        self._special: Dict[str, int] = {}
        self._gap: Tuple[int, ...] = ()
        self._templates: Dict[Tuple[bool, ...], List[Tuple[int, Tuple[int, ...], Tuple[int, ...]]]] = {}
        self.fast: Optional[bool] = None  # None: not checked yet
        specials = linearizer.special_tokens()
        if not specials:
            self.fast = False
            return
        for t in specials:
            ids = tokenizer(t, add_special_tokens=False)["input_ids"]
            if len(ids) != 1:
                self.fast = False
                return
            self._special[t] = ids[0]
        head, tail = linearizer.head, linearizer.tail
        gap = tokenizer(f"{head} {tail}", add_special_tokens=False)["input_ids"]
        if gap[:1] != [self._special[head]] or gap[-1:] != [self._special[tail]]:
            self.fast = False
            return
        self._gap = tuple(gap[1:-1])

    # ------------------------------------------------------------------ reference
    def encode_text(self, paths: Sequence[Sequence[Hop]]) -> Batch:
        """Tokenize each whole linearized path (the reference encoding)."""
        ids_out: List[List[int]] = []
        vals_out: List[List[int]] = []
        entities: List[str] = []
        index: Dict[Optional[str], int] = {None: -1}
        if not paths:
            return ids_out, vals_out, entities
        pairs = [self.lin.linearize_path_with_spans(p) for p in paths]
        enc = self.tok([t for t, _ in pairs], add_special_tokens=False, return_offsets_mapping=True)
        for ids, offsets, (text, spans) in zip(enc["input_ids"], enc["offset_mapping"], pairs):
            for _, _, name in spans:
                if name not in index:
                    index[name] = len(entities)
                    entities.append(name)
            ids_out.append(list(ids))
            vals_out.append([index[v] for v in token_values(text, offsets, spans)])
        return ids_out, vals_out, entities

    # ------------------------------------------------------------------ piecewise
    def _learn(self, names: Sequence[str]) -> None:
        """Tokenize unseen names inside ``"[Head] name [Tail]"`` probes (one batch call)."""
        head, tail = self.lin.head, self.lin.tail
        probes = [f"{head} {self.lin.check_name(n)} {tail}" for n in names]
        enc = self.tok(probes, add_special_tokens=False, return_offsets_mapping=True)
        start = len(head) + 1
        for name, text, ids, offsets in zip(names, probes, enc["input_ids"], enc["offset_mapping"]):
            if ids[:1] != [self._special[head]] or ids[-1:] != [self._special[tail]]:
                raise _NotPiecewise(name)
            vals = token_values(text, offsets, [(start, start + len(name), name)])
            if vals[-1] != name:  # the token ending the name must count for it
                raise _NotPiecewise(name)
            i = len(self._entities)
            self._entities.append(name)
            body = ids[1:-1]
            self._names[name] = (i, tuple(body), tuple(i if v == name else -1 for v in vals[1:-1]),
                                 (-1,) * len(body))

    def _template(self, path: Sequence[Hop]) -> List[Tuple[int, Tuple[int, ...], Tuple[int, ...]]]:
        """
        The layout of paths shaped like ``path`` (same length and directions), from
        :meth:`Linearizer.pieces` of a placeholder path: a list of ``(name slot, ids,
        values after the first)`` items, ``name slot`` ``-1`` for a run of special tokens
        (``ids``, gaps included), ``2k`` for the ``k``-th entity (0: the start) and
        ``2k - 1`` for the ``k``-th relation.
        """
        shape = tuple(h.reverse for h in path)
        items = self._templates.get(shape)
        if items is not None:
            return items
        hops = tuple(Hop(f"e{k - 1}", f"r{k}", f"e{k}", rev) for k, rev in enumerate(shape, 1))
        slot = {f"e{k}": 2 * k for k in range(len(hops) + 1)}
        slot.update({f"r{k}": 2 * k - 1 for k in range(1, len(hops) + 1)})
        items = []
        for piece, _ in self.lin.pieces(hops):
            sid = self._special.get(piece)
            if sid is None:
                items.append((slot[piece], ()))
            elif items and items[-1][0] == -1:
                items[-1] = (-1, items[-1][1] + self._gap + (sid,))
            else:
                items.append((-1, (sid,)))
        items = [(k, fixed, (-1,) * (len(fixed) - 1)) for k, fixed in items]
        self._templates[shape] = items
        return items

    def _compose(self, path: Sequence[Hop]) -> Tuple[List[int], List[int]]:
        for j in range(1, len(path)):
            if path[j].source != path[j - 1].target:
                raise ValueError(f"hop {j + 1} does not continue the path: {path[j]}")
        names = self._names
        ids: List[int] = []
        vals: List[int] = []
        pending = -1
        for slot, fixed, rest in self._template(path):
            if slot < 0:  # special tokens: the first one ends (and counts for) the last name
                ids += fixed
                vals.append(pending)
                vals += rest
                pending = -1
            elif slot % 2:  # relation
                _, pids, _, as_relation = names[path[slot // 2].relation]
                ids += pids
                vals += as_relation
            else:
                name = path[0].source if slot == 0 else path[slot // 2 - 1].target
                pending, pids, as_entity, _ = names[name]
                ids += pids
                vals += as_entity
        return ids, vals

    def encode(self, paths: Sequence[Sequence[Hop]]) -> Batch:
        """Same result as :meth:`encode_text`, tokenizing only names not seen before."""
        if not paths or self.fast is False:
            return self.encode_text(paths)
        try:
            names = {p[0].source for p in paths if p}
            names.update(x for p in paths for h in p for x in (h.relation, h.target))
            unseen = names.difference(self._names)
            if len(self._names) + len(unseen) > self.max_cache:  # bounded memory
                self._names.clear()
                self._entities = []
                unseen = names
            if unseen:
                self._learn(sorted(unseen))
            composed = [self._compose(p) for p in paths]
        except (_NotPiecewise, KeyError) as e:
            return self._give_up(paths, f"name {e} does not tokenize on its own")
        out = ([c[0] for c in composed], [c[1] for c in composed], self._entities)
        if self.fast is None:
            n = self.CHECK_PATHS
            if _named(self.encode_text(paths[:n])) != _named((out[0][:n], out[1][:n], out[2])):
                return self._give_up(paths, "piecewise ids differ from whole-path ids")
            self.fast = True
        return out

    def _give_up(self, paths: Sequence[Sequence[Hop]], why: str) -> Batch:
        LOG.warning("path trie: tokenizing whole paths (%s; slower but exact)", why)
        self.fast = False
        self._names.clear()
        self._entities = []
        return self.encode_text(paths)


def _named(batch: Batch) -> List[Tuple[List[int], List[Optional[str]]]]:
    """``(ids, entity name or None per token)`` per path, to compare encodings."""
    ids, vals, entities = batch
    return [(i, [entities[e] if e >= 0 else None for e in v]) for i, v in zip(ids, vals)]


class _NotPiecewise(Exception):
    """A name's tokens depend on their surroundings: piecewise encoding is not exact."""

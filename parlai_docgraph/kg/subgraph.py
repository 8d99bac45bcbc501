"""
Per-turn candidate paths: the k-hop ego-graph of the mentioned entities.

A *path* is a tuple of :class:`Hop` s walked from a mentioned entity. Each hop follows a
KG edge either along its direction (``(source, r, target)`` is in the KG) or against it
(``reverse=True``: ``(target, r, source)`` is in the KG, i.e. the hop is
``(source, ~r, target)``), so a mentioned entity that is only ever a tail still starts
paths. The relation is always stored in KG (forward) orientation.

Enumeration is deterministic and capped (DialogGSR uses <= 100 paths per entity and <= 10
per relation):

* at every expansion of an entity, edges are taken outgoing first, then incoming, each
  sorted by (relation id, neighbour id), keeping at most ``max_per_relation`` neighbours
  per (entity, direction, relation);
* paths are simple (no entity repeats, so no self-loops and no walking straight back);
* per mentioned entity, all 1-hop paths come before 2-hop paths (and so on); at most
  ``max_paths_per_entity`` paths *of each length* are kept (so a well-connected entity's
  1-hop paths do not crowd out its 2-hop ones), ``l``-hop paths extending the
  ``(l-1)``-hop paths in their order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, List, Sequence, Tuple

import numpy as np

from parlai_docgraph.kg.store import KnowledgeGraph, Triple


@dataclass(frozen=True)
class Hop:
    """One step of a path: ``source --relation--> target``, or against the edge if ``reverse``."""

    source: str
    relation: str
    target: str
    reverse: bool = False

    @property
    def triple(self) -> Triple:
        """The KG triple this hop walks, in KG orientation."""
        if self.reverse:
            return (self.target, self.relation, self.source)
        return (self.source, self.relation, self.target)


Path = Tuple[Hop, ...]


def path_triples(path: Sequence[Hop]) -> List[Triple]:
    """KG-oriented triples of ``path``."""
    return [h.triple for h in path]


def _rank_in_groups(sorted_keys: np.ndarray) -> np.ndarray:
    """Position of each element within its run of equal keys (keys are sorted)."""
    n = sorted_keys.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.ones(n, dtype=bool)
    start[1:] = sorted_keys[1:] != sorted_keys[:-1]
    starts = np.flatnonzero(start)
    group = np.cumsum(start) - 1
    return np.arange(n) - starts[group]


def expand(kg: KnowledgeGraph, entity_id: int, max_per_relation: int) -> Iterator[Tuple[int, int, bool]]:
    """``(relation id, neighbour id, reverse)`` steps from ``entity_id``, capped per relation."""
    for reverse, (rels, nbrs) in ((False, kg.out_edges(entity_id)), (True, kg.in_edges(entity_id))):
        keep = _rank_in_groups(rels) < max_per_relation
        yield from zip(rels[keep].tolist(), nbrs[keep].tolist(), [reverse] * int(keep.sum()))


def candidate_paths(
    kg: KnowledgeGraph,
    mentioned: Iterable[str],
    hops: int = 2,
    max_paths_per_entity: int = 100,
    max_per_relation: int = 10,
) -> List[Path]:
    """
    All (capped) paths of 1..``hops`` hops starting at the mentioned entities: at most
    ``hops * max_paths_per_entity`` per entity.

    Unknown names are ignored; duplicates count once; output order follows ``mentioned``.
    """
    if hops < 1:
        raise ValueError("hops must be >= 1")
    seen = set()
    starts: List[int] = []
    for name in mentioned:
        if kg.has_entity(name):
            e = kg.entity_id(name)
            if e not in seen:
                seen.add(e)
                starts.append(e)
    out: List[Path] = []
    names, rel_names = kg.entities, kg.relations
    for start in starts:
        # a frontier item: (entity ids on the path, hops so far)
        frontier: List[Tuple[Tuple[int, ...], Path]] = [((start,), ())]
        for _ in range(hops):
            budget = max_paths_per_entity
            nxt: List[Tuple[Tuple[int, ...], Path]] = []
            for visited, path in frontier:
                if budget <= 0:
                    break
                cur = visited[-1]
                for r, nb, rev in expand(kg, cur, max_per_relation):
                    if nb in visited:
                        continue
                    hop = Hop(names[cur], rel_names[r], names[nb], rev)
                    new = path + (hop,)
                    out.append(new)
                    nxt.append((visited + (nb,), new))
                    budget -= 1
                    if budget <= 0:
                        break
            frontier = nxt
            if not frontier:
                break
    return out

"""
Per-turn candidate retrieval for DialogGSR, from the dialogue history alone.

For the response to predict at a turn, :func:`turn_candidates`:

1. links KG entities in the *history* -- every earlier turn plus the current user turn,
   nothing later (:class:`~.linking.EntityLinker`; no gold or future-turn entities);
2. computes Katz informativeness for those mentioned entities (Eq. 5-6, :mod:`.katz`);
3. enumerates the ``k``-hop candidate paths from them (:mod:`.subgraph`, K = 2);
4. linearizes each path (Eq. 2, :mod:`.linearize`).

A gold path may be passed for one diagnostic only, :attr:`TurnCandidates.gold_reachable`
(is the gold path among the candidates?); it never influences the candidates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from parlai_docgraph.kg.katz import katz_scores
from parlai_docgraph.kg.linearize import Linearizer
from parlai_docgraph.kg.linking import EntityLinker, Mention
from parlai_docgraph.kg.store import KnowledgeGraph, Triple
from parlai_docgraph.kg.subgraph import Path, candidate_paths, path_triples

DEFAULT_BETA = 0.1  # Katz attenuation; K = 2 truncates the series, so any beta > 0 is defined


@dataclass
class TurnCandidates:
    """
    Candidates of one turn.

    * ``mentioned``: linked KG entities, in order of first mention in the history;
    * ``mentions``: the mentions per history turn (``mentions[i]`` for ``history[i]``);
    * ``paths`` / ``linearized``: candidate paths and their Eq. 2 strings, aligned;
    * ``katz``: Katz scores of the entities on candidate paths (non-zero ones only);
    * ``gold_reachable``: whether the given gold path is a candidate (None without gold),
      ``gold_index`` its position in ``paths``.
    """

    mentioned: List[str]
    mentions: List[List[Mention]]
    paths: List[Path]
    linearized: List[str]
    katz: Dict[str, float]
    gold_reachable: Optional[bool] = None
    gold_index: Optional[int] = None


def canonical_triple(kg: KnowledgeGraph, triple: Sequence[str]) -> Triple:
    """
    ``(head, relation, tail)`` in KG orientation: a ``~r`` triple ``(a, ~r, b)`` becomes
    ``(b, r, a)`` (relation names as stored in ``kg``; unknown relations kept verbatim).
    """
    h, r, t = triple
    try:
        rid, rev = kg.relation_id(r)
    except KeyError:
        return (h, r, t)
    name = kg.relations[rid]
    return (t, name, h) if rev else (h, name, t)


def find_path(
    kg: KnowledgeGraph, paths: Sequence[Path], gold: Sequence[Sequence[str]]
) -> Optional[int]:
    """
    Index of the candidate whose triples equal ``gold`` (KG-oriented, in order), or None.

    ``gold`` uses OpenDialKG's spelling (``~r`` for a hop walked against an edge).
    """
    if not gold:
        return None
    want = [canonical_triple(kg, t) for t in gold]
    for i, path in enumerate(paths):
        if len(path) == len(want) and path_triples(path) == want:
            return i
    return None


def link_history(
    linker: EntityLinker, history: Sequence[str], alternatives: int = 1
) -> Tuple[List[str], List[List[Mention]]]:
    """
    Distinct linked entities over ``history`` (first-mention order) and the per-turn
    mentions. Each mention contributes its best ``alternatives`` ranked KG names (1: only
    the linked entity; more keeps e.g. ``Gone Girl (Thriller Film)`` beside ``Gone Girl``).
    """
    per_turn = [linker.link(turn) for turn in history]
    seen: Dict[str, None] = {}
    for mentions in per_turn:
        for m in mentions:
            seen.setdefault(m.entity)
            for name in m.alternatives[:alternatives]:
                seen.setdefault(name)
    return list(seen), per_turn


def turn_candidates(
    kg: KnowledgeGraph,
    linker: EntityLinker,
    history: Sequence[str],
    linearizer: Optional[Linearizer] = None,
    beta: float = DEFAULT_BETA,
    hops: int = 2,
    max_paths_per_entity: int = 100,
    max_per_relation: int = 10,
    alternatives: int = 1,
    gold_path: Optional[Sequence[Sequence[str]]] = None,
) -> TurnCandidates:
    """
    Candidates for the response that follows ``history``.

    ``history`` must hold only the earlier turns and the current user turn (the caller
    must not append the response or later turns). ``linker`` should be built over
    ``kg.entities``; linked names absent from ``kg`` are dropped; ``alternatives`` is
    passed to :func:`link_history`. ``gold_path`` (triples,
    ``~`` reverse relations allowed) only sets :attr:`TurnCandidates.gold_reachable`.
    """
    lin = linearizer if linearizer is not None else Linearizer(max_hops=hops)
    linked, per_turn = link_history(linker, history, alternatives)
    mentioned = [e for e in linked if kg.has_entity(e)]
    paths = candidate_paths(
        kg,
        mentioned,
        hops=hops,
        max_paths_per_entity=max_paths_per_entity,
        max_per_relation=max_per_relation,
    )
    entities: Dict[str, None] = {}
    for path in paths:
        entities.setdefault(path[0].source)
        for hop in path:
            entities.setdefault(hop.target)
    katz = katz_scores(kg, mentioned, beta, k=hops, among=entities) if mentioned else {}
    result = TurnCandidates(
        mentioned=mentioned,
        mentions=per_turn,
        paths=paths,
        linearized=[lin.linearize_path(p) for p in paths],
        katz=katz,
    )
    if gold_path:
        result.gold_index = find_path(kg, paths, gold_path)
        result.gold_reachable = result.gold_index is not None
    return result

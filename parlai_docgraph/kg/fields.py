"""
Per-turn DialogGSR candidates as plain JSON-able message fields (no ParlAI imports).

Teachers (``docgraph:opendialkg``, ``docgraph:sample_kg``, ``docgraph:komodis``) call
:func:`candidate_fields` with the dialogue *history* only (earlier turns and the current
user turn) and put the result on the message; the agent rebuilds
:class:`~.subgraph.Hop` paths with :func:`json_to_path` and linearizes them with its own
``--slot-tokens``. Fields:

* ``kg_mentioned``: linked KG entities of the history, first-mention order;
* ``kg_candidates``: candidate paths, each ``[[source, relation, target, reverse], ...]``
  (relation in KG spelling; ``reverse`` true when the hop walks against the edge);
* ``kg_candidates_text``: their Eq. 2 linearization (one token per slot);
* ``kg_katz``: Katz informativeness (Eq. 5-6) of the candidate entities (non-zero only);
* ``kg_gold_paths``: the gold subgraph as paths in the same hop format (from the
  dataset's annotation; used as training targets and for ``path@k``, never for linking);
* ``kg_gold_index``: position of the first gold path in ``kg_candidates`` (-1: not a
  candidate, so retrieval cannot reach it); ``kg_gold_text``: its linearization.
"""

from __future__ import annotations

import logging
import os
from typing import Dict, List, Sequence, Tuple

from parlai_docgraph.kg.linearize import Linearizer
from parlai_docgraph.kg.linking import EntityLinker
from parlai_docgraph.kg.store import KnowledgeGraph, Triple
from parlai_docgraph.kg.subgraph import Hop, Path
from parlai_docgraph.kg.turns import DEFAULT_BETA, turn_candidates
from parlai_docgraph.memo import LRUMemo

CANDIDATE_FIELDS = (
    "kg_mentioned", "kg_candidates", "kg_candidates_text", "kg_katz",
    "kg_gold_paths", "kg_gold_index", "kg_gold_text",
)


def path_to_json(path: Sequence[Hop]) -> List[list]:
    """``[[source, relation, target, reverse], ...]``."""
    return [[h.source, h.relation, h.target, bool(h.reverse)] for h in path]


def json_to_path(hops: Sequence[Sequence]) -> Path:
    """Inverse of :func:`path_to_json`; ``ValueError`` on a malformed hop."""
    out = []
    for hop in hops:
        if len(hop) != 4:
            raise ValueError(f"a hop is [source, relation, target, reverse], got {hop!r}")
        out.append(Hop(str(hop[0]), str(hop[1]), str(hop[2]), bool(hop[3])))
    return tuple(out)


def triples_to_path(triples: Sequence[Sequence[str]], reverse_prefix: str = "~") -> Path:
    """
    A path from dataset triples ``(a, r, b)`` walked from ``a`` (OpenDialKG spelling:
    ``~r`` = the KG edge ``(b, r, a)`` walked backwards). ``ValueError`` if the triples
    do not chain.
    """
    hops: List[Hop] = []
    for a, r, b in triples:
        if hops and a != hops[-1].target:
            raise ValueError(f"triples do not form a path: {list(triples)!r}")
        rev = r.startswith(reverse_prefix) and len(r) > len(reverse_prefix)
        hops.append(Hop(a, r[len(reverse_prefix):] if rev else r, b, rev))
    return tuple(hops)


LOG = logging.getLogger(__name__)


#: the KG and linker of each file version :func:`load_kg` read in this process
_LOADED: "LRUMemo[Tuple[str, int, int], Tuple[KnowledgeGraph, EntityLinker]]" = LRUMemo(4)


def _load(path: str) -> Tuple[KnowledgeGraph, EntityLinker]:
    kg = KnowledgeGraph.from_file(path, skip_bad=True)
    if kg.skipped_lines:
        LOG.warning(
            "%s: %d line(s) without three non-empty fields (e.g. OpenDialKG's empty-string "
            "entity) left out of the retrieval KG", path, kg.skipped_lines,
        )
    return kg, EntityLinker(kg.entities)


def load_kg(path: str) -> Tuple[KnowledgeGraph, EntityLinker]:
    """
    The KG of a triples file and a linker over its entities, once per process and file
    version. Lines without three non-empty fields cannot be retrieved or linked; they are
    counted and logged (warning), not loaded.
    """
    path = os.path.abspath(path)
    st = os.stat(path)
    return _LOADED.get_or_make((path, st.st_mtime_ns, st.st_size), lambda: _load(path))


def candidate_fields(
    kg: KnowledgeGraph,
    linker: EntityLinker,
    history: Sequence[str],
    gold_paths: Sequence[Path] = (),
    hops: int = 2,
    beta: float = DEFAULT_BETA,
    max_paths_per_entity: int = 100,
    max_per_relation: int = 10,
) -> Dict[str, object]:
    """
    The message fields above for the turn after ``history`` (history only: the caller
    must not include the response or later turns). Gold paths longer than ``hops`` are
    kept in ``kg_gold_paths`` but cannot be candidates.
    """
    lin = Linearizer(slot_tokens=1, max_hops=hops)
    tc = turn_candidates(
        kg, linker, history, linearizer=lin, beta=beta, hops=hops,
        max_paths_per_entity=max_paths_per_entity, max_per_relation=max_per_relation,
    )
    index = {p: i for i, p in enumerate(tc.paths)}
    gold_index = -1
    gold_text = ""
    if gold_paths:
        first = tuple(gold_paths[0])
        gold_index = index.get(first, -1)
        if len(first) <= hops:
            gold_text = lin.linearize_path(first)
    return {
        "kg_mentioned": list(tc.mentioned),
        "kg_candidates": [path_to_json(p) for p in tc.paths],
        "kg_candidates_text": list(tc.linearized),
        "kg_katz": dict(tc.katz),
        "kg_gold_paths": [path_to_json(p) for p in gold_paths],
        "kg_gold_index": gold_index,
        "kg_gold_text": gold_text,
    }


def response_facts(facts: Sequence[Triple], response: str) -> List[Path]:
    """
    KOMODIS has no per-utterance gold path: the gold subgraph of an utterance is taken
    as the speaker's facts whose object (or, failing that, subject) the utterance
    mentions (case-insensitive), each as a 1-hop path. A training-target definition
    only; it reads the response, so it is never used for linking or candidates.
    """
    low = response.lower()
    out: List[Path] = []
    for s, r, o in facts:
        if (o and o.lower() in low) or (s and s.lower() in low):
            path = (Hop(s, r, o, False),)
            if path not in out:
                out.append(path)
    return out

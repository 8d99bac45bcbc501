"""
``--graph-variant paths``: the *Graph Paths* baseline of Li et al. (2022), section 3.3.

"This model is built on top of the previous model [the Roberta ranking cross-encoder].
The graph paths are from the document semantic graph and obtained by breadth-first
traversal starting at the candidate context node. In order to utilize the graph paths, we
linearize it into tuples of (subject, predicate, object) or (modifier, subject) according
to the AMR edge label and concatenate it with the candidate sentence."

:func:`linearized_paths` does that on a ``full`` semantic graph: breadth-first from the
candidate's sentence node (the context node's only neighbour) through its concepts and on
along role and coreference edges (either direction) for ``hops`` steps; every role edge met
is written, in BFS order, as a tuple: a predicate's ``ARG0`` with each other core argument
as ``(subject, predicate, object)`` (a predicate without ``ARG0``: ``(predicate,
object)``; one with ``ARG0`` only: ``(subject, predicate)``), a non-core edge (``mod``,
``poss``, ``compound``, ``obl``: head -> dependent) as ``(modifier, subject)``. The text
``"{candidate} {tuples}"`` replaces the candidate in the cross-encoder's first segment; the
ranking model is otherwise the ``none`` variant's (same encoder, Eq. 4 on ``h^0_c``).
The paper gives no hop limit; ``--path-hops`` (default 2) and the pair truncation bound it.

No ParlAI imports.
"""

from __future__ import annotations

from collections import deque
from typing import Dict, List, Optional, Set, Tuple

from parlai_docgraph.graphs.schema import ROLE_EDGE_TYPES, DocumentGraph

CORE_ROLES = frozenset(r for r in ROLE_EDGE_TYPES if r.startswith("ARG"))


def linearized_paths(graph: DocumentGraph, sentence: int, hops: int = 2,
                     max_tuples: Optional[int] = None) -> str:
    """The Graph Paths text of global sentence ``sentence`` (``""`` when it has no concepts)."""
    by_sentence = {n.sentence: n.id for n in graph.nodes_of_type("sentence")}
    start = by_sentence.get(sentence)
    if start is None:
        return ""
    nodes = graph.nodes
    out_edges: Dict[int, List[Tuple[int, str]]] = {}
    neighbours: Dict[int, List[int]] = {}
    for e in graph.edges:
        if e.type in ROLE_EDGE_TYPES:
            out_edges.setdefault(e.src, []).append((e.dst, e.type))
        if e.type in ROLE_EDGE_TYPES or e.type == "coref" or (
                e.type == "sentence_concept" and e.src == start):
            neighbours.setdefault(e.src, []).append(e.dst)
            if e.type != "sentence_concept":
                neighbours.setdefault(e.dst, []).append(e.src)
    order: List[int] = []
    seen: Set[int] = {start}
    queue = deque([(start, 0)])
    while queue:
        node, depth = queue.popleft()
        if node != start:
            order.append(node)
        if depth > hops:
            continue
        for nxt in neighbours.get(node, []):
            if nxt not in seen:
                seen.add(nxt)
                queue.append((nxt, depth + 1))
    tuples: List[str] = []
    for node in order:
        edges = out_edges.get(node, [])
        core = [(d, r) for d, r in edges if r in CORE_ROLES]
        subj = [d for d, r in core if r == "ARG0"]
        objs = [d for d, r in core if r != "ARG0"]
        text = nodes[node].text
        if subj and objs:
            tuples += [f"( {nodes[s].text} , {text} , {nodes[o].text} )" for s in subj for o in objs]
        elif subj:
            tuples += [f"( {nodes[s].text} , {text} )" for s in subj]
        else:
            tuples += [f"( {text} , {nodes[o].text} )" for o in objs]
        tuples += [f"( {nodes[d].text} , {text} )" for d, r in edges if r not in CORE_ROLES]
    if max_tuples is not None:
        tuples = tuples[:max_tuples]
    return " ".join(tuples)

"""
Katz-index entity informativeness (Park et al., Eq. 5-6).

.. math::

    IS_{katz}(e_i, M) = \\frac{1}{|M|} \\sum_{e_m \\in M} \\sum_{l=1}^{K} \\beta^l (A^l)_{i,m}

with ``K = 2`` in the paper and ``A`` the adjacency of the KG, whose ``A^l`` "represents
the number of paths" (Park 3.4). ``adjacency`` picks ``A`` (:meth:`KnowledgeGraph.adjacency`):

* ``count`` (default): symmetric, ``A[i, j]`` = the relations joining ``i`` and ``j`` in
  either direction, so two parallel relations are two paths and a path may run a relation
  backwards, as a retrieved path may (its ``[Rev]`` hops);
* ``directed``: ``A[h, t]`` = the relations ``h -> t``; the score counts the walks that
  *leave* the mentioned entity along relation directions, :math:`(A^l)_{m,i}` (the
  direction a retrieved path reads from a mentioned entity; for the symmetric kinds it
  equals the printed :math:`(A^l)_{i,m}`);
* ``binary``: symmetric 0/1 (this package's form before ``count``: parallel relations
  collapse into one walk and direction is lost).

For the symmetric kinds ``(A^l)_{i,m} = (A^l x_m)_i``, so the whole score vector is
``sum_l beta^l A^l x`` with ``x = mean_m onehot(m)``: ``K`` sparse matrix-vector products,
never a dense ``N x N`` matrix (``directed``: the same with ``A^T``). Unlike the public
DialogGSR code (networkx ``katz_centrality`` with ``tol=1e6``, which returns ``1/sqrt(n)``
for every node), the score is a *proximity to the mentioned entities* and varies across
entities.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional

import numpy as np

from parlai_docgraph.kg.store import KnowledgeGraph


def katz_vector(kg: KnowledgeGraph, mentioned_ids: Iterable[int], beta: float, k: int = 2,
                adjacency: str = "count") -> np.ndarray:
    """
    Dense length-``N`` vector of Eq. 6 scores for entity ids ``mentioned_ids``
    (duplicates count once) over the ``adjacency`` kind (module docstring). All zeros when
    ``mentioned_ids`` is empty.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    ids: List[int] = sorted(set(int(i) for i in mentioned_ids))
    n = kg.num_entities
    total = np.zeros(n, dtype=np.float64)
    if not ids:
        return total
    x = np.zeros(n, dtype=np.float64)
    x[ids] = 1.0 / len(ids)
    adj = kg.adjacency(adjacency)
    if adjacency == "directed":
        adj = adj.T.tocsr()  # walks leaving the mentioned entities: (A^l)_{m, i}
    v = x
    weight = 1.0
    for _ in range(k):
        v = adj @ v  # (A^l x)
        weight *= beta
        total += weight * v
    return total


def katz_scores(
    kg: KnowledgeGraph,
    mentioned: Iterable[str],
    beta: float,
    k: int = 2,
    among: Optional[Iterable[str]] = None,
    adjacency: str = "count",
) -> Dict[str, float]:
    """
    ``{entity: IS_katz(entity, M)}`` (Eq. 6) for the mentioned entity names ``M``.

    Names not in the KG are ignored (``M`` is the set of mentioned *KG* entities). Only
    entities with a non-zero score -- those within ``k`` hops of some mentioned entity --
    are returned; every other entity scores 0. ``among`` restricts the answer to those
    names (e.g. the entities of a turn's candidate paths), which saves building a dict
    over the whole ``k``-hop ball of a hub.
    """
    ids = [kg.entity_id(m) for m in mentioned if kg.has_entity(m)]
    vec = katz_vector(kg, ids, beta, k, adjacency)
    if among is None:
        nz = np.flatnonzero(vec).tolist()
        return {kg.entities[i]: float(vec[i]) for i in nz}
    out: Dict[str, float] = {}
    for name in among:
        if kg.has_entity(name):
            v = float(vec[kg.entity_id(name)])
            if v != 0.0:
                out[name] = v
    return out

"""
Katz-index entity informativeness (Park et al., Eq. 5-6).

.. math::

    IS_{katz}(e_i, M) = \\frac{1}{|M|} \\sum_{e_m \\in M} \\sum_{l=1}^{K} \\beta^l (A^l)_{i,m}

with ``A`` the symmetric 0/1 entity adjacency of the KG (:attr:`KnowledgeGraph.A`) and
``K = 2`` in the paper. Because ``A`` is symmetric, ``(A^l)_{i,m} = (A^l x_m)_i``, so the
whole score vector is ``sum_l beta^l A^l x`` with ``x = mean_m onehot(m)``: ``K`` sparse
matrix-vector products, never a dense ``N x N`` matrix. Unlike the public DialogGSR code
(networkx ``katz_centrality`` with ``tol=1e6``, which returns ``1/sqrt(n)`` for every node),
the score is a *proximity to the mentioned entities* and varies across entities.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional

import numpy as np

from parlai_docgraph.kg.store import KnowledgeGraph


def katz_vector(kg: KnowledgeGraph, mentioned_ids: Iterable[int], beta: float, k: int = 2) -> np.ndarray:
    """
    Dense length-``N`` vector of Eq. 6 scores for entity ids ``mentioned_ids``
    (duplicates count once). All zeros when ``mentioned_ids`` is empty.
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
    adj = kg.A
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
    vec = katz_vector(kg, ids, beta, k)
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

"""
Ranking metrics of knowledge selection (Li et al. 2022, Table 2/7; Zhang & Tan 2023, Table 2).

Plain-Python helpers over one example's ranking, so they are easy to test and reuse; agents
wrap the per-example values in ParlAI ``AverageMetric`` objects (``record_local_metric``),
which ParlAI then averages over examples, workers and tasks.

Every function takes ``relevance``: the candidates' relevance (truthy = relevant), listed in
*ranked order* (best first). An example with no relevant candidate has no defined value for
MRR / MAP; :func:`ranking_metrics` returns ``None`` for it and callers skip it.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence

import torch


def precision_at_1(relevance: Sequence[bool]) -> float:
    """1.0 when the top-ranked candidate is relevant (``know_acc``), else 0.0."""
    return float(bool(relevance) and bool(relevance[0]))


def reciprocal_rank(relevance: Sequence[bool]) -> float:
    """``1 / rank`` of the first relevant candidate (1-based), 0.0 when none is relevant."""
    for rank, rel in enumerate(relevance, start=1):
        if rel:
            return 1.0 / rank
    return 0.0


def average_precision(relevance: Sequence[bool]) -> float:
    """
    Mean over the relevant candidates of the precision at their rank:
    ``AP = 1/|R| * sum_{k: rel_k} (#relevant in top k) / k``. With one relevant candidate
    this equals :func:`reciprocal_rank`. 0.0 when none is relevant.
    """
    hits, total = 0, 0.0
    for rank, rel in enumerate(relevance, start=1):
        if rel:
            hits += 1
            total += hits / rank
    return total / hits if hits else 0.0


def ranked_relevance(scores: torch.Tensor, relevant: torch.Tensor) -> list:
    """
    ``relevant`` (bool ``[n]``) reordered by ``scores`` (``[n]``) descending. Ties keep the
    input order (stable sort).
    """
    order = torch.sort(scores.detach().float().cpu(), descending=True, stable=True).indices
    return relevant.detach().cpu().bool()[order].tolist()


def ranking_metrics(scores: torch.Tensor, relevant: torch.Tensor) -> Optional[Dict[str, float]]:
    """
    ``{"acc", "mrr", "map"}`` of one example's candidate ``scores`` against its ``relevant``
    mask, or ``None`` when no candidate is relevant (the example is left out).
    """
    if relevant.numel() == 0 or not bool(relevant.bool().any()):
        return None
    rel = ranked_relevance(scores, relevant)
    return {"acc": precision_at_1(rel), "mrr": reciprocal_rank(rel),
            "map": average_precision(rel)}

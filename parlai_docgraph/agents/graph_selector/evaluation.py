"""
Evaluation side of :class:`~parlai_docgraph.agents.graph_selector.agent.GraphSelectorAgent`:
per-example ranking metrics (single and Holl-E multi-reference), concept metrics, and the
reply fields (``text_candidates``, ``candidate_scores``, ``top_concepts``).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import torch
from parlai.core.metrics import AverageMetric
from torch import Tensor

from parlai_docgraph.metrics import ranking_metrics

TOP_CONCEPTS = 5
NAMES = ("acc", "mrr", "map")


def _metrics(scores: Tensor, relevant: Optional[Tensor], labelled: bool) -> Optional[dict]:
    m = ranking_metrics(scores, relevant) if relevant is not None else None
    if m is None and labelled:
        m = {"acc": 0.0, "mrr": 0.0, "map": 0.0}  # labelled, but not rankable
    return m


def ranking_replies(
    scores: Tensor, cand2example: Tensor, candidates: Sequence[Sequence[str]], gold: Tensor,
    multi: Sequence[Optional[List[bool]]],
) -> Dict[str, list]:
    """
    Per example: candidates best first (``text_candidates``), their scores
    (``candidate_scores``) and indices (``candidate_order``), the prediction, the chosen
    candidate's index, and
    ``know_{acc,mrr,map}`` (and ``know_*_multi`` where ``multi[b]`` marks several golds)
    as ``AverageMetric`` lists; ``AverageMetric(0, 0)`` (no weight) for an unlabelled
    example, so it adds nothing to the means.
    """
    out: Dict[str, list] = {"preds": [], "cands": [], "scores": [], "chosen": [], "order": []}
    for key in NAMES:
        out[f"know_{key}"], out[f"know_{key}_multi"] = [], []
    for b, cands in enumerate(candidates):
        s = scores[cand2example == b]
        order = torch.sort(s, descending=True, stable=True).indices.tolist()
        out["cands"].append([cands[i] for i in order])
        out["scores"].append([float(s[i]) for i in order])
        out["preds"].append(cands[order[0]])
        out["chosen"].append(order[0])
        out["order"].append(order)
        relevant = torch.zeros(len(cands), dtype=torch.bool)
        if gold[b] >= 0:
            relevant[int(gold[b])] = True
        m = _metrics(s, relevant, int(gold[b]) == -1)
        mm = None
        if multi[b] is not None:
            rel = torch.tensor(multi[b], dtype=torch.bool) | relevant
            mm = _metrics(s, rel, True)
        for key in NAMES:
            out[f"know_{key}"].append(AverageMetric(m[key]) if m else AverageMetric(0, 0))
            out[f"know_{key}_multi"].append(
                AverageMetric(mm[key]) if mm else AverageMetric(0, 0))
    return out


def concept_metrics(logits: Tensor, labels: Tensor, c2e: Tensor,
                    batchsize: int) -> Optional[Dict[str, List[AverageMetric]]]:
    """``concept_map`` / ``concept_mrr`` of examples with a gold concept (``None``: none)."""
    maps: List[AverageMetric] = []
    mrrs: List[AverageMetric] = []
    seen = False
    for b in range(batchsize):
        m = ranking_metrics(logits[c2e == b], labels[c2e == b] > 0.5)
        seen = seen or m is not None
        maps.append(AverageMetric(0, 0) if m is None else AverageMetric(m["map"]))
        mrrs.append(AverageMetric(0, 0) if m is None else AverageMetric(m["mrr"]))
    return {"concept_map": maps, "concept_mrr": mrrs} if seen else None


def top_concepts(logits: Tensor, c2e: Tensor, texts: Sequence[Sequence[Optional[str]]],
                 k: int = TOP_CONCEPTS) -> List[List[str]]:
    """
    Per example, the display names of its ``k`` best-scored concept (or word) nodes, each
    name once; nodes whose name is ``None`` (predicates, pronouns: see
    :func:`~parlai_docgraph.graphs.concept_label.concept_label`) are passed over.
    """
    out = []
    for b, names in enumerate(texts):
        s = logits[c2e == b]
        best: List[str] = []
        for i in torch.sort(s, descending=True, stable=True).indices.tolist():
            if names[i] is not None and names[i] not in best:
                best.append(names[i])
            if len(best) == k:
                break
        out.append(best)
    return out

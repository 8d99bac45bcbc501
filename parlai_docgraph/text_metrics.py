"""
Response-text metrics with maintained implementations.

ROUGE uses Google's ``rouge-score`` package, whose semantics torchmetrics' ``ROUGEScore``
(what Li et al. 2022 report with) reproduces: F-measure of ROUGE-1, ROUGE-2 and ROUGE-L
(sentence-level LCS), no stemming by default, as in torchmetrics.
With several references (Holl-E's multi-reference test) each figure is the maximum over the
references, as Li et al. and SKT report.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Dict, Sequence

ROUGE_KEYS = {"rouge1": "rouge_1", "rouge2": "rouge_2", "rougeL": "rouge_L"}


@lru_cache(maxsize=2)
def _scorer(use_stemmer: bool):
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(list(ROUGE_KEYS), use_stemmer=use_stemmer)


def rouge(
    hypothesis: str, references: Sequence[str], use_stemmer: bool = False
) -> Dict[str, float]:
    """
    ``{"rouge_1", "rouge_2", "rouge_L"}`` F-measures of ``hypothesis``: for each key,
    ``max_r F(hypothesis, r)`` over ``references``. Raises ``ValueError`` without references.
    """
    if isinstance(references, str):
        references = [references]
    if not references:
        raise ValueError("rouge() needs at least one reference")
    best = {name: 0.0 for name in ROUGE_KEYS.values()}
    scorer = _scorer(use_stemmer)
    for ref in references:
        scores = scorer.score(ref, hypothesis)
        for key, name in ROUGE_KEYS.items():
            best[name] = max(best[name], scores[key].fmeasure)
    return best

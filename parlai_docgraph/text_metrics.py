"""
Response-text metrics with maintained implementations.

ROUGE uses Google's ``rouge-score`` package, whose semantics torchmetrics' ``ROUGEScore``
(what Li et al. 2022 report with) reproduces: F-measure of ROUGE-1, ROUGE-2 and ROUGE-L
(sentence-level LCS), no stemming by default, as in torchmetrics.

With several references (Holl-E's multi-reference test) the figures are those of
torchmetrics' ``accumulate="best"`` as Li et al. ran it (torchmetrics 0.7 to 1.5): *one*
reference is picked, the one with the highest ROUGE-1 F-measure (compared in float32, as
torchmetrics' tensors hold it; the first such on a tie), and all three figures are that
reference's. torchmetrics 1.6 changed ``best`` to the maximum per key over the references,
which can mix R-2 of one reference with R-L of another; that is not what Li et al. report.
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
    ``{"rouge_1", "rouge_2", "rouge_L"}`` F-measures of ``hypothesis`` against the reference
    with the best ROUGE-1 F (see the module docstring). Raises ``ValueError`` without
    references.
    """
    import numpy as np

    if isinstance(references, str):
        references = [references]
    if not references:
        raise ValueError("rouge() needs at least one reference")
    scorer = _scorer(use_stemmer)
    rows = []
    for ref in references:
        scores = scorer.score(ref, hypothesis)
        rows.append({name: scores[key].fmeasure for key, name in ROUGE_KEYS.items()})
    first = [float(np.float32(row["rouge_1"])) for row in rows]
    return dict(rows[first.index(max(first))])

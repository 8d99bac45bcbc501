"""
:class:`Selection`: the one hand-off from the knowledge selector to the responder (and to
what the user is shown: the reply's ``selected_*`` fields, the web chat's selection event,
the turn graph's highlighted sentence).

The selector's reply names its choice by position (``selected_candidate``: the index in
the ``label_candidates`` it ranked, ``[NO_KNOWLEDGE_LINE] + pool lines``), so the pipeline
maps it back to the pool by index (:meth:`Selection.from_candidate`), never by comparing
strings. No ParlAI imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from parlai_docgraph.graphs.knowledge_lines import NO_KNOWLEDGE_LINE, NO_PASSAGE

Pool = Sequence[Tuple[str, Sequence[str]]]


@dataclass(frozen=True)
class Selection:
    """
    One turn's selected knowledge: ``passage`` / ``sentence_index`` locate ``sentence`` in
    the turn's pool (``None`` for the no-knowledge choice); ``scores`` are the selector's
    candidate scores best first, ``top_concepts`` the concepts it ranked highest;
    ``no_knowledge_gap`` is the no-knowledge candidate's score minus the best pool
    sentence's (:func:`knowledge_candidate`; ``None``: not known).
    """

    title: str = NO_PASSAGE
    sentence: str = NO_PASSAGE
    passage: Optional[int] = None
    sentence_index: Optional[int] = None
    scores: Optional[List[float]] = None
    top_concepts: Tuple[str, ...] = field(default_factory=tuple)
    no_knowledge_gap: Optional[float] = None

    @property
    def uses_knowledge(self) -> bool:
        """Whether a sentence of the pool was selected (not the no-knowledge candidate)."""
        return self.passage is not None

    @property
    def line(self) -> str:
        """The candidate line the selector chose (``"{title} {sentence}"``)."""
        return f"{self.title} {self.sentence}" if self.uses_knowledge else NO_KNOWLEDGE_LINE

    @classmethod
    def from_candidate(cls, pool: Pool, candidate: Optional[int],
                       scores: Optional[Sequence[float]] = None,
                       top_concepts: Sequence[str] = (),
                       no_knowledge_gap: Optional[float] = None) -> "Selection":
        """
        The selection of candidate number ``candidate`` among ``[NO_KNOWLEDGE_LINE] +`` the
        pool's sentences in order (``0`` or ``None``: no knowledge); ``IndexError`` for a
        position past the pool.
        """
        extra = {"scores": None if scores is None else [float(s) for s in scores],
                 "top_concepts": tuple(top_concepts), "no_knowledge_gap": no_knowledge_gap}
        if not candidate:
            return cls(**extra)
        flat = candidate - 1
        for p, (title, sentences) in enumerate(pool):
            if flat < len(sentences):
                return cls(title=title, sentence=sentences[flat], passage=p,
                           sentence_index=flat, **extra)
            flat -= len(sentences)
        raise IndexError(f"candidate {candidate} is past the pool's "
                         f"{sum(len(s) for _, s in pool)} sentences")

    def as_dict(self) -> Dict[str, Any]:
        """JSON-safe fields (the web chat's event, result files)."""
        return {"title": self.title, "sentence": self.sentence, "passage": self.passage,
                "sentence_index": self.sentence_index, "scores": self.scores,
                "top_concepts": list(self.top_concepts),
                "no_knowledge_gap": self.no_knowledge_gap}


def knowledge_candidate(chosen: Optional[int], order: Optional[Sequence[int]],
                        scores: Optional[Sequence[float]], margin: Optional[float]
                        ) -> Tuple[Optional[int], Optional[float]]:
    """
    ``(candidate, gap)``: the candidate the responder reads and ``gap = s_0 - s_best``, the
    no-knowledge candidate's score (candidate 0) minus the best pool sentence's, from the
    selector's ranking (``order``: candidate indices best first, ``scores`` theirs).

    ``margin`` ``None`` keeps the selector's own choice ``chosen``; a number hands the best
    pool sentence unless ``gap > margin`` (``0``: the selector's choice; larger: a sentence
    more often; ``inf``: always one). A selector trained where most labels say
    no_passages_used (CMU_DoG's pseudo labels) always ranks that candidate first; the margin
    moves that decision to a threshold chosen on valid. Without a ranking, ``(chosen,
    None)``.
    """
    if not order or scores is None:
        return chosen, None
    by_index = dict(zip(order, scores))
    best = next((i for i in order if i != 0), None)
    if best is None or 0 not in by_index:
        return chosen, None
    gap = float(by_index[0]) - float(by_index[best])
    if margin is None:
        return chosen, gap
    return (0 if gap > margin else best), gap

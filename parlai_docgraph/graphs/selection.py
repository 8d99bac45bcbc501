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
    candidate scores best first, ``top_concepts`` the concepts it ranked highest.
    """

    title: str = NO_PASSAGE
    sentence: str = NO_PASSAGE
    passage: Optional[int] = None
    sentence_index: Optional[int] = None
    scores: Optional[List[float]] = None
    top_concepts: Tuple[str, ...] = field(default_factory=tuple)

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
                       top_concepts: Sequence[str] = ()) -> "Selection":
        """
        The selection of candidate number ``candidate`` among ``[NO_KNOWLEDGE_LINE] +`` the
        pool's sentences in order (``0`` or ``None``: no knowledge); ``IndexError`` for a
        position past the pool.
        """
        extra = {"scores": None if scores is None else [float(s) for s in scores],
                 "top_concepts": tuple(top_concepts)}
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
                "top_concepts": list(self.top_concepts)}

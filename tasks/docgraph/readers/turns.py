"""
The turn every knowledge-grounded reader yields (no ParlAI imports): a response to predict
with its ordered knowledge pool and, when known, the gold sentence in it. The WoW, Holl-E
and CMU_DoG readers produce it; :mod:`..knowledge_teacher` turns it into ParlAI messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

Passage = Tuple[str, List[str]]


@dataclass
class KnowledgeTurn:
    """
    One knowledge-grounded response to predict, with its candidate knowledge.

    ``passages`` is the ordered knowledge pool ``[(title, [sentence, ...]), ...]``;
    ``gold`` is ``(passage_idx, sentence_idx)`` of the checked sentence in it, or None
    when no knowledge was used (``title == checked_sentence == 'no_passages_used'``) or
    the sentence is not in the pool.
    """

    dialogue_id: str
    turn_index: int
    chosen_topic: str
    text: str
    response: str
    passages: List[Passage]
    title: str
    checked_sentence: str
    gold: Optional[Tuple[int, int]]
    candidate_responses: List[str] = field(default_factory=list)
    episode_done: bool = False
    previous_response: Optional[str] = None
    multi_responses: List[str] = field(default_factory=list)
    multi_checked_sentences: List[str] = field(default_factory=list)
    source_line: Optional[int] = None

    def knowledge_lines(self) -> List[Tuple[str, str]]:
        """
        The pool flattened to ``(title, sentence)`` pairs in order.
        """
        return [(t, s) for t, sents in self.passages for s in sents]

    def gold_flat_index(self) -> int:
        """
        Index of the gold sentence in :meth:`knowledge_lines`, -1 if none.
        """
        if self.gold is None:
            return -1
        p, s = self.gold
        return sum(len(sents) for _, sents in self.passages[:p]) + s

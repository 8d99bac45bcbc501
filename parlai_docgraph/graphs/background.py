"""
``--background``: which knowledge passages an example's graph is built from.

Li et al. (3.1, Table 3) build the WoW graph "using the topic passage and passages
retrieved at the first turn": ``first_turn`` keeps the first message's pool for the whole
episode. A later candidate outside it still needs a sentence node of its own (else it
would attach to the shared, zero-feature no-passage node and be ranked on its Eq. 1 context
alone): the sentences of a later message that the first pool lacks are appended to that
message's graph as extra passages (one per title, pool order), built with
``extend_document_graph`` from the first pool's graph; they are not carried to later turns,
so every turn's graph is the first-turn graph plus its own outside candidates. ``per_turn``
grows the pool as new passages arrive within the episode (passages are keyed by title, the
first version kept) and the graph with ``extend_document_graph``, which equals a rebuild of
the grown pool. ``message`` (the default) uses each message's own pool.

The episode's first pool is that of its first *turn*, not of its first served message: when
``--knowledge-turns-only`` drops an episode's first turn (its Wizard used no knowledge), the
teacher hands that turn's pool along in ``first_turn_passages`` of the first message served,
and ``first_turn`` / ``per_turn`` start from it (Li et al. 3.1: "the passages retrieved in
the first turn").

No ParlAI imports.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

Passages = List[Tuple[str, List[str]]]
BACKGROUNDS = ("message", "first_turn", "per_turn")


class EpisodeBackground:
    """The background pool of each message of one episode stream (one per agent copy)."""

    def __init__(self, mode: str = "message") -> None:
        if mode not in BACKGROUNDS:
            raise ValueError(f"--background {mode!r}: choose from {', '.join(BACKGROUNDS)}")
        self.mode = mode
        self.pool: Optional[Passages] = None
        self.previous: Optional[Passages] = None  # the pool before the last growth

    def reset(self) -> None:
        """Forget the episode (its last message was observed)."""
        self.pool = self.previous = None

    def observe(self, passages: Passages, first_turn: Optional[Passages] = None) -> Passages:
        """The pool of this message's graph (a new list; ``passages`` is not changed);
        ``first_turn``: the pool of the episode's first turn when this message is the first
        one served but not that turn (see the module docstring)."""
        if self.mode == "message":
            return [(t, list(s)) for t, s in passages]
        if self.pool is None:
            if first_turn:
                self.pool = [(t, list(s)) for t, s in first_turn]
                self.previous = None
                return self.observe(passages)
            self.pool = [(t, list(s)) for t, s in passages]
            self.previous = None
            return [(t, list(s)) for t, s in self.pool]
        if self.mode == "per_turn":
            have = {t for t, _ in self.pool}
            new = [(t, list(s)) for t, s in passages if t not in have]
            if new:
                self.previous = [(t, list(s)) for t, s in self.pool]
                self.pool = self.pool + new
            return [(t, list(s)) for t, s in self.pool]
        extra = outside_sentences(self.pool, passages)  # first_turn
        self.previous = [(t, list(s)) for t, s in self.pool] if extra else None
        return [(t, list(s)) for t, s in self.pool] + extra


def outside_sentences(pool: Passages, passages: Passages) -> Passages:
    """The sentences of ``passages`` that ``pool`` lacks (a ``(title, sentence)`` pair
    missing from it), grouped per title in ``passages`` order."""
    have = {(t, s) for t, sents in pool for s in sents}
    extra: Passages = []
    for title, sents in passages:
        missing = [s for s in sents if (title, s) not in have]
        if missing:
            extra.append((title, missing))
            have.update((title, s) for s in missing)
    return extra

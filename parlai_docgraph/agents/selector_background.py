"""
``--background``: which knowledge passages an example's graph is built from.

Li et al. (3.1, Table 3) build the WoW graph "using the topic passage and passages
retrieved at the first turn": ``first_turn`` keeps the first message's pool for the whole
episode (a later candidate outside it has no sentence node; it attaches to the graph's
no-passage node, so it is still ranked, on its Eq. 1 context vector alone). ``per_turn``
grows the pool as new passages arrive within the episode (passages are keyed by title, the
first version kept) and the graph with ``DocumentGraph.extend``, which equals a rebuild of
the grown pool. ``message`` (the default) uses each message's own pool.

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

    def observe(self, passages: Passages) -> Passages:
        """The pool of this message's graph (a new list; ``passages`` is not changed)."""
        if self.mode == "message":
            return [(t, list(s)) for t, s in passages]
        if self.pool is None:
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

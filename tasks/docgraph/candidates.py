"""
Label candidates for response ranking: the gold response plus distractors drawn from
other dialogues of the same split (no ParlAI imports).

Real WoW ships 20 ``candidate_responses`` per valid/test turn; the other datasets have
none, so their teachers draw the same number here, seeded per example so every run and
every worker sees the same candidates, which lets ``parlai verify_data`` and ranking
agents (hits@k) work on every dataset.
"""

from __future__ import annotations

import argparse
import random
from typing import List, Sequence, Tuple

DEFAULT_NUM = 20
DEFAULT_SEED = 42


def add_candidate_args(group: argparse._ArgumentGroup) -> None:
    """
    Register ``--num-label-candidates`` and ``--label-candidates-seed``.
    """
    group.add_argument(
        "--num-label-candidates",
        type=int,
        default=DEFAULT_NUM,
        help="label_candidates per example: the gold response plus this many minus one "
        "responses of other dialogues of the same split (0 or 1: no candidates)",
    )
    group.add_argument(
        "--label-candidates-seed",
        type=int,
        default=DEFAULT_SEED,
        help="seed of the label-candidate draw",
    )


def example_rng(seed: int, dialogue_id: object, turn: object) -> random.Random:
    """
    An RNG that depends only on the seed and the example's identity.
    """
    return random.Random(f"{seed}:{dialogue_id}:{turn}")


def sample_candidates(
    gold: str,
    pool: Sequence[Tuple[object, str]],
    exclude_group: object,
    num: int,
    rng: random.Random,
) -> List[str]:
    """
    ``gold`` plus up to ``num - 1`` distinct distractors, in random order.

    ``pool`` holds ``(group, text)`` pairs (group = dialogue); distractors come from other
    groups, are never empty and never equal the gold text; expected cost O(num), not
    O(len(pool)), which matters for OpenDialKG's ~60k responses. Fewer are returned when the pool is small.
    """
    want = max(0, num - 1)
    chosen: List[str] = []
    taken = {gold}
    tries = 0
    while len(chosen) < want and tries < 20 * want and pool:
        tries += 1
        group, text = pool[rng.randrange(len(pool))]
        if group != exclude_group and text not in taken and text.strip():
            taken.add(text)
            chosen.append(text)
    if len(chosen) < want:  # small pool: scan everything eligible, in a seeded order
        rest = [t for g, t in pool if g != exclude_group and t not in taken and t.strip()]
        rest = list(dict.fromkeys(rest))
        rng.shuffle(rest)
        chosen += rest[: want - len(chosen)]
    chosen.insert(rng.randrange(len(chosen) + 1), gold)
    return chosen

"""
The ratios of ``parlai-docgraph bench`` with their spread: alternated
repetitions, medians with min and max, one thread setting for both sides, and the warning
when the spread is wider than the distance to the goal. No timing is asserted.
"""

from __future__ import annotations

import pytest

from parlai_docgraph.bench import cli as bench
from parlai_docgraph.bench.spread import (
    MIN_REPS, alternated, pinned_threads, ratio_spread, spread, spread_note,
)


def test_sides_alternate_their_order():
    calls = []
    times = alternated({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 4)
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert {k: len(v) for k, v in times.items()} == {"a": 4, "b": 4}
    assert all(t >= 0 for v in times.values() for t in v)
    with pytest.raises(ValueError):
        alternated({"a": lambda: None}, 0)


def test_sides_take_turns_piece_by_piece():
    calls = []
    times = alternated({"a": lambda i: calls.append(("a", i)), "b": lambda i: calls.append(("b", i))},
                       2, parts=3)
    assert calls == [("a", 0), ("b", 0), ("b", 1), ("a", 1), ("a", 2), ("b", 2),
                     ("b", 0), ("a", 0), ("a", 1), ("b", 1), ("b", 2), ("a", 2)]
    assert {k: len(v) for k, v in times.items()} == {"a": 2, "b": 2}


def test_spread_is_the_median_with_its_extremes():
    assert spread([1.2, 1.0, 5.0, 1.1, 0.9]) == {"median": 1.1, "min": 0.9, "max": 5.0, "reps": 5}
    # per-repetition ratios, not the ratio of the medians
    assert ratio_spread([2.0, 3.0, 4.0], [1.0, 3.0, 2.0]) == {
        "median": 2.0, "min": 1.0, "max": 2.0, "reps": 3}
    with pytest.raises(ValueError):
        ratio_spread([1.0], [1.0, 2.0])
    assert MIN_REPS >= 5


def test_a_spread_wider_than_the_gap_is_flagged():
    wide = {"median": 1.04, "min": 0.98, "max": 1.12, "reps": 5}
    assert "cannot tell met from not met" in spread_note(wide, 1.05)
    assert spread_note({"median": 1.01, "min": 1.0, "max": 1.02, "reps": 5}, 1.05) == ""
    assert spread_note(None, 1.05) == ""
    text = bench.format_results({"gsr": {"constrained_vs_unconstrained_beam": 1.04,
                                         "constrained_vs_unconstrained_beam_spread": wide}})
    assert ("1.04   (goal <= 1.05: met; median of 5 alternated repetitions, min 0.98, "
            "max 1.12; WARNING: spread 0.140 > gap 0.010") in text


def test_threads_are_pinned_for_the_block_and_restored():
    import torch
    from threadpoolctl import threadpool_info

    before = torch.get_num_threads()
    with pinned_threads(1) as n:
        assert n == 1 and torch.get_num_threads() == 1
        assert all(pool["num_threads"] == 1 for pool in threadpool_info())
    assert torch.get_num_threads() == before

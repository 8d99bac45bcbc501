"""
Ratios that say how sure they are: each headline ratio of ``parlai-docgraph
bench`` is the median of at least :data:`MIN_REPS` repetitions, the two sides of a
repetition timed back to back in alternating order (A B, B A, A B, ...), with its minimum
and maximum, under the same thread settings for both sides (:func:`pinned_threads`).

Why: on the 2-core machine the figures are taken on, one-shot ratios moved by as much as
their distance to the goal from run to run (``selector_overhead_vs_ranking`` 1.082 and
1.243 on the same commit), because a burst of load hits whichever side runs then. A
repetition pairs the sides within a second or so, alternating removes the bias of going
first, and the median over repetitions ignores the odd disturbed pair; the spread
(``max - min``) is printed next to the goal, and :func:`spread_note` flags a figure whose
spread is wider than its distance to the goal (it cannot tell met from not met).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence

#: the fewest repetitions a headline ratio is the median of
MIN_REPS = 5


def default_threads() -> int:
    """The thread count both sides run with: ``OMP_NUM_THREADS`` when set, else every CPU
    of this process (what torch picks by default)."""
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@contextlib.contextmanager
def pinned_threads(threads: int) -> Iterator[int]:
    """Run the block with ``threads`` torch intra-op threads and ``threads`` threads in every
    BLAS / OpenMP pool numpy and spaCy (thinc) use (threadpoolctl), restoring them after:
    both sides of a ratio then compute with the same parallelism."""
    import torch
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads):
            yield threads
    finally:
        torch.set_num_threads(before)


def alternated(sides: Mapping[str, Callable[..., Any]], reps: int,
               parts: Optional[int] = None) -> Dict[str, List[float]]:
    """
    Seconds of each of ``sides`` (name -> function to time) in ``reps`` repetitions: within
    a repetition every side runs once, in the given order on even repetitions and reversed
    on odd ones. Returns ``{name: [seconds per repetition]}``.

    ``parts``: a repetition is ``parts`` pieces of work (a side is then called with the
    piece's index, ``0 .. parts - 1``); the sides take turns piece by piece, the order
    flipping at every piece, and a repetition's seconds are the sum over its pieces. The
    two sides of a piece then run within milliseconds of each other rather than a whole
    repetition apart, so a burst of load lands on both.
    """
    if reps < 1:
        raise ValueError("reps must be >= 1")
    names = list(sides)
    times: Dict[str, List[float]] = {name: [] for name in names}
    for rep in range(reps):
        total = dict.fromkeys(names, 0.0)
        for part in range(parts or 1):
            for name in names[::-1] if (rep + part) % 2 else names:
                start = time.perf_counter()
                sides[name](part) if parts else sides[name]()
                total[name] += time.perf_counter() - start
        for name in names:
            times[name].append(total[name])
    return times


def spread(values: Sequence[float], digits: int = 3) -> Dict[str, Any]:
    """``{"median", "min", "max", "reps"}`` of ``values``."""
    if not values:
        raise ValueError("no values")
    return {"median": round(statistics.median(values), digits),
            "min": round(min(values), digits), "max": round(max(values), digits),
            "reps": len(values)}


def ratio_spread(numerator: Sequence[float], denominator: Sequence[float],
                 digits: int = 3) -> Dict[str, Any]:
    """:func:`spread` of the per-repetition ratios ``numerator[i] / denominator[i]``."""
    if len(numerator) != len(denominator):
        raise ValueError("one denominator per numerator")
    return spread([n / max(d, 1e-12) for n, d in zip(numerator, denominator)], digits)


def spread_note(figure: Optional[Mapping[str, Any]], goal: float) -> str:
    """``", spread 0.04 > gap 0.02 to the goal: not conclusive"`` when the spread (max -
    min) of ``figure`` (a :func:`spread` dict) is wider than its median's distance to
    ``goal``; ``""`` otherwise or without a spread."""
    if not figure or not {"median", "min", "max"} <= set(figure):
        return ""
    width = figure["max"] - figure["min"]
    gap = abs(figure["median"] - goal)
    if width > gap:
        return (f"; WARNING: spread {width:.3f} > gap {gap:.3f} to the goal, the median "
                f"cannot tell met from not met")
    return ""

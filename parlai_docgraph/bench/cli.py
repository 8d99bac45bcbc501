"""
``parlai-docgraph bench [--quick] [--out FILE]``: run the registered benchmarks, print their
figures and ratios, and write one JSON object ``{benchmark name: {figure: value}, "meta":
{...}}``.

Benchmarks are registered with :func:`register_benchmark` (a function ``quick -> dict`` of
json-safe named figures); each benchmark module registers its own. ``graphs`` runs
:func:`parlai_docgraph.bench.graphs.graph_benchmark` on the knowledge pools of the bundled
``docgraph:sample`` (train, valid and test; ``--quick``: valid only, one repeat, documents of
10 and 50 sentences). ``parlai_docgraph/bench/README.md`` explains every figure.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_docgraph.env import run_record

Benchmark = Callable[[bool], Dict[str, Any]]
BENCHMARKS: Dict[str, Benchmark] = {}
GOALS: Dict[str, float] = {"graph_build_vs_spacy": 0.8}  # figure -> minimum wanted
#: figure -> maximum wanted (costs and overhead ratios: lower is better)
GOAL_MAXIMA: Dict[str, float] = {"selector_overhead_vs_ranking": 1.10,
                                  "constrained_vs_unconstrained_beam": 1.15}


def goal_note(key: str, value: Any) -> str:
    """``"   (goal >= 0.8: met)"`` / ``"   (goal <= 1.1: NOT met)"`` for a figure with a goal."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return ""
    if key in GOALS:
        met = "met" if value >= GOALS[key] else "NOT met"
        return f"   (goal >= {GOALS[key]}: {met})"
    if key in GOAL_MAXIMA:
        met = "met" if value <= GOAL_MAXIMA[key] else "NOT met"
        return f"   (goal <= {GOAL_MAXIMA[key]}: {met})"
    return ""


def register_benchmark(name: str) -> Callable[[Benchmark], Benchmark]:
    """Register ``fn(quick) -> {figure: value}`` under ``name`` (a key of the JSON output)."""

    def wrap(fn: Benchmark) -> Benchmark:
        have = BENCHMARKS.get(name)
        # the same function defined again is no clash: ``python -m`` runs a benchmark module
        # as ``__main__`` after the package imported it (spawned workers do the same)
        if have is not None and _origin(have) != _origin(fn):
            raise ValueError(f"benchmark {name!r} is already registered")
        BENCHMARKS[name] = fn
        return fn

    return wrap


def _origin(fn: Benchmark) -> tuple:
    """Where ``fn`` is defined: its source file and qualified name."""
    return getattr(fn, "__code__", None) and fn.__code__.co_filename, getattr(fn, "__qualname__", None)


def sample_pools(
    datatypes: Sequence[str] = ("train", "valid", "test"), task: str = "docgraph:sample"
) -> List[Any]:
    """The distinct knowledge pools of ``task`` (bundled sample by default), in order."""
    from parlai_docgraph.scripts.build_graphs import iterate_examples, parse_datatypes

    pools: Dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as datapath:
        opt = ParlaiParser(True, False).parse_args(["-t", task, "--datapath", datapath])
        for dt in parse_datatypes(",".join(datatypes)):
            for _, msg in iterate_examples(opt, dt):
                passages = msg.get("knowledge_passages")
                if passages is not None:
                    pools.setdefault(repr(passages), [(t, list(s)) for t, s in passages])
    return list(pools.values())


@register_benchmark("graphs")
def graphs_benchmark(quick: bool = False) -> Dict[str, Any]:
    """Graph building vs bare spaCy, cache loads, growth with document length."""
    from parlai_docgraph.bench.graphs import graph_benchmark

    pools = sample_pools(("valid",) if quick else ("train", "valid", "test"))
    return graph_benchmark(pools, quick=quick)


def run_benchmarks(names: Optional[Sequence[str]] = None, quick: bool = False) -> Dict[str, Any]:
    """Run the named (default: all) benchmarks; ``{name: figures, ..., "meta": {...}}``."""
    names = list(names or BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise ValueError(f"unknown benchmark(s) {unknown}; registered: {sorted(BENCHMARKS)}")
    out: Dict[str, Any] = {}
    seconds: Dict[str, float] = {}
    for name in names:
        start = time.perf_counter()
        out[name] = BENCHMARKS[name](quick)
        seconds[name] = round(time.perf_counter() - start, 2)
    out["meta"] = {"quick": quick, "seconds": seconds, **run_record(),
                   "python": platform.python_version(), "cpus": os.cpu_count()}
    return out


def format_results(results: Dict[str, Any]) -> str:
    """Human-readable figures, goals and derived ratios."""
    lines = []
    for name, figures in results.items():
        if name == "meta":
            continue
        lines.append(f"[{name}]")
        for key, value in figures.items():
            note = goal_note(key, value)
            if isinstance(value, dict):
                lines.append(f"  {key}:")
                for sub, v in value.items():
                    lines.append(f"    {sub}: {v}")
            else:
                lines.append(f"  {key}: {value}{note}")
        growth = figures.get("build_s_by_sentences") if isinstance(figures, dict) else None
        if growth:
            per = {int(n): 1000 * s / int(n) for n, s in growth.items()}
            small, large = min(per), max(per)
            lines.append("  ms per sentence by document length: " + ", ".join(
                f"{n}: {v:.2f}" for n, v in sorted(per.items())))
            if per[small] > 0:
                lines.append(f"  per-sentence cost at {large} vs {small} sentences: "
                             f"{per[large] / per[small]:.2f}x (1.0 = linear growth)")
    meta = results.get("meta", {})
    if meta:
        lines.append(f"[meta] {json.dumps(meta, sort_keys=True)}")
    return "\n".join(lines)


@register_script("bench", hidden=False)
class Bench(ParlaiScript):
    """
    Run the parlai-docgraph benchmarks (graph building speed, ...), print the figures and
    write them as one JSON object.
    """

    @classmethod
    def setup_args(cls) -> ParlaiParser:
        parser = ParlaiParser(False, False, description=cls.__doc__.strip())
        parser.add_argument("--quick", type="bool", default=False, nargs="?", const=True,
                            help="small, fast run (one repeat, smaller documents)")
        parser.add_argument("--out", default=None, help="JSON file to write")
        parser.add_argument("--only", default=None,
                            help="comma-separated benchmark names (default: all registered)")
        return parser

    def run(self) -> Dict[str, Any]:
        names = [n for n in (self.opt.get("only") or "").split(",") if n] or None
        results = run_benchmarks(names, bool(self.opt.get("quick")))
        print(format_results(results))
        if self.opt.get("out"):
            path = Path(self.opt["out"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            print(f"wrote {path}")
        return results


if __name__ == "__main__":
    Bench.main()

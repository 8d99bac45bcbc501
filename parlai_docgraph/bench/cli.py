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

from parlai_docgraph.bench.spread import default_threads
from parlai_docgraph.env import run_record

Benchmark = Callable[[bool], Dict[str, Any]]
BENCHMARKS: Dict[str, Benchmark] = {}
GOALS: Dict[str, float] = {"graph_build_vs_spacy": 1.0}  # figure -> minimum wanted
#: figure -> maximum wanted (costs and overhead ratios: lower is better)
GOAL_MAXIMA: Dict[str, float] = {"selector_overhead_vs_ranking": 1.05,
                                  "constrained_vs_unconstrained_beam": 1.05}
#: a headline figure ``K`` with a spread also writes ``K + SPREAD`` (:mod:`.spread`: the
#: median it is, min, max and repetitions)
SPREAD = "_spread"


def goal_note(key: str, value: Any, spread: Optional[Dict[str, Any]] = None) -> str:
    """``"   (goal >= 0.8: met)"`` / ``"   (goal <= 1.1: NOT met)"`` for a figure with a goal;
    with its ``spread`` (:func:`.spread.spread`), the repetitions, min and max, and a
    warning when the spread is wider than the distance to the goal."""
    from parlai_docgraph.bench.spread import spread_note

    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return ""
    if key in GOALS:
        goal, met, sign = GOALS[key], value >= GOALS[key], ">="
    elif key in GOAL_MAXIMA:
        goal, met, sign = GOAL_MAXIMA[key], value <= GOAL_MAXIMA[key], "<="
    else:
        return ""
    text = f"goal {sign} {goal}: {'met' if met else 'NOT met'}"
    if spread:
        text += (f"; median of {spread['reps']} alternated repetitions, min {spread['min']}, "
                 f"max {spread['max']}{spread_note(spread, goal)}")
    return f"   ({text})"


#: the headline ratios with goals and spreads: (benchmark, figure, what it compares)
RATIOS = (
    ("graphs", "graph_build_vs_spacy", "graph build (parse cache) / bare spaCy parse, speed"),
    ("selector", "selector_overhead_vs_ranking", "EGAT selector / cross-encoder, eval latency"),
    ("gsr", "constrained_vs_unconstrained_beam", "constrained beam 5 / free beam 5, time"),
)


def ratio_table(results: Dict[str, Any]) -> str:
    """A Markdown table of the :data:`RATIOS` in ``results`` (``bench``'s JSON object):
    median, min, max, repetitions, goal, and whether the spread can tell met from not met;
    then the run's machine, threads and load. Empty when none of them was run."""
    from parlai_docgraph.bench.spread import spread_note

    rows = ["| ratio | figure | median | min | max | repetitions | goal | met | spread vs gap |",
            "|---|---|---|---|---|---|---|---|---|"]
    for bench, key, what in RATIOS:
        figures = results.get(bench)
        if not isinstance(figures, dict) or key not in figures:
            continue
        sp = figures.get(key + SPREAD) or {}
        sign, goal = (">=", GOALS[key]) if key in GOALS else ("<=", GOAL_MAXIMA[key])
        met = figures[key] >= goal if sign == ">=" else figures[key] <= goal
        wide = "wider: not conclusive" if spread_note(sp, goal) else "narrower"
        rows.append(f"| {what} | `{key}` | {figures[key]} | {sp.get('min', '')} | "
                    f"{sp.get('max', '')} | {sp.get('reps', '')} | {sign} {goal} | "
                    f"{'yes' if met else 'no'} | {wide if sp else ''} |")
    if len(rows) == 2:
        return ""
    meta = results.get("meta", {})
    load = meta.get("load_average") or {}
    rows.append("")
    rows.append(f"{meta.get('machine', '?')} ({meta.get('cpu', '?')}), "
                f"{meta.get('threads', '?')} thread(s) for both "
                f"sides, load average {load.get('before', '?')} before and "
                f"{load.get('after', '?')} after; {'--quick' if meta.get('quick') else 'full'} "
                f"run at commit `{meta.get('commit', '?')}`, {meta.get('time_utc', '?')}.")
    return "\n".join(rows)


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
    load_before = _load_average()
    for name in names:
        start = time.perf_counter()
        out[name] = BENCHMARKS[name](quick)
        seconds[name] = round(time.perf_counter() - start, 2)
    out["meta"] = {"quick": quick, "seconds": seconds, **run_record(),
                   "python": platform.python_version(), "cpus": os.cpu_count(),
                   "cpu": _cpu_model(), "threads": default_threads(),
                   # other processes on the CPUs skew every figure: the 1-minute load
                   # average before and after says how busy the machine was
                   "load_average": {"before": load_before, "after": _load_average()}}
    return out


def _cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else what ``platform`` knows)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _load_average() -> Optional[float]:
    """The 1-minute load average (None where the OS has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def format_results(results: Dict[str, Any]) -> str:
    """Human-readable figures, goals and derived ratios."""
    lines = []
    for name, figures in results.items():
        if name == "meta":
            continue
        lines.append(f"[{name}]")
        for key, value in figures.items():
            note = goal_note(key, value, figures.get(key + SPREAD))
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
        table = ratio_table(results)
        if table:
            print("\n" + table)
        if self.opt.get("out"):
            path = Path(self.opt["out"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            print(f"wrote {path}")
        return results


if __name__ == "__main__":
    Bench.main()

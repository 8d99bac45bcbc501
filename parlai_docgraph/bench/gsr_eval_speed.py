"""
Where the seconds of a DialogGSR evaluation go: a trained ``-m docgraph/gsr`` model file
evaluated on a split as ``parlai eval_model`` does (same options, same batches), the whole
timed, and split into

* ``loss_s`` -- the evaluation losses (``ret_loss``, ``gen_loss``: ``compute_loss``);
* ``path_decoding_s`` -- the constrained beam searches of every retrieval step
  (``GSRModel.generate_paths``), with ``path_calls`` and ``path_steps`` (decoding steps);
* ``response_decoding_s`` -- the replies (``GSRModel.generate_text``), with ``reply_calls``
  and ``reply_steps``;
* ``other_s`` -- the rest of ``eval_step`` (entity linking, Katz scores, tries, metrics);

each in wall seconds and in CPU seconds of the evaluating thread (``cpu``: what load from
other processes changes least), in total and per example, beside the metrics ParlAI
reports (``exs``, ``path_valid``, ``path@1``, ...). The decoding outputs are those of
``eval_model``: the timers only wrap the calls.

    python -m parlai_docgraph.bench.gsr_eval_speed -mf MODEL [-dt valid] [-bs 2] \\
        [--threads 2] [--out FILE.json]

Without ``-t`` the model's own task is evaluated; any other ParlAI option (``-dt``,
``--gsr-num-beams``, ...) overrides the model's as in ``eval_model``. ``--threads``: torch
intra-op threads (default: ``OMP_NUM_THREADS``, else every CPU).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

#: part name -> the object attribute it times (see the module docstring)
PARTS = ("loss", "path_decoding", "response_decoding")


class _Clock:
    """Wall and thread CPU seconds per part, and calls and decoding steps per part."""

    def __init__(self) -> None:
        self.wall: Dict[str, float] = {p: 0.0 for p in PARTS}
        self.cpu: Dict[str, float] = {p: 0.0 for p in PARTS}
        self.calls: Dict[str, int] = {p: 0 for p in PARTS}
        self.steps: Dict[str, int] = {p: 0 for p in PARTS}
        self._open: List[str] = []

    def wrap(self, part: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` timed as ``part`` (a call inside another timed call counts once, in the
        outer part)."""

        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._open:
                return fn(*args, **kwargs)
            self._open.append(part)
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.wall[part] += time.perf_counter() - wall
                self.cpu[part] += time.thread_time() - cpu
                self.calls[part] += 1
                self._open.pop()

        return timed

    def count_steps(self, generate: Callable[..., Any]) -> Callable[..., Any]:
        """``lm.generate`` counting its decoding steps (``len(out.scores)``) under the
        part that called it."""

        def counted(*args: Any, **kwargs: Any) -> Any:
            out = generate(*args, **kwargs)
            if self._open and getattr(out, "scores", None) is not None:
                self.steps[self._open[-1]] += len(out.scores)
            return out

        return counted


def evaluate(args: List[str], threads: Optional[int] = None) -> Dict[str, Any]:
    """Evaluate as ``eval_model`` with ``args`` (ParlAI options, ``-mf`` required);
    the figures of the module docstring."""
    import torch
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser
    from parlai.core.worlds import create_task
    from parlai.core.metrics import dict_report

    from parlai_docgraph.bench.spread import default_threads

    threads = threads or default_threads()
    torch.set_num_threads(threads)
    parser = ParlaiParser(True, True)
    parser.set_defaults(datatype="valid")
    opt = parser.parse_args(args)
    if not opt.get("model_file"):
        raise ValueError("gsr_eval_speed needs -mf: a trained -m docgraph/gsr model file")
    if not opt.get("task"):  # the model's own task, its teacher's options parsed with it
        from parlai.core.opt import Opt

        opt = parser.parse_args(["-t", Opt.load(f"{opt['model_file']}.opt")["task"], *args])
    agent = create_agent(opt, requireModelExists=True)
    world = create_task(opt, agent)
    clock = _Clock()
    model = agent.gsr()
    model.generate_paths = clock.wrap("path_decoding", model.generate_paths)
    model.generate_text = clock.wrap("response_decoding", model.generate_text)
    model.lm.generate = clock.count_steps(model.lm.generate)
    agent.compute_loss = clock.wrap("loss", agent.compute_loss)
    eval_step = agent.eval_step
    total = {"wall": 0.0, "cpu": 0.0}

    def timed_eval_step(batch: Any) -> Any:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return eval_step(batch)
        finally:
            total["wall"] += time.perf_counter() - wall
            total["cpu"] += time.thread_time() - cpu

    agent.eval_step = timed_eval_step
    start = time.perf_counter()
    while not world.epoch_done():
        world.parley()
    whole = time.perf_counter() - start
    report = dict_report(world.report())
    examples = int(report.get("exs", 0)) or 1
    out: Dict[str, Any] = {"examples": examples, "threads": threads, "eval_s": round(whole, 2)}
    for kind, seconds in (("wall", clock.wall), ("cpu", clock.cpu)):
        parts = dict(seconds, other=total[kind] - sum(seconds.values()))
        out[kind] = {f"{p}_s": round(v, 2) for p, v in parts.items()}
        out[kind]["eval_step_s"] = round(total[kind], 2)
        out[kind]["per_example_s"] = {p: round(v / examples, 3) for p, v in parts.items()}
    out["path_calls"], out["path_steps"] = clock.calls["path_decoding"], clock.steps["path_decoding"]
    out["reply_calls"], out["reply_steps"] = (clock.calls["response_decoding"],
                                              clock.steps["response_decoding"])
    keep = ("exs", "path_valid", "path@1", "path@3", "paths_retrieved", "resp_f1",
            "resp_bleu-1", "resp_bleu-4", "gen_loss", "ret_loss")
    out["metrics"] = {k: round(float(report[k]), 4) for k in keep if k in report}
    return out


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    """Command line: ParlAI options plus ``--threads N`` and ``--out FILE``."""
    from parlai_docgraph.bench.cli import _cpu_model, _load_average
    from parlai_docgraph.env import run_record

    args = list(sys.argv[1:] if argv is None else argv)
    threads, out_file = None, None
    for flag in ("--threads", "--out"):
        if flag in args:
            at = args.index(flag)
            value = args[at + 1]
            del args[at:at + 2]
            threads, out_file = (int(value), out_file) if flag == "--threads" else (threads, value)
    load = _load_average()
    figures = evaluate(args, threads)
    result = {"gsr_eval_speed": figures,
              "meta": {**run_record(), "cpu": _cpu_model(), "cpus": os.cpu_count(),
                       "load_average": {"before": load, "after": _load_average()}}}
    text = json.dumps(result, indent=2, sort_keys=True)
    print(text)
    if out_file:
        path = Path(out_file)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()

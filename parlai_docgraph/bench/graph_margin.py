"""
The graph's margin over the cross-encoder on held-out coreference structure (a study run as
a module): train ``-m docgraph/graph_selector`` with the stock ``parlai
train_model`` command, ``--graph-variant full`` and ``none``, over the set
``tools/make_coref_groups.py`` writes, and record every run in one result file
(``docs/results/graph_margin.json``) with each setting's mean and spread::

    python tools/make_coref_groups.py --out /tmp/groups
    python -m parlai_docgraph.bench.graph_margin run --tree . --datapath /tmp/groups \\
        --variants full,none --epochs 1,3 --seeds 0,1,2
    python -m parlai_docgraph.bench.graph_margin table

``--tree`` is a checkout with its own ``.venv`` (``make dev``): the command runs that tree's
``parlai``, so the same set measures any commit (a bisect worktree, an older release); the
tool first checks that this environment imports the package from that tree
(:func:`check_tree`). Each
run is one stock command (``-m docgraph/graph_selector -t docgraph:wow:topic_split
--encoder-model minilm-l6 --label-type chosen_sent -bs 8 --num-epochs E --seed S``, ``-veps 1``
when E > 1, so ParlAI keeps the best valid epoch), plus the options after ``--``; the record
holds the tree's commit, the options, the seed, valid and test ``know_acc`` (ParlAI's final
reports of the kept model) and the seconds it took.

ParlAI's ``train_model`` applies ``--seed`` after it has built the agent and its world, so the
seed fixes the data order and the sampling but not the initial weights of a model whose
``build_model`` draws them (a selector of a commit before the agent seeded its own
initialisation): two runs of one command then differ. ``--init-seed`` runs the same command
through ``TrainModel.main`` with ParlAI's ``set_seed(S)`` called first, so the initial weights
are a function of the seed too; a bisect compares commits on the same draws that way.

Runs are recorded as they finish (an interrupted batch keeps what it did); a run already in
the file with the same commit, options and seed is not run again unless ``--rerun``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from threading import Lock
from typing import Any, Dict, List, Optional, Sequence, Tuple

from parlai_docgraph.atomic import write_text_atomic
from parlai_docgraph.env import run_record
from parlai_docgraph.jsonio import read_json

#: the stock options of every run (the issue's held-out check), before the variant's
STOCK = ("-m", "docgraph/graph_selector", "-t", "docgraph:wow:topic_split",
         "--encoder-model", "minilm-l6", "--label-type", "chosen_sent", "-bs", "8")
#: the folder of the result files, which the runs themselves change
RESULTS_DIR = "docs/results"
#: :func:`set_name` of the generator's default options (the README's row)
DEFAULT_SET = "120/60 m4 f3"
#: ParlAI's train_model with its seed applied before the agent is built (--init-seed)
SEEDED_MAIN = ("import sys; from parlai.scripts.train_model import TrainModel, set_seed; "
               "set_seed(int(sys.argv[1])); TrainModel.main(*sys.argv[2:])")
#: each run's process: one OpenMP/MKL thread (two runs share two cores), offline
RUN_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "PARLAI_DOCGRAPH_OFFLINE": "1"}


def tree_commit(tree: Path) -> str:
    """The short commit of ``tree``'s HEAD, ``+dirty`` when its tracked files differ (result
    files aside: the runs write one)."""
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(tree), "diff", "--quiet", "HEAD", "--", ".",
                            f":(exclude){RESULTS_DIR}"], capture_output=True).returncode != 0
    return head + ("+dirty" if dirty else "")


#: what a run imports from its tree: the package and the teachers (setup.py maps ``tasks/`` in)
PROBE = ("import parlai_docgraph, parlai_docgraph.tasks.docgraph as t; "
         "print(parlai_docgraph.__file__); print(t.__file__)")


def check_tree(tree: Path) -> None:
    """``ValueError`` unless the interpreters a run starts (the one ``.venv/bin/parlai`` names
    on its first line, and ``.venv/bin/python``) import the package and its teachers from
    ``tree``. A virtual environment copied from another checkout keeps that checkout's
    interpreter on its scripts' first line, and an editable install made through them maps
    the package to whichever tree ran it: the runs would then measure another commit under
    this tree's name. Probed from ``/``, so the current folder hides no wrong mapping."""
    venv = tree / ".venv" / "bin"
    script = venv / "parlai"
    if not script.is_file():
        raise ValueError(f"{script} is missing: run `make dev` in {tree}")
    first = script.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
    named = first[2:].strip() if first.startswith("#!") and "/sh" not in first else ""
    for interpreter in dict.fromkeys(filter(None, (named, str(venv / "python")))):
        found = subprocess.run([interpreter, "-c", PROBE], cwd="/", capture_output=True,
                               text=True, env={**os.environ, **RUN_ENV})
        files = found.stdout.split()
        wrong = [f for f in files if not Path(f).resolve().is_relative_to(tree.resolve())]
        if found.returncode != 0 or len(files) != 2 or wrong:
            raise ValueError(
                f"{interpreter} (run by {tree}'s .venv) imports parlai_docgraph from "
                f"{' and '.join(files) or found.stderr.strip()[-300:]}, not from {tree}: "
                f"rebuild that environment with `make dev` in {tree}, or reinstall it with "
                f"its own interpreter ({venv / 'python'} -m pip install --no-deps -e .)")


#: the generator's options that size the set (``coref_groups.json`` of the datapath)
SET_FIELDS = ("train_dialogues", "eval_dialogues", "members", "facts", "turns", "per_passage",
              "seed")


def set_of(datapath: str) -> Dict[str, Any]:
    """The generator's options of the set in ``datapath`` (``ValueError`` when it has none)."""
    path = Path(datapath) / "wizard_of_wikipedia" / "coref_groups.json"
    if not path.is_file():
        raise ValueError(f"{path} is missing: write the set with tools/make_coref_groups.py "
                         f"--out {datapath}")
    config = read_json(str(path))
    return {k: config[k] for k in ("version",) + SET_FIELDS}


def set_name(config: Dict[str, Any]) -> str:
    """A short name of a set: ``train/eval dialogues, members, facts``."""
    return (f"{config['train_dialogues']}/{config['eval_dialogues']} m{config['members']} "
            f"f{config['facts']}")


def run_key(record: Dict[str, Any]) -> Tuple:
    """What identifies a run: set, commit, variant, epochs, seed, init seeding, options."""
    return (set_name(record["set"]), record["commit"], record["variant"], record["epochs"],
            record["seed"], record["init_seed"], tuple(record["options"]))


def command(tree: Path, datapath: str, variant: str, epochs: int, seed: int, options: Sequence[str],
            model_file: str, init_seed: bool) -> List[str]:
    """The command line of one run (the stock ``parlai train_model`` unless ``init_seed``)."""
    args = list(STOCK) + ["--graph-variant", variant, "--num-epochs", str(epochs),
                           "--seed", str(seed)]
    if epochs > 1:
        args += ["-veps", "1"]
    args += ["-mf", model_file, "--datapath", datapath] + list(options)
    venv = tree / ".venv" / "bin"
    if init_seed:
        return [str(venv / "python"), "-c", SEEDED_MAIN, str(seed)] + args
    return [str(venv / "parlai"), "train_model"] + args


def run_process(cmd: Sequence[str], cwd: Path, out: Any) -> Tuple[int, float]:
    """Run ``cmd`` (output to ``out``) and return its exit code and its own CPU seconds (user +
    system, from ``wait4``: another run going on at the same time is not counted)."""
    proc = subprocess.Popen(list(cmd), cwd=str(cwd), stdout=out, stderr=subprocess.STDOUT,
                            env={**os.environ, **RUN_ENV})
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen.wait
    return proc.returncode, usage.ru_utime + usage.ru_stime


def train_once(tree: Path, datapath: str, variant: str, epochs: int, seed: int,
               options: Sequence[str], init_seed: bool, commit: str, logs: Path) -> Dict[str, Any]:
    """Run one training and return its record; its model files are removed afterwards
    (``RuntimeError`` with the command and its log when it fails)."""
    work = Path(tempfile.mkdtemp(prefix=f"margin-{variant}-e{epochs}-s{seed}-"))
    model_file = str(work / "model")
    cmd = command(tree, datapath, variant, epochs, seed, options, model_file, init_seed)
    name = f"{set_name(set_of(datapath)).replace(' ', '_').replace('/', '-')}-{commit}-{variant}-e{epochs}-s{seed}{'-init' if init_seed else ''}"
    if options:
        name += "-" + "_".join(o.lstrip("-") for o in options)[:60]
    log = logs / f"{name}.log"
    start = time.time()
    with open(log, "w", encoding="utf-8") as out:
        code, cpu_s = run_process(cmd, tree, out)
    try:
        if code != 0:
            raise RuntimeError(f"exit {code}: {shlex.join(cmd)} (log: {log})")
        stats = read_json(f"{model_file}.trainstats")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "set": set_of(datapath), "commit": commit, "variant": variant, "epochs": epochs,
        "seed": seed,
        "init_seed": init_seed, "options": list(options),
        "valid_know_acc": round(float(stats["final_valid_report"]["know_acc"]), 4),
        "test_know_acc": round(float(stats["final_test_report"]["know_acc"]), 4),
        "train_steps": int(stats.get("train_steps", 0)),
        "wall_s": round(time.time() - start, 1),
        "cpu_s": round(cpu_s, 1),
        "command": shlex.join(["parlai" if c.endswith("/parlai") else c for c in cmd]
                              ).replace(model_file, "MODEL"),
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def margin_once(tree: Path, datapath: str, seed: int = 0, epochs: int = 1,
                options: Sequence[str] = (), logs: Optional[Path] = None) -> Dict[str, Any]:
    """``full`` and ``none`` trained at once (a process each, one thread each) with the stock
    command; their records by variant, and ``margin``: ``full - none`` of the ``know_acc``
    over the valid and test turns pooled (the splits are the same size)."""
    logs = logs or Path(tempfile.mkdtemp(prefix="graph-margin-logs-"))
    logs.mkdir(parents=True, exist_ok=True)
    commit = tree_commit(tree)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {v: pool.submit(train_once, tree, datapath, v, epochs, seed, options, False,
                                  commit, logs) for v in ("full", "none")}
        out: Dict[str, Any] = {v: f.result() for v, f in futures.items()}
    pooled = {v: (r["valid_know_acc"] + r["test_know_acc"]) / 2 for v, r in out.items()}
    out["margin"] = round(pooled["full"] - pooled["none"], 4)
    return out


def spread(values: Sequence[float]) -> Dict[str, float]:
    """Mean, sample standard deviation (0 for one value), min and max, rounded."""
    return {"n": len(values), "mean": round(statistics.fmean(values), 4),
            "sd": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0,
            "min": min(values), "max": max(values)}


def summarize(runs: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One row per (set, commit, options, init seeding, epochs): each variant's valid/test
    spread over its seeds and the margin ``full - none`` of the means (both variants present)."""
    groups: Dict[Tuple, Dict[str, List[Dict[str, Any]]]] = {}
    sets = {}
    for r in runs:
        sets[set_name(r["set"])] = r["set"]
        key = (set_name(r["set"]), r["commit"], tuple(r["options"]), r["init_seed"], r["epochs"])
        groups.setdefault(key, {}).setdefault(r["variant"], []).append(r)
    rows = []
    for (name, commit, options, init_seed, epochs), by_variant in sorted(groups.items()):
        row: Dict[str, Any] = {"set": sets[name], "commit": commit, "options": list(options),
                               "init_seed": init_seed, "epochs": epochs, "variants": {}}
        for variant, rs in sorted(by_variant.items()):
            row["variants"][variant] = {
                "seeds": sorted(r["seed"] for r in rs),
                "valid": spread([r["valid_know_acc"] for r in rs]),
                "test": spread([r["test_know_acc"] for r in rs])}
        if {"full", "none"} <= set(by_variant):
            v = row["variants"]
            row["margin"] = {split: round(v["full"][split]["mean"] - v["none"][split]["mean"], 4)
                             for split in ("valid", "test")}
        rows.append(row)
    return rows


def current(runs: Sequence[Dict[str, Any]], rows: Sequence[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The summary row the README quotes: the stock command at the default options, one
    epoch, both variants, on the generator's default set, of the commit whose such run was
    recorded last (``None`` when absent)."""

    def stock(r: Dict[str, Any]) -> bool:
        return (set_name(r["set"]) == DEFAULT_SET and not r["options"] and not r["init_seed"]
                and r["epochs"] == 1)

    for record in sorted(filter(stock, runs), key=lambda r: r["time_utc"], reverse=True):
        for row in rows:
            if row["commit"] == record["commit"] and stock(row) and "margin" in row:
                return row
    return None


def load(path: Path) -> Dict[str, Any]:
    """The result file, or an empty one."""
    if path.is_file():
        return read_json(str(path))
    return {"graph_margin": {"runs": [], "summary": []}}


def save(path: Path, data: Dict[str, Any], meta: Dict[str, Any]) -> None:
    """Write the file with its summary recomputed and this command's run record."""
    runs = sorted(data["graph_margin"]["runs"], key=lambda r: tuple(map(str, run_key(r))))
    rows = summarize(runs)
    data["graph_margin"] = {**data["graph_margin"], "runs": runs, "summary": rows,
                            "current": current(runs, rows)}
    data["meta"] = meta
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def table(data: Dict[str, Any]) -> str:
    """Markdown table of the summary rows: mean (sd) [min-max] of each variant, the margin."""
    lines = ["| set | commit | options | epochs | full valid | full test | none valid | none test "
             "| margin test (valid) |", "|---|---|---|---|---|---|---|---|---|"]

    def cell(v: Optional[Dict[str, Any]], split: str) -> str:
        if v is None:
            return "-"
        s = v[split]
        return f"{s['mean']:.3f} ({s['sd']:.3f}) [{s['min']:.3f}-{s['max']:.3f}] n={s['n']}"

    for row in data["graph_margin"]["summary"]:
        v = row["variants"]
        opts = (" ".join(row["options"]) or "defaults") + (" (init seeded)" if row["init_seed"]
                                                           else "")
        margin = row.get("margin")
        lines.append(
            f"| {set_name(row['set'])} | {row['commit']} | {opts} | {row['epochs']} | "
            f"{cell(v.get('full'), 'valid')} | {cell(v.get('full'), 'test')} | "
            f"{cell(v.get('none'), 'valid')} | {cell(v.get('none'), 'test')} | "
            + (f"{margin['test']:+.3f} ({margin['valid']:+.3f})" if margin else "-") + " |")
    return "\n".join(lines)


def run(args: argparse.Namespace, options: Sequence[str]) -> int:
    tree = Path(args.tree).resolve()
    check_tree(tree)
    commit = tree_commit(tree)
    name = set_name(set_of(args.datapath))
    out = Path(args.out)
    data = load(out)
    done = {run_key(r) for r in data["graph_margin"]["runs"]}
    todo = []
    for variant, epochs, seed in itertools.product(args.variants.split(","),
                                                   [int(e) for e in args.epochs.split(",")],
                                                   [int(s) for s in args.seeds.split(",")]):
        key = (name, commit, variant, epochs, seed, args.init_seed, tuple(options))
        if key in done and not args.rerun:
            print(f"recorded already: {key}")
            continue
        todo.append((variant, epochs, seed))
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    meta = run_record()
    lock = Lock()
    failed = 0
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(train_once, tree, args.datapath, v, e, s, options,
                               args.init_seed, commit, logs): (v, e, s) for v, e, s in todo}
        for future in as_completed(futures):
            try:
                record = future.result()
            except RuntimeError as err:
                failed += 1
                print(f"FAILED {futures[future]}: {err}", file=sys.stderr)
                continue
            with lock:
                data = load(out)  # another batch may have written meanwhile
                runs = [r for r in data["graph_margin"]["runs"] if run_key(r) != run_key(record)]
                data["graph_margin"]["runs"] = runs + [record]
                save(out, data, meta)
            print(f"{record['commit']} {record['variant']} e{record['epochs']} "
                  f"s{record['seed']}: valid {record['valid_know_acc']:.3f} test "
                  f"{record['test_know_acc']:.3f} ({record['wall_s']:.0f} s)", flush=True)
    print(table(load(out)))
    return 1 if failed else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    options: List[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, options = argv[:cut], argv[cut + 1:]
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="train and record runs (options after -- go to every run)")
    r.add_argument("--tree", default=".", help="checkout whose .venv/bin/parlai runs")
    r.add_argument("--datapath", required=True, help="the datapath the set was written to")
    r.add_argument("--variants", default="full,none")
    r.add_argument("--epochs", default="1", help="comma-separated --num-epochs values")
    r.add_argument("--seeds", default="0,1,2", help="comma-separated --seed values")
    r.add_argument("--init-seed", action="store_true",
                   help="seed ParlAI's generators before the agent is built (module docstring)")
    r.add_argument("--jobs", type=int, default=2, help="runs at once (one thread each)")
    r.add_argument("--rerun", action="store_true", help="run again what the file has")
    r.add_argument("--out", default="docs/results/graph_margin.json")
    r.add_argument("--logs", default=os.path.join(tempfile.gettempdir(), "graph_margin_logs"),
                   help="folder of each run's ParlAI log")
    t = sub.add_parser("table", help="print the summary of a result file")
    t.add_argument("file", nargs="?", default="docs/results/graph_margin.json")
    args = parser.parse_args(argv)
    if args.cmd == "table":
        print(table(load(Path(args.file))))
        return 0
    return run(args, options)


if __name__ == "__main__":
    sys.exit(main())

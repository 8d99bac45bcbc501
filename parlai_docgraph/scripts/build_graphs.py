"""
``parlai-docgraph build_graphs``: build every document graph a task needs into the graph
store under ``<datapath>/docgraph_cache/graphs``.

The task's examples are read through ParlAI (``-t``, ``-dt`` as for any ParlAI command;
several datatypes comma-separated, default ``train,valid,test``; ``train`` is read in order),
the distinct knowledge pools (``knowledge_passages``) are collected, and every pool whose
graph is not in the :class:`~parlai_docgraph.graphs.store.GraphStore` is built and stored.
Keys are the store's content hashes, so graphs built here are the ones
``GraphStore.get_or_build`` (the teachers, ``show_graph``, the graph selector) finds.

- Resumable: entries are written atomically as they are built; a re-run (after a kill, or
  with more data) verifies stored entries and builds only what is missing. A corrupt or
  stale entry fails verification, is deleted and rebuilt, never loaded.
- ``--shard i/n`` builds only the pools whose key falls in shard ``i`` of ``n`` (separate
  machines can build shards into separate datapaths); ``--merge-from DIR ...`` copies the
  verified entries of other stores (a datapath, its ``docgraph_cache/graphs`` folder or a
  ``graphs-v<N>`` folder) into this one, then builds whatever is still missing when ``-t``
  is given.
- ``--workers N`` builds in ``N`` processes (spawned; each loads its own spaCy pipeline).
- ``--engine ray [--address ADDR]``: the same builds as tasks on a Ray cluster
  (:mod:`~parlai_docgraph.graphs.ray_engine`; ``pip install 'parlai-docgraph[ray]'``): graphs
  come back to this process, which writes the same store; failed tasks are retried, then
  reported. Without ``--address`` a local Ray with ``--workers`` CPUs is started.
- ``--corpus PATH`` instead of ``-t``: a folder of ``.txt``/``.md`` files or a JSONL of
  ``{title, text}`` (:mod:`~parlai_docgraph.graphs.corpus`: one graph per document, a passage
  per paragraph); unreadable files and malformed rows are reported with file and line.
- ``--parse-cache true`` (default): semantic graphs parse each distinct sentence once per
  store (:mod:`~parlai_docgraph.graphs.parse_cache`, ``<store root>/parses-v<N>.sqlite``),
  so the build costs the dataset's distinct sentences, not its turns; the same graphs as
  ``--parse-cache false``.
- Graph options (the one group of :meth:`~parlai_docgraph.graphs.config.GraphConfig.add_args`):
  ``--graph-variant`` (``full|sentence|coref|homogeneous|multilevel|paths``; ``paths``
  builds the ``full`` graph), ``--graph-parser dep|amr`` (``--amr-file``,
  ``--amr-model-dir``), ``--graph-coref rule|coreferee|none``, ``--multilevel-ablation``;
  graphs are built and keyed by :class:`~parlai_docgraph.graphs.factory.GraphFactory`, so
  teachers (``--attach-graphs store``) and the graph selector given the same options find
  exactly the graphs built here.

Examples::

    parlai-docgraph build_graphs -t docgraph:sample -dt valid --datapath /tmp/dp
    parlai-docgraph build_graphs -t docgraph:wow --shard 0/4 --workers 8 --datapath /data/a
    parlai-docgraph build_graphs --merge-from /data/a /data/b --datapath /data/all
    parlai-docgraph build_graphs --corpus my_docs/ --engine ray --address 10.0.0.1:6379
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_docgraph.graphs.store import default_store_root, resolve_store_root
from parlai_docgraph.graphs.builders import builder_spec
from parlai_docgraph.graphs.config import GraphConfig
from parlai_docgraph.graphs.factory import GraphFactory

DEFAULT_DATATYPES = "train,valid,test"
__all__ = ["BuildGraphs", "build_store"]


def parse_shard(value: Optional[str]) -> Optional[Tuple[int, int]]:
    """``"i/n"`` -> ``(i, n)``; ``None`` stays ``None``; ``ValueError`` when malformed."""
    if value in (None, ""):
        return None
    try:
        index, count = (int(x) for x in str(value).split("/"))
    except ValueError:
        raise ValueError(f"--shard {value!r}: expected i/n, e.g. 0/4") from None
    if not 0 <= index < count:
        raise ValueError(f"--shard {value}: need 0 <= i < n")
    return index, count


def parse_datatypes(value: Optional[str]) -> List[str]:
    """
    ``"train,valid"`` -> ``["train:ordered", "valid"]``: comma-separated ParlAI datatypes;
    train is read in order, once (no shuffling, no repeats).
    """
    out = []
    for dt in (value or DEFAULT_DATATYPES).split(","):
        dt = dt.strip()
        if not dt:
            continue
        base, *flags = dt.split(":")
        if base not in ("train", "valid", "test"):
            raise ValueError(f"datatype {dt!r}: expected train, valid or test")
        if base == "train" and "ordered" not in flags and "evalmode" not in flags:
            flags.append("ordered")
        out.append(":".join([base] + flags))
    if not out:
        raise ValueError("no datatype given")
    return out


def iterate_examples(opt: Dict[str, Any], datatype: str) -> Iterator[Tuple[int, Any]]:
    """``(index, message)`` for one epoch of ``opt['task']`` in ``datatype`` (all teachers)."""
    from parlai.core.opt import Opt
    from parlai.core.teachers import create_task_agent_from_taskname

    topt = Opt(opt)
    topt["datatype"] = datatype
    topt["batchsize"] = 1
    index = 0
    for teacher in create_task_agent_from_taskname(topt):
        for _ in range(teacher.num_examples()):
            yield index, teacher.act()
            index += 1


# --- worker side (module level, so spawned processes can import it) -------------------------

_WORKER: Dict[str, Any] = {}


def _init_worker(state: Dict[str, Any], root: str) -> None:
    # Never raise here: a Pool whose initializer fails respawns workers forever.
    try:
        from parlai_docgraph.graphs.store import GraphStore

        factory = GraphFactory.from_state(state).load()  # load spaCy once per worker
        _WORKER.update(factory=factory, store=GraphStore(root))
    except Exception as exc:
        _WORKER["error"] = f"worker start failed: {type(exc).__name__}: {exc}"


def _build_one(job: Tuple[str, Any]) -> Tuple[str, Optional[str]]:
    """Build and store one graph; ``(key, None)`` or ``(key, failure reason)``."""
    key, passages = job
    if "error" in _WORKER:
        return key, _WORKER["error"]
    try:
        graph = _WORKER["factory"].build(passages)
        _WORKER["store"].save(key, graph)
        return key, None
    except Exception as exc:  # reported per pool, the run goes on
        return key, f"{type(exc).__name__}: {exc}"


def _start_method() -> str:
    """``spawn`` (safe after torch/spaCy are loaded); ``fork`` when the main module is not
    a file spawned workers could re-import (``python -``, some embedded interpreters)."""
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    if main is not None and not Path(main).is_file():
        return "fork"
    return "spawn"


def build_store(
    jobs: Dict[str, Any], factory: GraphFactory, root: Path, workers: int = 1,
    progress: bool = True,
    engine: str = "pool", address: Optional[str] = None, report: Optional[Dict[str, Any]] = None,
) -> Dict[str, Optional[str]]:
    """
    Build and store the graphs of ``jobs`` (key -> passages) into the store at ``root``;
    returns key -> ``None`` (built) or the failure reason. ``engine``: ``pool`` (this
    machine, ``workers`` processes) or ``ray`` (:mod:`~parlai_docgraph.graphs.ray_engine`:
    the cluster at ``address``, or a local Ray with ``workers`` CPUs); Ray's task retries
    are counted in ``report["retried"]``.
    """
    from tqdm import tqdm

    results: Dict[str, Optional[str]] = {}
    if not jobs:
        return results
    if engine == "ray":
        from parlai_docgraph.graphs.store import GraphStore
        from parlai_docgraph.graphs.ray_engine import build_with_ray

        results, retried = build_with_ray(
            jobs, factory.state(), GraphStore(root).save, address=address,
            num_cpus=None if address else workers, progress=progress)
        if report is not None:
            report["retried"] = retried
        return results
    bar = tqdm(total=len(jobs), unit="doc", desc="build_graphs", disable=not progress,
               file=sys.stderr, dynamic_ncols=True, smoothing=0.1)
    workers = min(workers, len(jobs))
    try:
        if workers <= 1:
            from parlai_docgraph.graphs.store import GraphStore

            _WORKER.update(factory=factory, store=GraphStore(root))  # backends already loaded
            for job in jobs.items():
                key, error = _build_one(job)
                results[key] = error
                bar.update(1)
        else:
            ctx = multiprocessing.get_context(_start_method())
            with ctx.Pool(workers, _init_worker, (factory.state(), str(root))) as pool:
                for key, error in pool.imap_unordered(_build_one, jobs.items(), chunksize=1):
                    results[key] = error
                    bar.update(1)
    finally:
        bar.close()
    return results


@register_script("build_graphs", hidden=False)
class BuildGraphs(ParlaiScript):
    """
    Build the document graphs of a task's knowledge pools into the graph store under
    <datapath>/docgraph_cache/graphs (resumable, sharded, parallel).
    """

    @classmethod
    def setup_args(cls) -> ParlaiParser:
        parser = ParlaiParser(True, False, description=cls.__doc__.strip())
        parser.set_defaults(datatype=DEFAULT_DATATYPES)
        GraphConfig.add_args(parser)
        group = parser.add_argument_group("build_graphs")
        group.add_argument("--workers", type=int, default=1,
                           help="build processes (each loads its own spaCy pipeline); with "
                           "--engine ray and no --address: the CPUs of the local Ray")
        group.add_argument("--engine", choices=("pool", "ray"), default="pool",
                           help="pool: processes on this machine; ray: tasks on a Ray cluster "
                           "(pip install 'parlai-docgraph[ray]'), same store")
        group.add_argument("--address", default=None,
                           help="--engine ray: address of a running Ray cluster (e.g. "
                           "127.0.0.1:6379 or auto); default: start a local Ray")
        group.add_argument("--corpus", default=None, metavar="PATH",
                           help="build the graphs of a plain document corpus instead of -t: a "
                           "folder of .txt/.md files or a .jsonl of {title, text} (one graph "
                           "per document, a passage per paragraph)")
        group.add_argument("--shard", default=None,
                           help="i/n: build only shard i of n (by key hash), e.g. 0/4")
        group.add_argument("--merge-from", nargs="+", default=None, metavar="DIR",
                           help="copy the verified entries of these stores (datapaths or "
                           "store folders) into this datapath's store first")
        group.add_argument("--parse-cache", type="bool", default=True,
                           help="parse each distinct sentence once per store (a sentence "
                           "parse cache next to the graphs; same graphs either way)")
        group.add_argument("--progress", type="bool", default=True, help="show a tqdm bar")
        return parser

    def run(self) -> Dict[str, Any]:
        from parlai_docgraph.graphs.store import GraphStore

        opt = self.opt
        shard = parse_shard(opt.get("shard"))
        root = default_store_root(opt["datapath"])
        store = GraphStore(root)
        report: Dict[str, Any] = dict(
            store=str(store.root), merged=0, examples=0, without_pools=0, pools=0,
            in_shard=0, cached=0, built=0, rebuilt=0, failed=0, failures={}, build_s=0.0,
            docs_per_s=0.0, stray_tmp=store.clean() if store.root.is_dir() else 0,
        )
        lines: List[str] = []
        for src in opt.get("merge_from") or []:
            other = GraphStore(resolve_store_root(src))
            copied = store.merge_from(other)
            report["merged"] += copied
            lines.append(f"merged {copied} entries from {other.root}")
        if not opt.get("task") and not opt.get("corpus"):
            if not opt.get("merge_from"):
                raise ValueError("build_graphs needs -t TASK or --corpus PATH (or --merge-from "
                                 "DIR ...)")
            lines.append(f"store: {store.root} ({sum(1 for _ in store.keys())} entries)")
            print("\n".join(lines))
            return report

        config = GraphConfig.from_opt(opt)
        parses = None
        if opt["parse_cache"] and config.builder and builder_spec(config.builder).reads_parses:
            from parlai_docgraph.graphs.parse_cache import ParseCache

            parses = ParseCache.for_store(root)
            report["parses_before"] = len(parses)
        factory = GraphFactory(config, parse_cache=str(root) if parses is not None else None)
        failures: Dict[str, List[str]] = {}
        jobs, first_seen = self._jobs(opt, factory, store, shard, report, failures)
        self._build(opt, jobs, first_seen, factory, report, failures)
        if parses is not None:
            report["parses_after"] = len(parses)
            parses.close()
        lines += self._summary(opt, factory, shard, report)
        print("\n".join(lines))
        return report

    def _jobs(self, opt: Dict[str, Any], factory: GraphFactory, store: Any, shard: Any,
              report: Dict[str, Any], failures: Dict[str, List[str]]) -> Tuple[Dict, Dict]:
        """``(jobs, first_seen)``: key -> passages of the graphs to build (in the shard, not
        stored or stored damaged), key -> where it was first seen; counts in ``report``."""
        from parlai_docgraph.graphs.store import in_shard

        jobs: Dict[str, Any] = {}
        first_seen: Dict[str, str] = {}
        seen_pools = set()
        for where, passages in self._pools(opt, report, failures):
            ident = repr(passages)
            if ident in seen_pools:
                continue
            seen_pools.add(ident)
            report["pools"] += 1
            try:
                key = factory.key(passages)
            except ValueError as exc:
                failures.setdefault(f"ValueError: {exc}", []).append(where)
                continue
            if key in first_seen:
                continue
            first_seen[key] = where
            if shard is not None and not in_shard(key, shard):
                continue
            report["in_shard"] += 1
            existed = key in store
            if existed and store.load(key) is not None:
                report["cached"] += 1
                continue
            report["rebuilt"] += int(existed)
            jobs[key] = passages
        if not opt.get("corpus") and report["examples"] \
                and report["without_pools"] == report["examples"]:
            raise ValueError(
                f"task {opt['task']!r} has no knowledge_passages in its examples: "
                "build_graphs needs a document-grounded task (e.g. docgraph:sample, docgraph:wow)"
            )
        return jobs, first_seen

    @staticmethod
    def _build(opt: Dict[str, Any], jobs: Dict[str, Any], first_seen: Dict[str, str],
               factory: GraphFactory, report: Dict[str, Any], failures: Dict) -> None:
        """Build ``jobs`` with ``--workers`` / ``--engine``; time, counts and failures (each
        with the example where its pool was first seen) go to ``report``."""
        start = time.perf_counter()
        results = build_store(jobs, factory, default_store_root(opt["datapath"]),
                              max(1, int(opt.get("workers") or 1)), bool(opt["progress"]),
                              opt["engine"], opt.get("address"), report)
        report["build_s"] = round(time.perf_counter() - start, 3)
        for key, error in results.items():
            if error is None:
                report["built"] += 1
            else:
                failures.setdefault(error, []).append(first_seen[key])
        report["failed"] = sum(map(len, failures.values()))
        report["failures"] = failures
        if report["built"]:
            report["docs_per_s"] = round(report["built"] / max(report["build_s"], 1e-9), 2)

    @staticmethod
    def _pools(opt: Dict[str, Any], report: Dict[str, Any],
               failures: Dict[str, List[str]]) -> Iterator[Tuple[str, Any]]:
        """``(where, passages)`` of every document (``--corpus``) or example (``-t``);
        unreadable documents go to ``failures`` with their file (and line)."""
        if opt.get("corpus"):
            from parlai_docgraph.graphs.corpus import read_corpus

            for where, pool, error in read_corpus(opt["corpus"]):
                report["examples"] += 1
                if error is not None:
                    failures.setdefault(error, []).append(where)
                else:
                    yield where, pool
            return
        for dt in parse_datatypes(opt.get("datatype")):
            for index, msg in iterate_examples(opt, dt):
                report["examples"] += 1
                passages = msg.get("knowledge_passages")
                if passages is None:
                    report["without_pools"] += 1
                    continue
                yield f"{dt.split(':')[0]}#{index}", passages

    @staticmethod
    def _summary(opt: Dict[str, Any], factory: GraphFactory, shard: Optional[Tuple[int, int]],
                 report: Dict[str, Any]) -> List[str]:
        part = f", shard {shard[0]}/{shard[1]}: {report['in_shard']}" if shard else ""
        lines = [
            f"build_graphs {opt.get('corpus') or opt['task']} "
            f"[{'corpus' if opt.get('corpus') else opt.get('datatype')}]: {factory.describe()}",
            f"examples: {report['examples']} ({report['without_pools']} without "
            f"knowledge_passages); distinct knowledge pools: {report['pools']}{part}",
            f"built: {report['built']} (replacing {report['rebuilt']} corrupt/stale entries), "
            f"cached: {report['cached']}, failed: {report['failed']}",
            f"build time: {report['build_s']:.2f} s, {report['docs_per_s']:.2f} docs/s "
            f"({max(1, int(opt.get('workers') or 1))} worker(s), engine "
            f"{opt.get('engine') or 'pool'}"
            + (f", {report['retried']} task retries)" if "retried" in report else ")"),
            f"store: {report['store']}",
        ]
        if "parses_after" in report:
            lines.append(f"parse cache: {report['parses_after']} distinct sentences "
                         f"({report['parses_after'] - report['parses_before']} parsed now)")
        if report["stray_tmp"]:
            lines.append(f"removed {report['stray_tmp']} temporary files of a killed run")
        if report["failures"]:
            lines.append("failures (reason: pools, first example):")
            for reason, where in sorted(report["failures"].items(), key=lambda x: -len(x[1]))[:20]:
                lines.append(f"  {reason[:300]}: {len(where)} (first at {where[0]})")
        return lines


if __name__ == "__main__":
    BuildGraphs.main()

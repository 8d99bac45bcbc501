"""
``parlai-docgraph bench --only long_documents``: chatting over documents of 10 KB to 5 MB
with a ``-m docgraph`` model (default ``zoo:docgraph/sample/model``), as ``parlai
interactive --documents`` does.

Each size runs in a fresh Python process, so its peak memory is its own:

1. load the model (its parts from their model files);
2. index the document (:meth:`DocgraphAgent.load_documents`: read, split, and the model's
   ``--retriever``: BM25, and for ``dense`` / ``hybrid`` the sentence vectors, embedded in
   the background above ``--dense-background-over`` sentences), with fresh caches (a new
   temporary datapath: no parse, graph, embedding, index or vector cache is warm);
3. answer ``turns`` questions of ``docgraph:docqa`` whose documents are inside the text, one
   dialogue, timing each turn by stage: ``retrieval`` (the pool from the index),
   ``graph`` (graph building and node features, the selector's provider), ``selection``
   (the rest of the selector: encoding the candidate pairs, the graph network, ranking),
   ``generation`` (the responder) and ``total`` (observe + act).

The documents are :func:`~parlai_docgraph.bench.long_text.assemble_document`: the same two
bundled docqa documents (:data:`ASKED_DOCUMENTS`, about 3 KB) at every size, then prose from
installed libraries' docstrings up to the size, written once under
``<datapath>/bench_long_documents``. Every size asks the same questions about the same
documents, so only the amount of other text changes.

Figures per size: ``bytes``, ``sentences``, ``index_s``, ``sentences_per_s`` (indexing),
``model_load_s`` (process start, Python's imports included, to a loaded model),
``first_reply_s`` (process start to the first reply: imports, model load, index and the
first turn), median ``turn_ms`` per stage over the turns after the first,
``answer_in_pool`` (share of turns whose answer sentence was retrieved), the median
``pool_sentences`` and ``pool_words`` of a turn's pool, ``peak_rss_mb`` (after the dense
index is done, or after the wait below); the dense index's cost: ``dense_build_s`` (its
sentences embedded, from the index to the last vector; the run waits for it after the
turns, at most :data:`DENSE_WAIT_S`; ``dense_ready`` false and ``dense_build_s`` null when
it was not done by then, ``dense_done`` sentences of ``dense_sentences`` embedded in
``dense_elapsed_s``), ``dense_background`` (whether it was built in the background),
``dense_sentences_per_s`` and ``turns_before_dense`` (turns answered while it was still
being built, by BM25 alone).
Headline figures with goals: ``turn_latency_ratio`` (median total turn at the largest size
over the smallest; goal <= 1.5), ``first_reply_s_largest`` (goal <= 120 s) and
``peak_rss_mb_largest`` (goal <= 4096 MB).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

from parlai_docgraph.bench.cli import GOAL_MAXIMA, register_benchmark
from parlai_docgraph.jsonio import iter_jsonl

SIZES = {"10KB": 10_000, "100KB": 100_000, "1MB": 1_000_000, "5MB": 5_000_000}
#: the docqa documents every size starts with; the turns ask their questions
ASKED_DOCUMENTS = ("canoe_rental_faq.md", "lighthouse_keeper_biography.txt")
QUICK_SIZES = ("10KB", "100KB")
STAGES = ("retrieval", "graph", "selection", "generation", "total")
#: how long a size waits for its dense index after the turns; past that it reports how far
#: the background build got (on busy cores a build at a lower priority can take hours)
DENSE_WAIT_S = 180.0
GOAL_MAXIMA.update({"turn_latency_ratio": 1.5, "first_reply_s_largest": 120.0,
                    "peak_rss_mb_largest": 4096.0})


class StageTimer:
    """Seconds spent in wrapped calls, per stage, since the last :meth:`reset`."""

    def __init__(self) -> None:
        self.seconds: Dict[str, float] = {}

    def reset(self) -> None:
        self.seconds = {}

    def wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[stage] = (self.seconds.get(stage, 0.0)
                                       + time.perf_counter() - start)
        return timed


def questions_in(text: str, limit: int) -> List[Dict[str, str]]:
    """Up to ``limit`` docqa questions whose answer sentence is in ``text``, interleaved
    across documents (one dialogue that changes topic)."""
    from parlai_docgraph.bench.long_text import _docqa_folder

    rows = [row for _, row in iter_jsonl(str(_docqa_folder() / "questions.jsonl"))]
    by_doc: Dict[str, List[Dict[str, str]]] = {}
    for row in rows:
        if row["answer"] in text:
            by_doc.setdefault(row["document"], []).append(row)
    out: List[Dict[str, str]] = []
    for i in range(max((len(v) for v in by_doc.values()), default=0)):
        out += [qs[i] for qs in by_doc.values() if i < len(qs)]
    return out[:limit]


def measure(document: str, model_file: str, turns: int, started: float) -> Dict[str, Any]:
    """One size (see the module docstring); runs in the worker process, which its parent
    started at ``started`` (``time.time()``)."""
    from parlai.core.agents import create_agent_from_model_file

    text = Path(document).read_text(encoding="utf-8")
    asked = questions_in(text, turns + 1)
    with tempfile.TemporaryDirectory() as fresh:
        agent = create_agent_from_model_file(model_file, {
            "interactive_mode": True, "datapath": fresh, "documents": None})
        loaded = time.time()
        agent.load_documents([document])
        indexed = time.time()
        dense = getattr(agent.index.retriever, "dense", None)
        if dense is None and agent.index.retriever.name == "dense":
            dense = agent.index.retriever
        before_dense = 0
        timer = StageTimer()
        agent.index.retrieve = timer.wrap("retrieval", agent.index.retrieve)
        agent.responder.batch_act = timer.wrap("generation", agent.responder.batch_act)
        graphs = agent.selector.graphs
        graphs.get = timer.wrap("graph", graphs.get)
        per_turn: List[Dict[str, float]] = []
        pools: List[Tuple[int, int]] = []  # (sentences, words) of each turn's pool
        in_pool = 0
        first_reply = 0.0
        for number, row in enumerate(asked):
            timer.reset()
            before_dense += dense is not None and not dense.ready
            start = time.perf_counter()
            agent.observe({"text": row["question"], "episode_done": False})
            reply = agent.act()
            total = time.perf_counter() - start
            if number == 0:
                first_reply = time.time() - started
            in_pool += any(row["answer"] == s for _, ss in agent.turn_pool for s in ss)
            stage = dict(timer.seconds, total=total)
            pools.append((sum(len(ss) for _, ss in agent.turn_pool),
                          sum(len(x.split()) for _, ss in agent.turn_pool for x in ss)))
            stage["selection"] = total - sum(stage.get(k, 0.0) for k in
                                             ("retrieval", "graph", "generation"))
            per_turn.append(stage)
            if not reply.get("text"):
                raise RuntimeError(f"no reply to {row['question']!r}: {reply}")
        stats = agent.index.stats
        later = per_turn[1:] or per_turn
        figures: Dict[str, Any] = {"retriever": agent.index.retriever.name}
        if dense is not None:
            ready = dense.wait(DENSE_WAIT_S)
            built = dense.stats
            # not ready within DENSE_WAIT_S: how far it got, and its rate so far
            seconds = built.get("seconds", 0.0) if ready else time.time() - loaded
            done = built.get("embedded", 0.0) if ready else float(dense.done)
            figures.update(
                dense_ready=ready,
                dense_build_s=round(seconds, 2) if ready else None,
                dense_elapsed_s=round(seconds, 2),
                dense_background=bool(built.get("background")),
                dense_sentences=int(built.get("embedded", 0)),
                dense_done=int(done),
                dense_sentences_per_s=round(done / max(seconds, 1e-9), 1),
                turns_before_dense=before_dense)
        return {**figures,
            "bytes": len(text.encode()), "sentences": agent.index.num_sentences,
            "passages": len(agent.index.passages),
            "model_load_s": round(loaded - started, 2), "index_s": round(indexed - loaded, 2),
            "sentences_per_s": round(stats.get("sentences_per_second", 0.0), 1),
            "first_reply_s": round(first_reply, 2), "turns": len(later),
            "turn_ms": {k: round(1000 * statistics.median(t.get(k, 0.0) for t in later), 1)
                        for k in STAGES},
            "answer_in_pool": round(in_pool / max(len(asked), 1), 3),
            "pool_sentences": statistics.median(p[0] for p in pools[1:] or pools),
            "pool_words": statistics.median(p[1] for p in pools[1:] or pools),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }


def document_for(size: int, folder: Path) -> Path:
    """The benchmark document of ``size`` bytes (written once under ``folder``)."""
    from parlai_docgraph.atomic import write_text_atomic
    from parlai_docgraph.bench.long_text import assemble_document

    from parlai_docgraph.bench.long_text import _docqa_folder

    path = folder / f"long_{size}.md"
    if not path.is_file():
        docs = [_docqa_folder() / name for name in ASKED_DOCUMENTS]
        write_text_atomic(path, assemble_document(size, docs))
    return path


def run_sizes(names: Sequence[str], model_file: str, datapath: str, turns: int
              ) -> Dict[str, Any]:
    """Every size in its own worker process; the figures and the headline ratios."""
    from parlai.core.build_data import modelzoo_path

    model = modelzoo_path(datapath, model_file)  # builds the zoo model once, here
    folder = Path(datapath) / "bench_long_documents"
    sizes: Dict[str, Any] = {}
    for name in names:
        doc = document_for(SIZES[name], folder)
        job = [sys.executable, "-c", "import sys; from parlai_docgraph.bench.long_documents "
               "import main; main(sys.argv[1:])", "--worker", "--document", str(doc),
               "--model-file", model, "--turns", str(turns), "--started", repr(time.time())]
        done = subprocess.run(job, capture_output=True, text=True, env=dict(os.environ))
        if done.returncode != 0:
            raise RuntimeError(f"long_documents {name} failed:\n{done.stderr[-3000:]}")
        sizes[name] = json.loads(done.stdout.strip().splitlines()[-1])
    small, large = sizes[names[0]], sizes[names[-1]]
    return {
        "sizes": sizes, "retriever": large.get("retriever", "bm25"),
        "dense_build_s_largest": large.get("dense_build_s"),
        "dense_ready_largest": large.get("dense_ready"),
        "dense_background_largest": large.get("dense_background"),
        "turn_latency_ratio": round(large["turn_ms"]["total"]
                                    / max(small["turn_ms"]["total"], 1e-9), 2),
        "first_reply_s_largest": large["first_reply_s"],
        "peak_rss_mb_largest": large["peak_rss_mb"],
        "largest": names[-1], "smallest": names[0], "model_file": model_file,
    }


def markdown_table(result: Dict[str, Any]) -> str:
    """The Markdown table of a :func:`run_sizes` result (what the README quotes)."""
    head = ("| document | sentences | index s (sentences/s) | dense index s (sentences/s) "
            "| first reply s | turn ms: retrieval / graph / selection / generation = total "
            "| pool sentences | answer retrieved | peak MB |")
    rows = [head, "|---" * 9 + "|"]
    for name, f in sorted(result["sizes"].items(), key=lambda kv: kv[1]["bytes"]):
        t = f["turn_ms"]
        dense = "none"
        if f.get("dense_build_s") is not None:
            dense = (f"{f['dense_build_s']:.1f} ({f['dense_sentences_per_s']:,.0f}"
                     + (", in the background)" if f["dense_background"] else ")"))
        elif f.get("dense_ready") is False:
            dense = (f"not ready after {f['dense_elapsed_s']:.0f} ({f['dense_done']:,} of "
                     f"{f['dense_sentences']:,}, {f['dense_sentences_per_s']:,.0f}/s, in the "
                     "background)")
        rows.append(
            f"| {name} | {f['sentences']:,} | {f['index_s']:.1f} ({f['sentences_per_s']:,.0f}) "
            f"| {dense} | {f['first_reply_s']:.1f} | {t['retrieval']:.0f} / {t['graph']:.0f} / "
            f"{t['selection']:.0f} / {t['generation']:.0f} = {t['total']:.0f} "
            f"| {f['pool_sentences']:g} | {f['answer_in_pool']:.2f} | {f['peak_rss_mb']:,.0f} |")
    large, small = result["largest"], result["smallest"]
    rows += ["", f"First reply on {large} {result['first_reply_s_largest']:.1f} s after start, "
             f"index included (goal: within 120 s); per-turn latency {large} / {small} "
             f"{result['turn_latency_ratio']:.2f}x (goal: within 1.5x); peak memory at {large} "
             f"{result['peak_rss_mb_largest']:,.0f} MB (goal: under 4,096 MB)."]
    large_f = result["sizes"][large]
    if large_f.get("dense_ready") is False:
        rows[-1] += (f" Retriever {result['retriever']}: at {large} the dense index was not "
                     f"ready {large_f['dense_elapsed_s']:.0f} s after indexing began "
                     f"({large_f['dense_done']:,} of {large_f['dense_sentences']:,} sentences "
                     "embedded, in the background); BM25 ranked every turn alone.")
    elif large_f.get("dense_build_s") is not None:
        rows[-1] += (f" Retriever {result['retriever']}: at {large} the dense index took "
                     f"{large_f['dense_build_s']:.0f} s"
                     + (" in the background; until it was ready "
                        f"({large_f['turns_before_dense']} of {large_f['turns'] + 1} turns) "
                        "BM25 ranked alone." if large_f["dense_background"] else "."))
    return "\n".join(rows)


@register_benchmark("long_documents")
def long_documents_benchmark(quick: bool = False) -> Dict[str, Any]:
    """Index rate, first reply, per-turn latency by stage and peak memory."""
    datapath = os.environ.get("PARLAI_DATAPATH") or _default_datapath()
    names = QUICK_SIZES if quick else tuple(SIZES)
    return run_sizes(names, "zoo:docgraph/sample/model", datapath, 3 if quick else 8)


def _default_datapath() -> str:
    from parlai.core.params import ParlaiParser

    return ParlaiParser(True, False).parse_args([])["datapath"]


def main(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--worker", action="store_true", help="measure one document")
    parser.add_argument("--document", help="worker: the document")
    parser.add_argument("--model-file", default="zoo:docgraph/sample/model")
    parser.add_argument("--datapath", default=None, help="where the zoo model and the "
                        "benchmark documents live (default: ParlAI's datapath)")
    parser.add_argument("--sizes", default=",".join(SIZES), help="comma-separated of "
                        + ", ".join(SIZES))
    parser.add_argument("--turns", type=int, default=8, help="turns after the first")
    parser.add_argument("--started", type=float, default=None,
                        help="worker: when its parent started it (time.time())")
    args = parser.parse_args(argv)
    if args.worker:
        started = args.started if args.started is not None else time.time()
        print(json.dumps(measure(args.document, args.model_file, args.turns, started)))
        return
    names = [n for n in args.sizes.split(",") if n]
    result = run_sizes(names, args.model_file, args.datapath or _default_datapath(),
                       args.turns)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])

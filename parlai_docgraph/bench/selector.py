"""
``parlai-docgraph bench --only selector``: what the document graph costs the knowledge
selector over the plain cross-encoder ranking baseline.

Two :class:`~parlai_docgraph.agents.graph_selector.agent.GraphSelectorAgent` s with the same
encoder (``minilm-l6``, the offline default) and the paper's hyper-parameters, created in the
same run: ``--graph-variant full`` and ``--graph-variant none``. Figures:

- ``latency_ms``: ``{variant: {candidates: ms}}``, the median wall time of one evaluation
  turn (``observe`` + ``act``: vectorising, collation, the forward pass, ranking and
  metrics) at 10, 40 and 160 candidates, with the pool's graph already built and embedded
  (the state of every turn after the first of a dialogue, and of every turn when graphs
  come from ``build_graphs``' store).
- ``first_turn_graph_ms``: ``{candidates: ms}``, the extra time of the turn that builds and
  embeds a new pool's graph in process (``--graph-cache memory``, nothing stored).
- ``overhead_by_candidates``: ``{candidates: full / none}``, the median of the per-repetition
  ratios of ``latency_ms`` (the two variants' turns timed back to back, in alternating
  order, :mod:`.spread`; 9 repetitions, 5 with ``--quick``), with their min and max in
  ``overhead_spread_by_candidates``; ``selector_overhead_vs_ranking``: the largest median
  (goal <= 1.05, ``bench.GOAL_MAXIMA``: the graph should add little to the encoder
  forward), its spread and size in ``selector_overhead_vs_ranking_spread``. Both agents
  run with the same threads (``threads``, :func:`~.spread.pinned_threads`).
- ``train_examples_per_s``: ``{variant: examples/s}`` of training ``batch_act`` calls
  (``batchify`` + ``train_step``) on batches of the bundled sample (16 examples, 4 with
  ``--quick``; k = 5 sampled negatives), graphs already built and embedded, the variants'
  steps interleaved (:func:`train_rates`); ``train_speed_ratio``: time per example of
  ``full`` / ``none`` (goal <= 1.15, ``bench.GOAL_MAXIMA``).

Pools of exactly ``n - 1`` sentences (plus ``no_passages_used``) are cut from the bundled
``docgraph:sample`` passages (real Wikipedia text; past its ~150 distinct sentences the
passages repeat under new titles), so sizes are comparable across runs.
``--quick``: 5 repetitions per size and 1 training step of 4 examples per variant.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from parlai_docgraph.graphs.knowledge_lines import NO_KNOWLEDGE_LINE
from parlai_docgraph.graphs.config import GraphVariant
from parlai_docgraph.bench.cli import GOAL_MAXIMA, register_benchmark, sample_pools

SIZES = (10, 40, 160)
GOAL_MAXIMA.setdefault("train_speed_ratio", 1.15)
VARIANTS = (GraphVariant.FULL.value, GraphVariant.NONE.value)


def pool_of_size(passages: Sequence[Tuple[str, List[str]]], n_sentences: int,
                 offset: int = 0) -> List[Tuple[str, List[str]]]:
    """Whole passages (the last one cut) of ``passages`` with distinct titles, starting at
    ``offset``, with exactly ``n_sentences`` sentences. Past the end the passages come round
    again under titles marked ``(2)``, ``(3)``, ... (the bundled sample has ~150 distinct
    sentences); ``ValueError`` when there are none."""
    unique: Dict[str, List[str]] = {}
    for title, sents in passages:
        if sents:
            unique.setdefault(title, list(sents))
    if not unique:
        raise ValueError("no passage with sentences to build a pool from")
    items = list(unique.items())
    items = items[offset % len(items):] + items[: offset % len(items)]
    pool: List[Tuple[str, List[str]]] = []
    count, lap = 0, 1
    while count < n_sentences:
        for title, sents in items:
            if count >= n_sentences:
                break
            take = sents[: n_sentences - count]
            pool.append((title if lap == 1 else f"{title} ({lap})", take))
            count += len(take)
        lap += 1
    return pool


def eval_message(pool: List[Tuple[str, List[str]]], text: str) -> Dict[str, Any]:
    """A WoW-format evaluation message over ``pool`` (gold: the first sentence)."""
    lines = [f"{t} {s}" for t, sents in pool for s in sents]
    return {"text": text, "episode_done": True, "eval_labels": [lines[0]],
            "label_candidates": [NO_KNOWLEDGE_LINE] + lines,
            "knowledge_passages": [[t, list(s)] for t, s in pool]}


def make_agent(variant: str, datapath: str, encoder: str = "minilm-l6") -> Any:
    """A fresh selector (``variant``) with in-memory graphs and the paper's defaults."""
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser

    opt = ParlaiParser(True, True).parse_args([
        "-m", "docgraph/graph_selector", "-t", "docgraph:sample", "--label-type",
        "chosen_sent", "--datapath", datapath, "--graph-variant", variant,
        "--encoder-model", encoder, "--graph-cache", "memory", "-bs", "16"])
    return create_agent(opt)


def _turn_ms(agent: Any, message: Dict[str, Any]) -> float:
    """Milliseconds of one evaluation turn (``observe`` + ``act``) of a reset ``agent``."""
    from parlai.core.message import Message

    agent.reset()
    start = time.perf_counter()
    agent.observe(Message(message))
    agent.act()
    return 1000 * (time.perf_counter() - start)


def _observed(agent: Any, messages: List[Dict[str, Any]], bs: int) -> List[List[Any]]:
    """The observed batches of ``bs`` labelled messages (one reset per batch)."""
    from parlai.core.message import Message

    out = []
    for i in range(max(1, len(messages) // bs)):
        obs = []
        agent.reset()
        for m in messages[i * bs: (i + 1) * bs]:
            obs.append(agent.observe(Message(m)))
            agent.self_observe({})
        out.append(obs)
    return out


def train_rates(agents: Dict[str, Any], messages: List[Dict[str, Any]], steps: int,
                bs: int = 16) -> Dict[str, float]:
    """
    Examples per second of training ``batch_act`` calls (``batchify`` + ``train_step``) of
    each agent, from the median time of ``steps`` steps. The agents take their steps in
    turn (full, none, full, none, ...), so a change of load on a shared machine hits all
    of them alike; measuring one agent's steps and then the other's makes the ratio follow
    the load (same agents and process on a loaded machine: 1.43x block by block, 1.00x
    interleaved; less loaded: 1.12x / 1.09x; see parlai_docgraph/bench/README.md). Every pool's graph is built and embedded, and one warm-up step
    taken (allocator, optimizer state), before timing: the state with the graph store and
    node-feature cache warm.
    """
    batches = {name: _observed(agent, messages, bs) for name, agent in agents.items()}
    for name, agent in agents.items():
        for obs in batches[name]:  # builds and memoises every pool's graph
            agent.batchify(obs)
        agent.batch_act(batches[name][0])  # warm-up step
    times: Dict[str, List[float]] = {name: [] for name in agents}
    for step in range(steps):
        for name, agent in agents.items():
            obs = batches[name][step % len(batches[name])]
            start = time.perf_counter()
            agent.batch_act(obs)
            times[name].append((time.perf_counter() - start) / len(obs))
    return {name: 1.0 / statistics.median(t) for name, t in times.items()}


def train_messages(datapath: str, limit: int) -> List[Dict[str, Any]]:
    """The first ``limit`` labelled ``chosen_sent`` training messages of the bundled sample."""
    from parlai.core.params import ParlaiParser
    from parlai.core.teachers import create_task_agent_from_taskname

    opt = ParlaiParser(True, False).parse_args([
        "-t", "docgraph:sample", "--label-type", "chosen_sent", "--datapath", datapath,
        "-dt", "train:ordered"])
    teacher = create_task_agent_from_taskname(opt)[0]
    out = []
    for _ in range(min(limit, teacher.num_examples())):
        out.append(dict(teacher.act()))
    return out


def selector_benchmark(quick: bool = False, encoder: str = "minilm-l6",
                       reps: Optional[int] = None, threads: Optional[int] = None) -> Dict[str, Any]:
    """The figures of the module docstring (``reps``: alternated repetitions of each size,
    at least :data:`~.spread.MIN_REPS`; ``threads``: for both variants, default
    :func:`~.spread.default_threads`)."""
    import torch

    from parlai_docgraph.bench.spread import (
        MIN_REPS, alternated, default_threads, pinned_threads, ratio_spread,
    )

    reps = max(MIN_REPS, reps or (MIN_REPS if quick else 9))
    steps, bs = (1, 4) if quick else (6, 16)
    threads = threads or default_threads()
    passages = [p for pool in sample_pools() for p in pool]
    text = "I love reading about this. What else do you know about it?"
    latency: Dict[str, Dict[str, float]] = {v: {} for v in VARIANTS}
    spreads: Dict[str, Dict[str, Any]] = {}
    first: Dict[str, float] = {}
    rates: Dict[str, float] = {}
    with pinned_threads(threads), torch.no_grad():
        with tempfile.TemporaryDirectory() as datapath:
            agents = {v: make_agent(v, datapath, encoder) for v in VARIANTS}
            for n in SIZES:
                warm = eval_message(pool_of_size(passages, n - 1), text)
                fresh = eval_message(pool_of_size(passages, n - 1, offset=1), text)
                for v in VARIANTS:
                    _turn_ms(agents[v], warm)  # untimed: builds the pool's graph, warms up
                times = alternated({v: (lambda v=v: _turn_ms(agents[v], warm)) for v in VARIANTS},
                                   reps)
                for v in VARIANTS:
                    latency[v][str(n)] = 1000 * statistics.median(times[v])
                spreads[str(n)] = ratio_spread(times["full"], times["none"])
                # a pool never seen: the first turn of a dialogue builds and embeds its graph
                first[str(n)] = max(0.0, _turn_ms(agents["full"], fresh) - latency["full"][str(n)])
    with pinned_threads(threads), tempfile.TemporaryDirectory() as datapath:
        messages = train_messages(datapath, bs * 2)
        rates = train_rates({v: make_agent(v, datapath, encoder) for v in VARIANTS},
                            messages, steps, bs)
    worst = max(spreads, key=lambda n: spreads[n]["median"])
    return {
        "encoder": encoder,
        "latency_ms": {v: {n: round(ms, 2) for n, ms in d.items()} for v, d in latency.items()},
        "first_turn_graph_ms": {n: round(ms, 2) for n, ms in first.items()},
        "overhead_by_candidates": {n: sp["median"] for n, sp in spreads.items()},
        "overhead_spread_by_candidates": spreads,
        # the size where the graph costs most (median over the repetitions)
        "selector_overhead_vs_ranking": spreads[worst]["median"],
        "selector_overhead_vs_ranking_spread": {**spreads[worst], "candidates": int(worst)},
        "train_examples_per_s": {v: round(r, 2) for v, r in rates.items()},
        "train_speed_ratio": round(rates["none"] / rates["full"], 3),  # full / none time
        "threads": threads,
    }


@register_benchmark("selector")
def _selector(quick: bool = False) -> Dict[str, Any]:
    return selector_benchmark(quick)

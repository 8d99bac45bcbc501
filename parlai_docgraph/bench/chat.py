"""
``parlai-docgraph bench --only chat``: the latency of one chat turn with the zoo model, as
``parlai interactive -mf zoo:docgraph/sample/model --documents ...`` answers it.

The model (``zoo:docgraph/sample/model``, built on first use) is loaded once and given two
held-out documents (``parlai_docgraph/assets/heldout``); the turns ask their questions in
one dialogue. Each turn is timed by stage (:class:`~.long_documents.StageTimer`): ``graph``
(graph building and node features), ``generation`` (the responder: prompt and reply),
``selection`` (the rest: retrieval, encoding, the graph network, ranking) and ``total``.
The reply's tokens are counted with the responder's tokenizer (plus its end token when the
reply ended before the cap).

Figures: median ``turn_ms`` per stage over the turns after the first (the first loads
lazily), ``tokens_per_s`` (reply tokens over generation seconds, those turns),
``reply_tokens`` (median), ``first_turn_ms``, and the torch threads used. Goals: at least
15 tokens/s and a whole turn under 3 s on 2 idle cores.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any, Dict, List

import torch

from parlai_docgraph.bench.cli import GOAL_MAXIMA, GOALS, register_benchmark
from parlai_docgraph.bench.long_documents import StageTimer, _default_datapath

DOCUMENTS = ("lisbon_guide.md", "bakery_history.txt")
GOALS.update({"tokens_per_s": 15.0})
GOAL_MAXIMA.update({"turn_total_ms": 3000.0})


def chat_turns(model_file: str, datapath: str, turns: int) -> Dict[str, Any]:
    """Load ``model_file``, index :data:`DOCUMENTS` and time ``turns`` + 1 turns."""
    from parlai.core.agents import create_agent_from_model_file
    from parlai.core.build_data import modelzoo_path

    from parlai_docgraph.tasks.docgraph.docqa import HELDOUT, load_questions

    questions = [q for q in load_questions(HELDOUT) if q.document in DOCUMENTS]
    if len(questions) < turns + 1:
        raise ValueError(f"{len(questions)} held-out questions on {DOCUMENTS}; asked {turns + 1}")
    path = modelzoo_path(datapath, model_file)
    start = time.perf_counter()
    agent = create_agent_from_model_file(path, {"interactive_mode": True, "datapath": datapath})
    load_s = time.perf_counter() - start
    agent.load_documents([str(HELDOUT / d) for d in DOCUMENTS])
    timer = StageTimer()
    agent.responder.batch_act = timer.wrap("generation", agent.responder.batch_act)
    agent.selector.graphs.get = timer.wrap("graph", agent.selector.graphs.get)
    tokenizer = agent.responder.dict.hf_tokenizer
    cap = int(agent.responder.opt.get("label_truncate") or 0)
    per_turn: List[Dict[str, float]] = []
    for q in questions[: turns + 1]:
        timer.reset()
        start = time.perf_counter()
        agent.observe({"text": q.question, "episode_done": False})
        reply = agent.act()
        total = time.perf_counter() - start
        text = reply.get("text") or ""
        if not text:
            raise RuntimeError(f"no reply to {q.question!r}: {reply}")
        tokens = len(tokenizer(text, add_special_tokens=False)["input_ids"])
        stage = dict(timer.seconds, total=total)
        stage["selection"] = total - stage.get("graph", 0.0) - stage.get("generation", 0.0)
        stage["tokens"] = tokens + (1 if not cap or tokens < cap else 0)
        per_turn.append(stage)
    later = per_turn[1:]
    generation = sum(t.get("generation", 0.0) for t in later)
    return {
        "model": model_file, "reply_mode": agent.opt["reply_mode"],
        "responder": agent.responder.opt.get("responder_model"),
        "torch_threads": torch.get_num_threads(), "cpus": os.cpu_count(),
        "turns": len(later), "model_load_s": round(load_s, 2),
        "first_turn_ms": round(1000 * per_turn[0]["total"]),
        "turn_ms": {k: round(1000 * statistics.median(t.get(k, 0.0) for t in later))
                    for k in ("graph", "selection", "generation", "total")},
        "turn_total_ms": round(1000 * statistics.median(t["total"] for t in later)),
        "reply_tokens": statistics.median(t["tokens"] for t in later),
        "tokens_per_s": round(sum(t["tokens"] for t in later) / generation, 1) if generation else 0.0,
    }


@register_benchmark("chat")
def chat_benchmark(quick: bool = False) -> Dict[str, Any]:
    """One chat turn's latency by stage and the generator's tokens/s."""
    datapath = os.environ.get("PARLAI_DATAPATH") or _default_datapath()
    return chat_turns("zoo:docgraph/sample/model", datapath, 3 if quick else 8)


def markdown_table(result: Dict[str, Any]) -> str:
    """The README's table of one ``chat`` result (median milliseconds per stage)."""
    ms = result["turn_ms"]
    return "\n".join([
        "| responder | graph ms | selection ms | generation ms | turn ms | reply tokens | "
        "tokens/s | torch threads |",
        "|---|---|---|---|---|---|---|---|",
        f"| {result['responder']} ({result['reply_mode']}) | {ms['graph']} | {ms['selection']} | "
        f"{ms['generation']} | {ms['total']} | {result['reply_tokens']} | "
        f"{result['tokens_per_s']} | {result['torch_threads']} |"])

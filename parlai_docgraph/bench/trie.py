"""
Path-trie memory and build time at OpenDialKG scale, registered as the ``trie`` benchmark
of ``parlai-docgraph bench``.

The KG is :func:`~.gsr.opendialkg_size_kg`: OpenDialKG's real 100k entity and 1.3k
relation names with 1,190,658 seeded triples (the real triples file is not shipped).
Each turn mentions 1-3 entities drawn as often as they occur in triples (popular
entities, many candidates: a pessimistic load). Per turn the candidate paths
(:func:`~parlai_docgraph.kg.subgraph.candidate_paths`, 2 hops, DialogGSR's caps) are
enumerated, then the trie is built exactly as ``-m docgraph/gsr`` does
(:meth:`GSRInputs.trie`: piecewise token ids, compact numpy trie, built in full).

Figures (times are CPU time of this process, ``time.process_time``, with tokenizers held
to one thread, so they are per core and less sensitive to other processes than wall time;
wall times are given too):

* ``trie_build_ms_per_turn`` (goal < 10) over all turns, starting with an empty name
  cache; ``trie_build_warm_ms_per_turn`` the first turns again, names cached (as in a long
  training run); ``candidates_ms_per_turn`` the path enumeration before it;
* ``reference_trie_ms_per_turn`` -- the first implementation (whole path strings
  tokenized with offsets + one Python dict per node) on those first turns, in the same
  run, and ``speedup_vs_reference`` (reference / warm);
* ``trie_kb_mean`` / ``reference_trie_kb_mean`` -- bytes of one compact trie (its arrays)
  and of one dict trie (``tracemalloc``), and what holding every trie of OpenDialKG's
  91,209 turns at once would take with each (``all_turns_gb_*``; the agent never does:
  it builds each batch's tries on the fly);
* ``peak_rss_mb`` (goal < 2048) -- this process's peak resident memory (Linux
  ``ru_maxrss``) after building all tries, KG and libraries included; run
  ``--only trie`` for a figure free of other benchmarks;
* ``paths_in_kg`` -- the share of the sequences of the first five tries that are the ids
  of one of the turn's candidate paths, every triple of which is in the KG (must be 1.0);
  ``paths_text_roundtrip`` -- the share whose decoded text parses back to that path (below
  1.0 when names hold characters the tokenizer maps to ``<unk>``, as the bundled tiny T5
  vocabulary does for many OpenDialKG names; the agent maps beams back to candidates by
  ids, :meth:`GSRInputs.path_index`, not by text).

Run: ``parlai-docgraph bench --only trie [--quick]``.
"""

from __future__ import annotations

import os
import resource
import sys
import time
import tracemalloc
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from parlai_docgraph.bench.cli import GOAL_MAXIMA, register_benchmark
from parlai_docgraph.bench.gsr import REAL_ODKG, opendialkg_size_kg

ODKG_TURNS = 91_209  # OpenDialKG: 15,673 dialogues, 91,209 turns
GOAL_MAXIMA.update({"trie_build_ms_per_turn": 10.0, "peak_rss_mb": 2048.0})


def reference_trie(ids: Sequence[Sequence[int]], values: Sequence[Sequence[Optional[str]]]):
    """The first implementation's storage: one ``dict`` of children and one entity list per node."""
    children: List[Dict[int, int]] = [{}]
    vals: List[List[str]] = [[]]
    for seq, seq_vals in zip(ids, values):
        node = 0
        for tok, v in zip(seq, seq_vals):
            nxt = children[node].get(tok)
            if nxt is None:
                nxt = len(children)
                children[node][tok] = nxt
                children.append({})
                vals.append([])
            node = nxt
            if v is not None and v not in vals[node]:
                vals[node].append(v)
    return children, vals


def _reference_build(inputs, paths) -> Any:
    enc = inputs.path_encoder
    ids, vals, ents = enc.encode_text(paths)
    named = [[ents[e] if e >= 0 else None for e in v] + [None] for v in vals]
    return reference_trie([i + [inputs.eos] for i in ids], named)


def _sequences(trie, node: int = 0, prefix: Optional[List[int]] = None):
    prefix = prefix or []
    kids = trie.children(node)
    if not kids:
        yield prefix
    for tok, child in kids.items():
        yield from _sequences(trie, child, prefix + [tok])


def _rss_mb() -> float:
    scale = 1024**2 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def trie_at_scale(quick: bool) -> Dict[str, Any]:
    from parlai_docgraph.models.gsr.inputs import GSRInputs
    from parlai_docgraph.kg.linearize import Linearizer
    from parlai_docgraph.kg.subgraph import candidate_paths
    from parlai_docgraph.models.gsr.model import load_gsr_tokenizer

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one core
    made = opendialkg_size_kg()
    if made is None:
        return {"skipped": f"{REAL_ODKG} absent: the OpenDialKG-size KG needs the real entity/relation lists"}
    kg, ents, draw, kg_s = made
    rss_kg = _rss_mb()
    lin = Linearizer(slot_tokens=2)
    inputs = GSRInputs(load_gsr_tokenizer("tiny", None, lin.special_tokens()), lin)
    rng = np.random.default_rng(1)
    n_turns = 60 if quick else 1000
    turns = [[ents[i] for i in rng.choice(len(ents), rng.integers(1, 4), replace=False, p=draw)]
             for _ in range(n_turns)]

    cpu, wall = time.process_time(), time.perf_counter()
    cands = [candidate_paths(kg, m) for m in turns]
    cand_cpu = time.process_time() - cpu
    cpu, wall = time.process_time(), time.perf_counter()
    nbytes, nodes = [], []
    for paths in cands:
        trie = inputs.trie(paths)
        nodes.append(trie.num_nodes)  # builds the arrays: part of the cost
        nbytes.append(trie.nbytes)
    trie_cpu, trie_wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = _rss_mb()

    ref_turns = cands[: (20 if quick else 100)]
    cpu = time.process_time()
    for paths in ref_turns:
        _reference_build(inputs, paths)
    ref_cpu = time.process_time() - cpu
    new_cpu = time.process_time()
    for paths in ref_turns:  # the same turns again, names cached as in a long run
        inputs.trie(paths).num_nodes
    new_cpu = time.process_time() - new_cpu
    tracemalloc.start()
    sizes = []
    for paths in ref_turns[:10]:
        before = tracemalloc.get_traced_memory()[0]
        kept = _reference_build(inputs, paths)
        sizes.append(tracemalloc.get_traced_memory()[0] - before)
        del kept
    tracemalloc.stop()

    ok = total = text_ok = 0
    for paths in cands[:5]:
        by_ids = {tuple(inputs.path_target(p)): p for p in paths}
        for seq in _sequences(inputs.trie(paths)):
            path = by_ids.get(tuple(seq))
            total += 1
            ok += path is not None and all(kg.has_triple(*h.triple) for h in path)
            text_ok += path is not None and inputs.decode_path(seq[:-1]) == path
    ms = 1000.0 / n_turns
    kb, ref_kb = float(np.mean(nbytes)) / 1024, float(np.mean(sizes)) / 1024
    return {
        "entities": kg.num_entities, "triples": kg.num_triples, "kg_build_s": round(kg_s, 2),
        "turns": n_turns, "candidate_paths_per_turn": round(float(np.mean([len(c) for c in cands])), 1),
        "trie_nodes_per_turn": round(float(np.mean(nodes)), 1),
        "candidates_ms_per_turn": round(cand_cpu * ms, 2),
        "trie_build_ms_per_turn": round(trie_cpu * ms, 2),
        "trie_build_wall_ms_per_turn": round(trie_wall * ms, 2),
        "reference_trie_ms_per_turn": round(1000 * ref_cpu / len(ref_turns), 2),
        "trie_build_warm_ms_per_turn": round(1000 * new_cpu / len(ref_turns), 2),
        "speedup_vs_reference": round(ref_cpu / max(new_cpu, 1e-9), 2),
        "trie_kb_mean": round(kb, 1), "reference_trie_kb_mean": round(ref_kb, 1),
        "all_turns_gb_compact": round(kb * ODKG_TURNS / 1024**2, 2),
        "all_turns_gb_reference": round(ref_kb * ODKG_TURNS / 1024**2, 2),
        "rss_after_kg_mb": round(rss_kg, 1), "peak_rss_mb": round(peak, 1),
        "paths_in_kg": round(ok / max(total, 1), 4), "paths_checked": total,
        "paths_text_roundtrip": round(text_ok / max(total, 1), 4),
        "note": "CPU ms per turn on one core (tokenizers single-threaded); generated triples over "
                "the real OpenDialKG entity/relation names",
    }


@register_benchmark("trie")
def trie_benchmark(quick: bool = False) -> Dict[str, Any]:
    """Per-turn trie build time and memory on an OpenDialKG-size KG."""
    return trie_at_scale(quick)

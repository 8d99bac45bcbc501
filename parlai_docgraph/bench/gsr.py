"""
DialogGSR speed figures, registered as the ``gsr`` benchmark of ``parlai-docgraph bench``.

* ``constrained_vs_unconstrained_beam`` -- the same model and inputs, beam 5: time per
  decoding step with the graph-constrained ``LogitsProcessor`` (Katz prior) divided by
  the time per step of plain beam search (goal <= 1.15). Per *step*, because an
  untrained model decodes unconstrained until ``max_new_tokens`` while constrained
  beams stop when their paths end; the whole-call ratio is reported too. Measured for
  the bundled ``tiny`` T5 (the processor's overhead at its most visible) and, without
  ``--quick``, a randomly initialised model of T5-small's shape (what the paper runs).
* ``processor_ms_per_call`` -- the constrained ``LogitsProcessor`` alone, per decoding
  step of 5 beams (what the constraint adds to a step, free of model-time noise).
* ``trie_build_ms_per_turn`` -- tokenizing the turn's candidate paths and building the
  prefix trie (bundled ``docgraph:sample_kg`` turns).
* ``katz_*`` -- Katz scores (Eq. 6, K = 2) on a KG of OpenDialKG's size: the real entity
  and relation lists from ``../shared/data/real/opendialkg/`` with 1,190,658 generated
  triples (seeded; the full triples file is not shipped); skipped with a message when
  that folder is absent.

Run: ``python -m parlai_docgraph.bench.gsr [--quick]`` or, once registered,
``parlai-docgraph bench --only gsr [--quick]``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

from parlai_docgraph.bench.cli import register_benchmark

REAL_ODKG = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "real" / "opendialkg"
ODKG_TRIPLES = 1_190_658
BEAM_GOAL_MAX = 1.15


def _sample_turns(limit: int) -> List[Dict[str, Any]]:
    """Training messages of the bundled ``docgraph:sample_kg`` that have candidates."""
    from parlai.core.params import ParlaiParser
    from parlai.core.teachers import create_task_agent_from_taskname

    with tempfile.TemporaryDirectory() as dp:
        opt = ParlaiParser(True, False).parse_args(["-t", "docgraph:sample_kg", "--datapath", dp, "-dt", "train:ordered"])
        teacher = create_task_agent_from_taskname(opt)[0]
        acts = [teacher.act() for _ in range(teacher.num_examples())]
    return [a for a in acts if a.get("kg_candidates")][:limit]


class _StepCounter:
    """A no-op logits processor that counts decoding steps."""

    def __init__(self) -> None:
        self.steps = 0

    def __call__(self, input_ids, scores):
        self.steps += 1
        return scores


def _beam_ratio(lm, tok, inputs, turns, repeats: int) -> Dict[str, float]:
    import torch
    from transformers import LogitsProcessorList

    from parlai_docgraph.agents.gsr.evaluation import entity_scores
    from parlai_docgraph.kg import fields as kg_fields
    from parlai_docgraph.kg.constrained import GraphConstrainedLogitsProcessor

    kg = kg_fields.load_kg(turns[0]["kg_file"])[0]
    cands = [[kg_fields.json_to_path(p) for p in t["kg_candidates"]] for t in turns]
    sources = [inputs.retrieve_source(inputs.context(t["text"])) for t in turns]
    scores = [entity_scores(kg, {"mentioned": t["kg_mentioned"], "candidates": c}, "katz", 0.1, 2) for t, c in zip(turns, cands)]
    longest = max(len(k) for c in cands for k in inputs.path_index(c)) + 2
    timing = {"constrained": [0.0, 0], "unconstrained": [0.0, 0]}
    lm.eval()
    for _ in range(repeats):
        for src, c, s in zip(sources, cands, scores):
            ids = torch.tensor([src])
            for mode in ("unconstrained", "constrained"):
                counter = _StepCounter()
                procs = LogitsProcessorList()
                if mode == "constrained":
                    trie = inputs.trie(c)  # built per call: part of the constrained cost
                    procs.append(GraphConstrainedLogitsProcessor([trie], inputs.eos, num_beams=5, entity_scores=[s]))
                procs.append(counter)
                start = time.perf_counter()
                with torch.no_grad():
                    lm.generate(input_ids=ids, attention_mask=torch.ones_like(ids), num_beams=5, num_return_sequences=5,
                                max_new_tokens=longest, do_sample=False, early_stopping=False, logits_processor=procs,
                                pad_token_id=tok.pad_token_id, eos_token_id=inputs.eos)
                timing[mode][0] += time.perf_counter() - start
                timing[mode][1] += counter.steps
    con, unc = timing["constrained"], timing["unconstrained"]
    per_con, per_unc = con[0] / max(con[1], 1), unc[0] / max(unc[1], 1)
    return {
        "constrained_vs_unconstrained_beam": round(per_con / per_unc, 3),
        "whole_call_ratio": round(con[0] / unc[0], 3),
        "ms_per_step_constrained": round(1000 * per_con, 3),
        "ms_per_step_unconstrained": round(1000 * per_unc, 3),
        "goal_max": BEAM_GOAL_MAX,
        "goal_met": per_con / per_unc <= BEAM_GOAL_MAX,
    }


def _processor_cost(inputs, turns, calls: int = 200) -> float:
    """Milliseconds per ``GraphConstrainedLogitsProcessor`` call (5 beams, mid-path prefixes)."""
    import torch

    from parlai_docgraph.kg import fields as kg_fields
    from parlai_docgraph.kg.constrained import GraphConstrainedLogitsProcessor

    vocab = len(inputs.tok)
    total, n = 0.0, 0
    for t in turns:
        paths = [kg_fields.json_to_path(p) for p in t["kg_candidates"]][:5]
        targets = [inputs.path_target(p) for p in paths]
        width = min(len(x) for x in targets) // 2
        ids = torch.zeros(5, width + 1, dtype=torch.long)
        for r in range(5):
            ids[r, 1:] = torch.tensor(targets[r % len(targets)][:width])
        proc = GraphConstrainedLogitsProcessor([inputs.trie(paths)], inputs.eos, num_beams=5, entity_scores=[t["kg_katz"]])
        scores = torch.randn(5, vocab)
        proc(ids, scores)  # fill the per-node cache, as the first step of a search does
        start = time.perf_counter()
        for _ in range(calls):
            proc(ids, scores)
        total += time.perf_counter() - start
        n += calls
    return round(1000 * total / n, 4)


def beam_and_trie(quick: bool) -> Dict[str, Any]:
    """Beam-search overhead of the constraint and trie build time on sample turns."""
    from transformers import T5Config

    from parlai_docgraph.models import hub
    from parlai_docgraph.models.gsr.inputs import GSRInputs
    from parlai_docgraph.kg import fields as kg_fields
    from parlai_docgraph.kg.linearize import Linearizer
    from parlai_docgraph.models.gsr.model import load_seq2seq, load_gsr_tokenizer

    lin = Linearizer(slot_tokens=2)
    tok = load_gsr_tokenizer("tiny", None, lin.special_tokens())
    inputs = GSRInputs(tok, lin)
    turns = _sample_turns(8 if quick else 32)
    out: Dict[str, Any] = {"turns": len(turns)}
    start = time.perf_counter()
    n_paths = 0
    for t in turns:
        paths = [kg_fields.json_to_path(p) for p in t["kg_candidates"]]
        n_paths += len(paths)
        inputs.trie(paths)
    took = time.perf_counter() - start
    out["trie_build_ms_per_turn"] = round(1000 * took / len(turns), 3)
    out["trie_candidate_paths_per_turn"] = round(n_paths / len(turns), 1)
    out["processor_ms_per_call"] = _processor_cost(inputs, turns)
    out["beam_tiny"] = _beam_ratio(load_seq2seq("tiny", seed=0), tok, inputs, turns, 1 if quick else 3)
    if not quick:
        shape = T5Config(decoder_start_token_id=tok.pad_token_id, pad_token_id=tok.pad_token_id,
                         eos_token_id=inputs.eos)  # t5-small's
        lm = hub.model_from_config(shape, "seq2seq", seed=0)
        lm.resize_token_embeddings(len(tok))
        out["beam_t5_small_shape"] = _beam_ratio(lm, tok, inputs, turns[:8], 1)
    out["constrained_vs_unconstrained_beam"] = out.get("beam_t5_small_shape", out["beam_tiny"])["constrained_vs_unconstrained_beam"]
    return out


def opendialkg_size_kg(seed: int = 0):
    """
    ``(kg, entity names, draw weights, build seconds)``: OpenDialKG's real entity and
    relation names with 1,190,658 seeded triples whose heads and tails follow a Zipf-like
    law (heavy-tailed degrees, as in Freebase); None when the real lists are absent.
    """
    from parlai_docgraph.kg.store import KnowledgeGraph

    ents_file, rels_file = REAL_ODKG / "opendialkg_entities.txt", REAL_ODKG / "opendialkg_relations.txt"
    if not ents_file.is_file() or not rels_file.is_file():
        return None
    ents = list(dict.fromkeys(l.rstrip("\n") for l in ents_file.open(encoding="utf-8") if l.strip()))
    rels = list(dict.fromkeys(l.rstrip("\n").lstrip("~") for l in rels_file.open(encoding="utf-8") if l.strip()))
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(ents) + 1) ** 0.8
    weights /= weights.sum()
    perm = rng.permutation(len(ents))
    heads = perm[rng.choice(len(ents), ODKG_TRIPLES, p=weights)]
    tails = perm[rng.choice(len(ents), ODKG_TRIPLES, p=weights)]
    rel_ids = rng.integers(0, len(rels), ODKG_TRIPLES)
    draw = np.zeros(len(ents))
    draw[perm] = weights  # entity i is drawn as often as it appears in triples
    start = time.perf_counter()
    kg = KnowledgeGraph(ents, rels, heads, rel_ids, tails)
    return kg, ents, draw, time.perf_counter() - start


def katz_opendialkg_size(quick: bool) -> Dict[str, Any]:
    """Katz scores on a KG of OpenDialKG's size (real names, generated triples)."""
    from parlai_docgraph.kg.katz import katz_scores
    from parlai_docgraph.kg.subgraph import candidate_paths

    made = opendialkg_size_kg()
    if made is None:
        return {"skipped": f"{REAL_ODKG} absent: Katz timing on an OpenDialKG-size KG needs the real entity/relation lists"}
    kg, ents, _, build = made
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    _ = kg.A
    adj = time.perf_counter() - start
    calls = 20 if quick else 200
    turns = [[ents[i] for i in rng.choice(len(ents), rng.integers(1, 4), replace=False)] for _ in range(calls)]
    start = time.perf_counter()
    for mentioned in turns:
        katz_scores(kg, mentioned, 0.1, k=2)
    full = time.perf_counter() - start
    start = time.perf_counter()
    for mentioned in turns:
        paths = candidate_paths(kg, mentioned)
        among = {h.target for p in paths for h in p} | set(mentioned)
        katz_scores(kg, mentioned, 0.1, k=2, among=among)
    turn = time.perf_counter() - start
    return {
        "entities": kg.num_entities, "relations": kg.num_relations, "triples": kg.num_triples,
        "kg_build_s": round(build, 3), "adjacency_build_s": round(adj, 3),
        "katz_ms_per_turn_all_entities": round(1000 * full / calls, 3),
        "katz_plus_candidates_ms_per_turn": round(1000 * turn / calls, 3),
        "note": "generated triples over the real entity/relation names (full triples file not shipped)",
    }


@register_benchmark("gsr")
def gsr_benchmark(quick: bool = False) -> Dict[str, Any]:
    """Constrained beam overhead, trie build per turn, Katz on an OpenDialKG-size KG."""
    out = beam_and_trie(quick)
    out["katz"] = katz_opendialkg_size(quick)
    return out


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--quick", action="store_true", help="fewer turns and repeats, tiny model only")
    args = parser.parse_args(argv)
    print(json.dumps(gsr_benchmark(args.quick), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

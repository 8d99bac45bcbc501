"""
``make gpu-check`` (``python -m parlai_docgraph.bench.gpu_check``): a short check to run first
on a GPU machine (at most 8 minutes), before the full CMU_DoG recipe there. **It has not run
on a GPU yet**: no GPU was available while it was written; its CPU mode (``--device cpu``) is
tested.

Through ParlAI's own worlds on the bundled ``docgraph:sample`` (no dataset needed), with the
zoo's models (MiniLM graph selector, SmolLM2-135M-Instruct with LoRA; ``--quick``: the tiny
random encoder and the tiny GPT-2):

* training steps of the selector in float32 and with ParlAI's ``--fp16``, and of the LoRA
  responder in float32, ``--bf16`` (where the device has it) and ``--fp16``: examples/s and,
  for the responder, tokens/s (ParlAI's ``tpb``, tokens a batch);
* CPU/GPU parity of one evaluation batch: the selector's candidate scores (largest
  difference, same choices) and the responder's greedy replies (same text) and ``ppl``, the
  model trained above saved once and loaded on each device.

``--out FILE`` writes the figures as JSON (``ran_on_gpu`` says where they come from).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

SAMPLE = ["-t", "docgraph:sample", "--label-type", "chosen_sent"]
SELECTOR = ["-m", "docgraph/graph_selector", *SAMPLE, "--graph-variant", "full",
            "--pair-truncate", "64", "--optimizer", "adamw", "-lr", "1e-4"]
RESPONDER = ["-m", "docgraph/gpt2_responder", "-t", "docgraph:sample", "--lora-r", "8",
             "--optimizer", "adamw", "-lr", "2e-4", "--skip-generation", "false",
             "--inference", "greedy", "--label-truncate", "24"]
MODELS = {False: {"selector": ["--encoder-model", "minilm-l6"],
                  "responder": ["--responder-model", "smollm2-135m-instruct", "--chat-prompt",
                                "fact", "--knowledge-title", "none"]},
          True: {"selector": ["--encoder-model", "tiny", "--selector-hidden", "16",
                              "--type-dim", "8"],
                 "responder": ["--responder-model", "tiny", "--chat-template", "false"]}}


def _world(args: Sequence[str], datapath: str, device: str, datatype: str) -> Any:
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser
    from parlai.core.worlds import create_task

    cuda = [] if device == "cuda" else ["--no-cuda"]
    opt = ParlaiParser(True, True).parse_args(
        [*args, *cuda, "-dt", datatype, "-bs", "8", "--datapath", datapath])
    agent = create_agent(opt)
    return create_task(opt, agent), agent


def train_steps(args: Sequence[str], datapath: str, device: str, steps: int,
                save: Optional[str] = None) -> Dict[str, Any]:
    """``steps`` timed training parleys (after two warm-up ones): examples/s, tokens/s."""
    world, agent = _world(args, datapath, device, "train")
    for _ in range(2):
        world.parley()
    agent.reset_metrics()
    start = time.perf_counter()
    for _ in range(steps):
        world.parley()
    seconds = time.perf_counter() - start
    report = agent.report()
    out = {"steps": steps, "seconds": round(seconds, 2),
           "examples_per_s": round(8 * steps / seconds, 2)}
    if "tpb" in report:
        tpb = report["tpb"]
        out["tokens_per_s"] = round(float(tpb.value() if hasattr(tpb, "value") else tpb)
                                    * steps / seconds, 1)
    if save:
        agent.save(save)
    world.shutdown()
    return out


def eval_batch(model_file: str, args: Sequence[str], datapath: str, device: str) -> Dict[str, Any]:
    """One evaluation batch of ``model_file`` on ``device``: texts, scores, metrics."""
    world, _ = _world(["-mf", model_file, *args], datapath, device, "valid")
    world.parley()
    replies = [w.get_acts()[1] for w in getattr(world, "worlds", [world])]  # one per row
    report = world.report()
    world.shutdown()
    return {"texts": [r.get("text") for r in replies],
            "scores": [list(r.get("candidate_scores") or []) for r in replies],
            "ppl": float(report["ppl"].value()) if "ppl" in report else None}


def parity(cpu: Dict[str, Any], dev: Dict[str, Any]) -> Dict[str, Any]:
    """How far the device's evaluation batch is from the CPU's."""
    out: Dict[str, Any] = {"same_texts": cpu["texts"] == dev["texts"]}
    diffs = [abs(a - b) for xs, ys in zip(cpu["scores"], dev["scores"]) for a, b in zip(xs, ys)]
    if diffs:
        out["max_score_diff"] = round(max(diffs), 6)
    if cpu["ppl"] is not None and dev["ppl"] is not None:
        out["ppl_cpu"], out["ppl_device"] = round(cpu["ppl"], 4), round(dev["ppl"], 4)
    return out


def run(device: str, quick: bool, datapath: str, steps: int) -> Dict[str, Any]:
    import torch

    bf16 = device == "cuda" and torch.cuda.is_bf16_supported()
    results: Dict[str, Any] = {
        "ran_on_gpu": device == "cuda", "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
        "quick": quick, "selector": {}, "responder": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for part, base in (("selector", SELECTOR), ("responder", RESPONDER)):
            args = [*base, *MODELS[quick][part]]
            model_file = os.path.join(tmp, part, "model")
            modes: List[tuple] = [("fp32", [])]
            if device == "cuda":
                modes.append(("fp16", ["--fp16", "true"]))
                if part == "responder" and bf16:
                    modes.append(("bf16", ["--bf16", "true"]))
            for name, extra in modes:
                results[part][name] = train_steps(
                    [*args, *extra], datapath, device, steps,
                    save=model_file if name == "fp32" else None)
            greedy = ["-t", "docgraph:sample", "--inference", "greedy"] \
                if part == "responder" else SAMPLE
            cpu = eval_batch(model_file, greedy, datapath, "cpu")
            dev = eval_batch(model_file, greedy, datapath, device)
            results[part]["parity"] = parity(cpu, dev)
    return results


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cuda (the check); cpu: the same steps on the CPU (a dry run)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny random models instead of MiniLM and SmolLM2 (tests)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per setting")
    parser.add_argument("--datapath", default=None, help="ParlAI datapath (default: a temp one)")
    parser.add_argument("--out", default=None, help="write the figures as JSON")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("gpu_check: no CUDA device here; it is meant for a GPU machine "
                         "(--device cpu runs the same steps on the CPU)")
    with tempfile.TemporaryDirectory() as tmp:
        results = run(args.device, args.quick, args.datapath or tmp, args.steps)
    text = json.dumps(results, indent=1)
    print(text)
    if args.out:
        from parlai_docgraph.atomic import write_text_atomic

        write_text_atomic(args.out, text + "\n")
    return results


if __name__ == "__main__":
    main()

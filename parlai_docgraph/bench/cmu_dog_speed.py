"""
Training speed on CMU_DoG (a study run as a module): examples/s of the zoo
recipe's parts, measured through ParlAI's own training world on ``docgraph:cmu_dog`` train
(:func:`~parlai_docgraph.bench.gpu_check.train_steps`: timed steps after two warm-up steps),
in one process so both prompts meet the same machine load:

* the responder with the selected-sentence prompt (the recipe: the pseudo label, at most 128
  knowledge tokens) against the whole-section prompt (ParlAI's ``checked_sentence``:
  ``--cmu-dog-knowledge section``, up to 512 knowledge tokens), and their ratio;
* the selector of the recipe;
* the cost of one full epoch of each part: the train turns over the measured examples/s.

Run with the datapath that holds CMU_DoG::

    python -m parlai_docgraph.bench.cmu_dog_speed --steps 8 --datapath DATAPATH --out FILE

(``FILE``: the JSON result file, to commit under the docs' results folder.)
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Dict, List, Optional, Sequence

from parlai_docgraph.bench.gpu_check import train_steps

#: the zoo recipe's options that only shape its run (length, logging, validation), left out
RUN_ONLY = ("--max-train-steps", "--num-epochs", "--validation-every-n-epochs",
            "--validation-max-exs", "--short-final-eval", "--log-every-n-secs")


def recipe_part(part: str) -> List[str]:
    """The zoo recipe's ``train_model`` arguments of ``part`` without :data:`RUN_ONLY`."""
    from parlai_docgraph.recipes import zoo_recipe

    args = list(getattr(zoo_recipe("cmu_dog"), part))
    for flag in RUN_ONLY:
        if flag in args:
            i = args.index(flag)
            del args[i:i + 2]
    return args


def train_turns(datapath: str) -> int:
    """The turns of ``docgraph:cmu_dog`` train (the recipe's split)."""
    from parlai.core.params import ParlaiParser
    from parlai.core.teachers import create_task_agent_from_taskname

    opt = ParlaiParser(True, False).parse_args(
        ["-t", "docgraph:cmu_dog", "--cmu-dog-split-type", "seen", "-dt", "train:ordered",
         "--datapath", datapath])
    return int(create_task_agent_from_taskname(opt)[0].num_examples())


def measure(datapath: str, steps: int) -> Dict[str, Any]:
    responder = recipe_part("responder")
    runs = {
        "responder_selected_sentence": responder,
        # the prompt and the reply share --responder-max-length: the recipe's 286 is 128
        # knowledge + 128 context + 2 separators + 28 reply tokens; 512 knowledge tokens
        # need 670
        "responder_whole_section": responder + ["--cmu-dog-knowledge", "section",
                                                "--responder-knowledge-truncate", "512",
                                                "--responder-max-length", "670"],
        "selector": recipe_part("selector"),
    }
    out: Dict[str, Any] = {name: train_steps(args, datapath, "cpu", steps)
                           for name, args in runs.items()}
    sentence, section = out["responder_selected_sentence"], out["responder_whole_section"]
    out["selected_vs_whole_section_examples_per_s"] = round(
        sentence["examples_per_s"] / section["examples_per_s"], 2)
    turns = train_turns(datapath)
    out["train_turns"] = turns
    out["epoch_hours"] = {name: round(turns / out[name]["examples_per_s"] / 3600, 1)
                          for name in ("responder_selected_sentence", "selector")}
    return out


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    import os

    import torch
    from parlai.core.params import ParlaiParser

    from parlai_docgraph.atomic import write_text_atomic
    from parlai_docgraph.env import run_record

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8, help="timed steps per run")
    parser.add_argument("--datapath", default=None, help="ParlAI datapath (default: ParlAI's)")
    parser.add_argument("--out", default=None, help="write the figures as JSON")
    args = parser.parse_args(argv)
    datapath = args.datapath or ParlaiParser(True, False).parse_args([])["datapath"]
    result = {"cmu_dog_speed": measure(datapath, args.steps),
              "meta": {**run_record(), "torch_threads": torch.get_num_threads(),
                       "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "")}}
    text = json.dumps(result, indent=1, sort_keys=True)
    print(text)
    if args.out:
        write_text_atomic(args.out, text + "\n")
    return result


if __name__ == "__main__":
    main()

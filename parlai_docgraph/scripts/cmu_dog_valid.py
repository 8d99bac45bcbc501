"""
``parlai-docgraph cmu_dog_valid``: choose the CMU_DoG zoo model's pipeline options on valid
turns only, by whole runs.

Each named setting is a run of ParlAI's ``eval_model`` over the same seeded sample of valid
conversations of ``docgraph:cmu_dog`` (seen split): the zoo pipeline with its own saved
options, then the setting's options laid over them (later options win, as on any ParlAI
command line). ``--settings`` names them::

    --settings "greedy=--inference greedy --beam-min-length 1;beam3=--inference beam --beam-size 3"

so one tool chooses the decoding (``--inference``, ``--beam-size``, ``--beam-min-length``) and
``--no-knowledge-margin`` alike: unlike the two-run combination of ``cmu_dog_margin``, a
whole run is exact (``--block-earlier-replies`` reads the replies of the run itself). The
result file (``--out``) keeps every setting's figures and command and names the setting of
highest F1 (``chosen``; equal F1: the first listed). Settings are written as they finish,
under a lock, so several processes may add settings to one file; a file measured on other
turns is refused.
"""

from __future__ import annotations

import json
import os
import shlex
from typing import Any, Dict, List, Tuple

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_docgraph.atomic import locked, write_text_atomic
from parlai_docgraph.env import run_record
from parlai_docgraph.jsonio import read_json
from parlai_docgraph.scripts.cmu_dog_eval import add_valid_sample_args

#: what each run keeps: cmu_dog_eval's figures and the parts of F1 (reply length decides
#: between precision and recall)
KEPT = ("exs", "f1", "precision", "recall", "bleu-1", "bleu-4", "knowledge_f1",
        "rare_word_f1", "ppl", "gen_n_toks")


def parse_settings(text: str) -> List[Tuple[str, List[str]]]:
    """``"name=options;name=options"`` -> ``[(name, [options...])]`` (``ValueError`` on an
    unnamed, repeated or empty entry)."""
    out: List[Tuple[str, List[str]]] = []
    for entry in (e.strip() for e in (text or "").split(";")):
        if not entry:
            continue
        name, sep, options = entry.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--settings entry {entry!r}: write name=options")
        if name.strip() in {n for n, _ in out}:
            raise ValueError(f"--settings names {name.strip()!r} twice")
        out.append((name.strip(), shlex.split(options)))
    if not out:
        raise ValueError("--settings is empty: give name=options;name=options")
    return out


def store_setting(path: str, name: str, record: Dict[str, Any], setup: Dict[str, Any]) -> Dict:
    """Add one setting's run to the result file ``path`` and re-choose (under a lock)."""
    with locked(path):
        data: Dict[str, Any] = read_json(path) if os.path.isfile(path) else {}
        result = data.setdefault("cmu_dog_valid", {"settings": {}})
        if result.get("setup", setup) != setup:
            raise ValueError(f"{path} holds runs on other turns ({result['setup']}); "
                             f"write to another file")
        result["setup"] = setup
        result["settings"][name] = record
        result["chosen"] = max(result["settings"],
                               key=lambda n: round(result["settings"][n]["figures"]["f1"], 10))
        data["meta"] = run_record()
        write_text_atomic(path, json.dumps(data, indent=1) + "\n")
    return data


@register_script("cmu_dog_valid", hidden=False)
class CmuDogValid(ParlaiScript):
    """Whole valid runs of the CMU_DoG zoo pipeline, one per setting (choose on valid)."""

    @classmethod
    def setup_args(cls) -> ParlaiParser:
        parser = ParlaiParser(True, False, description=cls.__doc__.strip())
        g = parser.add_argument_group("cmu_dog_valid")
        add_valid_sample_args(g, conversations=15)
        g.add_argument("--settings", type=str, default="",
                       help="required: 'name=eval_model options;name=options', each laid "
                       "over the model's own options")
        g.add_argument("--logs-dir", type=str, default=None,
                       help="also write each run's turns and replies (--world-logs) here; "
                       "they hold CMU_DoG text: keep them out of the repository")
        g.add_argument("--out", type=str, default=None,
                       help="the result file (JSON) to add the settings to")
        return parser

    def run(self) -> Dict[str, Any]:
        from parlai.core.build_data import modelzoo_path

        from parlai_docgraph.scripts.cmu_dog_eval import evaluate, row_args, task_args

        opt = self.opt
        settings = parse_settings(opt["settings"])  # checked before anything is built
        datapath = opt["datapath"]
        model_file = modelzoo_path(datapath, opt["zoo_model"])
        task = task_args("seen", opt["conversations"], opt["sample_seed"], "valid")
        setup = {"fold": "valid", "split": "seen", "conversations": opt["conversations"],
                 "sample_seed": opt["sample_seed"]}
        out: Dict[str, Any] = {}
        for name, options in settings:
            args = [*row_args("zoo model", model_file, {}, ""), *options, *task,
                    "--datapath", datapath]
            if opt.get("logs_dir"):
                os.makedirs(opt["logs_dir"], exist_ok=True)
                args += ["--world-logs", os.path.join(opt["logs_dir"], f"{name}.jsonl")]
            record = {"options": shlex.join(options), "figures": evaluate(args, KEPT),
                      "command": shlex.join(["parlai", "eval_model", *args])}
            out[name] = record
            print(f"[valid] {name}: {record['figures']}")
            if opt.get("out"):
                data = store_setting(opt["out"], name, record, setup)
                print(f"chosen so far: {data['cmu_dog_valid']['chosen']}")
        return out


if __name__ == "__main__":
    CmuDogValid.main()

"""
``parlai-docgraph cmu_dog_margin``: choose the CMU_DoG zoo model's ``--no-knowledge-margin``
on valid turns only.

The zoo selector is trained on CMU_DoG's pseudo labels, 78% of which are no_passages_used,
so it ranks the no-knowledge candidate first on every turn and the responder never reads a
sentence. The margin ``m`` (:func:`~parlai_docgraph.graphs.selection.knowledge_candidate`)
hands it the best pool sentence wherever no-knowledge leads that sentence by at most ``m``.

Two runs of ParlAI's ``eval_model`` over the same valid turns of ``docgraph:cmu_dog`` (seen
split, a seeded sample of conversations) write every turn's reply (``--world-logs``): the
zoo pipeline handing each turn its best pool sentence (``--no-knowledge-margin inf``; each
reply records the gap ``s_0 - s_best``), and the same responder without knowledge. At a
margin ``m`` a turn's reply is the first run's where its gap is at most ``m``, else the
second's, so one pair of runs gives ParlAI's F1 at every margin (:func:`margin_curve`).
The first run keeps the pipeline's answer check (``--reply-keeps-answer true``: a reply
that leaves out words of the sentence becomes the sentence) and records the generator's own
text beside it, so the curve is drawn twice, with and without the check. The chosen pair
has the highest mean F1; ties go to the smaller margin (fewer sentences).
The combination is exact but for ``--block-earlier-replies``, which reads the responder's
own earlier replies of the episode (they differ between the two runs).
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, List, Sequence, Tuple

from parlai.core.metrics import F1Metric
from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_docgraph.atomic import write_text_atomic
from parlai_docgraph.env import run_record
from parlai_docgraph.jsonio import iter_jsonl
from parlai_docgraph.scripts.cmu_dog_eval import add_valid_sample_args

#: what each logged turn yields: (human reply, model reply, no-knowledge gap or None)
Turn = Tuple[str, str, Any]


def logged_turns(path: str, generated: bool = False) -> List[Turn]:
    """The turns of a ParlAI ``--world-logs`` file (conversations format) in order; with
    ``generated``, the generator's own text where the answer check replaced it."""
    turns: List[Turn] = []
    for _, record in iter_jsonl(path):
        for teacher, model in record["dialog"]:
            human = (teacher.get("eval_labels") or teacher.get("labels") or [""])[0]
            text = model.get("text", "")
            if generated:
                text = model.get("generated_text", text)
            turns.append((human, text, model.get("no_knowledge_gap")))
    return turns


def margin_curve(with_sentence: Sequence[Turn], without: Sequence[Turn]
                 ) -> List[Dict[str, float]]:
    """
    Mean F1 at every margin that changes a decision: ``-inf`` (never a sentence) and each
    turn's gap (that turn and those with smaller gaps read their sentence). The two runs
    must hold the same turns in the same order (``ValueError`` otherwise); a turn without a
    gap (no pool) reads no sentence at any margin.
    """
    if [t[0] for t in with_sentence] != [t[0] for t in without]:
        raise ValueError("the two runs hold different turns: run both on the same sample")
    f1_with = [F1Metric.compute(reply, [human]).value() for human, reply, _ in with_sentence]
    f1_without = [F1Metric.compute(reply, [human]).value() for human, reply, _ in without]
    gaps = [gap for _, _, gap in with_sentence]
    margins = [-math.inf] + sorted({g for g in gaps if g is not None})
    curve = []
    for m in margins:
        use = [g is not None and g <= m for g in gaps]
        f1 = [a if u else b for a, b, u in zip(f1_with, f1_without, use)]
        curve.append({"margin": m, "f1": sum(f1) / len(f1),
                      "sentence_turns": sum(use) / len(use)})
    return curve


def best_margin(curve: Sequence[Dict[str, float]]) -> Dict[str, float]:
    """The point of highest F1, the smallest margin among equals."""
    return max(curve, key=lambda p: (round(p["f1"], 10), -p["margin"]))


def finite(point: Dict[str, Any]) -> Dict[str, Any]:
    """``point`` for JSON, which has no infinity: "never a sentence" is a null margin."""
    return {**point, "margin": None if math.isinf(point["margin"]) else point["margin"]}


@register_script("cmu_dog_margin", hidden=False)
class CmuDogMargin(ParlaiScript):
    """Choose the CMU_DoG zoo model's --no-knowledge-margin on valid (F1 of the replies)."""

    @classmethod
    def setup_args(cls) -> ParlaiParser:
        parser = ParlaiParser(True, False, description=cls.__doc__.strip())
        g = parser.add_argument_group("cmu_dog_margin")
        add_valid_sample_args(g, conversations=6)
        # checked in run(), not by argparse: ParlAI's super-command pre-parses every line
        # with every script's parser, and a required option broke `parlai-docgraph --help`
        g.add_argument("--logs-dir", type=str, default=None,
                       help="required: where the two runs' --world-logs go (they hold "
                       "CMU_DoG text: keep them out of the repository)")
        g.add_argument("--out", type=str, default=None,
                       help="the result file (JSON: the curve, the chosen margin, commands)")
        return parser

    def run(self) -> Dict[str, Any]:
        from parlai.core.build_data import modelzoo_path

        from parlai_docgraph.scripts.cmu_dog_eval import evaluate, row_args, task_args

        opt = self.opt
        if not opt.get("logs_dir"):
            raise ValueError("cmu_dog_margin needs --logs-dir DIR (outside the repository: "
                             "the runs' world logs hold CMU_DoG text)")
        datapath = opt["datapath"]
        model_file = modelzoo_path(datapath, opt["zoo_model"])
        task = task_args("seen", opt["conversations"], opt["sample_seed"], "valid")
        os.makedirs(opt["logs_dir"], exist_ok=True)
        runs = {"sentence": row_args("zoo model", model_file, {}, "", math.inf, True),
                "no knowledge": row_args("no knowledge", model_file, {}, "")}
        commands, figures, turns, log_of = {}, {}, {}, {}
        for name, model in runs.items():
            log = log_of[name] = os.path.join(opt["logs_dir"],
                                               f"margin_{name.replace(' ', '_')}.jsonl")
            args = [*model, *task, "--datapath", datapath, "--world-logs", log]
            figures[name] = evaluate(args)
            commands[name] = ["parlai", "eval_model", *args]
            turns[name] = logged_turns(log)
        curves = {keeps: margin_curve(logged_turns(log_of["sentence"], not keeps),
                                      turns["no knowledge"]) for keeps in (True, False)}
        chosen = max(({**best_margin(c), "reply_keeps_answer": k} for k, c in curves.items()),
                     key=lambda p: (round(p["f1"], 10), -p["margin"]))
        result = {"cmu_dog_margin": {
            "setup": {"fold": "valid", "split": "seen", "conversations": opt["conversations"],
                      "sample_seed": opt["sample_seed"], "turns": len(turns["sentence"])},
            "commands": commands, "figures": figures, "chosen": finite(chosen),
            "curves": {f"reply_keeps_answer {str(k).lower()}": [finite(p) for p in c]
                       for k, c in curves.items()}},
            "meta": run_record()}
        print(f"chosen --no-knowledge-margin {chosen['margin']} --reply-keeps-answer "
              f"{str(chosen['reply_keeps_answer']).lower()}: F1 {chosen['f1']:.4f}, a sentence "
              f"on {100 * chosen['sentence_turns']:.0f}% of the valid turns")
        if opt.get("out"):
            write_text_atomic(opt["out"], json.dumps(result, indent=1, sort_keys=True) + "\n")
        return result


if __name__ == "__main__":
    CmuDogMargin.main()

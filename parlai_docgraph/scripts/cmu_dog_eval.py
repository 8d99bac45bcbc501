"""
``parlai-docgraph cmu_dog_eval``: the CMU_DoG figures of a result file (``--out``), every row
measured by ParlAI's own ``eval_model`` on the same test turns of ``docgraph:cmu_dog``,
with ParlAI's metrics (``f1``, ``bleu-1``, ``bleu-4``; the teacher's ``knowledge_f1`` and
``rare_word_f1``; the responder's ``ppl``; the selector's ``know_acc`` against the pseudo
labels). The rows (:data:`ROWS`), all but the last two with the zoo model's responder and its
decoding options:

* ``zoo model``: ``zoo:docgraph/cmu_dog/model`` (``--model-file``) as it is (its selector,
  trained on every turn, mostly declines to select: 78% of the pseudo labels are
  ``no_passages_used``);
* ``graph selector`` and ``--graph-variant none``: the zoo's selector trained on the
  knowledge turns only (``--knowledge-turns-only true``), with and without the graph
  (``--graph-selector``, ``--none-selector``; trained with the zoo recipe's arguments when the
  files are absent), so that each hands the responder a sentence: Li et al.'s claim, that the
  graph selects better knowledge, on human dialogue;
* ``zero-shot cosine``: an untrained ``none`` selector whose scores are the frozen MiniLM's
  cosine between the last turn and each candidate (``--zero-shot-prior 1000`` outweighs its
  untrained score head);
* ``random sentence``, ``oracle sentence``, ``no knowledge``, ``whole section``: the
  responder alone reading a seeded random pool sentence, the pseudo label (the pool sentence
  closest to the human reply: an upper bound, it reads the reply), nothing, or the whole
  shown section (ParlAI's ``checked_sentence``, the knowledge truncated to 512 tokens), by
  ``docgraph:cmu_dog --cmu-dog-knowledge``;
* ``zero-shot SmolLM2``: the zoo model with SmolLM2-135M-Instruct untrained (no LoRA);
* ``sample zoo model``: ``zoo:docgraph/sample/model`` (``--sample-model``), as it is.

The selector rows also get ``know_acc_k`` / ``know_mrr_k``: the selector alone ranking the
knowledge turns only (``--knowledge-turns-only true``) against their pseudo labels;
``random sentence`` gets the expected figures of a uniform draw over the same candidates.

``--splits`` (``seen``, ``unseen``, ``deduped``: ParlAI's ``--cmu-dog-split-type``; ``deduped``
is the release's test split of the published results) and ``--conversations N`` (a seeded
sample of N test conversations per split, ``--sample-seed``; 0: all) pick the turns; the
result file records them, every row's ``eval_model`` arguments and its figures. ``--rows``
runs some rows only; rows already in ``--out`` are kept (each row is written as soon as it
is measured, under a lock, so two processes may share one file).
"""

from __future__ import annotations

import json
import os
import shlex
from typing import Any, Dict, List, Optional, Sequence

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_docgraph.atomic import locked, write_text_atomic
from parlai_docgraph.env import run_record
from parlai_docgraph.jsonio import read_json
from parlai_docgraph.scripts.cmu_dog_published import PUBLISHED, PUBLISHED_SOURCE

#: the figures kept of each eval_model report
FIGURES = ("exs", "f1", "bleu-1", "bleu-4", "knowledge_f1", "rare_word_f1", "ppl", "know_acc",
           "know_mrr")
SPLITS = ("seen", "unseen", "deduped")
#: row name -> (what it is, how its eval_model arguments are made: see :func:`row_args`)
ROWS = {
    "zoo model": "the zoo model (graph selector trained on every turn + LoRA responder)",
    "graph selector": "the zoo's selector trained on knowledge turns only, zoo responder",
    "--graph-variant none": "the same without the graph, zoo responder",
    "zero-shot cosine": "MiniLM cosine of the last turn and each candidate, same responder",
    "random sentence": "a random pool sentence, same responder",
    "oracle sentence": "the pseudo label (best F1 against the human reply), same responder",
    "no knowledge": "no knowledge, same responder",
    "whole section": "the whole shown section (ParlAI's checked_sentence), same responder",
    "zero-shot SmolLM2": "the zoo model with SmolLM2-135M-Instruct without training",
    "sample zoo model": "zoo:docgraph/sample/model as it is",
}


def decoding(model_file: str) -> List[str]:
    """The pipeline's saved decoding options, greedy (``reply_eval.decoding_args``)."""
    from parlai_docgraph.scripts.reply_eval import decoding_args

    return decoding_args(model_file)


def responder_prompt(model_file: str) -> List[str]:
    """The zoo responder's prompt options (for the untrained SmolLM2 row)."""
    from parlai.core.opt import Opt

    saved = Opt.load(f"{model_file}.responder.opt")
    return ["--chat-template", str(saved.get("chat_template", "auto")), "--chat-prompt",
            str(saved.get("chat_prompt", "system")), "--knowledge-title",
            str(saved.get("knowledge_title", "prefix"))]


#: the selector-only arguments of the rows that select (knowledge-turn figures)
ZERO_SHOT_COSINE = ["--encoder-model", "minilm-l6", "--graph-variant", "none",
                    "--similarity-prior", "0", "--zero-shot-prior", "1000", "--context-turns", "2",
                    "--pair-truncate", "64"]


def selector_of(row: str, model_file: str, selectors: Dict[str, str]) -> Optional[List[str]]:
    """The model arguments of ``row``'s selector alone (``None``: the row has none)."""
    if row == "zoo model":
        return ["-mf", f"{model_file}.selector"]
    if row in selectors:
        return ["-mf", selectors[row]]
    if row == "zero-shot cosine":
        return ["-m", "docgraph/graph_selector", *ZERO_SHOT_COSINE]
    return None


def zoo_choices(model_file: str, margin: Optional[float] = None,
                keeps: Optional[bool] = None) -> Dict[str, List[str]]:
    """The zoo pipeline's ``--no-knowledge-margin`` (``margin``, else its saved one; none:
    the selector's own choice) and ``--reply-keeps-answer`` (``keeps``, else its saved one)
    as arguments, for the rows that run a pipeline."""
    from parlai.core.opt import Opt

    saved = Opt.load(f"{model_file}.opt")
    margin = saved.get("no_knowledge_margin") if margin is None else margin
    keeps = saved.get("reply_keeps_answer", True) if keeps is None else keeps
    return {"margin": [] if margin is None else ["--no-knowledge-margin", str(margin)],
            "keeps": ["--reply-keeps-answer", str(bool(keeps)).lower()]}


def row_args(row: str, model_file: str, selectors: Dict[str, str], sample_model: str,
             margin: Optional[float] = None, keeps: Optional[bool] = None) -> List[str]:
    """The model arguments of ``row`` (the task arguments are added by :func:`evaluate`);
    ``margin`` / ``keeps`` override the zoo pipeline's (:func:`zoo_choices`)."""
    responder = f"{model_file}.responder"
    if row == "sample zoo model":
        return ["-mf", sample_model, *decoding(sample_model)]
    zoo = zoo_choices(model_file, margin, keeps) if model_file else {"margin": [], "keeps": []}
    if row == "zoo model":
        return ["-mf", model_file, *decoding(model_file), *zoo["margin"], *zoo["keeps"]]
    alone = ["-m", "docgraph/gpt2_responder", "-mf", responder, *decoding(model_file)]
    pipeline = ["-m", "docgraph", *decoding(model_file), "--reply-mode", "generate",
                *zoo["keeps"]]
    if row in selectors:
        return [*pipeline, "--selector-model-file", selectors[row], "--responder-model-file",
                responder]
    return {
        "zero-shot cosine": lambda: [*pipeline, "--responder-model-file", responder,
                                     *ZERO_SHOT_COSINE],
        "random sentence": lambda: [*alone, "--cmu-dog-knowledge", "random"],
        "oracle sentence": lambda: [*alone, "--cmu-dog-knowledge", "pseudo"],
        "no knowledge": lambda: [*alone, "--cmu-dog-knowledge", "none"],
        # 512 knowledge + 128 context + 2 separators + the reply's 28 positions of the
        # recipe's 286 (the responder refuses a prompt longer than its positions)
        "whole section": lambda: [*alone, "--cmu-dog-knowledge", "section",
                                  "--responder-knowledge-truncate", "512",
                                  "--responder-max-length", "670"],
        "zero-shot SmolLM2": lambda: [
            *pipeline, "--selector-model-file", f"{model_file}.selector",
            "--responder-model", "smollm2-135m-instruct", *responder_prompt(model_file),
            *zoo["margin"]],
    }[row]()


def add_valid_sample_args(group: Any, conversations: int) -> None:
    """The options of the scripts that choose on valid: the zoo model (``--model-file``)
    and the seeded sample of valid conversations (``--conversations``, ``--sample-seed``)."""
    group.add_argument("--model-file", dest="zoo_model", type=str,
                       default="zoo:docgraph/cmu_dog/model", help="the -m docgraph model")
    group.add_argument("--conversations", type=int, default=conversations,
                       help="a seeded sample of this many valid conversations (0: all)")
    group.add_argument("--sample-seed", type=int, default=0, help="the seed of that sample")


#: task arguments that only a generator reads (left out for a selector alone)
GENERATION_ONLY = ("--skip-generation", "false")
#: task arguments that eval_model or the agent reads, not the teacher alone
EVAL_ONLY = ("--metrics", "-bs", "--skip-generation")


def without(args: Sequence[str], flags: Sequence[str]) -> List[str]:
    """``args`` without each of ``flags`` and the value after it."""
    out: List[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in flags:
            skip = True
        else:
            out.append(arg)
    return out


def task_args(split: str, conversations: int, seed: int, fold: str = "test") -> List[str]:
    return ["-t", "docgraph:cmu_dog", "--cmu-dog-split-type", split, "-dt", fold,
            "--cmu-dog-conversations", str(conversations), "--cmu-dog-sample-seed", str(seed),
            "--metrics", "default,bleu-1", "-bs", "8", *GENERATION_ONLY]


def evaluate(args: Sequence[str], figures: Sequence[str] = FIGURES) -> Dict[str, float]:
    """ParlAI's ``eval_model`` of ``args`` (in this process): the ``figures`` it reports."""
    from parlai.scripts.eval_model import EvalModel

    report = EvalModel.main(*args)
    out = {}
    for key in figures:
        if key in report:
            value = report[key]
            out[key] = round(float(value.value() if hasattr(value, "value") else value), 4)
    return out


def train_selector(path: str, datapath: str, variant: str) -> None:
    """The zoo recipe's selector with ``--graph-variant variant``, trained on the knowledge
    turns only (the ``graph selector`` / ``--graph-variant none`` rows), with the zoo's
    seeded launcher."""
    from parlai_docgraph.recipes import zoo_recipe
    from parlai_docgraph.zoo.recipe import _train

    zoo = zoo_recipe("cmu_dog")
    args = list(zoo.selector)
    args[args.index("--graph-variant") + 1] = variant
    _train(args + ["--knowledge-turns-only", "true", "-mf", path, "--datapath", datapath,
                   "--seed", str(zoo.seed)], f"{variant} selector (knowledge turns)")


def random_selection(task: Sequence[str], datapath: str) -> Dict[str, float]:
    """``know_acc_k`` / ``know_mrr_k`` a uniform random ranking is expected to score on the
    knowledge turns of ``task``: the means of 1/n and H(n)/n over their n candidates."""
    from parlai.core.params import ParlaiParser
    from parlai.core.teachers import create_task_agent_from_taskname

    opt = ParlaiParser(True, False).parse_args(
        [*without(task, EVAL_ONLY), "--label-type", "chosen_sent", "--knowledge-turns-only",
         "true", "--datapath", datapath])
    teacher = create_task_agent_from_taskname(opt)[0]
    counts = [len(teacher.act()["label_candidates"]) for _ in range(teacher.num_examples())]
    if not counts:
        return {}
    mrr = [sum(1 / k for k in range(1, n + 1)) / n for n in counts]
    return {"know_acc_k": round(sum(1 / n for n in counts) / len(counts), 4),
            "know_mrr_k": round(sum(mrr) / len(mrr), 4)}


def knowledge_turns(selector: List[str], task: Sequence[str], datapath: str) -> Dict[str, float]:
    """The selector alone on the knowledge turns of ``task``: ``know_acc_k``, ``know_mrr_k``."""
    task = without(task, GENERATION_ONLY[:1])
    figures = evaluate([*selector, *task, "--label-type", "chosen_sent", "--knowledge-turns-only",
                        "true", "--datapath", datapath])
    return {f"{k}_k": figures[k] for k in ("know_acc", "know_mrr") if k in figures}


def store_row(path: str, row: str, split: str, figures: Dict[str, float], command: List[str],
              setup: Dict[str, Any]) -> Dict[str, Any]:
    """Write one row's figures into the result file ``path`` (read-modify-write under a
    lock); the updated data."""
    with locked(path):
        data: Dict[str, Any] = read_json(path) if os.path.isfile(path) else {}
        result = data.setdefault("cmu_dog", {"systems": {}, "commands": {}})
        if result.get("setup", setup) != setup:
            raise ValueError(f"{path} holds rows measured on other turns ({result['setup']}); "
                             f"write to another file")
        result["setup"] = setup
        result["published"] = PUBLISHED
        result["published_source"] = PUBLISHED_SOURCE
        result["rows"] = dict(ROWS)
        result["systems"].setdefault(row, {})[split] = figures
        result["commands"].setdefault(row, {})[split] = shlex.join(["parlai", *command])
        data["meta"] = run_record()
        write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


def markdown_table(result: Dict[str, Any]) -> str:
    """The rows of a result file as a Markdown table (F1 etc. in %, as the papers print;
    acc_k / MRR_k: the selector alone on the knowledge turns)."""
    splits = [s for s in SPLITS if any(s in v for v in result["systems"].values())]
    head = "| row | " + " | ".join(
        f"{s}: F1 / BLEU-1 / BLEU-4 / KF1 / rare F1 / ppl / acc_k / MRR_k" for s in splits) + " |"
    out = [head, "|---|" + "---|" * len(splits)]
    for row, by_split in result["systems"].items():
        cells = []
        for s in splits:
            f = by_split.get(s)
            cells.append("" if f is None else " / ".join(
                "-" if f.get(k) is None else (f"{f[k]:.1f}" if k == "ppl" else f"{100 * f[k]:.1f}")
                for k in ("f1", "bleu-1", "bleu-4", "knowledge_f1", "rare_word_f1", "ppl",
                          "know_acc_k", "know_mrr_k")))
        out.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(out)


@register_script("cmu_dog_eval", hidden=False)
class CmuDogEval(ParlaiScript):
    """CMU_DoG test figures of the zoo model and its baselines (ParlAI's metrics)."""

    @classmethod
    def setup_args(cls) -> ParlaiParser:
        parser = ParlaiParser(True, False, description=cls.__doc__.strip())
        g = parser.add_argument_group("cmu_dog_eval")
        g.add_argument("--model-file", dest="zoo_model", type=str,
                       default="zoo:docgraph/cmu_dog/model",
                       help="the -m docgraph model of the 'graph selector' row, whose "
                       "responder and decoding serve the other rows")
        g.add_argument("--graph-selector", type=str, default=None,
                       help="the 'graph selector' row's selector (default: trained next to the "
                       "model on the knowledge turns, with the zoo recipe's arguments, when "
                       "absent)")
        g.add_argument("--none-selector", type=str, default=None,
                       help="the '--graph-variant none' row's selector (default: as above, "
                       "with --graph-variant none)")
        g.add_argument("--no-knowledge-margin", type=float, default=None,
                       help="the zoo selector's --no-knowledge-margin in the rows that run "
                       "it (zoo model, zero-shot SmolLM2); default: the zoo model's own")
        g.add_argument("--reply-keeps-answer", type="bool", default=None,
                       help="the pipeline rows' --reply-keeps-answer; default: the zoo "
                       "model's own")
        g.add_argument("--sample-model", type=str, default="zoo:docgraph/sample/model",
                       help="the model of the 'sample zoo model' row")
        g.add_argument("--rows", type=str, default=",".join(ROWS),
                       help="comma-separated rows to measure (default: all)")
        g.add_argument("--splits", type=str, default="seen,unseen",
                       help="comma-separated --cmu-dog-split-type values to test on")
        g.add_argument("--conversations", type=int, default=0,
                       help="a seeded sample of this many test conversations per split (0: all)")
        g.add_argument("--sample-seed", type=int, default=0, help="the seed of that sample")
        g.add_argument("--fold", type=str, default="test", choices=("test", "valid"),
                       help="test (the result file's figures) or valid (where the recipe's "
                       "settings are chosen; with --splits seen)")
        g.add_argument("--out", type=str, default=None, help="the result file (JSON) to update")
        g.add_argument("--world-logs-dir", type=str, default=None,
                       help="also write each row's turns and replies (ParlAI's --world-logs) "
                       "into this folder, one JSONL file per row and split")
        return parser

    def run(self) -> Dict[str, Any]:
        from parlai.core.build_data import modelzoo_path

        opt = self.opt
        datapath = opt["datapath"]
        rows = [r for r in opt["rows"].split(",") if r]
        # the zoo model is resolved (built on first use) only when a row reads it
        model_file = modelzoo_path(datapath, opt["zoo_model"]) \
            if set(rows) - {"sample zoo model"} else ""
        unknown = [r for r in rows if r not in ROWS]
        splits = [s for s in opt["splits"].split(",") if s]
        if unknown or not set(splits) <= set(SPLITS):
            raise ValueError(f"--rows from {list(ROWS)}, --splits from {list(SPLITS)}; got "
                             f"{unknown or splits}")
        selectors = {"graph selector": opt["graph_selector"] or os.path.join(
                         os.path.dirname(model_file), "knowledge_selector", "model"),
                     "--graph-variant none": opt["none_selector"] or os.path.join(
                         os.path.dirname(model_file), "knowledge_none_selector", "model")}
        for row, variant in (("graph selector", "full"), ("--graph-variant none", "none")):
            if row in rows and not os.path.isfile(selectors[row]):
                train_selector(selectors[row], datapath, variant)
        sample_model = modelzoo_path(datapath, opt["sample_model"]) \
            if "sample zoo model" in rows else ""
        setup = {"conversations": opt["conversations"], "sample_seed": opt["sample_seed"],
                 "fold": opt["fold"]}
        out: Dict[str, Any] = {}
        for split in splits:
            for row in rows:
                task = task_args(split, opt["conversations"], opt["sample_seed"], opt["fold"])
                args = [*row_args(row, model_file, selectors, sample_model,
                                  opt["no_knowledge_margin"], opt["reply_keeps_answer"]), *task,
                        "--datapath", datapath]
                if opt.get("world_logs_dir"):
                    os.makedirs(opt["world_logs_dir"], exist_ok=True)
                    name = f"{row.strip('-').replace(' ', '_')}_{split}.jsonl"
                    args += ["--world-logs", os.path.join(opt["world_logs_dir"], name)]
                figures = evaluate(args)
                selector = selector_of(row, model_file, selectors)
                if selector is not None:
                    figures.update(knowledge_turns(selector, task, datapath))
                elif row == "random sentence":
                    figures.update(random_selection(task, datapath))
                print(f"[{split}] {row}: {figures}")
                out.setdefault(row, {})[split] = figures
                if opt.get("out"):
                    data = store_row(opt["out"], row, split, figures, ["eval_model", *args],
                                     setup)
                    print(markdown_table(data["cmu_dog"]))
        return out


if __name__ == "__main__":
    CmuDogEval.main()

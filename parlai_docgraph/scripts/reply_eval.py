"""
``parlai-docgraph reply_eval``: how grounded, supported and varied the replies are, per
reply mode, on document questions (:mod:`parlai_docgraph.reply_quality` defines the figures).

Every system shares one selector (that of ``--pipeline``, a ``-m docgraph`` model file,
default the zoo model), so each reply answers the same selected sentence:

* ``extract``: the selected sentence itself (``--reply-mode extract``);
* ``generate``: the pipeline's own responder (``--reply-mode generate``), with the
  pipeline's answer check (``--reply-keeps-answer``: a reply that left out part of the
  selected sentence is the sentence itself; ``answer_check_share`` says how often), and
  the same row ``before the answer check`` (the generator's own text);
* each ``--responders`` entry ``label=SPEC``: the same selector with another responder, a
  ``docgraph/gpt2_responder`` model file, or ``model:NAME`` for an untrained responder of
  ``--responder-model NAME`` (zero-shot; ``--responder-options`` apply to it), each with
  and before the check.

Questions: ``--fold test`` the bundled held-out questions (documents no model saw),
``valid`` those of ``docgraph:docqa`` valid (where recipes are chosen), or those of
``--questions-dir``. Each question is a one-turn episode over its own document. Where a
question gives its answer span, ``answer kept`` is the share of replies that still hold it,
of those whose selected sentence holds it. Replies are greedy, with the pipeline's saved
decoding options (reply cap ``--label-truncate``, ``--beam-block-ngram``; a ``model:NAME``
row takes ``--responder-options`` after them). ``--out`` writes the figures, the worst
replies and the run record as JSON; the README's table is :func:`result_table` of that file.

Example::

    parlai-docgraph reply_eval --responders "zero-shot SmolLM2=model:smollm2-135m-instruct" \\
        --out docs/results/reply_quality.json
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_docgraph.atomic import write_text_atomic
from parlai_docgraph.graphs.knowledge_lines import NO_PASSAGE
from parlai_docgraph.env import run_record
from parlai_docgraph.reply_quality import score_reply, summarise
from parlai_docgraph.tasks.docgraph.docqa import (
    DOCQA, HELDOUT, VALID_DOCUMENTS, Question, load_questions,
)

ZERO_SHOT = "model:"


def fold_questions(fold: str, folder: str = "") -> List[Question]:
    """The held-out test questions, the ``docgraph:docqa`` valid ones, or those of
    ``folder`` (a ``questions.jsonl`` with its documents) when given."""
    if folder:
        return load_questions(folder)
    if fold == "test":
        return load_questions(HELDOUT)
    if fold == "valid":
        return [q for q in load_questions(DOCQA) if q.document in VALID_DOCUMENTS]
    raise ValueError(f"--fold {fold!r}: use test or valid")


def parse_responders(text: str) -> List[Tuple[str, str]]:
    """``"a=x,b=y"`` -> ``[("a", "x"), ("b", "y")]``."""
    out = []
    for item in filter(None, (x.strip() for x in (text or "").split(","))):
        label, sep, spec = item.partition("=")
        if not sep or not label.strip() or not spec.strip():
            raise ValueError(f"--responders entry {item!r}: write label=MODEL_FILE or "
                             f"label=model:NAME")
        out.append((label.strip(), spec.strip()))
    return out


def decoding_args(model_file: str) -> List[str]:
    """The saved decoding options of pipeline ``model_file`` (its reply cap, n-gram
    blocking, ...) as arguments, greedy search."""
    from parlai.core.opt import Opt

    from parlai_docgraph.agents.pipeline.messages import DECODING

    saved = Opt.load(f"{model_file}.opt")
    args = []
    for key in DECODING:
        if saved.get(key) is not None and key not in ("inference", "skip_generation"):
            args += [f"--{key.replace('_', '-')}", str(saved[key])]
    return args + ["--inference", "greedy"]


def build_pipeline(model_file: str, datapath: str, responder: str = "",
                   extra: Sequence[str] = (), keeps_answer: bool = True) -> Any:
    """The ``-m docgraph`` agent of ``model_file``'s selector with ``responder`` (empty: its
    own) and its decoding options (:func:`decoding_args`), in evaluation mode, generating
    its replies (``--reply-keeps-answer keeps_answer``)."""
    from parlai.core.agents import create_agent

    args = ["-m", "docgraph", "--datapath", datapath, "-dt", "valid", "--reply-mode", "generate",
            "--reply-keeps-answer", str(keeps_answer), *decoding_args(model_file),
            "--selector-model-file", f"{model_file}.selector"]
    if not responder:
        args += ["--responder-model-file", f"{model_file}.responder"]
    elif responder.startswith(ZERO_SHOT):
        args += ["--responder-model", responder[len(ZERO_SHOT):], *extra]
    else:
        args += ["--responder-model-file", responder]
    opt = ParlaiParser(True, True).parse_args(args)
    return create_agent(opt)


def replies(agent: Any, questions: Sequence[Question], cap: int) -> List[Dict[str, Any]]:
    """Per question: the selected sentence, the extract reply (the sentence itself), the
    reply as the pipeline gives it (``generate``) and the generator's own text before the
    pipeline's answer check (``generated``; truncated: it has ``cap`` tokens; 0: no cap
    known)."""
    tokenizer = agent.responder.dict.hf_tokenizer
    out = []
    for q in questions:
        agent.reset()
        agent.observe({"text": q.question, "episode_done": True,
                       "knowledge_passages": [[t, list(ss)] for t, ss in q.passages]})
        reply = agent.act()
        text = reply.get("text") or ""
        generated = reply.get("generated_text", text) or ""
        selected = reply.get("selected_sentence") or ""
        length = len(tokenizer(generated, add_special_tokens=False)["input_ids"])
        out.append({"selected": selected, "title": reply.get("selected_title") or "",
                    "extract": selected if selected and selected != NO_PASSAGE else text,
                    "generate": text, "generated": generated,
                    "fallback": "answer_dropped" in reply,
                    "truncated": bool(cap) and length >= cap})
    return out


def result_table(data: Dict[str, Any]) -> str:
    """The Markdown table of a result file that ``--out`` wrote."""
    n = data["questions"]
    out = [f"| reply ({n} {data['fold']} questions) | knowledge F1 vs gold | vs selected | "
           "with unsupported words | answer kept | distinct-2 | repeated phrase | empty | "
           "truncated |", "|---|---|---|---|---|---|---|---|---|"]
    for name, s in data["systems"].items():
        kept = (f"{s['answer_kept_share']:.1%} of {s['answer_kept_n']}"
                if s.get("answer_kept_share") is not None else "n/a")
        out.append(f"| {name} | {s['kf1_gold']:.3f} | {s['kf1_selected']:.3f} | "
                   f"{s['unsupported_share']:.1%} | {kept} | {s['distinct_2']:.3f} | "
                   f"{s['repeated_share']:.1%} | {s['empty_share']:.1%} | "
                   f"{s['truncated_share']:.1%} |")
    return "\n".join(out)


def worst_table(data: Dict[str, Any], system: str) -> str:
    """The worst replies of ``system`` (most unsupported words) as a Markdown table."""
    rows = ["| question | reply | unsupported words |", "|---|---|---|"]
    for w in data["systems"][system]["worst"]:
        reply = w["reply"].replace("|", "\\|").replace("\n", " ")
        rows.append(f"| {w['question']} | {reply} | {', '.join(w['unsupported'])} |")
    return "\n".join(rows)


@register_script("reply_eval", hidden=False)
class ReplyEval(ParlaiScript):
    """Knowledge F1, unsupported words and repetition of replies, per reply mode."""

    @classmethod
    def setup_args(cls) -> ParlaiParser:
        parser = ParlaiParser(True, False, description=cls.__doc__.strip())
        g = parser.add_argument_group("reply_eval")
        g.add_argument("--pipeline", type=str, default="zoo:docgraph/sample/model",
                       help="a -m docgraph pipeline model file: its selector and decoding "
                       "options serve every row, its responder is the 'generate' row")
        g.add_argument("--responders", type=str, default="",
                       help="more rows, comma-separated label=SPEC: SPEC a "
                       "docgraph/gpt2_responder model file or model:NAME (untrained, "
                       "--responder-model NAME)")
        g.add_argument("--responder-options", type=str,
                       default="--chat-prompt fact --knowledge-title none",
                       help="options of the model:NAME responders (one shell-quoted string; "
                       "the default is the zoo responder's prompt)")
        g.add_argument("--fold", type=str, default="test", choices=("test", "valid"),
                       help="test: the held-out questions; valid: docgraph:docqa valid")
        g.add_argument("--questions-dir", type=str, default="",
                       help="a folder with questions.jsonl and its documents, instead of "
                       "--fold (e.g. parlai_docgraph/assets/collections)")
        g.add_argument("--reply-keeps-answer", type="bool", default=True,
                       help="the pipeline's answer check (-m docgraph --reply-keeps-answer): "
                       "a reply that left out part of the selected sentence is the "
                       "sentence; each row is also given before the check")
        g.add_argument("--num-questions", type=int, default=0,
                       help="only the first N questions (0: all)")
        g.add_argument("--out", type=str, default=None, help="write the figures as JSON")
        return parser

    def run(self) -> Dict[str, Any]:
        from parlai.core.build_data import modelzoo_path

        opt = self.opt
        questions = fold_questions(opt["fold"], opt["questions_dir"])
        if opt["num_questions"] > 0:
            questions = questions[: opt["num_questions"]]
        model_file = modelzoo_path(opt["datapath"], opt["pipeline"])
        extra = shlex.split(opt["responder_options"] or "")
        keeps = bool(opt["reply_keeps_answer"])
        runs = {"": build_pipeline(model_file, opt["datapath"], keeps_answer=keeps)}
        for label, spec in parse_responders(opt["responders"]):
            runs[label] = build_pipeline(model_file, opt["datapath"], spec, extra, keeps)
        systems: Dict[str, Dict[str, Any]] = {}
        for label, agent in runs.items():
            cap = int(agent.responder.opt.get("label_truncate") or 0)
            got = replies(agent, questions, cap)
            name = label or "generate (zoo model)"
            modes = {"generate": name, "generated": f"{name}, before the answer check"}
            if not label:
                modes = {"extract": "extract (zoo model)", **modes}
            for mode, row in modes.items():
                systems[row] = summarise([
                    score_reply(r[mode], q.question, [r["title"]], q.answer, r["selected"],
                                r["truncated"] and mode != "extract", q.span)
                    for q, r in zip(questions, got)])
                systems[row]["replies_text"] = [r[mode] for r in got]
            systems[name]["answer_check_share"] = sum(r["fallback"] for r in got) / len(got)
            agent.shutdown()
        fold = Path(opt["questions_dir"]).name if opt["questions_dir"] else opt["fold"]
        data = {"meta": run_record(), "fold": fold, "questions": len(questions),
                "asked": [q.question for q in questions], "gold": [q.answer for q in questions],
                "selected_titles": [r["title"] for r in got],
                "systems": systems}
        print(result_table(data))
        if opt.get("out"):
            write_text_atomic(opt["out"], json.dumps(data, indent=1))
        return {name: s["kf1_selected"] for name, s in systems.items()}


if __name__ == "__main__":
    ReplyEval.main()

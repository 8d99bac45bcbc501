"""
The console summary of ``make demo``: reads one demo step's whole output on stdin and prints,
as they arrive, only the lines a reader needs (the checks' counts, the zoo build's times and
figures, the evaluation's metrics, the chat turn, the tables). The Makefile keeps the whole
output in the demo log (``tee``); this filter only decides what the console shows.

Usage (what the Makefile runs)::

    parlai eval_model ... 2>&1 | tee -a demo/demo.log \\
        | python -m parlai_docgraph.scripts.demo_summary eval

Steps: ``verify`` (``verify_data``), ``eval`` (``eval_model``, with the zoo build of its
first use), ``chat`` (a scripted ``parlai interactive``), ``table`` (scripts that print a
Markdown table: ``ablate``, ``heldout_eval``).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from typing import Callable, Dict, Iterable, Iterator, List, Optional

#: the figures of an evaluation report shown, in this order (those present)
EVAL_KEYS = ("exs", "know_acc", "know_mrr", "rouge_L", "f1", "bleu-4", "ppl", "token_acc")
INDENT = "   "


def figures(report: Dict[str, float], keys: Iterable[str] = EVAL_KEYS) -> str:
    """``"know_acc 0.600, ppl 566.3"``: the chosen metrics of a ParlAI report."""
    out = []
    for key in keys:
        if key in report:
            value = report[key]
            if isinstance(value, int):
                out.append(f"{key} {value}")
            else:
                out.append(f"{key} {value:.1f}" if abs(value) >= 10 else f"{key} {value:.3f}")
    return ", ".join(out)


def verify(lines: Iterable[str]) -> Iterator[str]:
    """``verify_data``: its count line, as examples and problems."""
    for line in lines:
        if line.startswith("{'missing_text'"):
            counts = ast.literal_eval(line)
            exs = counts.pop("exs", 0)
            problems = {k: v for k, v in counts.items() if v}
            yield f"{exs} examples, " + (
                "no problems" if not problems else
                "problems: " + ", ".join(f"{k} {v}" for k, v in problems.items()))


def evaluate(lines: Iterable[str]) -> Iterator[str]:
    """``eval_model`` of a zoo model: the zoo build's progress on first use, then the
    final report's figures."""
    part, task, pending, reports = None, None, None, {}
    for line in lines:
        if pending is not None:  # the JSON line that follows a report header
            try:
                reports[pending] = json.loads(line)
            except ValueError:
                pass
            if pending == "final" and "final" in reports:
                yield f"{task or 'the task'}: {figures(reports['final'])}"
            pending = None
            continue
        built = re.search(r"zoo build: (\S+) \(\S+\) into (\S+)", line)
        training = re.search(r"zoo build: training the (\w+): .* -t (\S+)", line)
        trained = re.search(r"zoo build: (\w+) trained in (\d+)s", line)
        ready = re.search(r"zoo build: (\S+) ready in (\d+)s", line)
        header = re.search(r"REPORT +\| (valid|test):$", line)
        finished = re.search(r"Finished evaluating tasks \['(.*)'\] using datatype (\w+)", line)
        if built:
            yield f"building the zoo model ({built.group(1)}) into {built.group(2)}: first use only"
        elif training:
            part, task, reports = training.group(1), training.group(2), {}
            yield f"training the {part} on {task} ..."
        elif trained:
            seen = "; ".join(f"{split} {figures(r, ('know_acc', 'know_mrr', 'ppl'))}"
                             for split, r in reports.items() if split in ("valid", "test"))
            yield (f"{trained.group(1)} trained in {trained.group(2)} s"
                   + (f" ({task} {seen})" if seen else ""))
        elif ready:
            yield f"model ready in {ready.group(2)} s: {ready.group(1)}"
        elif header and part is not None:
            pending = header.group(1)
        elif finished:
            task = f"{finished.group(1)} {finished.group(2)}"
            pending = "final"


def chat(lines: Iterable[str]) -> Iterator[str]:
    """``parlai interactive``: the notes, the selection, its concepts and the reply."""
    concepts: Optional[List[str]] = None
    for raw in lines:
        line = raw.replace("Enter Your Message: ", "")
        if concepts is not None:
            if line.startswith("  ") and line.strip():
                concepts.append(line.strip())
                continue
            yield "[top_concepts]: " + ", ".join(concepts)
            concepts = None
        if line.startswith("[top_concepts]:"):
            concepts = [line.split(":", 1)[1].strip()]
        elif re.match(r"\[(docgraph_note|selected_sentence|Docgraph)\]:", line):
            yield line


def table(lines: Iterable[str]) -> Iterator[str]:
    """Scripts that print Markdown tables: what they are training, then the tables (a blank
    line between two)."""
    tables, previous = 0, ""
    for line in lines:
        training = re.search(r"ablate: training (\w+) .* for (\d+) steps", line)
        if training:
            yield f"training {training.group(1)} for {training.group(2)} steps ..."
        elif line.startswith("|"):
            if not previous.startswith("|"):
                tables += 1
                if tables > 1:
                    yield ""
            yield line
        previous = line


STEPS: Dict[str, Callable[[Iterable[str]], Iterator[str]]] = {
    "verify": verify, "eval": evaluate, "chat": chat, "table": table,
}


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("step", choices=sorted(STEPS), help="which demo step's output")
    args = parser.parse_args(argv)
    lines = (line.rstrip("\n") for line in sys.stdin)
    for shown in STEPS[args.step](lines):
        print(INDENT + shown if shown else "", flush=True)
    # a step that printed nothing the filter knows still reads to the end (tee must not
    # see a closed pipe)
    for _ in lines:
        pass


if __name__ == "__main__":
    main()

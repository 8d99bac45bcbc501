"""
``make demo``: its console summary (``parlai_docgraph/scripts/demo_summary.py`` keeps each
step's key lines of the output that goes to the demo log) and its datapath (ParlAI's, as
the README's bare commands: no ``--datapath`` in the Makefile).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from parlai_docgraph.scripts.demo_summary import chat, evaluate, table, verify

ROOT = Path(__file__).resolve().parents[1]

#: eval_model's output on the first use of the zoo model, shortened (the option dumps and
#: weight-loading reports are what the summary drops)
EVAL_OUTPUT = """\
2026-11-26 13:00:49,409 INFO     | zoo build: docgraph-sample (docgraph-sample-992a56c47ad5) into /dp/models/docgraph/sample
2026-11-26 13:00:49,409 INFO     | zoo build: training the selector: parlai train_model -m docgraph/graph_selector -t docgraph:docqa --label-type chosen_sent -mf x (weights initialised after seeding with 1)
2026-11-26 13:00:56,363 INFO     | Opt:
2026-11-26 13:00:56,363 INFO     |     batchsize: 8
{"clip": 1.0, "know_loss": 0.724, "loss": 1.41}
2026-11-26 13:13:11,578 REPORT   | valid:
{"exs": 124, "know_acc": 0.8952, "know_mrr": 0.9358}
2026-11-26 13:13:49,697 REPORT   | test:
{"exs": 56, "know_acc": 0.8571, "know_mrr": 0.9128}
2026-11-26 13:13:55,448 INFO     | zoo build: selector trained in 786s
2026-11-26 13:13:55,450 INFO     | zoo build: training the responder: parlai train_model -m docgraph/gpt2_responder --responder-model tiny -t docgraph:sample -bs 8
2026-11-26 13:15:43,698 REPORT   | test:
{"exs": 20, "ppl": 566.3, "token_acc": 0.1116}
2026-11-26 13:15:46,438 INFO     | zoo build: responder trained in 111s
2026-11-26 13:15:51,630 INFO     | zoo build: /dp/models/docgraph/sample/model ready in 902s
{"accuracy": 0, "exs": 4, "know_acc": 0.25}
2026-11-26 13:16:34,730 INFO     | Finished evaluating tasks ['docgraph:sample'] using datatype test
{"accuracy": 0, "exs": 20, "f1": 0.4222, "know_acc": 0.6, "know_mrr": 0.6969, "ppl": 566.3, "rouge_L": 0.07529}
"""

CHAT_OUTPUT = """\
2026-11-26 13:16:44,636 INFO     | Opt:
2026-11-26 13:16:44,636 INFO     |     documents: ['notes.md']
Enter Your Message: [docgraph_note]: 4 passages, 9 sentences loaded
[selected_sentence]: Stations built on rocks at sea had no room for families.
[top_concepts]: keeper's day
  remote monitoring
  soot
[Docgraph]: Stations built on rocks at sea had no room for families.
Enter Your Message: CHAT DONE
"""


def test_verify_summary():
    ok = ["2026 INFO | Opt:", "{'missing_text': 0, 'missing_labels': 0, 'exs': 92}"]
    assert list(verify(ok)) == ["92 examples, no problems"]
    bad = ["{'missing_text': 2, 'missing_labels': 0, 'exs': 92}"]
    assert list(verify(bad)) == ["92 examples, problems: missing_text 2"]


def test_eval_summary_has_the_build_and_the_figures():
    shown = list(evaluate(EVAL_OUTPUT.splitlines()))
    assert shown == [
        "building the zoo model (docgraph-sample) into /dp/models/docgraph/sample: first use only",
        "training the selector on docgraph:docqa ...",
        "selector trained in 786 s (docgraph:docqa valid know_acc 0.895, know_mrr 0.936; "
        "test know_acc 0.857, know_mrr 0.913)",
        "training the responder on docgraph:sample ...",
        "responder trained in 111 s (docgraph:sample test ppl 566.3)",
        "model ready in 902 s: /dp/models/docgraph/sample/model",
        "docgraph:sample test: exs 20, know_acc 0.600, know_mrr 0.697, rouge_L 0.075, "
        "f1 0.422, ppl 566.3",
    ]


def test_chat_and_table_summaries():
    assert list(chat(CHAT_OUTPUT.splitlines())) == [
        "[docgraph_note]: 4 passages, 9 sentences loaded",
        "[selected_sentence]: Stations built on rocks at sea had no room for families.",
        "[top_concepts]: keeper's day, remote monitoring, soot",
        "[Docgraph]: Stations built on rocks at sea had no room for families.",
    ]
    lines = ["INFO | ablate: training full (docgraph/graph_selector {}) for 400 steps",
             "{\"loss\": 1.0}", "| variant | know_acc |", "|---|---|", "| full | 1.000 |"]
    assert list(table(lines)) == ["training full for 400 steps ...", *lines[2:]]
    two = ["| a |", "|---|", "", "| b |", "|---|"]
    assert list(table(two)) == ["| a |", "|---|", "", "| b |", "|---|"]


def test_the_filter_reads_stdin_to_the_end():
    """As the Makefile runs it: every line read (tee never sees a closed pipe), the key
    lines printed, indented."""
    done = subprocess.run(
        [sys.executable, "-m", "parlai_docgraph.scripts.demo_summary", "chat"],
        input=CHAT_OUTPUT + "noise\n" * 20000, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "   [docgraph_note]: 4 passages, 9 sentences loaded"
    assert len(done.stdout.splitlines()) == 4


def test_make_demo_uses_parlais_datapath_and_keeps_a_log():
    makefile = (ROOT / "Makefile").read_text()
    assert "--datapath" not in makefile  # as the README's bare commands (README, "Quick start")
    demo = makefile[makefile.index("\ndemo:"):makefile.index("\ntest:")]
    commands = re.findall(r"\$\(BIN\)/parlai(?:-docgraph)? \w+", makefile)
    assert len(commands) >= 6
    assert "tee -a $(DEMO_LOG)" in makefile and "full log: $(DEMO_LOG)" in demo

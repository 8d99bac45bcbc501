"""
The figures the README quotes for long documents come from committed result files
(``docs/results/``), written by the commands the README names: each file has the schema its
table is made from and records the run (command, commit, time, machine), and the README
contains exactly the table made from it. A figure typed by hand, or a file measured again
without the README following, fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_long_documents_benchmark_is_quoted_from_its_result_file():
    from parlai_docgraph.bench.long_documents import STAGES, markdown_table

    data = json.loads((RESULTS / "long_documents.json").read_text(encoding="utf-8"))
    result = data["long_documents"]
    assert sorted(result["sizes"]) == sorted(["10KB", "100KB", "1MB", "5MB"])
    for figures in result["sizes"].values():
        assert set(STAGES) <= set(figures["turn_ms"])
        assert figures["sentences"] > 0 and figures["peak_rss_mb"] > 0
    for key in ("turn_latency_ratio", "first_reply_s_largest", "peak_rss_mb_largest"):
        assert isinstance(result[key], (int, float))
    assert data["meta"]["commit"] and "long_documents" in data["meta"]["command"]
    assert markdown_table(result) in README


def test_heldout_all_documents_is_quoted_from_its_result_file():
    from parlai_docgraph.scripts.heldout import result_table

    data = json.loads((RESULTS / "heldout_eval.json").read_text(encoding="utf-8"))
    assert data["settings"] == ["document", "all_documents"]
    assert len(data["questions"]) == len(data["gold"]) == 56 and data["documents"] == 10
    for system in data["systems"].values():
        assert len(system["chosen"]) == len(system["chosen_all_documents"]) == 56
    assert data["meta"]["commit"] and "heldout_eval" in data["meta"]["command"]
    assert result_table(data) in README

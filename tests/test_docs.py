"""
The documentation site (``docs/``, ``make docs``) and what it is generated from: the result
files' schema (a committed file the results page cannot read fails here), the README's table
of current figures (equal to the one generated from the files), the layer picture (drawn from
the layer test's table), and the whole site built strictly (``-W``: a warning fails) from the
source tree.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from doc_sources import DOCS, README, ROOT
from docgraph_docs import layers, results

RESULTS = DOCS / "results"


@pytest.fixture
def result_copies(tmp_path) -> Path:
    """A copy of the committed result files to break."""
    folder = tmp_path / "results"
    shutil.copytree(RESULTS, folder)
    return folder


def test_every_committed_result_file_matches_the_schema_its_page_reads():
    files = results.load(RESULTS)
    assert set(files) >= {"chat_bench.json", "heldout_eval.json", "long_documents.json",
                          "reply_quality.json", "reply_quality_valid.json"}
    kinds = {name: results.kind_of(data).name for name, data in files.items()}
    assert kinds["heldout_eval.json"] == "heldout" and kinds["chat_bench.json"] == "chat"
    assert kinds["long_documents.json"] == "long_documents"
    assert kinds["reply_quality.json"] == kinds["reply_quality_valid.json"] == "replies"
    assert kinds.get("gsr_real_weights.json", "gsr_real") == "gsr_real"


@pytest.mark.parametrize("name,path", [
    ("long_documents.json", ("long_documents", "sizes", "5MB", "turn_ms", "graph")),
    ("heldout_eval.json", ("systems", "zoo:docgraph/sample/model", "accuracy")),
    ("reply_quality.json", ("systems", "generate (zoo model)", "kf1_selected")),
    ("chat_bench.json", ("chat", "tokens_per_s")),
    ("chat_bench.json", ("meta", "commit")),
    ("gsr_real_weights.json", ("gsr_real", "systems", "tiny T5 (random)", "path@1")),
    ("graph_margin.json", ("graph_margin", "runs", 0, "set")),
])
def test_a_result_file_missing_a_field_fails_naming_file_and_field(result_copies, name, path):
    file = result_copies / name
    data = json.loads(file.read_text(encoding="utf-8"))
    node = data
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    file.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(results.SchemaError, match=name) as err:
        results.load(result_copies)
    assert path[-1] in str(err.value)


def test_a_new_result_file_is_shown_without_a_code_change(result_copies, tmp_path):
    meta = {"command": "python -m x --out docs/results/new.json", "commit": "abc1234",
            "time_utc": "2026-11-26T00:00:00Z", "machine": "x86_64, 2 CPUs"}
    (result_copies / "gsr_new.json").write_text(json.dumps(
        {"meta": meta, "gsr": {"path@1": 0.4125, "model": "smollm2"}}), encoding="utf-8")
    files = results.load(result_copies)
    page = results.results_page(files, tmp_path / "img")
    assert "## Gsr new" in page and "| `gsr.path@1` | 0.4125 |" in page
    assert "`python -m x --out docs/results/new.json` at commit `abc1234`" in page
    (result_copies / "gsr_new.json").write_text(json.dumps({"gsr": {"bleu": 1.0}}),
                                                encoding="utf-8")
    with pytest.raises(results.SchemaError, match="gsr_new.json: missing meta.command"):
        results.load(result_copies)


def test_the_results_page_has_a_plot_per_figure_group(tmp_path):
    page = results.results_page(results.load(RESULTS), tmp_path)
    for png in ("long_documents_latency.png", "chat_latency.png", "heldout_accuracy.png",
                "replies_test.png", "replies_valid.png"):
        assert f"(img/{png})" in page and (tmp_path / png).stat().st_size > 5_000, png


def test_the_readme_table_is_generated_from_the_result_files(result_copies):
    text = README.read_text(encoding="utf-8")
    assert results.update_readme(text) == text, "run: make readme-table"
    files = results.load(RESULTS)
    zoo = files["heldout_eval.json"]["systems"]["zoo:docgraph/sample/model"]["accuracy"]
    assert f"selection accuracy {zoo:.3f}" in text
    # a file measured again changes the table
    file = result_copies / "heldout_eval.json"
    data = json.loads(file.read_text(encoding="utf-8"))
    data["systems"]["zoo:docgraph/sample/model"]["accuracy"] = 0.123
    file.write_text(json.dumps(data), encoding="utf-8")
    assert "selection accuracy 0.123" in results.update_readme(text, results.load(result_copies))


def test_the_readme_stays_short_and_names_its_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for command in ("make demo", "make test", "make test-fast", "make docs",
                    "parlai train_model -t wizard_of_wikipedia -m docgraph",
                    "parlai interactive -mf zoo:docgraph/sample/model",
                    "parlai eval_model -mf zoo:docgraph/sample/model", "parlai-docgraph chat"):
        assert command in text, command
    for link in ("docs/install.md", "docs/papers.md", "docs/architecture.md"):
        assert f"]({link})" in text and (ROOT / link).is_file(), link


def test_the_layer_picture_is_drawn_from_the_layer_test(tmp_path):
    import test_import_layers

    assert tuple(layers.layer_table()) == tuple(test_import_layers.LAYERS)
    png = layers.draw(tmp_path / "layers.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5_000
    assert "](gen/layers.png)" in (DOCS / "architecture.md").read_text(encoding="utf-8")


def test_the_site_builds_strictly_from_the_source_tree(tmp_path):
    """``make docs``'s command, warnings as errors, into a temporary folder: every page,
    the generated paper, results and API pages, the plots and the screenshots."""
    pytest.importorskip("sphinx")
    out = tmp_path / "html"
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(DOCS), str(out)],
        capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    for page in ("index", "install", "guide/chat", "guide/selection", "papers", "architecture",
                 "api", "gen/results", "gen/papers/li2022", "gen/papers/zhang_tan",
                 "gen/papers/park"):
        assert (out / f"{page}.html").is_file(), page
    assert list((out / "gen" / "api").glob("parlai_docgraph.graphs.*.html"))
    assert list((out / "gen" / "api").glob("parlai_docgraph.models.*.html"))
    for picture in ("layers.png", "long_documents_latency.png", "web_chat.png", "graph.png"):
        assert list(out.rglob(picture)), picture
    park = (out / "gen" / "papers" / "park.html").read_text(encoding="utf-8")
    assert "park_t2_komodis_ours" in park

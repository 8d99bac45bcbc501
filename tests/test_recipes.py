"""
Paper recipes (``parlai_docgraph/recipes/recipes.yaml``, ``parlai-docgraph recipes``): one
recipe per paper table row, every stage resolved through ParlAI's own parser against the
file's hyper-parameters, the documentation's paper pages generated from the file, ``run --dry-run``.
Nothing is trained, downloaded or loaded.
"""

from __future__ import annotations

import contextlib
import io
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from parlai_docgraph import recipes as rb
from parlai_docgraph.recipes import readme as rm
from parlai_docgraph.scripts import recipes as rs

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

#: rows of each paper table that this package reproduces (other rows are other papers' systems)
ROWS = {
    "li_t2": ["Ranking", "Graph Paths", "Ours"],
    "li_t3": ["Ranking", "Graph Paths", "Ours"],
    "li_t7": ["Full", "Sent. graph", "Coref. graph", "Homog. graph", "Sent. loss"],
    "zt_t1": ["Ours (WoW)", "Ours (Holl-E)", "Document Semantic Graphs (Li et al.) (WoW)",
              "Document Semantic Graphs (Li et al.) (Holl-E)"],
    "zt_t2": ["Baseline", "+ Graph", "+ L_word"],
    "zt_t3": ["Ours", "w/o topic nodes", "w/o word nodes"],
    "li_t4": ["GPT2 + Gold knowledge", "GPT2 + Ranking", "GPT2 + Graph Paths", "GPT2 + Graph Selection"],
    "li_t6": ["GPT2 + Gold knowledge", "GPT2 + Ranking", "GPT2 + Graph Paths", "GPT2 + Graph Selection"],
    "park_t1": ["DialogGSR (Ours)"],
    "park_t2": ["DialogGSR (Ours)"],
    "park_t3": ["DialogGSR (Ours)"],
    "park_t5": ["Hard Const., w/o special tokens", "Hard Const., special tokens (w/o Recon.)",
                "w/o Const., special tokens (w/o Recon.)", "Hard Const., special tokens (with Recon.)",
                "Connection Const., special tokens (with Recon.)",
                "Katz Const., special tokens (with Recon.)"],
}


@pytest.fixture(scope="module")
def book() -> rb.RecipeBook:
    return rb.load()


def test_one_recipe_per_table_row(book):
    got = {t: [r.row for r in book.in_table(t)] for t in book.tables}
    assert got == ROWS
    # every row carries the paper's figures, each under a column of its table
    for r in book.recipes.values():
        assert r.reported, r.name
    # a few figures read from the papers (Li Table 2 / 7, Zhang & Tan Table 2, Park Table 5)
    assert book.get("li_t2_holle_ours").reported == {
        "single MAP": 0.513, "single Acc": 37.7, "multi MAP": 0.514, "multi MRR": 0.58, "multi Acc": 46.1}
    assert book.get("li_t7_sent_loss").reported["Concept MRR"] == 0.151
    assert book.get("zt_t2_graph").reported == {"seen Acc": 44.5, "unseen Acc": 40.7}
    assert book.get("park_t5_no_constraint").reported["path@3"] == 10.0


def test_every_recipe_resolves_through_parlai(book):
    """Each run's stages parse with the stock scripts' parsers (agent + teacher options);
    every hparam equals the resolved opt."""
    runs = {book.run_of(n).name for n in book.recipes}
    for name in sorted(runs):
        assert rs.check_recipe(book, name) == [], name


def test_check_catches_wrong_values_and_unknown_options(tmp_path, book):
    data = yaml.load(rb.RECIPES_FILE.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    entry = data["recipes"]["li_t7_coref"]
    entry["hparams"]["learningrate"]["value"] = 1e-4  # the command still says -lr 3e-5
    entry["stages"]["eval_single"] = entry["stages"]["eval_single"] + ["--no-such-option", "1"]
    path = tmp_path / "recipes.yaml"
    path.write_text(yaml.dump(data, Dumper=DUMPER, sort_keys=False), encoding="utf-8")
    problems = rs.check_recipe(rb.load(path), "li_t7_coref")
    assert any("learningrate resolves to 3e-05" in p for p in problems), problems
    assert any("unknown options ['--no-such-option']" in p for p in problems), problems
    assert len(problems) == 2


def test_malformed_file_names_recipe_and_field(tmp_path):
    data = yaml.load(rb.RECIPES_FILE.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    data["recipes"]["li_t7_full"]["same_as"] = "li_t7_nope"
    path = tmp_path / "recipes.yaml"
    path.write_text(yaml.dump(data, Dumper=DUMPER, sort_keys=False), encoding="utf-8")
    with pytest.raises(rb.RecipeError, match="recipes.li_t7_full: same_as 'li_t7_nope'"):
        rb.load(path)
    with pytest.raises(rb.RecipeError, match="did you mean li_t7_full"):
        rb.load().get("li_t7_ful")


def test_paper_pages_are_generated_from_the_file(book):
    """The documentation's paper pages (``docs/_ext/docgraph_docs/papers.py``, written at
    build time) hold every table of the file as ``recipes readme`` renders it and every
    row's recipe as ``recipes show`` prints it; a figure edited in the file shows up."""
    from doc_sources import doc_text  # noqa: F401  (makes docgraph_docs importable)
    from docgraph_docs import papers

    pages = papers.pages(book)
    assert list(pages) == list(book.papers) == ["li2022", "zhang_tan", "park"]
    for name, table in book.tables.items():
        assert rm.table_markdown(book, name) in pages[table.paper]
        for recipe in book.in_table(name):
            assert rs.describe(book, recipe.name, rb.DEFAULT_DATAPATH, rb.DEFAULT_RUNS) \
                in pages[table.paper]
    # the generated regions of a page that embeds them (``recipes readme --readme FILE``)
    text = "intro\n" + "".join(f"{rm.BEGIN.format(section=s)}\nOLD-TEXT\n{rm.END.format(section=s)}\n"
                               for s in sorted({t.section for t in book.tables.values()}))
    current = rm.update_readme(text, book)
    assert rm.update_readme(current, book) == current and "OLD-TEXT" not in current
    assert {m.group(2) for m in rm.REGION.finditer(current)} == {t.section for t in book.tables.values()}
    # the page changes with the file: a figure edited in the book shows up
    tampered = rb.RecipeBook(book.papers, book.tables, dict(book.recipes), book.source)
    r = tampered.recipes["park_t2_komodis_ours"]
    tampered.recipes[r.name] = rb.Recipe(**{**r.__dict__, "reported": {**r.reported, "F1": 99.25}})
    assert "| 99.25 |" in papers.paper_page(tampered, "park")
    assert "| 99.25 |" in rm.update_readme(current, tampered)
    assert "| 99.25 |" not in pages["park"]


def _main(*args) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rs.Recipes.main(*args)
    return out.getvalue()


def test_readme_action_needs_a_file_and_rewrites_its_regions(tmp_path, book):
    """``recipes readme`` names the file it rewrites (the README has no regions since the
    paper pages moved to the documentation), and rewrites that file's regions."""
    with pytest.raises(rb.RecipeError, match="needs --readme FILE"):
        _main("readme")
    page = tmp_path / "page.md"
    section = sorted({t.section for t in book.tables.values()})[0]
    page.write_text(f"intro\n{rm.BEGIN.format(section=section)}\nOLD\n{rm.END.format(section=section)}\n",
                    encoding="utf-8")
    assert "rewritten" in _main("readme", "--readme", str(page))
    assert "OLD" not in page.read_text(encoding="utf-8")
    assert "current" in _main("readme", "--readme", str(page), "--check")


def test_show_and_dry_run_print_stock_commands(tmp_path, book):
    runs = str(tmp_path / "runs")
    shown = _main("show", "li_t4_holle_ours", "--datapath", "/d", "--runs-dir", runs)
    commands = [line for line in shown.splitlines() if line.startswith("parlai ")]
    # selector (Table 2 recipe), responder (gold recipe), then the two pipeline evaluations
    assert [c.split()[1] for c in commands] == ["train_model", "train_model", "eval_model", "eval_model"]
    assert f"-mf {runs}/li_t2_holle_ours/model" in commands[0]
    assert "-m docgraph/gpt2_responder" in commands[1] and "-m docgraph " in commands[2]
    assert "source" not in commands[0] and "--datapath /d" in commands[3]
    # each printed line parses back to the file's arguments
    assert [shlex.split(c)[1:] for c in commands] == [a for _, _, a in book.plan("li_t4_holle_ours", "/d", runs)]

    dry = _main("run", "li_t4_holle_ours", "--dry-run", "--datapath", "/d", "--runs-dir", runs)
    assert [line[len("[dry run] "):] for line in dry.splitlines() if line.startswith("[dry run]")] == commands
    # a required model that exists is not trained again
    (tmp_path / "runs" / "li_t2_holle_ours").mkdir(parents=True)
    (tmp_path / "runs" / "li_t2_holle_ours" / "model").write_text("x")
    dry = _main("run", "li_t4_holle_ours", "--dry-run", "--datapath", "/d", "--runs-dir", runs)
    lines = [line for line in dry.splitlines() if line.startswith("[dry run]")]
    assert len(lines) == 3 and "graph_selector" not in lines[0] and lines[1:] == [
        "[dry run] " + c for c in commands[2:]]


def test_list_names_every_recipe(book):
    listed = _main("list")
    assert [line.split()[0] for line in listed.splitlines() if line.strip()] == list(book.recipes)
    assert "same run as li_t2_holle_ours" in listed


SHARED = ROOT.parent / "shared"


def test_reported_figures_are_the_papers(book):
    """Every row's figures, printed as the paper prints them, stand together on one line of
    that table in the paper's text (the 40 lines above its caption)."""
    import re

    papers = {}
    for key, paper in book.papers.items():
        path = SHARED / paper["text"].split("shared/", 1)[1]
        if not path.is_file():
            pytest.skip(f"{path} absent (the papers are not shipped)")
        papers[key] = path.read_text(encoding="utf-8").splitlines()
    for r in book.recipes.values():
        table = book.tables[r.table]
        lines = papers[table.paper]
        caption = next(i for i, ln in enumerate(lines) if ln.startswith(f"Table {table.table}:"))
        digits = {c.label: c.digits for c in table.columns}
        wanted = {f"{v:.{digits[label]}f}" for label, v in r.reported.items()}
        assert any(wanted <= set(re.findall(r"\d+\.\d+", ln)) for ln in lines[caption - 40:caption]), (
            r.name, wanted)


def test_park_table5_recipes_match_the_named_ablations(book):
    """The paper-scale Table 5 recipes and ``recipes/gsr_ablations.py`` (what ``ablate`` runs)
    name the same rows with the same decoding, special tokens and figures."""
    from parlai_docgraph.recipes.gsr_ablations import ABLATIONS, PAPER_TABLE5

    assert {f"park_t5_{n}" for n in ABLATIONS} == {r.name for r in book.in_table("park_t5")}
    for name, options in ABLATIONS.items():
        recipe = book.get(f"park_t5_{name}")
        run = book.run_of(recipe.name)
        train_run = book.run_of(run.requires[0]) if run.requires else run
        hp = {h.key: h.value for h in run.hparams if h.stage in ("eval", "all")}
        assert hp["gsr_constraint"] == options["eval"]["gsr_constraint"], name
        special = {h.key: h.value for h in train_run.hparams}["use_special_tokens"]
        assert special == options["train"]["use_special_tokens"], name
        recon = "pretrain" in train_run.stages
        assert recon == (options["train"]["gsr_pretrain_steps"] > 0), name
        paper = {k.replace("bleu-", "B-"): v for k, v in PAPER_TABLE5[name].items()}
        assert recipe.reported == paper, name


def test_cli_through_the_super_command(tmp_path):
    """``parlai-docgraph recipes ...``: ParlAI's super-command pre-parses the whole line."""
    shown = run_cli(["parlai-docgraph", "recipes", "run", "li_t7_coref", "--dry-run"], cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr[-2000:]
    lines = [ln for ln in shown.stdout.splitlines() if ln.startswith("[dry run] parlai ")]
    assert [ln.split()[3] for ln in lines] == ["train_model", "eval_model"]
    assert "--datapath data" in lines[0] and "-mf runs/li_t7_coref/model" in lines[1]


def test_run_calls_the_stock_parlai_per_stage(tmp_path, monkeypatch, book):
    """Not dry: each stage is ``python -m parlai <argv>`` (the stock command), in order, and
    a failing stage stops the run."""
    calls = []

    def fake_run(cmd, check):
        calls.append(cmd)
        assert check is True
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(rs.subprocess, "run", fake_run)
    ran = rs.run_recipe(book, "li_t7_coref", "/d", str(tmp_path), dry_run=False)
    assert calls == [[sys.executable, "-m", "parlai", *argv] for argv in ran]
    assert [argv for _, _, argv in book.plan("li_t7_coref", "/d", str(tmp_path))] == ran

    def failing(cmd, check):
        raise subprocess.CalledProcessError(1, cmd)

    monkeypatch.setattr(rs.subprocess, "run", failing)
    with pytest.raises(subprocess.CalledProcessError):
        rs.run_recipe(book, "li_t7_coref", "/d", str(tmp_path), dry_run=False)


def _bad_book(tmp_path, mutate) -> Path:
    data = yaml.load(rb.RECIPES_FILE.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    mutate(data["recipes"])
    path = tmp_path / "recipes.yaml"
    path.write_text(yaml.dump(data, Dumper=DUMPER, sort_keys=False), encoding="utf-8")
    return path


def _drop(argv, flag):
    i = argv.index(flag)
    del argv[i:i + 2]


def test_check_reports_optimizer_settings_left_to_defaults(tmp_path):
    """Every training stage names its optimizer settings (command line + hparams with the
    paper's value or 'not stated: why'); a recipe that leaves one to a ParlAI default, gives
    no reason, or runs AdamW without decay (torch's 0.01 then applies) fails the check, also
    through ``parlai-docgraph recipes check``."""
    def mutate(recipes):
        train = recipes["li_t7_coref"]["stages"]["train"]
        _drop(train, "--gradient-clip")  # back to ParlAI's 0.1
        del recipes["li_t7_coref"]["hparams"]["gradient_clip"]
        recipes["li_t7_coref"]["hparams"]["betas"]["source"] = "Adam's usual betas"  # no reason
        gold = recipes["li_t4_holle_gold"]
        gold["stages"]["train"][gold["stages"]["train"].index("--optimizer") + 1] = "adamw"
        gold["hparams"]["optimizer"]["value"] = "adamw"  # with --weight-decay 0

    path = _bad_book(tmp_path, mutate)
    book = rb.load(path)
    problems = rs.check_recipe(book, "li_t7_coref")
    assert any("train: gradient_clip = 0.1 is inherited from a ParlAI/agent default" in p
               for p in problems), problems
    assert any("gradient_clip = 0.1 is not stated in hparams" in p for p in problems), problems
    assert any("betas = (0.9, 0.999): its source must cite the paper" in p for p in problems), problems
    assert len(problems) == 3, problems
    gold = rs.check_recipe(book, "li_t4_holle_gold")
    assert gold == ["li_t4_holle_gold.train: adamw with --weight-decay 0.0 trains with torch's "
                    "default 0.01 (ParlAI passes only a non-zero value); use --optimizer adam for none"]
    # the unmodified file names every setting of every training stage
    for name in ("li_t7_coref", "zt_t1_holle_ours", "park_t1_odkg_ours"):
        assert rs.check_recipe(rb.load(), name) == [], name
    out = run_cli(["parlai-docgraph", "recipes", "check", "li_t7_coref", "--recipes-file", str(path)],
                  cwd=tmp_path)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "li_t7_coref" in out.stdout and "FAILED" in out.stdout
    assert "gradient_clip = 0.1 is inherited" in out.stdout


def test_node_relevance_is_false_in_every_paper_recipe(book):
    """--node-relevance (a frozen bi-encoder cosine, this package's addition) is off in every
    recipe that trains a selector: the papers' models have no such term."""
    trained = 0
    for name in {book.run_of(n).name for n in book.recipes}:
        for stage, argv in book.commands(name):
            if argv[0] != "train_model" or rb.option_value(argv, "-m") != "docgraph/graph_selector":
                continue
            trained += 1
            assert rs.resolve(argv)["node_relevance"] is False, (name, stage)
            stated = {h.key: h.value for h in book.hparams_of(name, stage)}
            assert stated.get("node_relevance") is False, (name, stage)
    assert trained == 16  # Li Tables 2, 3, 7 and Zhang & Tan Tables 1-3


def test_paper_protocol_options_in_the_recipes(book):
    """The papers' protocol values, as the recipes resolve them: Li Eq. 7's per-graph mean and
    in-sentence concept vectors, Zhang & Tan Eq. 1's own-text vectors, SKT's Holl-E movie
    titles, WoW's pinned --add-missing-turns, DialogGSR's stages and decoding."""
    def train_opt(name, stage="train"):
        return rs.resolve(dict(book.commands(name))[stage])

    ours = train_opt("li_t2_holle_ours")
    assert (ours["concept_loss_mean"], ours["node_text_encoding"], ours["holle_title"]) == (
        "graph", "in_sentence", "movie")
    assert train_opt("zt_t1_wow_ours")["node_text_encoding"] == "own_text"
    assert train_opt("li_t3_wow_ours")["add_missing_turns"] == "all"
    park = book.run_of("park_t1_odkg_ours")
    assert list(park.stages) == ["pretrain", "retriever", "train", "eval"]
    retriever, respond = train_opt("park_t1_odkg_ours", "retriever"), train_opt("park_t1_odkg_ours")
    assert retriever["gsr_stage"] == "retrieve" and respond["gsr_stage"] == "respond"
    assert respond["gsr_retriever_model_file"] == respond["init_model"] == "runs/park_t1_odkg_ours/retriever/model"
    assert (respond["katz_adjacency"], respond["gsr_lm_norm"], respond["gsr_bleu_lowercase"]) == (
        "count", "allowed", False)
    # every trained DialogGSR row lists the undisclosed lengths and caps
    for name in ("park_t1_odkg_ours", "park_t2_komodis_ours", "park_t5_hard_no_special_tokens",
                 "park_t5_hard_special_no_recon"):
        assert any("undisclosed lengths and caps" in d for d in book.get(name).deviations), name

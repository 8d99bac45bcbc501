"""
The package's command-line entry points, run in-process: the ``parlai-docgraph``
super-command, the ``python -m parlai_docgraph.bench.*`` studies, the tiny T5 asset script
and the long-document generator. Their end-to-end tests start a subprocess (and are
``slow``, see ``tests/suite_selection.py``); these keep every one of those modules in the
fast loop (``make test-fast``), which imports every module of the package.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

DOCQA = Path(__file__).resolve().parents[1] / "tasks" / "docgraph" / "sample_data" / "docqa"


def test_super_command_lists_stock_and_plugin_scripts(capsys):
    """``parlai-docgraph helpall``: ParlAI's commands plus this package's scripts and
    benchmarks, in one registry."""
    from parlai_docgraph import cli

    try:
        cli.main(["helpall"])
    except SystemExit as done:  # ParlAI's help may end through argparse
        assert done.code in (0, None)
    out = capsys.readouterr().out
    for command in ("train_model", "eval_model", "interactive", "datasets", "build_graphs",
                    "ablate", "bench"):
        assert command in out, command


@pytest.mark.parametrize("argv", [[], ["--help"], ["help"]],
                         ids=["bare", "--help", "help"])
def test_help_lists_the_commands(argv, capsys):
    """``parlai-docgraph``, ``parlai-docgraph --help`` and ``parlai-docgraph help`` print the
    command list, as stock ``parlai`` does. When the first word is not a command, ParlAI's
    super-command pre-parses the line with every script's parser: a script with a required
    positional argument answered with its own usage instead."""
    from parlai_docgraph import cli

    try:
        cli.main(argv)
    except SystemExit as done:
        assert done.code in (0, None)
    captured = capsys.readouterr()
    out = captured.out
    assert out.startswith("usage: ") and "COMMAND" in out.splitlines()[0], out[:300]
    for command in ("train_model", "interactive", "bench", "recipes", "chat"):
        assert f"\n  {command} " in out, command
    assert "Parse Error" not in captured.out + captured.err
    assert "``" not in out, "reStructuredText markup in a command's description"


def test_recipes_without_an_action_says_which_exist():
    from parlai_docgraph import cli
    from parlai_docgraph.recipes import RecipeError

    with pytest.raises(RecipeError, match="needs an action: one of list, show"):
        cli.main(["recipes"])


@pytest.mark.parametrize("module", ["graph_probe", "train_speed_methods"])
def test_study_modules_parse_their_options(module, monkeypatch, capsys):
    """``python -m parlai_docgraph.bench.<study> --help`` prints its usage and exits 0
    before any work starts."""
    import importlib

    study = importlib.import_module(f"parlai_docgraph.bench.{module}")
    monkeypatch.setattr(sys, "argv", [module, "--help"])
    with pytest.raises(SystemExit) as done:
        study.main() if module == "graph_probe" else study.main(["--help"])
    assert done.value.code == 0
    assert "usage" in capsys.readouterr().out.lower()


def test_gsr_train_knowledge_study_does_nothing_at_import():
    """The study without options defines ``main`` and runs only when called."""
    from parlai_docgraph.bench import gsr_train_knowledge

    assert callable(gsr_train_knowledge.main)


def test_long_document_holds_the_given_documents_then_distinct_prose():
    """The ``long_documents`` benchmark's document: the bundled documents first, then prose
    paragraphs of installed libraries' docstrings, each once, up to the size; the same
    every time."""
    from parlai_docgraph.bench.long_text import assemble_document, prose_paragraphs

    given = sorted(DOCQA.glob("*.md"))[:1]
    assert given, DOCQA
    text = assemble_document(20_000, given)
    assert text == assemble_document(20_000, given)
    assert len(text.encode()) >= 20_000
    first_line = given[0].read_text(encoding="utf-8").strip().splitlines()[0].lstrip("# ")
    assert text.index(first_line) < text.index("## numpy")
    paragraphs = [p for p in text.split("\n\n") if not p.startswith("#")]
    assert len(paragraphs) == len(set(paragraphs))
    assert list(prose_paragraphs(">>> import numpy\n>>> numpy.ones(3)")) == []
    sentence = "This paragraph is plain prose of more than twelve words and ends with a stop."
    assert list(prose_paragraphs(sentence)) == [sentence]


def test_no_plugin_script_has_a_required_option():
    """ParlAI's super-command pre-parses every command line with every script's parser, so
    one ``required=True`` option anywhere makes ``parlai-docgraph`` and ``--help`` print that
    script's usage (it happened twice: cmu_dog_labels' --reading, cmu_dog_margin's
    --logs-dir). Each script checks its own required options in ``run()`` instead."""
    from parlai.core.script import SCRIPT_REGISTRY, setup_script_registry

    from parlai_docgraph.scripts import register_all

    register_all()
    setup_script_registry()
    required = [f"{name}: {action.option_strings}"
                for name, entry in SCRIPT_REGISTRY.items()
                if entry.klass.__module__.startswith("parlai_docgraph")
                for action in entry.klass.setup_args()._actions
                if action.required and action.option_strings]
    assert not required, required

"""
The fast loop's selection (``tests/suite_selection.py``): what makes a test ``slow``, and
the list of modules ``make test-fast`` must import.
"""

from __future__ import annotations

import importlib

from suite_selection import (LONGEST_FILES, SLOW_CALLS, SLOW_TESTS, _slow_source,
                             package_modules)


def _sample_module(tmp_path, monkeypatch, name: str, body: str):
    """Import ``body`` as module ``name`` from a file (``inspect`` reads its source)."""
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


def test_a_slow_call_in_a_helper_of_the_same_module_is_found(tmp_path, monkeypatch):
    """A subprocess or training named in a function, or in a function of its own module
    that it calls, makes it slow; other functions stay fast. (The calls are built from
    :data:`SLOW_CALLS`, so this file's own source names none.)"""
    cli = next(call for call, why in SLOW_CALLS.items() if "CLI" in why)
    train = next(call for call, why in SLOW_CALLS.items() if why.endswith("train_model"))
    mod = _sample_module(tmp_path, monkeypatch, "selection_sample_a", (
        f"def runs():\n    return {cli}['parlai'])\n\n"
        f"def trains():\n    return {train}.main()\n\n"
        "def uses_helper():\n    return trains()\n\n"
        "def plain(x):\n    return x + 1\n\n"
        "def calls_plain():\n    return plain(1)\n"))
    assert _slow_source(mod.runs) == SLOW_CALLS[cli]
    assert _slow_source(mod.uses_helper) == f"trains: {SLOW_CALLS[train]}"
    assert _slow_source(mod.plain) == ""
    assert _slow_source(mod.calls_plain) == ""


def test_listed_tests_and_files_exist():
    """Every entry of :data:`SLOW_TESTS` names a test function that is still there, and
    every file of :data:`LONGEST_FILES` is a test file."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for name in LONGEST_FILES:
        assert (root / "tests" / name).is_file(), name
    for key in SLOW_TESTS:
        path, name = key.split("::")
        source = (root / path).read_text(encoding="utf-8")
        assert f"def {name.split('[')[0]}(" in source, key


def test_the_module_list_is_the_installed_package():
    """What ``--require-every-module`` asks for: every module of the installed packages
    (``tasks/`` and ``zoo/`` under their installed names), not the maintainer scripts in
    folders that are no package."""
    modules = package_modules()
    for name in ("parlai_docgraph", "parlai_docgraph.cli", "parlai_docgraph.graphs.schema",
                 "parlai_docgraph.tasks.docgraph.readers.holle", "parlai_docgraph.zoo.sample"):
        assert name in modules, name
    assert "parlai_docgraph.tasks.docgraph.sample_data.make_sample" not in modules
    assert len(modules) > 150

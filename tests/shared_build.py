"""
Build a test artefact once per test run, also when pytest-xdist runs the suite on several
workers (``make test``, ``make test-fast``: ``-n auto``).

A session fixture runs once per *process*; under xdist every worker would build the tiny
encoder, the model families and the zoo stand-in again. :func:`build_once` builds a folder
once for the whole run instead: under the run's shared temporary folder (the parent of each
worker's ``basetemp``), guarded by a :class:`filelock.FileLock` so one worker builds while
the others wait, and marked complete only after the build returned, so a build that failed
half-way is removed and built again, never read. Without xdist it is a plain
``tmp_path_factory.mktemp``. The folder is built in place (no rename afterwards), because
the artefacts record absolute paths (a model's ``--encoder-model``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

import pytest

#: written last into a built folder: the build finished
COMPLETE = ".complete"


def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this run sees: the parent of the worker's basetemp under
    xdist (``pytest-N/popen-gwK`` -> ``pytest-N``), the basetemp without it."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if base.name.startswith("popen-gw") else base


def build_once(tmp_path_factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], None]) -> Path:
    """The folder ``name``, filled by ``build(folder)`` once per test run (see the module
    docstring); callers only read it."""
    from filelock import FileLock

    root = shared_root(tmp_path_factory)
    folder = root / f"shared-{name}"
    with FileLock(str(root / f"shared-{name}.lock")):
        if not (folder / COMPLETE).exists():
            if folder.exists():  # a build that raised: start again
                shutil.rmtree(folder)
            folder.mkdir()
            build(folder)
            (folder / COMPLETE).write_text("")
    return folder

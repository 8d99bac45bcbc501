"""
``docs/architecture.md`` describes the tree as it is: every module it names exists, every
module of the installed package (``parlai_docgraph/``, ``tasks/``, ``zoo/``) is named, and
every function of its paper-equation tables is defined in the package.

Module paths in the page are relative to ``parlai_docgraph/`` or to the repository root.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, List, Set

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
SOURCES = (ROOT / "parlai_docgraph", ROOT / "tasks", ROOT / "zoo")
MODULE = re.compile(r"`([\w./]+\.py)`")
NAME = re.compile(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)`")


def named_modules(text: str) -> Set[str]:
    """The ``.py`` paths in backticks."""
    return set(MODULE.findall(text))


def resolve(name: str) -> Path:
    """The file a module path of the page names (``ROOT/name`` or ``ROOT/parlai_docgraph/name``)."""
    for base in (ROOT, ROOT / "parlai_docgraph"):
        if (base / name).is_file():
            return base / name
    return ROOT / "parlai_docgraph" / name


def package_modules() -> Dict[str, Path]:
    """Every module of the installed package but ``__init__``, as the page spells it."""
    out = {}
    for folder in SOURCES:
        for path in folder.rglob("*.py"):
            if path.name == "__init__.py":
                continue
            base = ROOT / "parlai_docgraph" if folder.name == "parlai_docgraph" else ROOT
            out[str(path.relative_to(base))] = path
    return out


def defined_names() -> Set[str]:
    """``f``, ``C`` and ``C.m`` for every top-level function / class and method."""
    names: Set[str] = set()
    for path in package_modules().values():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, ast.ClassDef):
                names.add(node.name)
                names.update(f"{node.name}.{m.name}" for m in node.body
                             if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return names


def equation_functions(text: str) -> List[str]:
    """The functions in the last column of the paper-equation tables."""
    section = text.split("## Paper equations in the code", 1)[1]
    out = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("Eq."):
            out += [n for n in NAME.findall(cells[2]) if not n.startswith("--")]
    return out


def test_every_named_module_exists():
    missing = sorted(m for m in named_modules(DOC.read_text(encoding="utf-8"))
                     if not resolve(m).is_file())
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_every_package_module_is_named():
    named = named_modules(DOC.read_text(encoding="utf-8"))
    absent = sorted(set(package_modules()) - named)
    assert not absent, f"modules missing from docs/architecture.md: {absent}"


def test_equation_functions_are_defined():
    functions = equation_functions(DOC.read_text(encoding="utf-8"))
    assert len(functions) > 20
    unknown = sorted(set(functions) - defined_names())
    assert not unknown, f"docs/architecture.md maps equations to unknown functions: {unknown}"


def test_checker_flags_a_missing_and_an_unnamed_module(tmp_path):
    text = "`graphs/store.py` and `graphs/no_such_module.py`"
    assert [m for m in named_modules(text) if not resolve(m).is_file()] == [
        "graphs/no_such_module.py"]
    assert "graphs/factory.py" in set(package_modules()) - named_modules(text)

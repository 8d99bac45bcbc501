"""
The one-path claims of ``docs/architecture.md`` as checks (beside the layer test), read from
the source with :mod:`ast`, nothing imported:

- graphs are built only by ``GraphFactory`` (the builders are called nowhere else);
- JSON data files are read only through ``parlai_docgraph/jsonio.py``;
- spaCy is imported only by ``parlai_docgraph/nlp.py``.

Each rule names the few modules it exempts, with the reason; a checker test plants a
violation to show the rule can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterable, List

ROOT = Path(__file__).resolve().parent.parent
SOURCES = (ROOT / "parlai_docgraph", ROOT / "tasks", ROOT / "zoo")

BUILDERS = {"build_document_graph", "build_multilevel_graph", "extend_document_graph"}
#: modules that may call a graph builder: the factory, the builders themselves (an extension
#: rebuilds), and the benchmark of parse caching, which times the builder with its own parsers
BUILDER_CALLERS = {"parlai_docgraph/graphs/factory.py", "parlai_docgraph/graphs/semantic.py",
                   "parlai_docgraph/graphs/multilevel.py", "parlai_docgraph/bench/scale.py"}
#: the module that may call ``json.load``: the walker itself (the generators of bundled files
#: live in ``tools/``, outside the package)
JSON_LOADERS = {"parlai_docgraph/jsonio.py"}
#: the modules that read data files a user or a dataset supplies (``json.loads`` of a line
#: there is a hand-rolled JSONL reader), and the one exempt: JSON inside a CSV cell
DATA_READERS = ("tasks/", "parlai_docgraph/graphs/corpus.py")
JSON_STRING_PARSERS = {"tasks/docgraph/readers/opendialkg.py"}
SPACY_IMPORTERS = {"parlai_docgraph/nlp.py"}


def sources() -> Dict[str, ast.AST]:
    """Repository-relative path -> parsed module, for every module of the package."""
    return {str(p.relative_to(ROOT)): ast.parse(p.read_text(encoding="utf-8"))
            for folder in SOURCES for p in sorted(folder.rglob("*.py"))}


def _called(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        base = func.value.id if isinstance(func.value, ast.Name) else ""
        return f"{base}.{func.attr}" if base else func.attr
    return ""


def calls(tree: ast.AST) -> Iterable[str]:
    """The names every call in ``tree`` calls (``f`` or ``module.f``)."""
    return (_called(n) for n in ast.walk(tree) if isinstance(n, ast.Call))


def builder_calls(trees: Dict[str, ast.AST]) -> List[str]:
    return sorted(path for path, tree in trees.items() if path not in BUILDER_CALLERS
                  and any(c.split(".")[-1] in BUILDERS for c in calls(tree)))


def json_file_reads(trees: Dict[str, ast.AST]) -> List[str]:
    out = set()
    for path, tree in trees.items():
        names = set(calls(tree))
        if "json.load" in names and path not in JSON_LOADERS:
            out.add(path)
        if ("json.loads" in names and path.startswith(DATA_READERS)
                and path not in JSON_STRING_PARSERS):
            out.add(path)
    return sorted(out)


def spacy_imports(trees: Dict[str, ast.AST]) -> List[str]:
    out = set()
    for path, tree in trees.items():
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            if any(n == "spacy" or n.startswith("spacy.") for n in names) \
                    and path not in SPACY_IMPORTERS:
                out.add(path)
    return sorted(out)


def test_graphs_are_built_only_by_the_factory():
    assert not builder_calls(sources()), "graph builders called outside GraphFactory"


def test_json_data_files_are_read_only_through_jsonio():
    assert not json_file_reads(sources()), "JSON read outside parlai_docgraph/jsonio.py"


def test_spacy_is_imported_only_by_nlp():
    assert not spacy_imports(sources()), "spaCy imported outside parlai_docgraph/nlp.py"


def test_checkers_flag_planted_violations():
    trees = {
        "parlai_docgraph/agents/pipeline/x.py": ast.parse(
            "from parlai_docgraph.graphs.semantic import build_document_graph\n"
            "def f(p):\n    return build_document_graph(p)\n"),
        "tasks/docgraph/y.py": ast.parse(
            "import json\ndef f(lines):\n    return [json.loads(l) for l in lines]\n"),
        "parlai_docgraph/kg/z.py": ast.parse("from spacy.util import filter_spans\n"),
        "parlai_docgraph/graphs/factory.py": ast.parse(
            "def f(p):\n    return build_document_graph(p)\n"),
    }
    assert builder_calls(trees) == ["parlai_docgraph/agents/pipeline/x.py"]
    assert json_file_reads(trees) == ["tasks/docgraph/y.py"]
    assert spacy_imports(trees) == ["parlai_docgraph/kg/z.py"]

"""
No import cycle inside the package, and no import of a higher layer (:data:`LAYERS`).

Every module of the installed package (``parlai_docgraph/``, plus ``tasks/`` and ``zoo/``
as they install, ``parlai_docgraph.tasks`` / ``parlai_docgraph.zoo``) is parsed with
:mod:`ast`, without importing anything. An edge ``a -> b`` is any import of ``b`` by
``a``: module-level or inside a function or class, ``import``/``from ... import``
(relative ones resolved), and ``importlib.import_module("<literal>")``. Imports under
``if TYPE_CHECKING:`` are left out (they never run). A cycle in that graph fails the
test with the modules of the cycle, in import order.

Beside the cycles and the layers (:data:`LAYERS`): every module under ``agents/`` imports
ParlAI (ParlAI glue only; a module that re-exports agent classes aside), and no module has
more than :data:`MAX_LINES` lines.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: source folder -> the package name it installs as (setup.py ``package_dir``)
PACKAGE_ROOTS = {
    ROOT / "parlai_docgraph": "parlai_docgraph",
    ROOT / "tasks": "parlai_docgraph.tasks",
    ROOT / "zoo": "parlai_docgraph.zoo",
}
#: Cycles allowed for now (the sorted set of modules of each); the test fails when one is
#: gone, so the entry is removed with the cycle. None left.
KNOWN_CYCLES: Set[frozenset] = set()


def module_files() -> Dict[str, Path]:
    """Installed module name -> source file, for every ``.py`` of the package."""
    out: Dict[str, Path] = {}
    for folder, package in PACKAGE_ROOTS.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package] + parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` in source order that does not enter ``if TYPE_CHECKING:`` bodies."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield other
                yield from _walk(other)
            continue
        yield child
        yield from _walk(child)


def _resolve(module: str, is_package: bool, level: int, name: Optional[str]) -> str:
    """Absolute name of ``from <level dots><name> import ...`` inside ``module``."""
    if level == 0:
        return name or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports_of(module: str, path: Path, known: Set[str]) -> Set[str]:
    """The package modules that ``module`` imports (see the module docstring)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    targets: Set[str] = set()
    for node in _walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node.level, node.module)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in known else base)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            targets.add(node.args[0].value)
    return {t for t in targets if t in known and t != module}


def import_graph() -> Dict[str, Set[str]]:
    files = module_files()
    known = set(files)
    return {m: imports_of(m, p, known) for m, p in files.items()}


def find_cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """One cycle (``[a, b, ..., a]``) per strongly connected component that has one."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    components: List[List[str]] = []

    def connect(v: str) -> None:  # Tarjan; the package is far below the recursion limit
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return [_cycle_in(comp, graph) for comp in components]


def _cycle_in(component: List[str], graph: Dict[str, Set[str]]) -> List[str]:
    """A shortest cycle through the first module of a strongly connected component."""
    members, start = set(component), component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle in component {component}")  # pragma: no cover


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 100 and "parlai_docgraph.tasks.docgraph.readers.holle" in graph
    cycles = find_cycles(graph)
    new = [c for c in cycles if frozenset(c) not in KNOWN_CYCLES]
    assert not new, "import cycles: " + "; ".join(" -> ".join(c) for c in new)
    gone = KNOWN_CYCLES - {frozenset(c) for c in cycles}
    assert not gone, f"no longer cyclic, remove from KNOWN_CYCLES: {sorted(map(sorted, gone))}"


#: The layers of the package, lowest first (docs/architecture.md): a module imports its
#: own layer or lower ones, never a higher one. Keyed by the first name under
#: ``parlai_docgraph``; the package's ``__init__`` is ``""``.
LAYERS = (
    ("", "_hook", "compat", "lazy_scripts", "env", "atomic", "memo", "nlp", "text_metrics", "metrics", "assets",
     "reply_quality", "jsonio", "textnorm", "dataset_errors", "lazy", "signed_processor"),
    ("graphs", "kg", "recipes"),
    ("models",),
    ("tasks", "agents"),
    ("scripts", "bench", "zoo", "cli"),
)


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of a package module (``KeyError`` for a new top name)."""
    top = module.split(".")[1] if "." in module else ""
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise KeyError(f"{module}: add its top-level name {top!r} to LAYERS")


def upward_imports(graph: Dict[str, Set[str]]) -> List[str]:
    """``"a -> b"`` for every import of a higher layer."""
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if layer_of(b) > layer_of(a))


def test_layers_only_import_downward() -> None:
    graph = import_graph()
    assert not upward_imports(graph), "upward imports:\n" + "\n".join(upward_imports(graph))


def test_layer_checker_flags_an_upward_import() -> None:
    graph = {"parlai_docgraph.graphs.x": {"parlai_docgraph.agents.y"},
             "parlai_docgraph.agents.y": {"parlai_docgraph.graphs.x"}}
    assert upward_imports(graph) == ["parlai_docgraph.graphs.x -> parlai_docgraph.agents.y"]


# ------------------------------------------------------------------ the checker itself


def _write(root: Path, files: Dict[str, str]) -> Dict[str, Path]:
    out = {}
    for name, text in files.items():
        path = root / (name.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out[name] = path
    return out


@pytest.mark.parametrize(
    "b_text, cyclic",
    [
        ("def f():\n    from . import a\n", True),  # function-level import counts
        ("import importlib\nm = importlib.import_module('pkg.a')\n", True),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import X\n", False),
        ("from .c import Y\n", False),
    ],
)
def test_checker_finds_cycles(tmp_path: Path, b_text: str, cyclic: bool) -> None:
    files = _write(tmp_path, {
        "pkg.a": "from .b import g\n", "pkg.b": b_text, "pkg.c": "Y = 1\n",
    })
    known = set(files)
    graph = {m: imports_of(m, p, known) for m, p in files.items()}
    cycles = find_cycles(graph)
    assert cycles == ([["pkg.a", "pkg.b", "pkg.a"]] if cyclic else [])


def test_models_import_no_parlai() -> None:
    import subprocess
    import sys

    code = ("import sys, parlai_docgraph.models; "
            "sys.exit(any(m == 'parlai' or m.startswith('parlai.') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


# ------------------------------------------------------------------ agents are ParlAI glue


def imports_parlai(path: Path) -> bool:
    """Whether a module imports ParlAI (``parlai`` or ``parlai.*``, at any level)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        names: List[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        if any(n == "parlai" or n.startswith("parlai.") for n in names):
            return True
    return False


#: assignments a re-export may hold: ``__all__``, and the lazy form
#: (``_EXPORTS = {...}``; ``__getattr__, __dir__ = lazy_exports(...)``)
REEXPORT_NAMES = {"__all__", "_EXPORTS", "__getattr__", "__dir__"}


def is_reexport(path: Path) -> bool:
    """A module that only re-exports other agent modules (a docstring and ``__all__``
    aside), at once or lazily (:mod:`parlai_docgraph.lazy`): a package's ``__init__`` or
    ``agents.py``, where ParlAI looks an agent class up."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.ImportFrom) and (
                node.level > 0 or (node.module or "").startswith("parlai_docgraph.agents")
                or node.module == "parlai_docgraph.lazy"):
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            if all(isinstance(n, ast.Name) and n.id in REEXPORT_NAMES for n in names):
                continue
        return False
    return True


def not_glue(files: Dict[str, Path]) -> List[str]:
    """Modules under ``parlai_docgraph.agents`` that import no ParlAI and are no re-export:
    their home is a lower layer (``graphs``, ``kg``, ``models``)."""
    return sorted(m for m, p in files.items()
                  if m.startswith("parlai_docgraph.agents.") or m == "parlai_docgraph.agents"
                  if not imports_parlai(p) and not is_reexport(p))


def test_agents_hold_only_parlai_glue() -> None:
    bad = not_glue(module_files())
    assert not bad, "modules under agents/ that import no ParlAI (move them down):\n" + \
        "\n".join(bad)


def test_glue_checker_flags_a_module_without_parlai(tmp_path: Path) -> None:
    files = _write(tmp_path, {
        "parlai_docgraph.agents.x.agent": "def f():\n    from parlai.core.opt import Opt\n",
        "parlai_docgraph.agents.x": '"""doc"""\nfrom .agent import f\n__all__ = ["f"]\n',
        "parlai_docgraph.agents.x.pure": "import torch\nfrom parlai_docgraph import memo\n",
    })
    assert not_glue(files) == ["parlai_docgraph.agents.x.pure"]


# ------------------------------------------------------------------ module size

#: the most lines a module of the package may have (one concept per module)
MAX_LINES = 400


def long_modules(files: Dict[str, Path]) -> List[str]:
    """``"module: N lines"`` for every module over :data:`MAX_LINES`."""
    counts = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in files.items()}
    return sorted(f"{m}: {n} lines" for m, n in counts.items() if n > MAX_LINES)


def test_no_module_is_over_400_lines() -> None:
    long = long_modules(module_files())
    assert not long, f"modules over {MAX_LINES} lines (split them):\n" + "\n".join(long)


def test_size_checker_flags_a_long_module(tmp_path: Path) -> None:
    files = _write(tmp_path, {"pkg.short": "x = 1\n" * MAX_LINES,
                              "pkg.long": "x = 1\n" * (MAX_LINES + 1)})
    assert long_modules(files) == [f"pkg.long: {MAX_LINES + 1} lines"]

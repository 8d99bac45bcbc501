"""
Docstrings and comments name modules, objects and files that exist.

Read from the source with :mod:`ast` and :mod:`tokenize`, nothing imported. In every Python
file of the repository (the package, ``tasks/``, ``zoo/``, ``tools/``, ``tests/``,
``docs/_ext/``, ``setup.py``):

- a Sphinx role naming one of our modules (``:mod:``) or objects (``:func:``, ``:class:``,
  ``:meth:``, ``:data:``, ``:attr:``, ``:exc:``), and a ``parlai_docgraph.<module>`` literal,
  resolves: an absolute name to its module and the names that module defines (a class's
  attributes included); a name with leading dots, as Sphinx reads it, to some module or
  object whose name ends with it;
- the modules a package docstring lists after "Modules" are modules of that package;
- a file named in a docstring or comment exists: a path under one of the repository's
  folders (``parlai_docgraph/``, ``tasks/``, ``tests/``, ``docs/``, ...), a path relative to
  the module's own folder, a ``.py`` or ``.pth`` file by its bare name, and a ParlAI source
  file (``parlai/...``, looked up in the installed ParlAI without importing it).

Names with placeholders (``<datapath>/...``, ``{runs}``) are not checked; files of other
projects that a docstring cites are listed in :data:`FOREIGN_FILES` with where they live.
A checker test plants each kind of bad name to show the rules can fail.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import io
import os
import re
import tokenize
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("parlai_docgraph", "tasks", "zoo", "tools", "tests", "docs/_ext")
#: first path components that mean "a file of this repository"
REPO_DIRS = ("parlai_docgraph", "tasks", "zoo", "tools", "tests", "docs", "requirements",
             ".ci")
#: files of other projects that docstrings cite (their code is the reference for ours)
FOREIGN_FILES = {
    "langid.py": "the langid package (nlp.py's language detection)",
    "preprocess_data.py": "OpenDialKG's repository (its split script)",
    "preprocess/preprocess_data.py": "OpenDialKG's repository",
    "model/dataset.py": "the KOMODIS repository",
    "data/holle.py": "SKT's repository (Kim et al. 2020), its Holl-E conversion",
    "main_data/dev_data.json": "the Holl-E release's folder layout",
    "1_Pooling/config.json": "a sentence-transformers model folder",
    "datasets.md": "the project's dataset notes (../shared/docs/, not shipped)",
    "anchors.md": "the project's notes on the papers' code (../shared/docs/, not shipped)",
}
#: files a docstring names that the repository does not hold, with the reason
NOT_SHIPPED = {
    "tasks/docgraph/splits/komodis_split.json":
        "written by tools/make_komodis_split.py; the teacher uses it when present",
}
ROLE = re.compile(r":(mod|func|class|meth|data|attr|exc|obj):`~?([^`<>]+?)(?:\(\))?`")
DOTTED = re.compile(r"``(parlai_docgraph(?:\.\w+)+)``")
EXTENSIONS = r"py|pth|md|json|jsonl|yaml|yml|txt|html|cfg|ini|toml|csv|png"
PATH = re.compile(r"(?<![\w./<>{}$~-])((?:[\w.*-]+/)*[\w*-]+(?:\.(?:" + EXTENSIONS + r"))?)"
                  r"(?![\w/<>{}-])")
#: a package docstring's module list: "Modules: ``agent`` (...), ``args`` (...)"
MODULES_PARAGRAPH = re.compile(r"\bModules\b[^:]*:(.*?)(?:\n\s*\n|$)", re.S)
LISTED = re.compile(r"``([a-z_][a-z0-9_]*)``(?=\s*[(:,]|\s+and\b)|\(``([a-z_][a-z0-9_]*)``\)")


# ---------------------------------------------------------------------- the repository
#: folders that hold no file of the repository (.gitignore's, and what builds write)
UNTRACKED_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", "build",
                  "dist", "_build", "gen"}


def repo_files() -> List[str]:
    """The repository's files, repository-relative, without the git-ignored ones (read from
    the disk: the checkout is what a user reads)."""
    out = []
    for folder, dirs, names in os.walk(ROOT):
        rel = Path(folder).relative_to(ROOT)
        dirs[:] = sorted(d for d in dirs if d not in UNTRACKED_DIRS
                         and not d.endswith(".egg-info")
                         and not (rel == Path(".") and d in ("data", "demo")))
        out += [str(rel / n) if str(rel) != "." else n for n in sorted(names)
                if not n.endswith(".pyc")]
    return out


def python_files() -> List[str]:
    return [f for f in repo_files()
            if f.endswith(".py") and (f.startswith(FOLDERS) or f == "setup.py")]


def module_name(path: str) -> Optional[str]:
    """``parlai_docgraph/graphs/store.py`` -> ``parlai_docgraph.graphs.store`` (``tasks/`` and
    ``zoo/`` install as ``parlai_docgraph.tasks`` / ``parlai_docgraph.zoo``); None outside."""
    parts = list(Path(path).with_suffix("").parts)
    if parts[0] in ("tasks", "zoo"):
        parts = ["parlai_docgraph"] + parts
    elif parts[0] != "parlai_docgraph":
        return None
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _assigned(targets: Iterable[ast.AST]) -> Iterator[str]:
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                yield node.id
            elif isinstance(node, ast.Attribute):
                yield node.attr


def _lazy_exports(table: ast.expr) -> Iterator[str]:
    """The names of a package's ``_EXPORTS`` dict (``{"name": "module", **{n: "module" for
    n in ("a", "b")}}``)."""
    for node in ast.walk(table):
        if isinstance(node, ast.Dict):
            yield from (k.value for k in node.keys
                        if isinstance(k, ast.Constant) and isinstance(k.value, str))
        elif isinstance(node, ast.DictComp):
            yield from (e.value for e in ast.walk(node)
                        if isinstance(e, ast.Constant) and isinstance(e.value, str))


def defined_names(tree: ast.Module) -> Dict[str, Set[str]]:
    """Top-level name -> its attributes (a class's methods, nested classes and assigned
    names, ``self.x`` included; empty for other names). Imports count: a package re-exports,
    at once or lazily."""
    names: Dict[str, Set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            members = names.setdefault(node.name, set())
            for inner in ast.walk(node):
                if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    members.add(inner.name)
                elif isinstance(inner, ast.Assign):
                    members.update(_assigned(inner.targets))
                elif isinstance(inner, ast.AnnAssign):
                    members.update(_assigned([inner.target]))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.setdefault(node.name, set())
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.setdefault((alias.asname or alias.name).split(".")[0], set())
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for name in _assigned(node.targets):
                names.setdefault(name, set())
            if any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets):
                for name in _lazy_exports(node.value):  # parlai_docgraph.lazy's table
                    names.setdefault(name, set())
        elif isinstance(node, ast.AnnAssign):
            for name in _assigned([node.target]):
                names.setdefault(name, set())
    return names


class Index:
    """Our modules and the qualified names of what each defines."""

    def __init__(self, trees: Dict[str, ast.Module]) -> None:
        self.modules: Dict[str, Dict[str, Set[str]]] = {}
        for path, tree in trees.items():
            name = module_name(path)
            if name:
                self.modules[name] = defined_names(tree)
        self.qualified: Set[str] = set(self.modules)
        for mod, names in self.modules.items():
            for name, members in names.items():
                self.qualified.add(f"{mod}.{name}")
                self.qualified.update(f"{mod}.{name}.{m}" for m in members)

    def resolves(self, target: str, role: str) -> bool:
        if target.startswith("."):  # Sphinx: any name that ends with it
            suffix = "." + target.lstrip(".")
            pool = self.modules if role == "mod" else self.qualified
            return any(("." + name).endswith(suffix) for name in pool)
        if role == "mod":
            return target in self.modules
        parts = target.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if module in self.modules:
                names, rest = self.modules[module], parts[cut:]
                if rest[0] not in names:
                    return False
                return len(rest) == 1 or (len(rest) == 2 and rest[1] in names[rest[0]])
        return False


# ---------------------------------------------------------------------- what text names
def docstrings(tree: ast.Module) -> Iterator[Tuple[int, str, bool]]:
    """``(line, text, is_module_docstring)`` of every docstring."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield (node.body[0].lineno, text, isinstance(node, ast.Module))


def comments(source: str) -> Iterator[Tuple[int, str]]:
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string
    except (tokenize.TokenError, SyntaxError):
        return


def bad_names(path: str, docs: List[Tuple[int, str, bool]], index: Index) -> List[str]:
    """``path:line: name`` for each module or object of ours a docstring names that does not
    exist, and for each module a package docstring lists that the package lacks."""
    out = []
    here = module_name(path)
    for line, text, is_module in docs:
        for role, target in ROLE.findall(text):
            target = target.strip()
            absolute = target.startswith("parlai_docgraph")
            if (absolute or target.startswith(".")) and "." in target.lstrip("."):
                if not index.resolves(target, role):
                    out.append(f"{path}:{line}: :{role}:`{target}`")
            elif role == "mod" and target.startswith(".") and not index.resolves(target, role):
                out.append(f"{path}:{line}: :{role}:`{target}`")
        for target in DOTTED.findall(text):
            if not (index.resolves(target, "mod") or index.resolves(target, "obj")):
                out.append(f"{path}:{line}: ``{target}``")
        if is_module and path.endswith("__init__.py") and here:
            for paragraph in MODULES_PARAGRAPH.findall(text):
                for a, b in LISTED.findall(paragraph):
                    name = a or b
                    if f"{here}.{name}" not in index.modules and not (
                            ROOT / Path(path).parent / name).is_dir():
                        out.append(f"{path}:{line}: module ``{name}`` of {here}")
    return out


@lru_cache(maxsize=1)
def parlai_root() -> Optional[Path]:
    spec = importlib.util.find_spec("parlai")
    return Path(spec.origin).parent.parent if spec and spec.origin else None


def known_paths(files: Iterable[str]) -> Set[str]:
    """The repository's files and every folder above one."""
    out = set()
    for f in files:
        out.add(f)
        out.update(str(parent) for parent in Path(f).parents if str(parent) != ".")
    return out


def file_exists(name: str, path: str, known: Set[str], basenames: Set[str]) -> bool:
    """Whether the file or folder ``name``, named in ``path``, exists (see the module doc)."""
    if name in FOREIGN_FILES or name in NOT_SHIPPED:
        return True
    name = name.rstrip("/")
    here = Path(path).parent
    if "*" in name:
        return any(fnmatch.fnmatch(k, pattern) for k in known
                   for pattern in (name, str(here / name)))
    first = name.split("/")[0]
    if first == "parlai":
        root = parlai_root()
        return root is None or (root / name).exists()
    if first in REPO_DIRS:
        return name in known
    if "/" in name:
        relative = os.path.normpath(here / name)
        root = parlai_root()
        return (relative in known or relative in NOT_SHIPPED
                or any(f"{base}/{name}" in known for base in ("parlai_docgraph", "docs"))
                or (root is not None and (root / "parlai" / name).exists()))
    return name in basenames


def named_files(text: str) -> Iterator[str]:
    """Files a text names: under a repository folder, relative with a file extension, a bare
    ``.py`` / ``.pth`` name, or ParlAI's ``parlai/...`` source."""
    for match in PATH.finditer(text):
        name = match.group(1).rstrip(".")
        if name.startswith("."):  # ".../x.json": elided, or a relative module name
            continue
        first = name.split("/")[0]
        if first in REPO_DIRS or first == "parlai":
            if "/" in name:
                yield name
        elif re.search(r"\.(" + EXTENSIONS + r")$", name) and "/" in name:
            yield name
        elif re.search(r"\.(py|pth)$", name):
            yield name


def missing_files(path: str, source: str, docs: List[Tuple[int, str, bool]],
                  known: Set[str], basenames: Set[str]) -> List[str]:
    texts = [(line, text) for line, text, _ in docs] + list(comments(source))
    return [f"{path}:{line}: {name}" for line, text in texts for name in named_files(text)
            if not file_exists(name, path, known, basenames)]


def scan(trees: Dict[str, ast.Module], sources: Dict[str, str], files: Set[str]
         ) -> List[str]:
    index = Index(trees)
    known = known_paths(files)
    basenames = {Path(f).name for f in files}
    out = []
    for path, tree in trees.items():
        docs = list(docstrings(tree))
        out += bad_names(path, docs, index)
        out += missing_files(path, sources[path], docs, known, basenames)
    return out


#: made by ``make docs`` (git-ignored): a page may link them
GENERATED = ("docs/_build/", "docs/gen/")


def markdown_missing_files(path: str, text: str, known: Set[str]) -> List[str]:
    """Repository files (with an extension: a unit such as docs per second is none) a page names in
    code spans (``parlai_docgraph/...``, ``docs/...``) that do not exist; its links are
    checked by the docs build."""
    out = []
    for span in re.findall(r"`([^`\n]+)`", text):
        for name in named_files(span):
            if (name.split("/")[0] in REPO_DIRS and "." in Path(name).name
                    and not name.startswith(GENERATED)
                    and not file_exists(name, path, known, set())):
                out.append(f"{path}: {name}")
    return out


# ---------------------------------------------------------------------- the tests
def test_docstrings_and_comments_name_what_exists():
    files = repo_files()
    sources = {p: (ROOT / p).read_text(encoding="utf-8") for p in python_files()}
    trees = {p: ast.parse(s) for p, s in sources.items()}
    problems = scan(trees, sources, set(files))
    assert not problems, "names of nothing:\n" + "\n".join(problems)


def test_markdown_pages_name_files_that_exist():
    """The README, the documentation's pages and the package's notes (not the CHANGELOG,
    which tells of files that are gone)."""
    files = repo_files()
    known = known_paths(files)
    pages = [f for f in files if f.endswith(".md") and f != "CHANGELOG.md"]
    problems = [p for page in pages
                for p in markdown_missing_files(page, (ROOT / page).read_text("utf-8"), known)]
    assert not problems, "names of nothing:\n" + "\n".join(problems)
    planted = "Run `python tools/make_sampel.py`; the page is `docs/gen/results.md`."
    assert markdown_missing_files("docs/x.md", planted, known) == [
        "docs/x.md: tools/make_sampel.py"]


def test_checker_flags_planted_bad_names():
    good = {
        "parlai_docgraph/graphs/__init__.py": '"""Graphs: :mod:`.store`."""\n',
        "parlai_docgraph/graphs/store.py": "class GraphStore:\n    def get(self):\n"
                                           "        pass\n",
        "parlai_docgraph/agents/pipeline/__init__.py":
            '"""Modules: ``agent`` (the agent), ``messages`` (its fields)."""\n',
        "parlai_docgraph/agents/pipeline/agent.py": "X = 1\n",
        "parlai_docgraph/agents/pipeline/messages.py": "Y = 1\n",
        "parlai_docgraph/x.py": '"""See :meth:`parlai_docgraph.graphs.store.GraphStore.get`,\n'
                                ':class:`~.store.GraphStore`, ``parlai_docgraph.graphs.store``,\n'
                                "``parlai_docgraph_hook.pth`` and ``tests/conftest.py``.\n"
                                '"""\n# parlai/core/torch_agent.py\n',
    }
    planted = {
        "parlai_docgraph/graphs/__init__.py": '"""Graphs: :mod:`.cache`."""\n',
        "parlai_docgraph/agents/pipeline/__init__.py":
            '"""Modules: ``agent`` (the agent), ``interactive`` (gone)."""\n',
        "parlai_docgraph/x.py": '"""See :meth:`parlai_docgraph.graphs.store.GraphStore.put`,\n'
                                ':class:`~.stores.GraphStore`, ``parlai_docgraph.graph.store``,\n'
                                "``parlai_docgraph-hook.pth`` and ``tests/conftest2.py``.\n"
                                '"""\n# parlai/core/torch_agents.py\n',
    }
    files = {"parlai_docgraph_hook.pth", "tests/conftest.py", *good}

    def run(sources):
        return scan({p: ast.parse(s) for p, s in sources.items()}, sources, files)

    assert run(good) == []
    found = "\n".join(run({**good, **planted}))
    for bad in (":mod:`.cache`", "module ``interactive``", "GraphStore.put", ".stores.GraphStore",
                "parlai_docgraph.graph.store", "parlai_docgraph-hook.pth", "tests/conftest2.py"):
        assert bad in found, (bad, found)
    if parlai_root() is not None:
        assert "parlai/core/torch_agents.py" in found
    assert len(found.splitlines()) == 8 if parlai_root() else 7, found

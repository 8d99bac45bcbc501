"""
Long documents for the ``long_documents`` benchmark and for trying the chat on a book-sized
file: real English prose of any size, assembled deterministically from what is installed.

:func:`assemble_document` writes a Markdown document of about ``size`` bytes: the given
documents first (e.g. bundled ``docgraph:docqa`` documents, so there are questions with known
answers inside it), then prose paragraphs of the docstrings of installed libraries (numpy, scipy, torch,
transformers, ...), each under a ``## module.function`` heading. A docstring paragraph is
kept when it reads as prose: at least 12 words, mostly letters, no doctest or code lines,
each distinct paragraph once. The text is distinct throughout, so caches keyed by sentence
(the parse cache, the embedding cache) do not make a long document cheaper than it is, and
the same installed versions give the same document.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from typing import Iterator, List, Sequence, Tuple

#: libraries whose docstrings are read, in this order
SOURCES: Tuple[str, ...] = ("numpy", "scipy", "sklearn", "networkx", "torch", "transformers",
                            "spacy", "nltk", "parlai", "sympy", "pandas", "tqdm")
CODE_LINE = re.compile(r"^\s*(>>>|\.\.\.|[-=~*]{3,}|\w+\s*:\s*\w+.*$|\$ )")
DOCQA = Path(__file__).resolve().parents[2] / "tasks" / "docgraph" / "sample_data" / "docqa"


def _docqa_folder() -> Path:
    """The bundled docqa documents (the source tree's, else the installed
    ``parlai_docgraph.tasks``)."""
    if DOCQA.is_dir():
        return DOCQA
    spec = importlib.util.find_spec("parlai_docgraph.tasks.docgraph")
    if spec and spec.submodule_search_locations:
        folder = Path(list(spec.submodule_search_locations)[0]) / "sample_data" / "docqa"
        if folder.is_dir():
            return folder
    raise FileNotFoundError(f"the bundled docqa documents are missing ({DOCQA})")


def prose_paragraphs(doc: str) -> Iterator[str]:
    """The prose paragraphs of one docstring (see the module docstring)."""
    for block in re.split(r"\n\s*\n", doc):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines or any(CODE_LINE.match(line) for line in lines):
            continue
        text = " ".join(line.strip() for line in lines)
        words = text.split()
        letters = sum(ch.isalpha() or ch == " " for ch in text)
        if len(words) >= 12 and letters >= 0.85 * len(text) and text[-1] in ".!?":
            yield text


def docstring_sections(packages: Sequence[str] = SOURCES) -> Iterator[Tuple[str, List[str]]]:
    """``(heading, paragraphs)`` of every documented module, class and function of
    ``packages``, files in path order."""
    for package in packages:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(list(spec.submodule_search_locations)[0])
        for file in sorted(root.rglob("*.py")):
            try:
                tree = ast.parse(file.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            module = ".".join((package,) + file.relative_to(root).with_suffix("").parts)
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                     ast.AsyncFunctionDef)):
                    doc = ast.get_docstring(node)
                    if doc:
                        name = module if isinstance(node, ast.Module) else f"{module}.{node.name}"
                        paragraphs = list(prose_paragraphs(doc))
                        if paragraphs:
                            yield name, paragraphs


def assemble_document(size: int, documents: Sequence[Path] = ()) -> str:
    """A Markdown document of at least ``size`` bytes (UTF-8), or every paragraph there is:
    the ``documents`` (text/Markdown files; their top heading becomes a ``##`` section), then
    docstring prose (see the module docstring)."""
    parts: List[str] = ["# A long document\n"]
    total = len(parts[0])
    for file in documents:
        text = Path(file).read_text(encoding="utf-8").strip()
        section = re.sub(r"^# ", "## ", text, flags=re.M) if text.startswith("#") \
            else f"## {Path(file).stem.replace('_', ' ')}\n\n{text}"
        parts.append(section + "\n")
        total += len(section.encode()) + 2
    seen = set()
    for heading, paragraphs in docstring_sections():
        if total >= size:
            break
        fresh = [p for p in paragraphs if p not in seen]
        if not fresh:
            continue
        seen.update(fresh)
        section = f"## {heading}\n\n" + "\n\n".join(fresh) + "\n"
        parts.append(section)
        total += len(section.encode()) + 1
    return "\n".join(parts)

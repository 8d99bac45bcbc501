"""
Plain documents as knowledge pools: one reader for ``parlai interactive --documents``,
the browser chat, ``docgraph:docqa`` and ``build_graphs --corpus PATH``, so a graph built
ahead of time is the graph the agent builds for the same file.

:func:`document_passages`: one text / Markdown document -> ``[(title, [sentence, ...]),
...]``. Paragraphs (blocks separated by blank lines) are passages; a paragraph's title is
its Markdown heading (``# ...``) or, failing that, the document's title: its first heading,
else its first line when that line is short and has no final punctuation, else the given
default (the file name, or a JSONL row's ``title``). Each Markdown list item (``-``, ``*``,
``+``, ``1.``) is split on its own, its marker dropped, so a table-like list gives one
sentence per item; other lines are joined and split by spaCy's rule-based ``sentencizer``
(punctuation rules, no model).

A corpus (:func:`read_corpus`) is a folder of ``.txt`` / ``.md`` files (searched
recursively, in path order) or a JSONL file of ``{"title": str, "text": str}`` objects (one
document per line), each document one pool. Bad input loses nothing else: it yields
``(where, pool_or_None, error)`` with ``where`` = ``file`` or ``file:line``, so a malformed
JSONL row or an unreadable file is reported with its place and the rest of the corpus is
still built.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple, Union

from parlai_docgraph.nlp import sentences

Pool = List[Tuple[str, List[str]]]
SUFFIXES = (".txt", ".md", ".markdown")
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,3}[.)])\s+")
TITLE_MAX_CHARS = 80


def split_sentences(text: str) -> List[str]:
    """The sentences of ``text`` (spaCy's punctuation-based ``sentencizer``, see
    :func:`parlai_docgraph.nlp.sentences`; whitespace inside them collapsed)."""
    return [s.strip() for s in sentences(" ".join(text.split())) if s.strip()]


def _units(lines: Sequence[str]) -> List[str]:
    """The lines of a block grouped into list items (markers dropped) and running text."""
    units: List[str] = []
    item = False
    for line in lines:
        marker = LIST_ITEM.match(line)
        if marker:
            units.append(line[marker.end():])
        elif units and not item or units and line.startswith((" ", "\t")):
            units[-1] += " " + line
        else:
            units.append(line)
        item = bool(marker) or item and line.startswith((" ", "\t"))
    return units


def _looks_like_title(line: str) -> bool:
    line = line.strip()
    return 0 < len(line) <= TITLE_MAX_CHARS and line[-1] not in ".!?;:,"


def document_passages(text: str, default_title: str) -> Pool:
    """``[(title, [sentence, ...]), ...]`` of one document (see the module docstring);
    ``[]`` when it has no sentences."""
    blocks = [b.strip("\n") for b in re.split(r"\n\s*\n", text) if b.strip()]
    if not blocks:
        return []
    doc_title = default_title
    first = blocks[0].splitlines()[0]
    heading = HEADING.match(first)
    if heading:
        doc_title = heading.group(1) or default_title
    elif _looks_like_title(first):
        doc_title = first.strip()
    passages: Pool = []
    title = doc_title
    for block in blocks:
        lines = block.splitlines()
        heading = HEADING.match(lines[0])
        if heading:
            title = heading.group(1) or doc_title
            lines = lines[1:]
        elif block is blocks[0] and _looks_like_title(lines[0]) and len(lines) > 1:
            lines = lines[1:]
        elif block is blocks[0] and _looks_like_title(lines[0]):
            continue  # a title line alone
        sentences = [s for unit in _units(lines) for s in split_sentences(unit)]
        if sentences:
            passages.append((title, sentences))
    return passages


def read_document(path: str) -> Pool:
    """
    ``[(title, [sentence, ...]), ...]`` of one document (see the module docstring).
    ``FileNotFoundError`` / ``ValueError`` (no text) name the file.
    """
    text = Path(path).read_text(encoding="utf-8")
    if not text.strip():
        raise ValueError(f"{path}: the document has no text")
    passages = document_passages(text, Path(path).stem)
    if not passages:
        raise ValueError(f"{path}: the document has headings but no sentences")
    return passages


def load_documents(paths: Sequence[str]) -> Tuple[Pool, List[str]]:
    """
    The passages of every readable document in ``paths`` and one message per document
    that could not be used (missing, unreadable, empty); never raises for a bad file.
    """
    passages: Pool = []
    problems: List[str] = []
    for path in paths:
        path = os.path.expanduser(path)
        if not os.path.isfile(path):
            problems.append(f"document not found: {path} (skipped)")
            continue
        try:
            passages.extend(read_document(path))
        except (OSError, UnicodeDecodeError, ValueError) as err:
            problems.append(f"document not used: {err}")
    return passages, problems


def read_corpus(path: Union[str, Path]) -> Iterator[Tuple[str, Optional[Pool], Optional[str]]]:
    """``(where, pool, None)`` per document, or ``(where, None, reason)`` for bad input;
    ``ValueError`` when ``path`` is neither a folder nor a ``.jsonl`` file."""
    root = Path(path)
    if root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
        if not files:
            raise ValueError(f"--corpus {path}: no {'/'.join(SUFFIXES)} files in this folder")
        for file in files:
            where = str(file)
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                yield where, None, f"unreadable file: {type(exc).__name__}: {exc}"
                continue
            pool = document_passages(text, file.stem)
            yield (where, pool, None) if pool else (where, None, "no sentences in this document")
        return
    if root.is_file() and root.suffix.lower() == ".jsonl":
        with root.open(encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                where = f"{root}:{number}"
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    title, text = row["title"], row["text"]
                    if not isinstance(title, str) or not isinstance(text, str):
                        raise TypeError("title and text must be strings")
                except (ValueError, KeyError, TypeError) as exc:
                    yield where, None, f"malformed row (want {{\"title\", \"text\"}}): {exc}"
                    continue
                pool = document_passages(text, title)
                yield (where, pool, None) if pool else (where, None, "no sentences in this document")
        return
    raise ValueError(f"--corpus {path}: expected a folder of .txt/.md files or a .jsonl file "
                     "of {\"title\", \"text\"} objects")

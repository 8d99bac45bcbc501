"""
Plain document corpora as knowledge pools (``build_graphs --corpus PATH``).

A corpus is a folder of ``.txt`` / ``.md`` files (searched recursively, in path order) or a
JSONL file of ``{"title": str, "text": str}`` objects (one document per line). Each
document becomes one pool ``[(title, [sentence, ...]), ...]``: paragraphs (separated by
blank lines) are passages; in Markdown a heading line (``# ...``) titles the paragraphs that
follow it, otherwise the title is the document's (file name without suffix, or the JSONL
``title``). Sentences are split by spaCy's rule-based ``sentencizer`` (punctuation rules,
no model).

Bad input loses nothing else: :func:`read_corpus` yields ``(where, pool_or_None, error)``
with ``where`` = ``file`` or ``file:line``, so a malformed JSONL row or an unreadable file
is reported with its place and the rest of the corpus is still built.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, List, Optional, Tuple, Union

Pool = List[Tuple[str, List[str]]]
SUFFIXES = (".txt", ".md", ".markdown")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")


@lru_cache(maxsize=1)
def _sentencizer() -> Any:
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def split_sentences(text: str) -> List[str]:
    """The sentences of one paragraph (whitespace inside them collapsed)."""
    text = " ".join(text.split())
    if not text:
        return []
    return [s.text.strip() for s in _sentencizer()(text).sents if s.text.strip()]


def document_pool(title: str, text: str) -> Pool:
    """One document's pool: a passage per paragraph, Markdown headings as titles."""
    pool: Pool = []
    current, lines = title, []

    def flush() -> None:
        sentences = split_sentences(" ".join(lines))
        if sentences:
            pool.append((current, sentences))
        lines.clear()

    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            flush()
            current = heading.group(1) or title
        elif not line.strip():
            flush()
        else:
            lines.append(line)
    flush()
    return pool


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
            pool = document_pool(file.stem, text)
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
                pool = document_pool(title, text)
                yield (where, pool, None) if pool else (where, None, "no sentences in this document")
        return
    raise ValueError(f"--corpus {path}: expected a folder of .txt/.md files or a .jsonl file "
                     "of {\"title\", \"text\"} objects")

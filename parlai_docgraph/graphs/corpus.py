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
(punctuation rules, no model). A document in a language written without spaces between
words (Chinese, Japanese: :func:`~parlai_docgraph.nlp.detect_language`) is split with
spaCy's character-segmenting Chinese tokenizer instead, whose tokens let the
``sentencizer`` see ``。！？``; every other language is split as English is.

:func:`document_paths` expands what a user names with ``--documents``: files, folders
(their ``.txt`` / ``.md`` files, recursively, in path order) and glob patterns.

A corpus (:func:`read_corpus`) is a folder of ``.txt`` / ``.md`` files (searched
recursively, in path order) or a JSONL file of ``{"title": str, "text": str}`` objects (one
document per line), each document one pool. Bad input loses nothing else: it yields
``(where, pool_or_None, error)`` with ``where`` = ``file`` or ``file:line``, so a malformed
JSONL row or an unreadable file is reported with its place and the rest of the corpus is
still built.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Sequence, Tuple, Union

from parlai_docgraph.dataset_errors import DatasetFormatError
from parlai_docgraph.jsonio import iter_jsonl
from parlai_docgraph.nlp import RULE_BASED, detect_language, language_name, sentences

Pool = List[Tuple[str, List[str]]]
SUFFIXES = (".txt", ".md", ".markdown")
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,3}[.)])\s+")
TITLE_MAX_CHARS = 80
#: languages written without spaces between words: split with spaCy's Chinese tokenizer
UNSPACED = ("zh", "ja")
#: ``(characters read so far, sentences so far)`` after each paragraph of a document
Progress = Callable[[int, int], None]


def split_sentences(text: str, lang: str = "en") -> List[str]:
    """The sentences of ``text`` (spaCy's punctuation-based ``sentencizer``, see
    :func:`parlai_docgraph.nlp.sentences`, with the Chinese tokenizer for
    :data:`UNSPACED` languages; whitespace inside them collapsed)."""
    model = f"{RULE_BASED}:zh" if lang in UNSPACED else RULE_BASED
    joiner = "" if lang in UNSPACED else " "
    return [s.strip() for s in sentences(joiner.join(text.split()), model) if s.strip()]


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
    return 0 < len(line) <= TITLE_MAX_CHARS and line[-1] not in ".!?;:,。！？；：，"


def document_passages(text: str, default_title: str, lang: str = "en",
                      progress: Optional[Progress] = None) -> Pool:
    """``[(title, [sentence, ...]), ...]`` of one document (see the module docstring);
    ``[]`` when it has no sentences. ``progress`` is called after each paragraph."""
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
    done = count = 0
    for block in blocks:
        done += len(block) + 2
        if progress is not None:
            progress(done, count)
        lines = block.splitlines()
        heading = HEADING.match(lines[0])
        if heading:
            title = heading.group(1) or doc_title
            lines = lines[1:]
        elif block is blocks[0] and _looks_like_title(lines[0]) and len(lines) > 1:
            lines = lines[1:]
        elif block is blocks[0] and _looks_like_title(lines[0]):
            continue  # a title line alone
        sents = [s for unit in _units(lines) for s in split_sentences(unit, lang)]
        if sents:
            passages.append((title, sents))
            count += len(sents)
    if progress is not None:
        progress(len(text), count)
    return passages


def read_document(path: str) -> Pool:
    """
    ``[(title, [sentence, ...]), ...]`` of one document (see the module docstring).
    ``FileNotFoundError`` / ``ValueError`` (no text) name the file.
    """
    return parse_document(Path(path).read_text(encoding="utf-8"), path)[0]


def parse_document(text: str, path: str, progress: Optional[Progress] = None
                   ) -> Tuple[Pool, str]:
    """``(passages, language code)`` of the text of the document at ``path``;
    ``ValueError`` naming the file when it has no sentences."""
    if not text.strip():
        raise ValueError(f"{path}: the document has no text")
    lang = detect_language(text)
    passages = document_passages(text, Path(path).stem, lang, progress)
    if not passages:
        raise ValueError(f"{path}: the document has headings but no sentences")
    return passages, lang


def language_note(path: str, lang: str) -> Optional[str]:
    """A note for the user when the document at ``path`` is not English, else ``None``."""
    if lang == "en":
        return None
    return (f"{path} looks like {language_name(lang)}: the parser, the coreference rules and "
            f"the encoders are English, so its graph and the selections may be poor")


def document_paths(specs: Sequence[str]) -> Tuple[List[str], List[str]]:
    """
    ``(files, problems)``: the files ``specs`` name (a file; a folder: its
    :data:`SUFFIXES` files, recursively, in path order; a glob pattern: its matches in
    path order), each once, and one message per spec that names nothing.
    """
    files: List[str] = []
    problems: List[str] = []
    for spec in specs:
        path = os.path.expanduser(spec)
        if os.path.isfile(path):
            found = [path]
        elif os.path.isdir(path):
            found = sorted(str(p) for p in Path(path).rglob("*")
                           if p.is_file() and p.suffix.lower() in SUFFIXES)
            if not found:
                problems.append(f"no {'/'.join(SUFFIXES)} files in the folder {path} (skipped)")
        elif glob.has_magic(path):
            found = sorted(p for p in glob.glob(path, recursive=True) if os.path.isfile(p))
            if not found:
                problems.append(f"no file matches {path} (skipped)")
        else:
            found = []
            problems.append(f"document not found: {path} (skipped)")
        files.extend(f for f in found if f not in files)
    return files, problems


def path_spellings(specs: Sequence[str]) -> List[str]:
    """
    Every spelling (as given, ``~`` expanded, absolute, resolved) of the paths that
    ``specs`` name and of the files :func:`document_paths` finds for them, longest first:
    what :func:`file_names_only` shortens. Only spellings with a folder part are kept.
    """
    files, _ = document_paths(specs)
    forms = set()
    for path in list(specs) + files:
        full = os.path.expanduser(path)
        for form in (path, full, os.path.abspath(full), os.path.realpath(full)):
            form = form.rstrip(os.sep)
            if os.sep in form:
                forms.add(form)
    return sorted(forms, key=len, reverse=True)


def file_names_only(note: str, spellings: Sequence[str]) -> str:
    """``note`` with each path of ``spellings`` (:func:`path_spellings`, longest first, so a
    file is shortened before its folder) named by its last part only: a message for a user
    who must not learn where the files lie (the web chat)."""
    for path in spellings:
        if path in note:
            note = note.replace(path, os.path.basename(path))
    return note


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
        want = 'malformed row (want {"title", "text"})'
        bad: List[DatasetFormatError] = []
        for number, row in iter_jsonl(str(root), on_error=bad.append):
            for err in bad:  # the lines before this one that were not JSON
                yield f"{root}:{err.line}", None, f"{want}: {err.problem}"
            bad.clear()
            where = f"{root}:{number}"
            try:
                title, text = row["title"], row["text"]
                if not isinstance(title, str) or not isinstance(text, str):
                    raise TypeError("title and text must be strings")
            except (KeyError, TypeError) as exc:
                yield where, None, f"{want}: {exc}"
                continue
            pool = document_passages(text, title)
            yield (where, pool, None) if pool else (where, None, "no sentences in this document")
        for err in bad:
            yield f"{root}:{err.line}", None, f"{want}: {err.problem}"
        return
    raise ValueError(f"--corpus {path}: expected a folder of .txt/.md files or a .jsonl file "
                     "of {\"title\", \"text\"} objects")

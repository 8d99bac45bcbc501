"""
Plain documents as knowledge pools: one reader for ``parlai interactive --documents``,
the browser chat, ``docgraph:docqa`` and ``build_graphs --corpus PATH``, so a graph built
ahead of time is the graph the agent builds for the same file.

:func:`document_passages`: one text / Markdown document -> ``[(title, [sentence, ...]),
...]``. Paragraphs (blocks separated by blank lines) are passages. The document's title is
its first heading, else its first line when that line is short and has no final
punctuation, else the given default (the file name, or a JSONL row's ``title``). A
passage's title names its document and its section: ``"{document title} / {section}"``
under a section heading, the document title alone before the first one, so a candidate
line (``"{title} {sentence}"``) says which document it comes from when several documents
are searched at once (a question that names a document can prefer it). Section headings
are never sentences:

* Markdown headings (``# ...``) and underlined ones (a line over ``===`` or ``---``);
* in plain text (licences, contracts, manuals): a paragraph that is one short line
  without final punctuation (``TERMS AND CONDITIONS``, ``1. Definitions``), a numbered
  title line (``1. Definitions.``, ``Section 3.2 Distribution of Executable Form``)
  alone or over the paragraph's text, and a run-in heading: a numbered paragraph's (or
  any paragraph's, when it has two words or more) first sentence in title case, followed
  by the paragraph's text (``6. Trademarks. This License does not ...``): its
  sentences become a passage under that heading.

Each Markdown list item (``-``, ``*``, ``+``, ``1.``, ``1.1.``) is split on its own, its
marker dropped, so a table-like list gives one sentence per item; other lines are joined
and split by :func:`~parlai_docgraph.nlp.split_sentences`, the package's one sentence
splitter (spaCy's rule-based ``sentencizer``, no model; a quote opening a sentence stays
with it). A document in a language written without spaces between words (Chinese,
Japanese: :func:`~parlai_docgraph.nlp.detect_language`) is split with spaCy's
character-segmenting Chinese tokenizer; every other language is split as English is.

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
from parlai_docgraph.nlp import detect_language, language_name, split_sentences

Pool = List[Tuple[str, List[str]]]
SUFFIXES = (".txt", ".md", ".markdown")
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
UNDERLINE = re.compile(r"^\s{0,3}(?:=+|-+)\s*$")
LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,3}(?:\.\d{1,3})*[.)])\s+")
#: a section number before a title: ``1.``, ``1.2``, ``1.2.``, ``IV.``, ``Section 3.2``
SECTION_NUMBER = re.compile(
    r"^\s{0,3}(?:(?:section|article|part|chapter|clause)\s+)?"
    r"(?:\d{1,3}(?:\.\d{1,3})*\.?|[IVX]{1,6}\.)\s+(?=\S)", re.IGNORECASE)
TITLE_MAX_CHARS = 80
#: the most words of a heading inside plain text (numbered or run-in)
HEADING_MAX_WORDS = 10
#: words a title-case heading may keep in lower case
MINOR_WORDS = frozenset(
    "a an and as at by for from in into of on or per the to under upon via with".split())
SEPARATOR = " / "
#: ``(characters read so far, sentences so far)`` after each paragraph of a document
Progress = Callable[[int, int], None]


def _units(lines: Sequence[str]) -> List[Tuple[str, str]]:
    """The lines of a block grouped into list items (markers dropped) and running text:
    ``(number, text)`` per unit, ``number`` the numbered marker that opened it (``6.``)
    or ``""``."""
    units: List[Tuple[str, str]] = []
    item = False
    for line in lines:
        marker = LIST_ITEM.match(line)
        if marker:
            mark = line[:marker.end()].strip()
            units.append((mark if mark[:1].isdigit() else "", line[marker.end():]))
        elif units and not item or units and line.startswith((" ", "\t")):
            units[-1] = (units[-1][0], units[-1][1] + " " + line)
        else:
            units.append(("", line))
        item = bool(marker) or item and line.startswith((" ", "\t"))
    return units


def _looks_like_title(line: str) -> bool:
    line = line.strip()
    return 0 < len(line) <= TITLE_MAX_CHARS and line[-1] not in ".!?;:,。！？；：，"


def title_case(text: str) -> bool:
    """Whether ``text`` reads as a heading: at most :data:`HEADING_MAX_WORDS` words, every
    word capitalised (or written in capitals) except :data:`MINOR_WORDS`, at least one
    word of letters."""
    words = [w.strip("\"'“”‘’()[],:;.") for w in text.split()]
    words = [w for w in words if w]
    if not words or len(words) > HEADING_MAX_WORDS or not any(w.isalpha() for w in words):
        return False
    return all(w[0].isupper() or not w[0].isalpha() or w.lower() in MINOR_WORDS
               for w in words)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def heading_line(lines: Sequence[str]) -> Optional[str]:
    """
    The section title that opens a block of plain-text ``lines`` (the module docstring),
    without a final full stop, or ``None``: a Markdown heading; a line over an underline;
    a block that is one short line without final punctuation; a numbered title line, or
    a title-case line without final punctuation over the block's text.
    """
    first = lines[0].strip()
    markdown = HEADING.match(lines[0])
    if markdown:
        return markdown.group(1)
    if len(lines) > 1 and UNDERLINE.match(lines[1]) and _looks_like_title(first):
        return first
    if len(first) > TITLE_MAX_CHARS or LIST_ITEM.match(lines[0]) and len(lines) > 1 and (
            LIST_ITEM.match(lines[1]) or _indent(lines[1]) > _indent(lines[0])):
        return None  # a list item (followed by the next, or by its indented continuation)
    number = SECTION_NUMBER.match(lines[0])
    rest = first[number.end() - _indent(lines[0]):] if number else first
    if number and title_case(rest.rstrip(".")) and rest[-1:] not in "!?;:,":
        return first.rstrip(".")
    if len(lines) == 1 and _looks_like_title(first) and not LIST_ITEM.match(lines[0]):
        return first
    if len(lines) > 1 and _looks_like_title(first) and title_case(first):
        return first
    return None


def run_in_heading(number: str, sents: Sequence[str]) -> Optional[str]:
    """The run-in heading that opens a unit's ``sents``, or ``None``.

    A run-in heading is a first sentence in title case that ends with a full stop, followed
    by more text (of one word only in a numbered unit): ``Trademarks.`` before ``This
    License ...``. It is returned after its unit's ``number`` and without its full stop
    (``6. Trademarks``)."""
    if len(sents) < 2 or not sents[0].endswith(".") or sents[0].endswith(".."):
        return None
    head = sents[0][:-1].strip()
    if not title_case(head) or (len(head.split()) < 2 and not number):
        return None
    return f"{number} {head}" if number else head


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

    def titled(section: Optional[str]) -> str:
        return (f"{doc_title}{SEPARATOR}{section}" if section and section != doc_title
                else doc_title)

    passages: Pool = []
    section: Optional[str] = None
    done = count = 0
    for number, block in enumerate(blocks):
        done += len(block) + 2
        if progress is not None:
            progress(done, count)
        lines = block.splitlines()
        if number == 0 and not heading and _looks_like_title(lines[0]):
            lines = lines[1:]  # the document's title line
        while lines:
            head = heading_line(lines)
            if head is None:
                break
            section = head or None
            lines = lines[2:] if len(lines) > 1 and UNDERLINE.match(lines[1]) else lines[1:]
        current: List[str] = []
        for number, unit in _units(lines):
            sents = split_sentences(unit, lang)
            head = run_in_heading(number, sents)
            if head is not None:
                if current:
                    passages.append((titled(section), current))
                passages.append((titled(head), sents[1:]))
                count += len(sents) - 1
                current = []
                continue
            current += sents
            count += len(sents)
        if current:
            passages.append((titled(section), current))
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

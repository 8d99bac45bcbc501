"""
JSON readers that keep line numbers, so a bad record can be reported where it is.

``json.load`` gives a list with no positions. :func:`iter_json_array` /
:func:`iter_json_object` walk a top-level array / object with
``json.JSONDecoder.raw_decode`` (the same C scanner ``json.load`` uses) and yield each
element / member with the line it starts on; :func:`iter_jsonl` does the same for
JSON-lines files. These are the only walkers of JSON data files: the dataset readers
(``tasks/docgraph/readers/``), ``docgraph:docqa``'s questions and ``--corpus`` JSONL files
(:mod:`~parlai_docgraph.graphs.corpus`). Standard library only.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator, Optional, Tuple

from parlai_docgraph.dataset_errors import DatasetFormatError

_WS = " \t\n\r"


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def read_text(path: str) -> str:
    with open(path, encoding="utf-8-sig") as f:
        return f.read()


def read_json(path: str) -> Any:
    """The whole JSON document at ``path`` (a split file, a model's config); not JSON:
    :class:`DatasetFormatError` naming the line; ``OSError`` when it cannot be read."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DatasetFormatError(path, e.lineno, f"column {e.colno}", f"invalid JSON: {e.msg}") from None


def iter_json_array(path: str) -> Iterator[Tuple[int, int, Any]]:
    """
    Yield ``(index, line, element)`` for each element of the top-level JSON array.

    :raises DatasetFormatError: when the file is not a JSON array or an element is not
        valid JSON (with the line of the problem).
    """
    return _iter_members(path, keyed=False)


def iter_json_object(path: str) -> Iterator[Tuple[str, int, Any]]:
    """
    Yield ``(key, line, value)`` for each member of the top-level JSON object (``line``:
    where the value starts).

    :raises DatasetFormatError: when the file is not a JSON object or a member is not
        valid JSON (with the line of the problem).
    """
    return _iter_members(path, keyed=True)


def _iter_members(path: str, keyed: bool) -> Iterator[Tuple[Any, int, Any]]:
    """The one walker behind :func:`iter_json_array` and :func:`iter_json_object`."""
    text = read_text(path)
    decoder = json.JSONDecoder()
    opener, closer, kind = ("{", "}", "object") if keyed else ("[", "]", "array")
    line, counted = 1, 0

    def line_at(pos: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, pos)
        counted = pos
        return line

    def decode(pos: int, where: str) -> Tuple[Any, int]:
        try:
            return decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise DatasetFormatError(path, e.lineno, where, f"invalid JSON: {e.msg} (column {e.colno})")

    pos = _skip_ws(text, 0)
    if pos >= len(text) or text[pos] != opener:
        raise DatasetFormatError(path, 1, "top level", f"expected a JSON {kind} ('{opener}')")
    pos = _skip_ws(text, pos + 1)
    if pos < len(text) and text[pos] == closer:
        return
    index = 0
    while True:
        if keyed:
            if pos >= len(text) or text[pos] != '"':
                raise DatasetFormatError(path, line_at(pos), "object", "expected a string key")
            name, pos = decode(pos, "key")
            where = f"key '{name}'"
            pos = _skip_ws(text, pos)
            if pos >= len(text) or text[pos] != ":":
                raise DatasetFormatError(path, line_at(pos), where, "expected ':'")
            pos = _skip_ws(text, pos + 1)
        else:
            name, where = index, f"element {index}"
        start = line_at(pos)
        value, end = decode(pos, where)
        yield name, start, value
        index += 1
        pos = _skip_ws(text, end)
        if pos < len(text) and text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
            continue
        if pos < len(text) and text[pos] == closer:
            return
        raise DatasetFormatError(path, line_at(pos), f"after {where}", f"expected ',' or '{closer}'")


def iter_jsonl(path: str, on_error: Optional[Callable[[DatasetFormatError], None]] = None,
               ) -> Iterator[Tuple[int, Any]]:
    """
    Yield ``(line, record)`` for each non-empty line of a JSON-lines file. A line that is not
    JSON raises :class:`DatasetFormatError`, or, with ``on_error``, is handed to it (before
    the next record is yielded) and skipped.
    """
    with open(path, encoding="utf-8-sig", errors="replace") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as e:
                err = DatasetFormatError(path, lineno, f"column {e.colno}", f"invalid JSON: {e.msg}")
                if on_error is None:
                    raise err from None
                on_error(err)
                continue
            yield lineno, record

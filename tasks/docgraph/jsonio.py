"""
JSON readers that keep line numbers, so a bad record can be reported where it is.

``json.load`` gives a list with no positions. :func:`iter_json_array` walks a top-level
array with ``json.JSONDecoder.raw_decode`` (the same C scanner ``json.load`` uses) and
yields each element with the line it starts on; :func:`iter_jsonl` does the same for
JSON-lines files.
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Tuple

from .errors import DatasetFormatError

_WS = " \t\n\r"


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def read_text(path: str) -> str:
    with open(path, encoding="utf-8-sig") as f:
        return f.read()


def iter_json_array(path: str) -> Iterator[Tuple[int, int, Any]]:
    """
    Yield ``(index, line, element)`` for each element of the top-level JSON array.

    :raises DatasetFormatError: when the file is not a JSON array or an element is not
        valid JSON (with the line of the problem).
    """
    text = read_text(path)
    decoder = json.JSONDecoder()
    pos = _skip_ws(text, 0)
    if pos >= len(text) or text[pos] != "[":
        raise DatasetFormatError(path, 1, "top level", "expected a JSON array ('[')")
    pos = _skip_ws(text, pos + 1)
    line, counted = 1, 0
    index = 0
    if pos < len(text) and text[pos] == "]":
        return
    while True:
        line += text.count("\n", counted, pos)
        counted = pos
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise DatasetFormatError(
                path, e.lineno, f"element {index}", f"invalid JSON: {e.msg} (column {e.colno})"
            )
        yield index, line, obj
        index += 1
        pos = _skip_ws(text, end)
        if pos < len(text) and text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
            continue
        if pos < len(text) and text[pos] == "]":
            return
        err_line = line + text.count("\n", counted, pos)
        raise DatasetFormatError(path, err_line, f"after element {index - 1}", "expected ',' or ']'")


def iter_jsonl(path: str) -> Iterator[Tuple[int, Any]]:
    """
    Yield ``(line, record)`` for each non-empty line of a JSON-lines file.
    """
    with open(path, encoding="utf-8-sig") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                yield lineno, json.loads(raw)
            except json.JSONDecodeError as e:
                raise DatasetFormatError(path, lineno, f"column {e.colno}", f"invalid JSON: {e.msg}")

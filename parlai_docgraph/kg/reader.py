"""
Bulk reading and interning of triples for :class:`~parlai_docgraph.kg.store.KnowledgeGraph`.

Triples are consumed in chunks of :data:`CHUNK` rows as three aligned name columns, so
memory stays bounded (one chunk of Python strings at a time, plus int id arrays) and the
per-name work runs in C: a fast path splits a chunk of well-formed lines into one flat
list of ``str`` (no per-line list for the garbage collector to scan), and names are
interned with ``map(dict.setdefault, ...)``.

:func:`tsv_chunks` is the package's one reader of ``subject<TAB>relation<TAB>object``
files (OpenDialKG's ``opendialkg_triples.txt``), behind
:meth:`~parlai_docgraph.kg.store.KnowledgeGraph.from_file`. A malformed line (not three
non-empty fields) is never dropped silently: strict reading raises ``ValueError`` naming
``file:line``; with ``skip_bad`` the line is logged (warning, ``file:line``) and counted.
"""

from __future__ import annotations

import logging
from itertools import count, islice, repeat
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Sequence, Tuple, Union

import numpy as np

LOG = logging.getLogger(__name__)
CHUNK = 1 << 18
Columns = Tuple[Sequence[str], Sequence[str], Sequence[str]]


class Interner:
    """
    Assigns ids to names: ``seed`` first (ids ``0..len(seed)-1``), then new names in
    order of first appearance.

    :meth:`add` gives each name a provisional id, the stream position where it first
    appeared (from ``itertools.count``; increasing with insertion order); :meth:`finish`
    relabels them to contiguous ids with one ``searchsorted``.
    """

    def __init__(self, seed: Sequence[str] = ()) -> None:
        self._table: Dict[str, int] = dict(zip(seed, range(-len(seed), 0)))
        if len(self._table) != len(seed):
            raise ValueError("duplicate names in the seed vocabulary")
        self._offset = 0

    def add(self, names: Sequence[str]) -> np.ndarray:
        """Provisional ids of ``names`` (int64)."""
        ids = np.fromiter(
            map(self._table.setdefault, names, count(self._offset)), np.int64, len(names)
        )
        self._offset += len(names)
        return ids

    def finish(self, provisional: Sequence[np.ndarray]) -> Tuple[List[str], List[np.ndarray]]:
        """``(names by id, contiguous int32 ids for each provisional array)``."""
        keys = np.fromiter(self._table.values(), np.int64, len(self._table))
        ids = [np.searchsorted(keys, p).astype(np.int32) for p in provisional]
        # fresh copies: the first-seen name objects lie scattered over the memory of all
        # the chunks read and would keep it from being returned to the OS
        names = [n.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass") for n in self._table]
        self._table = {}
        return names, ids


def triple_chunks(triples: Iterable[Sequence[str]]) -> Iterator[Columns]:
    """Columns of successive chunks of ``(head, relation, tail)`` rows."""
    it = iter(triples)
    while True:
        rows = list(islice(it, CHUNK))
        if not rows:
            return
        if set(map(len, rows)) - {3}:
            raise ValueError("every triple must have exactly 3 fields")
        heads, rels, tails = zip(*rows)
        yield heads, rels, tails


def tsv_chunks(path: Union[str, Path], skip_bad: bool, bad: List[int]) -> Iterator[Columns]:
    """
    Columns of successive chunks of a ``subject\\trelation\\tobject`` file.

    Empty lines are skipped. A line without three non-empty fields raises ``ValueError``
    with ``path:line`` or, with ``skip_bad``, is logged with ``path:line`` and counted in
    ``bad[0]``.
    """
    text = Path(path).read_text(encoding="utf-8")
    lines = text.replace("\r\n", "\n").split("\n")
    del text
    if lines and lines[-1] == "":
        lines.pop()  # trailing newline
    for start in range(0, len(lines), CHUNK):
        part = lines[start:start + CHUNK]
        tabs = set(map(str.count, part, repeat("\t", len(part))))
        flat = "\t".join(part).split("\t") if tabs == {2} else [""]
        if "" not in flat:
            yield flat[0::3], flat[1::3], flat[2::3]
            continue
        rows = []
        for lineno, line in enumerate(part, start + 1):
            fields = line.split("\t")
            if fields == [""]:
                continue
            if len(fields) == 3 and all(fields):
                rows.append(fields)
            else:
                problem = (
                    f"{path}:{lineno}: expected 'subject<TAB>relation<TAB>object' (three "
                    f"non-empty fields), got {len(fields)} field(s): {line[:80]!r}"
                )
                if not skip_bad:
                    raise ValueError(problem)
                LOG.warning("skipped malformed triple line %s", problem)
                bad[0] += 1
        if rows:
            heads, rels, tails = zip(*rows)
            yield heads, rels, tails

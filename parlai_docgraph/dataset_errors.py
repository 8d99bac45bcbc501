"""
Errors and bad-row bookkeeping shared by the raw dataset readers (no ParlAI imports).

A malformed row is never dropped silently: by default the reader raises
:class:`DatasetFormatError` naming the file and the row (line); with ``--skip-bad-rows``
it skips the row, counts it, and the teacher logs the count and the first locations.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import List, Optional


class DatasetFormatError(ValueError):
    """
    A row of a raw dataset file does not have the expected format.

    ``str(err)`` reads ``<file>:<line>: <row description>: <problem>``.
    """

    def __init__(self, path: str, line: Optional[int], where: str, problem: str) -> None:
        self.path = path
        self.line = line
        self.where = where
        self.problem = problem
        loc = f"{path}:{line}" if line is not None else path
        super().__init__(f"{loc}: {where}: {problem}")


class MissingDatasetFile(FileNotFoundError):
    """
    A dataset file is not where the official build puts it and cannot be downloaded.
    """

    def __init__(self, dataset: str, path: str, url: str, how: str = "") -> None:
        self.dataset = dataset
        self.path = path
        self.url = url
        msg = (
            f"{dataset}: missing file {path}\n"
            f"  Official source: {url}\n"
            f"  Put the file at that path (keep its official name), or run once with "
            f"network access so it is downloaded and checked."
        )
        if how:
            msg += f"\n  {how}"
        super().__init__(msg)


@dataclass
class BadRows:
    """
    Collects malformed rows when skipping is allowed; re-raises otherwise.

    :param skip: skip and count bad rows instead of raising on the first one.
    """

    skip: bool = False
    errors: List[DatasetFormatError] = field(default_factory=list)

    def report(self, err: DatasetFormatError) -> None:
        """
        Raise ``err`` unless skipping is on, in which case remember it.
        """
        if not self.skip:
            raise err
        self.errors.append(err)

    def summary(self, limit: int = 5) -> str:
        if not self.errors:
            return ""
        files = sorted({os.path.basename(e.path) for e in self.errors})
        head = "; ".join(str(e) for e in self.errors[:limit])
        more = f" (+{len(self.errors) - limit} more)" if len(self.errors) > limit else ""
        return f"skipped {len(self.errors)} malformed row(s) in {', '.join(files)}: {head}{more}"


def require_type(value, kind, path: str, line: Optional[int], where: str, name: str):
    """
    Return ``value`` if it is an instance of ``kind``, else raise a located error.
    """
    if not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        expected = " or ".join(k.__name__ for k in kinds)
        raise DatasetFormatError(
            path, line, where, f"field '{name}' should be {expected}, got {type(value).__name__}"
        )
    return value

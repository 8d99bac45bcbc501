"""
Atomic file writes and verified reads for caches and split files (standard library only).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Callable, Iterator, Optional, TypeVar, Union

T = TypeVar("T")


def write_text_atomic(path: Union[str, Path], text: str) -> Path:
    """
    Write ``text`` to ``path`` so that readers see the old file or the new one, never a
    torn one: a temporary file in the same folder, flushed and fsynced, then renamed
    over ``path``. The temporary file is removed if anything fails, even a kill signal
    raised as an exception.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:12]}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


@contextlib.contextmanager
def locked(path: Union[str, Path]) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``<path>.lock`` for the block: processes that
    read-modify-write the same result file take turns (POSIX only)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{target}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def verified(body: str, check: Callable[[str], T]) -> Optional[T]:
    """
    The one corrupt-entry policy of the caches: ``check(body)``, or ``None`` (reported
    missing, so the caller rebuilds and rewrites the entry) when ``check`` fails in any way:
    a damaged entry must never be loaded. ``check`` returns the entry's value, never
    ``None``.
    """
    try:
        return check(body)
    except Exception:  # anything unexpected in a damaged entry: never load it
        return None


def read_verified(path: Union[str, Path], check: Callable[[str], T]) -> Optional[T]:
    """
    :func:`verified` for a file entry: ``check(text of path)``, or ``None`` when ``path``
    is absent or unreadable or fails ``check``; a damaged file is deleted.
    """
    target = Path(path)
    if not target.is_file():
        return None
    try:
        body = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        body = None
    value = None if body is None else verified(body, check)
    if value is None:
        target.unlink(missing_ok=True)
    return value


def sha256_of(path: Union[str, Path]) -> str:
    """The SHA-256 hex digest of the file at ``path``, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

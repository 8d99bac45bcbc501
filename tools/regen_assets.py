"""
The command line shared by the asset generators (``make_tiny_*.py``): write the files, or
with ``--check`` exit 1 when a fresh build does not reproduce the shipped files byte for
byte.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import sys
import tempfile
from typing import Callable, List, Optional, Sequence

Build = Callable[[str], None]


def stale_files(build: Build, files: Sequence[str], out_dir: str) -> List[str]:
    """Names of ``files`` in ``out_dir`` that a fresh ``build`` does not reproduce."""
    with tempfile.TemporaryDirectory() as tmp:
        build(tmp)
        return [
            n for n in files
            if not os.path.exists(os.path.join(out_dir, n))
            or not filecmp.cmp(os.path.join(tmp, n), os.path.join(out_dir, n), shallow=False)
        ]


def regen_main(
    name: str, description: str, build: Build, files: Sequence[str], default_out: str,
    argv: Optional[Sequence[str]] = None,
) -> int:
    """``[--check] [--out DIR]``: the exit code of one asset generator run."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("--out", default=default_out)
    args = parser.parse_args(argv)
    if args.check:
        bad = stale_files(build, files, args.out)
        if bad:
            print(f"{name} assets out of date: {', '.join(bad)}", file=sys.stderr)
            return 1
        print(f"{name} assets up to date")
        return 0
    build(args.out)
    size = sum(os.path.getsize(os.path.join(args.out, n)) for n in files)
    print(f"wrote {args.out} ({size // 1024} KB)")
    return 0

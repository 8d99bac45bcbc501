"""``python -m docgraph_docs readme [--check]``: rewrite (or check) the README's table of
current figures from ``docs/results/*.json``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from docgraph_docs import results

README = Path(__file__).resolve().parents[3] / "README.md"


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m docgraph_docs")
    parser.add_argument("action", choices=["readme"])
    parser.add_argument("--check", action="store_true", help="only say whether it is current")
    args = parser.parse_args()
    text = README.read_text(encoding="utf-8")
    new = results.update_readme(text)
    if args.check:
        print(f"{README.name}: results table is {'current' if new == text else 'OUT OF DATE'}")
        return 0 if new == text else 1
    if new != text:
        README.write_text(new, encoding="utf-8")
    print(f"{README.name}: results table {'rewritten' if new != text else 'already current'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

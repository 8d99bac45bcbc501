"""
Graph-building benchmark (issue 4) on the bundled ``docgraph:sample``; the same code as
``parlai-docgraph bench --only graphs``. See ``benchmarks/README.md`` for the figures.

    python benchmarks/bench_graphs.py [--quick] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def main(argv=None) -> dict:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repeat, small documents")
    parser.add_argument("--out", default=None, help="JSON file to write")
    args = parser.parse_args(argv)

    from parlai_docgraph.scripts.bench import format_results, run_benchmarks

    results = run_benchmarks(["graphs"], quick=args.quick)
    print(format_results(results))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
        print(f"wrote {args.out}")
    return results


if __name__ == "__main__":
    main(sys.argv[1:])

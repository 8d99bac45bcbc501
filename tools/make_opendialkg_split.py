"""
Write ``opendialkg_split.json``: DialogGSR's seed-42 70/15/15 split of the official
``opendialkg.csv`` (13,802 sessions) as 0-based CSV data-row indices.

DialogGSR (mlvlab/DialogGSR @ 9540fd8d, ``preprocess/preprocess_data.py::main``, lines
274-301) lists the ids ``1000000 + row`` in row order, calls ``random.seed(42)`` and
``random.shuffle`` on that list, and cuts it at ``int(n * 0.7)`` and
``int(n * (0.7 + 0.15))``. The permutation depends only on the number of rows, so the
lists are computed here without the CSV (see
``tasks/docgraph/readers/opendialkg_split.py::dialoggsr_split``).

    python tools/make_opendialkg_split.py          # rewrite the file
    python tools/make_opendialkg_split.py --check  # exit 1 if it differs
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tasks", "docgraph", "splits", "opendialkg_split.json")
SOURCE = (
    "DialogGSR (mlvlab/DialogGSR @ 9540fd8dd23b91b78321df58be3694256b6f9029) "
    "preprocess/preprocess_data.py: random.seed(42); random.shuffle(row ids); "
    "train = [:int(n*0.7)], valid = [int(n*0.7):int(n*(0.7+0.15))], test = the rest; "
    "indices are 0-based CSV data rows (DialogGSR unique_id - 1000000), sorted"
)


def _reader():
    try:
        from parlai_docgraph.tasks.docgraph.readers import opendialkg_split as opendialkg
    except ImportError:  # run from a checkout without the package installed
        sys.path.insert(0, ROOT)
        from tasks.docgraph.readers import opendialkg_split as opendialkg  # type: ignore
    return opendialkg


def render() -> str:
    odkg = _reader()
    split = odkg.dialoggsr_split(odkg.OFFICIAL_NUM_ROWS, odkg.SPLIT_SEED)
    head = {"source": SOURCE, "seed": odkg.SPLIT_SEED, "num_rows": odkg.OFFICIAL_NUM_ROWS}
    lines = ["{"]
    lines += [f"{json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    names = ["train", "valid", "test"]
    for i, k in enumerate(names):
        comma = "," if i < len(names) - 1 else ""
        lines.append(f"{json.dumps(k)}: {json.dumps(split[k], separators=(',', ':'))}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        with open(OUT, encoding="utf-8") as f:
            same = f.read() == text
        print(f"{OUT}: {'up to date' if same else 'DIFFERS from the generator'}")
        return 0 if same else 1
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

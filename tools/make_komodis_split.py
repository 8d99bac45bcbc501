"""
Write the KOMODIS split file for a ``dataset.json``.

    python tools/make_komodis_split.py DATASET_JSON OUT

Produces the same document the ``docgraph:komodis`` teacher writes to
``<datapath>/komodis/docgraph_split_v1.json`` (procedure, dataset sha256, titles and
dialogue ids per split). Writing it to ``tasks/docgraph/splits/komodis_split.json`` ships
the id lists: the teacher prefers that file whenever its sha256 matches the local
``dataset.json``.
"""

from __future__ import annotations

import argparse
import os
import sys


def _reader():
    try:
        from parlai_docgraph.tasks.docgraph.readers import komodis_split as komodis
    except ImportError:  # run from a checkout that is not installed
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        sys.path.insert(0, root)
        from tasks.docgraph.readers import komodis_split as komodis  # type: ignore[no-redef]
    return komodis


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset_json", help="path of KOMODIS dataset.json")
    parser.add_argument("out", help="where to write the split JSON")
    args = parser.parse_args(argv)
    komodis = _reader()
    doc = komodis.compute_split(args.dataset_json)
    komodis.write_json_atomic(args.out, doc)
    counts = ", ".join(
        f"{s} {c['titles']} titles / {c['dialogues']} dialogues" for s, c in doc["counts"].items()
    )
    print(f"wrote {args.out}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

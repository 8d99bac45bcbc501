"""
``parlai-docgraph``: the ``parlai`` super-command plus this package's scripts.

ParlAI only discovers scripts under ``parlai.scripts`` (and its internal packages);
importing :mod:`parlai_docgraph.scripts` and :mod:`parlai_docgraph.bench` registers ours in the same registry before
ParlAI builds its command list, so every ``parlai`` command works here too.
"""

from __future__ import annotations

from typing import List, Optional


def main(args: Optional[List[str]] = None) -> None:
    from parlai.core.script import superscript_main

    import parlai_docgraph.bench  # noqa: F401  (registers `bench` and the benchmarks)
    import parlai_docgraph.scripts  # noqa: F401  (registers the scripts)

    # Like ``parlai``: the script's return value is for Python callers, not the exit code.
    superscript_main(args)


if __name__ == "__main__":
    main()

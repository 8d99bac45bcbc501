"""
``parlai-docgraph``: the ``parlai`` super-command plus this package's scripts.

ParlAI only discovers scripts under ``parlai.scripts`` (and its internal packages); ours
are registered in the same registry before ParlAI reads the command line, so every
``parlai`` command works here too: only the named command's script
(:data:`parlai_docgraph.scripts.PLUGIN_SCRIPTS`, :mod:`parlai_docgraph.lazy_scripts`), or
all of them for the command list.
"""

from __future__ import annotations

import importlib
from typing import List, Optional


def main(args: Optional[List[str]] = None) -> None:
    from parlai.core.script import superscript_main

    from parlai_docgraph.lazy_scripts import PARLAI_SCRIPTS, command_of
    from parlai_docgraph.scripts import PLUGIN_SCRIPTS, register_all

    command = command_of(args)
    if command in PLUGIN_SCRIPTS:  # that script only (parlai_docgraph.lazy_scripts)
        importlib.import_module(PLUGIN_SCRIPTS[command])
    elif command not in PARLAI_SCRIPTS:  # the command list (or an unknown command)
        register_all()
    # Like ``parlai``: the script's return value is for Python callers, not the exit code.
    superscript_main(args)


if __name__ == "__main__":
    main()

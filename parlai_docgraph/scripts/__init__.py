"""
Scripts of parlai-docgraph. Each registers itself with ParlAI's script registry when its
module is imported: ``parlai-docgraph COMMAND`` imports only COMMAND's
(:data:`PLUGIN_SCRIPTS`, :mod:`parlai_docgraph.cli`), and :func:`register_all` all of them
(the command list). Each is also runnable as ``python -m parlai_docgraph.scripts.<name>``.
"""

from __future__ import annotations

import importlib
from typing import Dict

#: command -> the module that registers it (``bench``: the package that registers every
#: benchmark too)
PLUGIN_SCRIPTS: Dict[str, str] = {
    **{name: f"parlai_docgraph.scripts.{name}" for name in (
        "datasets", "build_graphs", "show_graph", "ablate", "heldout_eval", "reply_eval",
        "cmu_dog_eval", "cmu_dog_labels", "cmu_dog_margin", "cmu_dog_valid", "chat", "recipes")},
    "bench": "parlai_docgraph.bench",
}


def register_all() -> None:
    """Import (so register) every script of :data:`PLUGIN_SCRIPTS`."""
    for module in PLUGIN_SCRIPTS.values():
        importlib.import_module(module)

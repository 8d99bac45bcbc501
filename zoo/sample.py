"""
``zoo:docgraph/sample/model``: selector + responder trained on ``docgraph:sample``.
"""

from __future__ import annotations

from parlai_docgraph.agents.base import NotBuiltYet


def download(datapath: str) -> None:
    """
    Make ``<datapath>/models/docgraph/sample/model`` available.
    """
    raise NotBuiltYet(
        "zoo:docgraph/sample/model",
        "the sample checkpoint (built from the bundled recipe once the selector and the "
        "responder exist)",
        6,
    )

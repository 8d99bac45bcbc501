"""
``zoo:docgraph/wow/model``: the ``-m docgraph`` pipeline trained on ``docgraph:wow``; not
released yet (see :mod:`parlai_docgraph.zoo.released` for how a checkpoint is added).
"""

from __future__ import annotations

from parlai_docgraph.zoo.released import WOW, download as _download


def download(datapath: str) -> str:
    """The model file under ``<datapath>/models/docgraph/wow/`` (``NotReleasedYet`` for now)."""
    return _download(datapath, WOW)

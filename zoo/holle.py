"""
``zoo:docgraph/holle/model``: the ``-m docgraph`` pipeline trained on ``docgraph:holle``; not
released yet (see :mod:`parlai_docgraph.zoo.released` for how a checkpoint is added).
"""

from __future__ import annotations

from parlai_docgraph.zoo.released import HOLLE, download as _download


def download(datapath: str) -> str:
    """The model file under ``<datapath>/models/docgraph/holle/`` (``NotReleasedYet`` for now)."""
    return _download(datapath, HOLLE)

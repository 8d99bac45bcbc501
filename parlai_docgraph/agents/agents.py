"""
``-m docgraph``: ParlAI looks a model name without ``/`` up in ``<name>/agents.py``; the
pipeline itself lives in :mod:`parlai_docgraph.agents.pipeline`.
"""

from parlai_docgraph.agents.pipeline.agent import DocgraphAgent

__all__ = ["DocgraphAgent"]

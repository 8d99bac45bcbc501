"""
``-m docgraph/graph_selector``: knowledge selection over document semantic graphs.
"""

from __future__ import annotations

from parlai.core.torch_ranker_agent import TorchRankerAgent

from .base import FullyQualifiedOptMixin, NotBuiltYet


class GraphSelectorAgent(FullyQualifiedOptMixin, TorchRankerAgent):
    """
    Ranks knowledge sentences with an edge-aware graph attention network over the
    dialog-aware document graph (Li et al., 2022) and its baselines.

    This release registers the agent so ParlAI resolves it; the model arrives with the
    knowledge-selection work and :meth:`build_model` says so instead of pretending.
    """

    def build_model(self):
        raise NotBuiltYet("GraphSelectorAgent", "the EGAT knowledge selector", 5)

    def score_candidates(self, batch, cand_vecs, cand_encs=None):
        raise NotBuiltYet("GraphSelectorAgent", "candidate scoring", 5)

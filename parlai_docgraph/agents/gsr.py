"""
``-m docgraph/gsr``: DialogGSR generative subgraph retrieval (Park et al.).
"""

from __future__ import annotations

from parlai.core.torch_generator_agent import TorchGeneratorAgent

from .base import FullyQualifiedOptMixin, NotBuiltYet


class GSRAgent(FullyQualifiedOptMixin, TorchGeneratorAgent):
    """
    Retrieves knowledge-graph paths by constrained generation, then responds from them.

    Registered so ParlAI resolves ``-m docgraph/gsr``; the model arrives with the
    DialogGSR work and :meth:`build_model` says so instead of pretending.
    """

    def build_model(self):
        raise NotBuiltYet("GSRAgent", "generative subgraph retrieval", 7)


#: the class name ParlAI derives from ``docgraph/gsr``
GsrAgent = GSRAgent

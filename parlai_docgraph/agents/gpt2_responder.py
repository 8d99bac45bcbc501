"""
``-m docgraph/gpt2_responder``: response generation from selected knowledge.
"""

from __future__ import annotations

from parlai.core.torch_generator_agent import TorchGeneratorAgent

from .base import FullyQualifiedOptMixin, NotBuiltYet


class GPT2ResponderAgent(FullyQualifiedOptMixin, TorchGeneratorAgent):
    """
    A causal LM that writes the reply from ``[knowledge; context]`` (Li et al. Eq. 9).

    Registered so ParlAI resolves ``-m docgraph/gpt2_responder``; the model arrives with
    the responder work and :meth:`build_model` says so instead of pretending.
    """

    def build_model(self):
        raise NotBuiltYet("GPT2ResponderAgent", "the GPT-2 responder", 6)


#: the class name ParlAI derives from ``docgraph/gpt2_responder``
Gpt2ResponderAgent = GPT2ResponderAgent

"""
``-m docgraph/gpt2_responder``: the knowledge-grounded response generator (GPT-2 or any
Hugging Face causal LM) of the ``-m docgraph`` pipeline, as a ParlAI generator agent.

ParlAI resolves ``-m docgraph/gpt2_responder`` to this package and reads
``Gpt2ResponderAgent`` (the name it derives) from it; ``agent`` holds the code.
"""

from parlai_docgraph.agents.gpt2_responder.agent import (
    GPT2ResponderAgent, Gpt2ResponderAgent, ResponderDictionaryAgent,
)

__all__ = ["GPT2ResponderAgent", "Gpt2ResponderAgent", "ResponderDictionaryAgent"]

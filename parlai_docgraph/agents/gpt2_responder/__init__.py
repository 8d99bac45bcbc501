"""
``-m docgraph/gpt2_responder``: the knowledge-grounded response generator (GPT-2 or any
Hugging Face causal LM) of the ``-m docgraph`` pipeline, as a ParlAI generator agent.

ParlAI resolves ``-m docgraph/gpt2_responder`` to this package and reads
``Gpt2ResponderAgent`` (the name it derives) from it. Modules: ``agent`` (the agent),
``dictionary`` (the LM's tokenizer as ParlAI's dictionary), ``messages`` (the knowledge
line and the references of a message).
"""

from parlai_docgraph.agents.gpt2_responder.agent import GPT2ResponderAgent, Gpt2ResponderAgent
from parlai_docgraph.agents.gpt2_responder.dictionary import ResponderDictionaryAgent

__all__ = ["GPT2ResponderAgent", "Gpt2ResponderAgent", "ResponderDictionaryAgent"]

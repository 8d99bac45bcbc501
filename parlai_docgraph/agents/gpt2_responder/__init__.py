"""
``-m docgraph/gpt2_responder``: the knowledge-grounded response generator (GPT-2 or any
Hugging Face causal LM) of the ``-m docgraph`` pipeline, as a ParlAI generator agent.

ParlAI resolves ``-m docgraph/gpt2_responder`` to this package and reads
``Gpt2ResponderAgent`` (the name it derives) from it. Modules: ``agent`` (the agent),
``args`` (its options), ``dictionary`` (the LM's tokenizer as ParlAI's dictionary), ``messages`` (the knowledge
line and the references of a message).
The agent is imported on first use (:mod:`parlai_docgraph.lazy`).
"""

from parlai_docgraph.lazy import lazy_exports

_EXPORTS = {"GPT2ResponderAgent": "agent", "Gpt2ResponderAgent": "agent",
            "ResponderDictionaryAgent": "dictionary"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

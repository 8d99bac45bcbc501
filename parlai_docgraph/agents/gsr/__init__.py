"""
``-m docgraph/gsr``: DialogGSR (Park et al.): knowledge-graph paths generated under a
prefix-trie constraint with a Katz prior, then a response from the retrieved subgraph.

ParlAI resolves ``-m docgraph/gsr`` to this package and reads ``GsrAgent`` from it.
Modules: ``agent`` (the agent), ``args`` (its options), ``evaluation`` (retrieval and
generation metrics), ``retriever``; the token sequences are
:mod:`parlai_docgraph.models.gsr.inputs`, Park et al.'s ablation option sets
:mod:`parlai_docgraph.recipes.gsr_ablations`.
"""

from parlai_docgraph.agents.gsr.agent import GSRAgent, GSRDictionaryAgent, GsrAgent

__all__ = ["GSRAgent", "GSRDictionaryAgent", "GsrAgent"]

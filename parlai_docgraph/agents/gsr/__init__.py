"""
``-m docgraph/gsr``: DialogGSR (Park et al.): knowledge-graph paths generated under a
prefix-trie constraint with a Katz prior, then a response from the retrieved subgraph.

ParlAI resolves ``-m docgraph/gsr`` to this package and reads ``GsrAgent`` from it.
Modules: ``agent`` (the agent), ``args`` (its options), ``evaluation`` (retrieval and
generation metrics), ``retriever``; the token sequences are
:mod:`parlai_docgraph.models.gsr.inputs`, Park et al.'s ablation option sets
:mod:`parlai_docgraph.recipes.gsr_ablations`.
The agent is imported on first use (:mod:`parlai_docgraph.lazy`).
"""

from parlai_docgraph.lazy import lazy_exports

_EXPORTS = {"GSRAgent": "agent", "GSRDictionaryAgent": "agent", "GsrAgent": "agent"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

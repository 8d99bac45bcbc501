"""
``-m docgraph/graph_selector``: the knowledge selector of Li et al. (2022) and Zhang & Tan
(document graph -> EGAT / GAT -> sentence scores), as a ParlAI ranker agent.

ParlAI resolves ``-m docgraph/graph_selector`` to this package (``parlai.agents.docgraph.
graph_selector`` through the start-up hook) and reads :class:`GraphSelectorAgent` from it.

Modules, each one concept (ParlAI glue; the graph provider, collation, encoders, the
similarity prior and the torch layers are in :mod:`parlai_docgraph.models`):

- ``agent``: the agent (train / eval steps), ``args``: its options, ``dictionary``: the
  placeholder ParlAI dictionary;
- ``messages``, ``batching``: ParlAI messages -> knowledge pools, candidates, a ``Batch``;
- ``optim``, ``evaluation``, ``select``: parameter groups, metrics, ranking a pool outside
  a batch (interactive chat, held-out evaluation) and the graph it scored.
The agent is imported on first use (:mod:`parlai_docgraph.lazy`): ``messages`` alone does
not load the model.
"""

from parlai_docgraph.lazy import lazy_exports

_EXPORTS = {"GraphSelectorAgent": "agent"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

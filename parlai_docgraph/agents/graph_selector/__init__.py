"""
``-m docgraph/graph_selector``: the knowledge selector of Li et al. (2022) and Zhang & Tan
(document graph -> EGAT / GAT -> sentence scores), as a ParlAI ranker agent.

ParlAI resolves ``-m docgraph/graph_selector`` to this package (``parlai.agents.docgraph.
graph_selector`` through the start-up hook) and reads :class:`GraphSelectorAgent` from it.

Modules, each one concept (ParlAI glue; the torch layers are in
:mod:`parlai_docgraph.models`):

- ``agent``: the agent (model construction, train / eval steps); ``args``: its options;
- ``messages``, ``inputs``, ``background``: WoW-format messages -> candidate sentences,
  token ids and the knowledge pool of a turn;
- ``batch``: graphs and node features per pool, collation into a ParlAI ``Batch``;
- ``encoder``, ``prior``, ``paths``: the sentence encoder, the similarity prior, the
  linearized-graph (``paths``) input;
- ``optim``, ``evaluation``, ``select``: parameter groups, metrics, ranking a pool outside
  a batch (interactive chat, held-out evaluation).
"""

from parlai_docgraph.agents.graph_selector.agent import GraphSelectorAgent

__all__ = ["GraphSelectorAgent"]

"""
ParlAI agents of parlai-docgraph (ParlAI glue; the torch models live in
``parlai_docgraph.models``).

The stock ``parlai`` command reaches this package as ``parlai.agents.docgraph`` through
the start-up hook, so ``-m docgraph`` loads :class:`agents.DocgraphAgent` and
``-m docgraph/graph_selector`` loads :class:`graph_selector.GraphSelectorAgent`.
"""

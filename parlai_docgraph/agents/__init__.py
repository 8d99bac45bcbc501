"""
ParlAI agents of parlai-docgraph (ParlAI glue; the torch models live in
``parlai_docgraph.models``). One subpackage per ``-m`` name:

- ``graph_selector/``: ``-m docgraph/graph_selector`` (knowledge selection);
- ``gpt2_responder/``: ``-m docgraph/gpt2_responder`` (response generation);
- ``gsr/``: ``-m docgraph/gsr`` (DialogGSR);
- ``pipeline/``: ``-m docgraph`` (selector -> responder, interactive and web chat; ParlAI
  finds it through ``agents.py``).

``base`` and ``lm_adapters`` hold what several agents share. The stock ``parlai`` command
reaches this package as ``parlai.agents.docgraph`` through the start-up hook.
"""

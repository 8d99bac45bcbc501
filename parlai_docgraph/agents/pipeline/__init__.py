"""
The ``-m docgraph`` pipeline (selector -> responder) and chat over the user's documents.

Modules: ``agent`` (:class:`~parlai_docgraph.agents.pipeline.agent.DocgraphAgent`, which
ParlAI finds through ``parlai_docgraph/agents/agents.py``), ``messages`` (what each part
sees, how the selection is read back, how options and metrics combine), ``interactive``
(documents -> passages, per-turn graph pages of ``parlai interactive``), ``web_sessions``
(per-user sessions of ``parlai-docgraph chat``). Nothing is imported here, so the teachers
and scripts that read documents do not load the models.
"""

"""
The ``-m docgraph`` pipeline (selector -> responder) and chat over the user's documents.

Modules: ``agent`` (:class:`~parlai_docgraph.agents.pipeline.agent.DocgraphAgent`, which
ParlAI finds through ``parlai_docgraph/agents/agents.py``; it also reads the documents of
``parlai interactive`` and prepares each user turn), ``args`` (its options and its parts'),
``messages`` (what each part sees, how the selection is read back, how options and metrics
combine, user turns), ``web_sessions`` (per-user sessions of ``parlai-docgraph chat``),
``web_turn`` (one turn of such a session).
Documents become passages in :mod:`parlai_docgraph.graphs.corpus` and each turn's pool in
:mod:`parlai_docgraph.graphs.retrieval`. Nothing is imported here, so the teachers and
scripts that read documents do not load the models.
"""

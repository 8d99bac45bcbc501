"""
Knowledge selection. Modules: Li et al.'s EGAT (``egat``), node relevance to the turn
(``relevance``) and dialog-aware selector (``dialog_aware``); Zhang & Tan's multi-level GAT
(``multilevel_gat``) and selector (``multilevel_selector``); what they share (``common``: graph
tensors, segment softmax, negative sampling); ``build`` (:func:`~.build.build_selector`, the
model of a graph configuration), ``provider`` (graphs and node features per knowledge
pool), ``collate`` (pools and candidates -> batch tensors), ``inputs`` (encoder inputs of a
candidate and its context), ``prior`` (the similarity prior).
"""

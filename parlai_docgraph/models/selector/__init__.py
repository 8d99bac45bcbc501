"""
Knowledge selection layers: Li et al.'s EGAT (``egat``), node relevance to the turn
(``relevance``) and dialog-aware selector (``dialog_aware``); Zhang & Tan's multi-level GAT
(``multilevel_gat``) and selector (``multilevel``); what they share (``common``: graph
tensors, segment softmax, negative sampling).
"""

"""
Torch-only knowledge selection models (no ParlAI imports): Li et al.'s EGAT layer and
dialog-aware graph selector, and Zhang & Tan's multi-level GAT selector. The names below are
imported on first use (:mod:`parlai_docgraph.lazy`), so importing one model package (the
responder, DialogGSR) does not load the selectors and ``torch_geometric``.
"""

from parlai_docgraph.lazy import lazy_exports

_EXPORTS = {
    "collate_graphs": "selector.common", "graph_index": "selector.common",
    "sample_negatives": "selector.common", "segment_log_softmax": "selector.common",
    "EGATConv": "selector.egat",
    "MultiLevelGAT": "selector.multilevel_gat", "MultiLevelOutput": "selector.multilevel_gat",
    "word_selection_targets": "selector.multilevel_gat",
    "MultiLevelSelector": "selector.multilevel_selector",
    "MultiLevelSelectorOutput": "selector.multilevel_selector",
    "CONTEXT_EDGE_TYPE": "selector.dialog_aware", "CONTEXT_NODE_TYPE": "selector.dialog_aware",
    "VARIANTS": "selector.dialog_aware", "DialogAwareSelector": "selector.dialog_aware",
    "SelectorOutput": "selector.dialog_aware", "concept_labels": "selector.dialog_aware",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

"""
Torch-only knowledge selection models (no ParlAI imports): Li et al.'s EGAT layer and
dialog-aware graph selector, and Zhang & Tan's multi-level GAT selector.
"""

from parlai_docgraph.models.selector.common import collate_graphs, graph_index, sample_negatives, segment_log_softmax
from parlai_docgraph.models.selector.egat import EGATConv
from parlai_docgraph.models.selector.multilevel_gat import MultiLevelGAT, MultiLevelOutput, word_selection_targets
from parlai_docgraph.models.selector.multilevel_selector import MultiLevelSelector, MultiLevelSelectorOutput
from parlai_docgraph.models.selector.dialog_aware import (
    CONTEXT_EDGE_TYPE, CONTEXT_NODE_TYPE, VARIANTS, DialogAwareSelector, SelectorOutput,
    concept_labels,
)

__all__ = [
    "CONTEXT_EDGE_TYPE", "CONTEXT_NODE_TYPE", "VARIANTS", "DialogAwareSelector", "EGATConv",
    "MultiLevelGAT", "MultiLevelOutput", "MultiLevelSelector", "MultiLevelSelectorOutput", "SelectorOutput", "collate_graphs", "concept_labels",
    "graph_index",
    "sample_negatives", "segment_log_softmax", "word_selection_targets",
]

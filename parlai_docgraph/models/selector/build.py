"""
:func:`build_selector`: the knowledge-selection model of a graph configuration, built from
its options (the graph selector agent's ``build_model`` calls it). No ParlAI imports.
"""

from __future__ import annotations

from typing import Any, Mapping

from torch import nn

from parlai_docgraph.graphs.config import GraphConfig, GraphVariant


def build_selector(graph_config: GraphConfig, encoder: Any, options: Mapping[str, Any],
                   pooling: str, relevance: bool) -> nn.Module:
    """
    Zhang & Tan's :class:`~.multilevel_selector.MultiLevelSelector` for ``--graph-variant
    multilevel``, Li et al.'s :class:`~.dialog_aware.DialogAwareSelector` otherwise (the
    ``paths`` baseline: the cross-encoder, its graph read as text). ``encoder``: the
    fine-tuned context/sentence encoder (Eq. 1); ``options``: the selector's option values
    (``gat_*`` of the multi-level model, ``selector_*``, ``type_dim``, ``num_negatives``,
    ``concept_loss_*``, ``share_layers``, ``word_loss_alpha``); ``pooling``: ``cls`` or
    ``mean``; ``relevance``: node relevance to the turn (``--node-relevance``).
    """
    dim = encoder.config.hidden_size
    variant = graph_config.variant
    if variant is GraphVariant.MULTILEVEL:
        from parlai_docgraph.models.selector.multilevel_selector import MultiLevelSelector

        return MultiLevelSelector(
            dim, hidden=options["gat_hidden"], heads=options["gat_heads"],
            num_layers=options["gat_layers"], dropout=options["selector_dropout"],
            alpha=options["word_loss_alpha"], context_encoder=encoder, pooling=pooling,
            relevance=relevance)
    from parlai_docgraph.models.selector.dialog_aware import DialogAwareSelector

    return DialogAwareSelector(
        dim, dim, hidden=options["selector_hidden"], num_layers=options["selector_layers"],
        type_dim=options["type_dim"], heads=options["selector_heads"],
        variant=(GraphVariant.NONE if variant is GraphVariant.PATHS else variant).value,
        num_negatives=options["num_negatives"],
        concept_loss_weight=options["concept_loss_weight"],
        concept_loss_mean=options["concept_loss_mean"],
        share_layers=options["share_layers"], dropout=options["selector_dropout"],
        context_encoder=encoder, pooling=pooling, relevance=relevance,
    )

"""
:func:`build_selector`: the knowledge-selection model of a graph configuration, built from
its options (the graph selector agent's ``build_model`` calls it). No ParlAI imports.

Selector families are registered by name (:data:`SELECTOR_FAMILIES`); a variant names its
family in its :class:`~parlai_docgraph.graphs.config.VariantSpec` row. A family's model
declares what it reads from a batch (``batch_inputs``), its loss of a batch
(``batch_loss``) and its auxiliary loss's metric name (``aux_loss_name``), so the agent
has no branch per family.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping

from torch import nn

from parlai_docgraph.graphs.config import GraphConfig, GraphVariant

#: ``(graph_config, encoder, options, pooling, relevance) -> model``
SelectorFactory = Callable[[GraphConfig, Any, Mapping[str, Any], str, bool], nn.Module]


def _dialog_aware(graph_config: GraphConfig, encoder: Any, options: Mapping[str, Any],
                  pooling: str, relevance: bool) -> nn.Module:
    """Li et al.'s :class:`~.dialog_aware.DialogAwareSelector` (the ``paths`` baseline: the
    cross-encoder, its graph read as text)."""
    from parlai_docgraph.models.selector.dialog_aware import DialogAwareSelector

    dim = encoder.config.hidden_size
    variant = graph_config.variant
    return DialogAwareSelector(
        dim, dim, hidden=options["selector_hidden"], num_layers=options["selector_layers"],
        type_dim=options["type_dim"], heads=options["selector_heads"],
        variant=(GraphVariant.NONE if variant.text_only else variant).value,
        num_negatives=options["num_negatives"],
        concept_loss_weight=options["concept_loss_weight"],
        concept_loss_mean=options["concept_loss_mean"],
        share_layers=options["share_layers"], dropout=options["selector_dropout"],
        context_encoder=encoder, pooling=pooling, relevance=relevance,
    )


def _multilevel(graph_config: GraphConfig, encoder: Any, options: Mapping[str, Any],
                pooling: str, relevance: bool) -> nn.Module:
    """Zhang & Tan's :class:`~.multilevel_selector.MultiLevelSelector`."""
    from parlai_docgraph.models.selector.multilevel_selector import MultiLevelSelector

    return MultiLevelSelector(
        encoder.config.hidden_size, hidden=options["gat_hidden"], heads=options["gat_heads"],
        num_layers=options["gat_layers"], dropout=options["selector_dropout"],
        alpha=options["word_loss_alpha"], context_encoder=encoder, pooling=pooling,
        relevance=relevance)


#: selector families by name (a :class:`~parlai_docgraph.graphs.config.VariantSpec`'s
#: ``selector``)
SELECTOR_FAMILIES: Dict[str, SelectorFactory] = {
    "dialog_aware": _dialog_aware, "multilevel": _multilevel,
}


def build_selector(graph_config: GraphConfig, encoder: Any, options: Mapping[str, Any],
                   pooling: str, relevance: bool) -> nn.Module:
    """
    The model of the variant's selector family. ``encoder``: the fine-tuned
    context/sentence encoder (Eq. 1); ``options``: the selector's option values (``gat_*``
    of the multi-level model, ``selector_*``, ``type_dim``, ``num_negatives``,
    ``concept_loss_*``, ``share_layers``, ``word_loss_alpha``); ``pooling``: ``cls`` or
    ``mean``; ``relevance``: node relevance to the turn (``--node-relevance``).
    """
    family = graph_config.variant.spec.selector
    try:
        factory = SELECTOR_FAMILIES[family]
    except KeyError:
        raise ValueError(f"--graph-variant {graph_config.variant.value}: no selector family "
                         f"{family!r}; registered: {', '.join(sorted(SELECTOR_FAMILIES))}") from None
    return factory(graph_config, encoder, options, pooling, relevance)

"""
Zhang & Tan (2023) multi-level selector with the batch interface of
:class:`~parlai_docgraph.models.selector.dialog_aware.DialogAwareSelector`, so one agent drives both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple, Union

import torch
from torch import Tensor, nn
from torch_geometric.utils import to_undirected

from parlai_docgraph.models.selector.common import encode_contexts, example_offsets
from parlai_docgraph.models.selector.multilevel_gat import MultiLevelGAT, word_selection_targets
from parlai_docgraph.models.selector.relevance import RelevanceEmbedding
from parlai_docgraph.models.selector.dialog_aware import SelectorOutput


@dataclass
class MultiLevelSelectorOutput(SelectorOutput):
    """:class:`SelectorOutput` plus Eq. 6 ``word_logits`` ``[W, 2]`` and their targets
    (``word_mask``: S', ``word_label``; empty without gold)."""

    word_logits: Tensor
    word_mask: Tensor
    word_label: Tensor


class MultiLevelSelector(nn.Module):
    r"""
    Knowledge selection over the multi-level graph (Zhang & Tan 3.3-3.6).

    Node vectors :math:`H` (computed outside, ``x``): word and topic nodes, the frozen
    encoder's mean-pooled states of their own text (Eq. 1; ``--node-text-encoding
    own_text``, the multilevel default; the reference code also keeps the word nodes frozen
    but fine-tunes the topic node's encoding); every candidate's segment node takes the trainable
    encoder's [CLS] of ``[s_i; x]`` (Eq. 2: the segment contextualised by the dialogue, the
    same pair input as Li's Eq. 1), other segment nodes keep their frozen vector. Then
    :class:`MultiLevelGAT` over the graph made undirected (each edge both ways, once): GAT
    + residual (Eq. 3-4), Eq. 5 softmax over each example's
    candidate segment nodes (the ``[no_passage_used]`` segment included, with its learnt
    embedding), Eq. 6 word-node selection on S' and Eq. 9
    :math:`\mathcal{L} = \alpha \mathcal{L}_{know} + (1 - \alpha) \mathcal{L}_{word}`.
    Eq. 5 runs over all candidates in training too (the paper samples no negatives).
    With ``relevance`` (``--node-relevance``, :mod:`.relevance`) every node's input vector
    also gets :math:`\mathrm{MLP}_\rho(\tilde\rho_v)` (not in Zhang & Tan).
    """

    use_graph = True
    use_concepts = True  # word-node scores stand in for concepts (``top_concepts``)
    concept_metrics = False  # Zhang & Tan Table 2 reports accuracy only
    #: batch fields :meth:`forward` reads besides the common ones (argument -> batch key)
    batch_inputs = {"node_passage": "graph_node_passage", "no_passage_index": "no_passage_index"}
    #: the metric name of the auxiliary loss (Eq. 8's word-node loss)
    aux_loss_name = "word_loss"

    def __init__(
        self, node_dim: int, hidden: int = 128, heads: int = 3, num_layers: int = 2,
        dropout: float = 0.0, alpha: float = 0.5, context_encoder: Optional[nn.Module] = None,
        pooling: str = "cls", relevance: bool = False,
    ) -> None:
        super().__init__()
        self.alpha = alpha
        self.use_relevance = relevance
        if relevance:
            self.relevance_emb = RelevanceEmbedding(node_dim)
        self.context_encoder, self.pooling = context_encoder, pooling
        self.gat = MultiLevelGAT(node_dim, hidden, heads, num_layers, dropout, alpha)

    def combine(self, know: float, aux: float) -> float:
        """Eq. 9 of one example's parts."""
        return self.alpha * know + (1 - self.alpha) * aux

    def forward(
        self, x: Tensor, edge_index: Tensor, cand_node: Tensor, cand2example: Tensor,
        context: Union[Tensor, Mapping[str, Tensor]], num_examples: int,
        concept_index: Optional[Tensor] = None, gold: Optional[Tensor] = None,
        node_passage: Optional[Tensor] = None, no_passage_index: Optional[Tensor] = None,
        relevance: Optional[Tensor] = None, **_: object,
    ) -> MultiLevelSelectorOutput:
        """
        Args: as :meth:`DialogAwareSelector.forward`; ``concept_index``: ``[W]`` word nodes;
        ``node_passage``: ``[N]`` passage of each node (unique across examples, for S');
        ``no_passage_index``: ``[B]`` ``[no_passage_used]`` segment nodes; ``relevance``:
        ``[N]`` node relevance (read when built with ``relevance``; ``None``: 0).
        """
        # Eq. 2: [CLS] (the paper, BERT); mean for encoders trained with mean pooling
        h_seg = encode_contexts(context, self.context_encoder, self.pooling).to(x.dtype)
        if h_seg.size(-1) != x.size(-1):
            raise ValueError(f"segment vectors ({h_seg.size(-1)}) and node features "
                             f"({x.size(-1)}) must come from the same encoder size")
        x = x.index_copy(0, cand_node, h_seg)  # Eq. 2 for the candidates' segment nodes
        if self.use_relevance:
            rel = relevance if relevance is not None else x.new_zeros(x.size(0))
            x = x + self.relevance_emb(rel).to(x.dtype)
        words = concept_index if concept_index is not None else x.new_zeros(0, dtype=torch.long)
        # the builder's edges are directed (topic -> segment -> word, head -> dependent); the
        # GAT reads the graph undirected, so words and topics also inform their segments
        undirected = to_undirected(edge_index, num_nodes=x.size(0))
        out = self.gat(x, undirected, cand_node, cand2example, num_examples, words,
                       no_passage_index)
        offset = example_offsets(cand2example, num_examples)[:-1]
        keep = torch.arange(cand_node.numel(), device=cand_node.device)
        w = out.word_logits
        mask = torch.zeros(w.size(0), dtype=torch.bool, device=w.device)
        label = torch.zeros(w.size(0), dtype=torch.long, device=w.device)
        gold_flat = None
        if gold is not None:
            gold_flat = offset + gold
            if node_passage is None:
                raise ValueError("node_passage is needed for the word targets (Eq. 6)")
            mask, label = word_selection_targets(edge_index, x.size(0), words, node_passage,
                                                 cand_node[gold_flat])
        return MultiLevelSelectorOutput(
            out.segment_logits, keep, cand2example, gold_flat, w[:, 1] - w[:, 0],
            num_examples, offset, w, mask, label)

    def batch_loss(self, out: MultiLevelSelectorOutput,
                   batch: Mapping[str, Any]) -> Tuple[Tensor, Dict[str, Tensor]]:
        """Eq. 9 of a batch (:meth:`loss`: the word-node targets came with ``out``)."""
        return self.loss(out)

    def loss(self, out: MultiLevelSelectorOutput) -> Tuple[Tensor, Dict[str, Tensor]]:
        """Eq. 9 (means over examples / S'); parts ``loss_c`` (Eq. 7), ``loss_n`` (Eq. 8).
        The word-node targets of Eq. 6 come with ``out`` (its forward pass had the gold);
        there are no concept labels to pass."""
        if out.gold is None:
            raise ValueError("loss needs the forward pass to be given gold")
        ptr = example_offsets(out.cand2example, out.num_examples)
        _, parts = self.gat.loss(
            _as_gat_output(out), out.gold - ptr[:-1], out.word_mask, out.word_label)
        loss_c, loss_n = parts["loss_know"], parts["loss_word"]
        return self.alpha * loss_c + (1 - self.alpha) * loss_n, {"loss_c": loss_c,
                                                                 "loss_n": loss_n}


def _as_gat_output(out: MultiLevelSelectorOutput):
    from parlai_docgraph.models.selector.multilevel_gat import MultiLevelOutput

    return MultiLevelOutput(out.scores, out.cand2example, out.word_logits, out.num_examples)

"""
Zhang & Tan (3.4-3.6) multi-level GAT knowledge selector: GAT + residual (Eq. 3-4), segment
softmax (Eq. 5), word-node auxiliary task (Eq. 6) and losses (Eq. 7-9).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GATConv

from parlai_docgraph.models.selector.common import example_offsets, ranking_loss


@dataclass
class MultiLevelOutput:
    """``segment_logits``: ``[S]`` Eq. 5 logits; ``word_logits``: ``[W, 2]`` Eq. 6 logits."""

    segment_logits: Tensor
    segment2example: Tensor
    word_logits: Tensor
    num_examples: int


def word_selection_targets(
    edge_index: Tensor,
    num_nodes: int,
    word_index: Tensor,
    node_passage: Tensor,
    gold_node: Tensor,
) -> Tuple[Tensor, Tensor]:
    """
    Eq. 6 targets for ``word_index``: ``(mask, label)``. ``mask`` keeps S', the word nodes of
    the gold segment's document (``node_passage`` must be unique across the batch's
    examples); ``label`` is 1 when an edge (either direction) joins the word to the gold
    segment node ``gold_node`` (``[B]`` node ids), else 0.
    """
    is_gold = torch.zeros(num_nodes, dtype=torch.bool, device=edge_index.device)
    is_gold[gold_node] = True
    src, dst = edge_index
    adjacent = torch.zeros_like(is_gold)
    adjacent[src[is_gold[dst]]] = True
    adjacent[dst[is_gold[src]]] = True
    gold_doc = torch.zeros(num_nodes, dtype=torch.bool, device=edge_index.device)
    gold_doc[torch.isin(node_passage, node_passage[gold_node])] = True
    return gold_doc[word_index], adjacent[word_index].long()


class MultiLevelGAT(nn.Module):
    r"""
    Knowledge selection over the multi-level (topic / segment / word) graph of Zhang & Tan
    (2023). :math:`H \in \mathbb{R}^{n \times dim}` are the initial node vectors (word and
    topic nodes: mean-pooled LM states, Eq. 1; segment nodes: [CLS] of the dialogue context
    + segment, Eq. 2), computed outside.

    .. math::
        H' &= \mathrm{GAT}(H) \qquad (3)

        \hat{H} &= \mathrm{ReLU}(W_1 H) + H' \qquad (4)

        p_i &= \frac{\exp(\hat{h}_i W_p + b_p)}{\sum_{j \in \hat{H}'} \exp(\hat{h}_j W_p + b_p)}
            \qquad (5)

        p_{wd, i} &= \mathrm{softmax}_{i \in \{0, 1\}}(\hat{h}_{wd} W_a + b_a)_i,
            \quad wd \in S' \qquad (6)

        \mathcal{L}_{know} &= -y \log p \qquad (7)

        \mathcal{L}_{word} &= -\frac{1}{|S'|} \sum_{wd \in S'} \log p_{wd, g} \qquad (8)

        \mathcal{L} &= \alpha \mathcal{L}_{know} + (1 - \alpha) \mathcal{L}_{word} \qquad (9)

    The softmax of Eq. 5 runs over each example's segment nodes (``[no_passage_used]``
    included: the multilevel builder adds it as a segment node); S' is the word nodes of the
    gold document, labelled 1 when linked to the gold segment. GAT: ``num_layers``
    :class:`~torch_geometric.nn.GATConv` layers (ELU between, heads concatenated, the last
    averaging its heads to ``hidden``; paper: WoW 2 layers x 3 heads x 128, Holl-E 1 x 4 x
    128). ``no_passage_embedding`` adds a learnt vector to the ``[no_passage_used]`` nodes'
    input so the "no knowledge" choice is not just the encoder's view of its text.
    """

    def __init__(
        self,
        in_dim: int,
        hidden: int = 128,
        heads: int = 3,
        num_layers: int = 2,
        dropout: float = 0.0,
        alpha: float = 0.5,
        no_passage_embedding: bool = True,
    ) -> None:
        super().__init__()
        if not 0.0 < alpha <= 1.0:
            # alpha = 0 would train the word-node task alone: the segment scores (what the
            # model selects with) would get no gradient
            raise ValueError(
                f"--word-loss-alpha must be in (0, 1] (Zhang & Tan Eq. 9: alpha weighs the "
                f"knowledge loss; 0.5 = the full model, 1 = the '+ Graph' row without the "
                f"word-node task), got {alpha}")
        self.alpha = alpha
        self.gats = nn.ModuleList()
        for layer in range(num_layers):
            last = layer == num_layers - 1
            self.gats.append(GATConv(in_dim if layer == 0 else hidden * heads, hidden, heads,
                                     concat=not last, dropout=dropout))
        self.lin_res = nn.Linear(in_dim, hidden, bias=False)  # W_1 of Eq. 4
        self.lin_p = nn.Linear(hidden, 1)  # W_p, b_p of Eq. 5
        self.lin_a = nn.Linear(hidden, 2)  # W_a, b_a of Eq. 6
        self.no_passage = nn.Parameter(torch.zeros(in_dim)) if no_passage_embedding else None

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        segment_index: Tensor,
        segment2example: Tensor,
        num_examples: int,
        word_index: Optional[Tensor] = None,
        no_passage_index: Optional[Tensor] = None,
    ) -> MultiLevelOutput:
        """
        Args:
            x: ``[N, in_dim]`` initial node vectors :math:`H`; edge_index: ``[2, E]``.
            segment_index: ``[S]`` segment (candidate) node ids, grouped by example.
            segment2example: ``[S]`` example of each segment (non-decreasing).
            word_index: ``[W]`` word nodes scored by the auxiliary head.
            no_passage_index: ``[B']`` ``[no_passage_used]`` node ids.
        """
        if self.no_passage is not None:
            idx = x.new_zeros(0, dtype=torch.long) if no_passage_index is None else no_passage_index
            x = x.index_add(0, idx, self.no_passage.expand(idx.numel(), -1))
        h = x
        for layer, gat in enumerate(self.gats):
            h = gat(h, edge_index)
            if layer < len(self.gats) - 1:
                h = F.elu(h)
        h_hat = F.relu(self.lin_res(x)) + h
        if word_index is None:
            word_index = segment_index.new_zeros(0)
        return MultiLevelOutput(self.lin_p(h_hat[segment_index]).squeeze(-1), segment2example,
                                self.lin_a(h_hat[word_index]), num_examples)

    def loss(
        self, out: MultiLevelOutput, gold: Tensor, word_mask: Optional[Tensor] = None,
        word_label: Optional[Tensor] = None,
    ) -> Tuple[Tensor, Dict[str, Tensor]]:
        """
        Eq. 9 with ``gold`` (``[B]``: gold segment index within each example's segments) and
        the word targets of :func:`word_selection_targets` (means over examples / S').
        """
        ptr = example_offsets(out.segment2example, out.num_examples)
        loss_know = ranking_loss(out.segment_logits, out.segment2example, out.num_examples,
                                 ptr[:-1] + gold)
        logits = out.word_logits
        if word_mask is None:
            word_mask = torch.zeros(logits.size(0), dtype=torch.bool, device=logits.device)
        if word_label is None:
            word_label = torch.zeros(logits.size(0), dtype=torch.long, device=logits.device)
        ce = F.cross_entropy(logits, word_label, reduction="none") * word_mask
        loss_word = ce.sum() / word_mask.sum().clamp_min(1)
        total = self.alpha * loss_know + (1 - self.alpha) * loss_word
        return total, {"loss_know": loss_know, "loss_word": loss_word}

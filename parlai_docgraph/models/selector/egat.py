"""
Edge-aware graph attention (EGAT) layer of Li et al. (2.2, Eq. 2-3), after QA-GNN.
"""

from __future__ import annotations

import math
from typing import Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import softmax


class EGATConv(MessagePassing):
    r"""
    The edge-aware graph attention layer of Li et al. (2022, Eq. 2-3), with learnt node-type
    embeddings :math:`h_{T(v)}` and edge-type embeddings :math:`h_{T(e)}` (Yasunaga et al.,
    2021). For an edge :math:`e` from source :math:`s` to target :math:`t`:

    .. math::
        m_{s \rightarrow t} &= W_v [h_s ; h_{T(s)}] + W_e h_{T(e)} \qquad (2)

        q_s &= W_q [h_s ; h_{T(s)}], \qquad k_t = W_k [h_t ; h_{T(t)} ; h_{T(e)}]

        \alpha_{s \rightarrow t} &= \mathrm{softmax}_{s \in \mathcal{N}(t)}
            \left( q_s^\top k_t / \sqrt{D} \right) \qquad (3)

        h_t' &= \mathrm{GELU}\left( \mathrm{MLP}\left( \textstyle\sum_{s \in \mathcal{N}(t)}
            \alpha_{s \rightarrow t} m_{s \rightarrow t} \right) + h_t \right)

    As the paper defines them, the *query* comes from the source (sender) node and its type,
    the *key* from the target (receiver) node, its type and the edge type; the softmax runs
    over the incoming edges of each target. :math:`D` is the dimension the dot product is
    taken in (the hidden size, or the per-head size with ``heads > 1``: the paper uses one
    head; several heads split :math:`q, k, m` into ``heads`` chunks, each with its own
    softmax, and concatenate the weighted messages as in QA-GNN). A target with no incoming
    edge aggregates the zero vector. ``MLP`` is ``Linear -> GELU -> Linear``.

    Args:
        channels: hidden size :math:`D` (input = output size, as the residual needs).
        num_node_types: size of the node-type vocabulary.
        num_edge_types: size of the edge-type vocabulary.
        type_dim: size of the type embeddings (20 in the paper).
        heads: number of attention heads (must divide ``channels``).
        dropout: dropout on the attention coefficients during training.
    """

    def __init__(
        self,
        channels: int,
        num_node_types: int,
        num_edge_types: int,
        type_dim: int = 20,
        heads: int = 1,
        dropout: float = 0.0,
    ) -> None:
        super().__init__(aggr="add", node_dim=0)
        if channels % heads:
            raise ValueError(f"heads={heads} must divide channels={channels}")
        self.channels, self.heads, self.dropout = channels, heads, dropout
        self.num_node_types, self.num_edge_types, self.type_dim = (
            num_node_types, num_edge_types, type_dim)
        self.node_type_emb = nn.Embedding(num_node_types, type_dim)
        self.edge_type_emb = nn.Embedding(num_edge_types, type_dim)
        self.lin_v = nn.Linear(channels + type_dim, channels)
        self.lin_e = nn.Linear(type_dim, channels)
        self.lin_q = nn.Linear(channels + type_dim, channels)
        self.lin_k = nn.Linear(channels + 2 * type_dim, channels)
        self.mlp = nn.Sequential(
            nn.Linear(channels, channels), nn.GELU(), nn.Linear(channels, channels))
        self._alpha: Optional[Tensor] = None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-initialise every parameter."""
        super().reset_parameters()
        for module in (self.node_type_emb, self.edge_type_emb, self.lin_v, self.lin_e,
                       self.lin_q, self.lin_k, self.mlp[0], self.mlp[2]):
            module.reset_parameters()

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        node_type: Tensor,
        edge_type: Tensor,
        return_attention_weights: bool = False,
    ) -> Union[Tensor, Tuple[Tensor, Tuple[Tensor, Tensor]]]:
        """
        Args:
            x: node states ``[N, D]``.
            edge_index: ``[2, E]`` (row 0 = source ``s``, row 1 = target ``t``).
            node_type: ``[N]`` ids below ``num_node_types``.
            edge_type: ``[E]`` ids below ``num_edge_types``.
            return_attention_weights: also return ``(edge_index, alpha)``, ``alpha`` of
                shape ``[E, heads]`` (each target's incoming weights sum to 1 per head).
        """
        dim, types = self.channels, self.type_dim
        node = torch.cat([x, self.node_type_emb(node_type)], dim=-1)  # [h_v ; h_T(v)]
        table = self.edge_type_emb.weight  # h_T(e) for every edge type
        key_weight = self.lin_k.weight
        aggr = self.propagate(
            edge_index,
            msg=self.lin_v(node),
            query=self.lin_q(node),
            key=F.linear(node, key_weight[:, : dim + types]),
            edge_type=edge_type,
            msg_edge=self.lin_e(table),
            key_edge=F.linear(table, key_weight[:, dim + types :], self.lin_k.bias),
            size=None,
        )
        out = F.gelu(self.mlp(aggr) + x)
        alpha, self._alpha = self._alpha, None
        if return_attention_weights:
            assert alpha is not None
            return out, (edge_index, alpha)
        return out

    def message(
        self,
        msg_j: Tensor,
        query_j: Tensor,
        key_i: Tensor,
        edge_type: Tensor,
        msg_edge: Tensor,
        key_edge: Tensor,
        index: Tensor,
        ptr: Optional[Tensor],
        size_i: Optional[int],
    ) -> Tensor:
        """``alpha_{s->t} m_{s->t}`` per edge (``_j``: source ``s``, ``_i``: target ``t``).

        The projections of Eq. 2-3 are linear in the concatenations, so :meth:`forward`
        computes them once per node (``msg``, ``query``, the node part of ``key``) and once
        per edge type (``msg_edge`` = :math:`W_e h_{T(e)}`, ``key_edge``: the edge-type part
        of :math:`W_k` with its bias); an edge gathers and adds them. An evaluation turn's
        dialog-aware graph has about 3.6 edges a node (288 nodes and 1,034 edges at 40
        candidates, 1,073 and 4,022 at 160), and the per-edge projections were most of
        the layer's time.
        """
        heads, dim = self.heads, self.channels // self.heads
        msg = (msg_j + msg_edge[edge_type]).view(-1, heads, dim)
        query = query_j.view(-1, heads, dim)
        key = (key_i + key_edge[edge_type]).view(-1, heads, dim)
        logits = (query * key).sum(dim=-1) / math.sqrt(dim)
        alpha = softmax(logits, index, ptr, size_i)
        self._alpha = alpha
        alpha = F.dropout(alpha, p=self.dropout, training=self.training)
        return (msg * alpha.unsqueeze(-1)).view(-1, self.channels)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self.channels}, heads={self.heads}, "
                f"node_types={self.num_node_types}, edge_types={self.num_edge_types}, "
                f"type_dim={self.type_dim})")

"""
Flat-batch helpers shared by the selectors: per-example log-softmax and ranking loss, negative sampling and
collation of several graphs into one disjoint graph (tensors a ParlAI ``Batch`` can carry),
the candidates' encoded context vectors (:func:`encode_contexts`).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import torch
from torch import Tensor
from torch_geometric.utils import scatter

from parlai_docgraph.graphs.embed import pool_tokens  # noqa: F401  (the models pool with it)
from parlai_docgraph.graphs.schema import DocumentGraph, Node


def segment_log_softmax(logits: Tensor, index: Tensor, num_segments: int) -> Tensor:
    """``log softmax`` of ``logits`` within each group of equal ``index`` (numerically stable)."""
    if logits.numel() == 0:
        return logits
    top = scatter(logits.detach(), index, 0, num_segments, reduce="max")
    shifted = logits - top[index]
    norm = scatter(shifted.exp(), index, 0, num_segments, reduce="sum")
    return shifted - norm.clamp_min(1e-30).log()[index]


def ranking_loss(logits: Tensor, index: Tensor, num_segments: int, gold: Tensor) -> Tensor:
    """The ranking loss (Li Eq. 6, Zhang & Tan Eq. 9's selection term): the mean over
    examples of ``-log softmax(logits of the example)[gold]``, ``gold`` flat indices into
    ``logits``."""
    return -segment_log_softmax(logits, index, num_segments)[gold].mean()


def example_offsets(item2example: Tensor, num_examples: int) -> Tensor:
    """``ptr`` (``[B + 1]``) of items sorted by example; raises if they are not sorted."""
    if item2example.numel() and bool((item2example[1:] < item2example[:-1]).any()):
        raise ValueError("items must be grouped by example (non-decreasing example ids)")
    counts = torch.bincount(item2example, minlength=num_examples)
    return torch.cat([counts.new_zeros(1), counts.cumsum(0)])


def sample_negatives(
    cand2example: Tensor, gold: Tensor, k: int, generator: Optional[torch.Generator] = None
) -> Tensor:
    """
    Indices (ascending) of the candidates to keep: every example's gold candidate plus
    ``min(k, n_b - 1)`` of its other candidates drawn uniformly without replacement. The gold
    is never drawn as a negative.

    Args:
        cand2example: ``[C]`` example id of each candidate, grouped by example.
        gold: ``[B]`` index of the gold candidate *within* its example's candidates.
        k: number of negatives per example.
    """
    num_examples = gold.numel()
    ptr = example_offsets(cand2example, num_examples)
    gold_flat = ptr[:-1] + gold
    key = torch.rand(cand2example.numel(), generator=generator).to(cand2example.device)
    key[gold_flat] = -1.0  # the gold sorts first within its example
    order = key.argsort(stable=True)
    order = order[cand2example[order].argsort(stable=True)]
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel(), device=order.device) - ptr[cand2example[order]]
    return (rank <= k).nonzero().view(-1)


def graph_index(graph: DocumentGraph) -> Dict[str, Tensor]:
    """
    Node ids a selector needs from one graph: ``sentence_node`` (ordered by global sentence
    index: candidate order), ``concept_node``, ``word_node``, ``no_passage_node`` (0 or 1 id,
    from ``meta["no_passage_node"]`` of the multi-level builder) and ``node_passage`` (``[N]``
    passage of every node).
    """
    sentences = sorted(graph.nodes_of_type("sentence"), key=lambda n: n.sentence)
    no_passage = graph.meta.get("no_passage_node")

    def ids(nodes: Sequence[Node]) -> Tensor:
        return torch.tensor([n.id for n in nodes], dtype=torch.long)

    return {
        "sentence_node": ids(sentences),
        "concept_node": ids(graph.nodes_of_type("concept")),
        "word_node": ids(graph.nodes_of_type("word")),
        "no_passage_node": torch.tensor([] if no_passage is None else [no_passage],
                                        dtype=torch.long),
        "node_passage": torch.tensor([n.passage for n in graph.nodes], dtype=torch.long),
    }


def collate_graphs(
    graphs: Sequence[Dict[str, Tensor]],
    features: Sequence[Tensor],
    indices: Optional[Sequence[Dict[str, Tensor]]] = None,
) -> Dict[str, Tensor]:
    """
    One disjoint graph from per-example ``DocumentGraph.to_tensors()`` dicts and node feature
    matrices: ``x``, ``edge_index`` (ids offset), ``node_type``, ``edge_type``,
    ``node2example`` and ``node_offset`` (``[B]``: add it to an example's node ids). With
    ``indices`` (per-example :func:`graph_index` dicts), each node-id list ``key`` comes back
    offset, with ``key2example``; ``node_passage`` is made unique across examples.
    """
    xs: List[Tensor] = []
    edges: List[Tensor] = []
    offsets: List[int] = []
    total = 0
    for graph, feat in zip(graphs, features):
        if feat.size(0) != int(graph["num_nodes"]):
            raise ValueError("features and graph disagree on the number of nodes")
        offsets.append(total)
        xs.append(feat)
        edges.append(graph["edge_index"] + total)
        total += feat.size(0)
    out = {
        "x": torch.cat(xs),
        "edge_index": torch.cat(edges, dim=1),
        "node_type": torch.cat([g["node_type"] for g in graphs]),
        "edge_type": torch.cat([g["edge_type"] for g in graphs]),
        "node2example": torch.cat(
            [torch.full((f.size(0),), i, dtype=torch.long) for i, f in enumerate(features)]),
        "node_offset": torch.tensor(offsets, dtype=torch.long),
    }
    if indices:
        passages, base = [], 0
        for index in indices:
            passages.append(index["node_passage"] + base)
            base += int(index["node_passage"].max()) + 1 if index["node_passage"].numel() else 0
        out["node_passage"] = torch.cat(passages)
        for key in indices[0]:
            if key == "node_passage":
                continue
            out[key] = torch.cat([index[key] + off for index, off in zip(indices, offsets)])
            out[f"{key}2example"] = torch.cat(
                [torch.full((index[key].numel(),), b, dtype=torch.long)
                 for b, index in enumerate(indices)])
    return out


@torch.no_grad()
def rank_candidates(out: Any) -> List[Tensor]:
    """
    Per example, indices into that example's input candidates, best score first (ties keep
    input order). ``out``: a selector output (``scores``, ``keep``, ``cand2example``,
    ``cand_offset``, ``num_examples``) of either selector, its scores as the caller wants
    them ranked (the agent adds its similarity terms first).
    """
    ptr = example_offsets(out.cand2example, out.num_examples).tolist()
    ranked: List[Tensor] = []
    for b in range(out.num_examples):
        lo, hi = ptr[b], ptr[b + 1]
        local = out.keep[lo:hi] - out.cand_offset[b]
        ranked.append(local[torch.sort(out.scores[lo:hi], descending=True, stable=True).indices])
    return ranked


def encode_contexts(context: Union[Tensor, Mapping[str, Tensor]], encoder: Optional[Any],
                    pooling: str, keep: Optional[Tensor] = None) -> Tensor:
    r"""
    The candidates' context vectors :math:`\mathrm{Pool}(f_{LM}([s_i; x]))` (Li Eq. 1, Zhang
    & Tan Eq. 2): ``context`` given as vectors ``[C, d]`` is used as is, given as the
    encoder's inputs (each ``[C, T]``) is encoded and pooled (``pooling``: ``cls`` or
    ``mean``). ``keep``: the candidates wanted (all when ``None``); only those are encoded.
    """
    if isinstance(context, Tensor):
        return context if keep is None else context[keep]
    if encoder is None:
        raise ValueError("context given as encoder inputs but no context_encoder is set")
    inputs = dict(context) if keep is None else {k: v[keep] for k, v in context.items()}
    out = encoder(**inputs)
    hidden = getattr(out, "last_hidden_state", out)
    return pool_tokens(hidden, inputs.get("attention_mask"), pooling)

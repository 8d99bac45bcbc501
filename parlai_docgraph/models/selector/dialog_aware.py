"""
Li et al. (2.2) dialog-aware graph knowledge selector: context nodes (Eq. 1), EGAT layers
(Eq. 2-3), sentence and concept heads (Eq. 4-5) and losses (Eq. 6-8).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, Mapping, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from parlai_docgraph.graphs.config import GraphVariant
from parlai_docgraph.graphs.schema import EDGE_TYPES, NODE_TYPES, DocumentGraph
from parlai_docgraph.models.selector.common import (
    encode_contexts, example_offsets, ranking_loss, sample_negatives,
)
from parlai_docgraph.models.selector.egat import EGATConv
from parlai_docgraph.models.selector.relevance import RelevanceEmbedding

#: Graph variants this model runs (``paths`` runs as ``none``; ``multilevel`` has its own
#: model): the names come from :class:`~parlai_docgraph.graphs.config.GraphVariant`.
VARIANTS: Tuple[str, ...] = tuple(
    v.value for v in GraphVariant if v not in (GraphVariant.MULTILEVEL, GraphVariant.PATHS))
#: Type ids past the schema vocabularies for the context node and its edge to its sentence.
CONTEXT_NODE_TYPE = len(NODE_TYPES)
CONTEXT_EDGE_TYPE = len(EDGE_TYPES)


@dataclass
class SelectorOutput:
    """
    ``scores``: ``[C']`` Eq. 4 logits of the kept candidates (all at inference, gold + k
    negatives when sampling); ``keep``: their indices into the input candidates;
    ``cand2example``: ``[C']``; ``gold``: ``[B]`` flat index of each gold into ``scores``
    (``None`` without labels); ``concept_logits``: ``[M]`` Eq. 5 pre-sigmoid logits;
    ``cand_offset``: ``[B]`` index of each example's first input candidate.
    """

    scores: Tensor
    keep: Tensor
    cand2example: Tensor
    gold: Optional[Tensor]
    concept_logits: Tensor
    num_examples: int
    cand_offset: Tensor


#: ``--concept-loss-mean``: ``graph`` = Li Eq. 7, the mean over the concept nodes of each
#: example's graph (then over examples, as Eq. 6); ``batch`` = the BCE summed over the batch
#: and divided by all its concept nodes (weights an example by its graph's size)
CONCEPT_LOSS_MEANS = ("graph", "batch")


def concept_sentences(graph: DocumentGraph) -> Dict[int, FrozenSet[int]]:
    """
    Concept node id -> the sentences that hold one of its mentions (a merged concept has
    several) as a span inside the sentence: what :func:`concept_labels` compares with the
    gold sentences. A pure function of the graph, so a pool's graph computes it once.
    """
    texts = graph.sentence_texts()
    out: Dict[int, FrozenSet[int]] = {}
    for node in graph.nodes_of_type("concept"):
        refs = list(node.mentions) or (
            [(node.sentence, *node.span)] if node.span is not None else [])
        out[node.id] = frozenset(
            s for s, a, b in refs if 0 <= a <= b <= len(texts.get(s, "")))
    return out


def concept_labels(graph: DocumentGraph, gold_sentences: Sequence[int],
                   sentences: Optional[Mapping[int, FrozenSet[int]]] = None) -> Dict[int, float]:
    """
    Concept node id -> relevance label ``r_n`` (Li 2.2): 1 when any mention of the concept (a
    merged concept has several) is a span inside a gold sentence, else 0. ``sentences``:
    :func:`concept_sentences` of ``graph`` when already computed.
    """
    gold = set(gold_sentences)
    sets = concept_sentences(graph) if sentences is None else sentences
    return {node: float(not gold.isdisjoint(held)) for node, held in sets.items()}


def _mlp(dim_in: int, dim: int, dim_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(dim_in, dim), nn.GELU(), nn.Linear(dim, dim_out))


class DialogAwareSelector(nn.Module):
    r"""
    Knowledge selection over a dialog-aware document graph (Li et al. 2022, 2.2).

    .. math::
        h^0_{c_i} &= \mathrm{Pool}(f_{LM}([s_i; x])) \qquad (1)

        \mathrm{score}(c) &= \mathrm{MLP}([h^L_c; h^0_c]) \qquad (4)

        \mathrm{score}(n) &= \sigma(\mathrm{MLP}(h^L_n)) \qquad (5)

        \mathcal{L}_c &= -\log \frac{\exp \mathrm{score}(c^+)}
            {\sum_{c \in \{c^+\} \cup C^-} \exp \mathrm{score}(c)} \qquad (6)

        \mathcal{L}_n &= -\frac{1}{N} \sum_{n \in G} r_n \log \mathrm{score}(n) \qquad (7)

        \mathcal{L} &= \mathcal{L}_c + \beta \mathcal{L}_n \qquad (8)

    Eq. 7 is quoted as printed: :math:`N` is "the total number of concept nodes" of the
    example's graph :math:`G`, and the text calls the loss "the binary cross entropy loss";
    this model computes that binary cross entropy, :math:`-(r_n \log \mathrm{score}(n) + (1 -
    r_n) \log (1 - \mathrm{score}(n)))` (the printed equation shows only the positive
    term), averaged over each graph's concept nodes and then over the examples
    (``concept_loss_mean="graph"``, the default); ``"batch"`` divides the batch's summed BCE
    by all its concept nodes instead, which weights an example by the size of its graph. An
    example without concept nodes adds 0 to the mean over examples.

    One context node per (kept) candidate joins the document graph with an edge to its
    sentence node; ``num_layers`` EGAT layers (:class:`EGATConv`, shared weights when
    ``share_layers``: the paper's "L layers with shared parameters") run over the union.
    Node features (frozen LM vectors, 2.1) and pooled context vectors (Eq. 1, or the output
    of an injected ``context_encoder`` pooled by ``pooling``: ``cls``, the paper's first
    token, or ``mean`` over the attention mask, :func:`~.common.pool_tokens`) are projected
    to ``hidden``; :math:`h^0` is that
    projection. Graph edges are directed; ``add_reverse_edges`` adds each reversed, with
    its own type, so sentences also hear their concepts and context nodes their sentence.

    With ``relevance`` (``--node-relevance``, :mod:`.relevance`), every document node's
    :math:`h^0` also gets :math:`\mathrm{MLP}_\rho(\rho_v)`, its cosine relevance to the
    current turn under the frozen encoder, standardised per graph (a bi-encoder cosine,
    after QA-GNN's node relevance, which scores context and node text jointly; not in Li et al.).

    Variants (``--graph-variant``): ``full``, ``sentence`` and ``coref`` differ only in the
    graph the builder makes (``sentence`` has no concept nodes, so no concept head);
    ``homogeneous`` gives every node and edge one type; ``none`` has no graph: Eq. 4 on
    :math:`h^0_c` alone (the cross-encoder ranking baseline). Every parameter of a variant
    takes part in each loss (zero gradient when a batch has no concepts), as DDP needs; an
    injected Hugging Face encoder should be built without its pooler
    (``add_pooling_layer=False``), which [CLS] pooling does not use.
    """

    def __init__(
        self,
        node_dim: int,
        context_dim: Optional[int] = None,
        hidden: int = 200,
        num_layers: int = 2,
        type_dim: int = 20,
        heads: int = 1,
        variant: str = "full",
        num_negatives: int = 5,
        concept_loss_weight: float = 1.0,
        share_layers: bool = True,
        add_reverse_edges: bool = True,
        dropout: float = 0.0,
        context_encoder: Optional[nn.Module] = None,
        pooling: str = "cls",
        relevance: bool = False,
        concept_loss_mean: str = "graph",
    ) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant {variant!r} not in {VARIANTS}")
        if concept_loss_mean not in CONCEPT_LOSS_MEANS:
            raise ValueError(f"--concept-loss-mean {concept_loss_mean!r}: choose from "
                             f"{', '.join(CONCEPT_LOSS_MEANS)}")
        self.concept_loss_mean = concept_loss_mean
        if concept_loss_weight < 0:
            raise ValueError(f"--concept-loss-weight (beta of Eq. 8) must be >= 0 (0: Li "
                             f"Table 7 'Sent. loss'), got {concept_loss_weight}")
        self.variant, self.num_layers, self.num_negatives = variant, num_layers, num_negatives
        self.concept_loss_weight, self.add_reverse_edges = concept_loss_weight, add_reverse_edges
        self.context_encoder, self.pooling = context_encoder, pooling
        self.context_proj = nn.Linear(context_dim or node_dim, hidden)
        spec = GraphVariant(variant).spec
        self.use_graph = not spec.text_only and num_layers > 0
        self.use_concepts = self.use_graph and spec.concepts
        self.typed = spec.typed
        self.use_relevance = self.use_graph and relevance
        self.score_head = _mlp(2 * hidden if self.use_graph else hidden, hidden, 1)
        self.convs = nn.ModuleList()
        if self.use_graph:
            n_types = CONTEXT_NODE_TYPE + 1 if self.typed else 1
            e_types = (CONTEXT_EDGE_TYPE + 1) * (1 + add_reverse_edges) if self.typed else 1
            self.node_proj = nn.Linear(node_dim, hidden)
            if relevance:
                self.relevance_emb = RelevanceEmbedding(hidden, type_dim)
            for _ in range(1 if share_layers else num_layers):
                self.convs.append(EGATConv(hidden, n_types, e_types, type_dim, heads, dropout))
        if self.use_concepts:
            self.concept_head = _mlp(hidden, hidden, 1)

    #: batch fields :meth:`forward` reads besides the common ones (none)
    batch_inputs: Dict[str, str] = {}
    #: the metric name of the auxiliary loss (Eq. 7's concept loss)
    aux_loss_name = "concept_loss"

    def batch_loss(self, out: SelectorOutput,
                   batch: Mapping[str, Any]) -> Tuple[Tensor, Dict[str, Tensor]]:
        """Eq. 8 of a batch (:meth:`loss`), with its concept labels where the variant has
        concepts."""
        if not self.use_concepts:
            return self.loss(out, None)
        return self.loss(out, batch.get("concept_label"), batch.get("concept2example"))

    @property
    def concept_metrics(self) -> bool:
        """Whether ``concept_map`` / ``concept_mrr`` are recorded (Li Table 7)."""
        return self.use_concepts

    def combine(self, know: float, aux: float) -> float:
        """Eq. 8 of one example's parts."""
        return know + self.concept_loss_weight * aux

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        node_type: Tensor,
        edge_type: Tensor,
        cand_node: Tensor,
        cand2example: Tensor,
        context: Union[Tensor, Mapping[str, Tensor]],
        num_examples: int,
        concept_index: Optional[Tensor] = None,
        gold: Optional[Tensor] = None,
        generator: Optional[torch.Generator] = None,
        relevance: Optional[Tensor] = None,
    ) -> SelectorOutput:
        r"""
        Args:
            x, edge_index, node_type, edge_type: the batch's disjoint document graphs
                (``[N, node_dim]``, ``[2, E]``, ``[N]``, ``[E]``; ids of the schema).
            cand_node: ``[C]`` sentence node of each candidate, grouped by example.
            cand2example: ``[C]`` example of each candidate (non-decreasing).
            context: ``[C, context_dim]`` pooled Eq. 1 vectors, or a dict of ``[C, ...]``
                encoder inputs for ``context_encoder``.
            num_examples: ``B``.
            concept_index: ``[M]`` concept node ids (node types may all be 0 when
                homogeneous, so they are given explicitly).
            gold: ``[B]`` gold candidate index within each example's candidates. In training
                mode with ``num_negatives > 0`` only the gold and k sampled negatives per
                example are kept (and encoded); otherwise all candidates.
            relevance: ``[N]`` :math:`\rho_v` of the document nodes (read when the model
                was built with ``relevance``; ``None`` there: 0 for every node).
        """
        sample = self.training and gold is not None and self.num_negatives > 0
        keep = (sample_negatives(cand2example, gold, self.num_negatives, generator) if sample
                else torch.arange(cand_node.numel(), device=cand_node.device))
        c2e = cand2example[keep]
        # Eq. 1 of the kept candidates only
        h_ctx = self.context_proj(encode_contexts(context, self.context_encoder, self.pooling,
                                                  keep))
        offset = example_offsets(cand2example, num_examples)[:-1]
        gold_flat = None
        if gold is not None:
            pos = torch.full((cand_node.numel(),), -1, dtype=torch.long, device=keep.device)
            pos[keep] = torch.arange(keep.numel(), device=keep.device)
            gold_flat = pos[offset + gold]
        if concept_index is None:
            concept_index = x.new_zeros(0, dtype=torch.long)
        if not self.use_graph:
            return SelectorOutput(self.score_head(h_ctx).squeeze(-1), keep, c2e, gold_flat,
                                  h_ctx.new_zeros(0), num_examples, offset)
        num_nodes, num_ctx = x.size(0), keep.numel()
        h_nodes = self.node_proj(x)
        if self.use_relevance:
            if relevance is None:
                relevance = x.new_zeros(num_nodes)
            h_nodes = h_nodes + self.relevance_emb(relevance).to(h_nodes.dtype)
        h0 = torch.cat([h_nodes, h_ctx])
        ctx_ids = num_nodes + torch.arange(num_ctx, device=x.device)
        ei, nt, et = self._dialog_aware_graph(edge_index, node_type, edge_type, ctx_ids,
                                              cand_node[keep])
        h = h0
        for layer in range(self.num_layers):
            h = self.convs[layer % len(self.convs)](h, ei, nt, et)
        scores = self.score_head(torch.cat([h[ctx_ids], h0[ctx_ids]], dim=-1)).squeeze(-1)
        concept_logits = (self.concept_head(h[concept_index]).squeeze(-1) if self.use_concepts
                          else h.new_zeros(0))
        return SelectorOutput(scores, keep, c2e, gold_flat, concept_logits, num_examples, offset)

    def _dialog_aware_graph(self, edge_index: Tensor, node_type: Tensor, edge_type: Tensor,
                            ctx_ids: Tensor, ctx_sentence: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        """
        Li et al.'s dialog-aware graph: the document graph plus one context node per kept
        candidate (``ctx_ids``), joined to its sentence node (``ctx_sentence``) by an edge of
        its own type; with ``add_reverse_edges`` every edge also the other way, under a
        reverse type. Returns ``(edge_index, node_type, edge_type)`` (all types 0 for a
        variant without types).
        """
        num_ctx = ctx_ids.numel()
        ei = torch.cat([edge_index, torch.stack([ctx_ids, ctx_sentence])], dim=1)
        et = torch.cat([edge_type, edge_type.new_full((num_ctx,), CONTEXT_EDGE_TYPE)])
        nt = torch.cat([node_type, node_type.new_full((num_ctx,), CONTEXT_NODE_TYPE)])
        if self.add_reverse_edges:
            ei = torch.cat([ei, ei.flip(0)], dim=1)
            et = torch.cat([et, et + CONTEXT_EDGE_TYPE + 1])
        if not self.typed:
            nt, et = torch.zeros_like(nt), torch.zeros_like(et)
        return ei, nt, et

    def loss(
        self, out: SelectorOutput, concept_label: Optional[Tensor] = None,
        concept2example: Optional[Tensor] = None,
    ) -> Tuple[Tensor, Dict[str, Tensor]]:
        """
        Eq. 8 ``L_c + beta L_n`` and its parts ``loss_c`` (Eq. 6, mean over examples),
        ``loss_n`` (Eq. 7, see the class docstring for the mean) and ``loss_n_examples``
        (``[B]``, each example's Eq. 7 term, detached; with ``concept_loss_mean="batch"`` the
        batch value for every example). ``concept2example``: ``[M]`` example of each concept
        logit, needed by the per-graph mean.
        """
        if out.gold is None:
            raise ValueError("loss needs the forward pass to be given gold")
        loss_c = ranking_loss(out.scores, out.cand2example, out.num_examples, out.gold)
        logits = out.concept_logits
        if concept_label is None:
            concept_label = logits.new_zeros(logits.shape)
        if logits.numel() != concept_label.numel():
            raise ValueError("one concept label per concept_index entry is needed")
        bce = F.binary_cross_entropy_with_logits(logits, concept_label.float(), reduction="none")
        num = out.num_examples
        if self.concept_loss_mean == "batch" or not self.use_concepts:
            loss_n = bce.sum() / max(logits.numel(), 1)
            per_example = loss_n.detach().expand(num)
        else:
            c2e = concept2example
            if c2e is None or c2e.numel() != logits.numel():
                raise ValueError("the per-graph mean of Eq. 7 needs concept2example (the example "
                                 "of each concept node)")
            counts = torch.bincount(c2e, minlength=num).clamp_min(1).to(bce.dtype)
            # sum_b (1 / N_b) sum_{n in G_b} BCE_n, then / B: each graph's mean, averaged
            weighted = bce / counts[c2e]
            loss_n = weighted.sum() / max(num, 1)
            per_example = torch.zeros(num, dtype=bce.dtype, device=bce.device).index_add_(
                0, c2e, weighted.detach())
        return loss_c + self.concept_loss_weight * loss_n, {
            "loss_c": loss_c, "loss_n": loss_n, "loss_n_examples": per_example}

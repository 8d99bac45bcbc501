"""
From WoW-format messages to the flat tensors that
:class:`~parlai_docgraph.models.selector.DialogAwareSelector` reads: graph building / loading with node features, candidate -> sentence-node mapping, and
collation into fields a ParlAI ``Batch`` carries (``Batch.to(device)`` moves every tensor
field, so nothing here is a PyG object).

No ParlAI imports: the agent (``graph_selector.py``) calls these from ``batchify``.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from ..graphs.schema import NODE_TYPE_ID, DocumentGraph
from ..models.selector import concept_labels

#: ``--graph-variant`` -> options of ``graphs.semantic.build_document_graph`` (None: no graph).
VARIANT_BUILD_OPTIONS: Dict[str, Optional[Dict[str, Any]]] = {
    "full": {},
    "sentence": {"sentence_graph": True},
    "coref": {"role_edges": False},
    "homogeneous": {"homogeneous": True},
    "none": None,
}
#: Variants of issue 5 this agent does not run yet.
PENDING_VARIANTS = ("multilevel", "paths")
KNOWLEDGE_SEPARATOR = "__knowledge__"
NO_PASSAGE = "no_passages_used"

Passages = List[Tuple[str, List[str]]]


def check_variant(variant: str) -> None:
    """``NotImplementedError`` naming a variant of issue 5 not built here; ``ValueError`` else."""
    if variant in PENDING_VARIANTS:
        raise NotImplementedError(
            f"--graph-variant {variant} is not implemented in GraphSelectorAgent yet "
            f"(issue #5); use one of {', '.join(VARIANT_BUILD_OPTIONS)}")
    if variant not in VARIANT_BUILD_OPTIONS:
        raise ValueError(f"unknown --graph-variant {variant!r}; choose from "
                         f"{', '.join(tuple(VARIANT_BUILD_OPTIONS) + PENDING_VARIANTS)}")


def message_passages(obs: Any) -> Passages:
    """
    The ``knowledge_passages`` (``[[title, [sentence, ...]], ...]``) of a docgraph WoW-format
    message, as ``(title, [sentences])`` pairs; ``ValueError`` saying what is missing.
    """
    raw = obs.get("knowledge_passages")
    if raw is None:
        raise ValueError(
            "GraphSelectorAgent needs the message field 'knowledge_passages' (the knowledge "
            "pool as [[title, [sentences]], ...]); the docgraph teachers (-t docgraph:wow, "
            "docgraph:sample, ...) provide it")
    return [(str(title), [str(s) for s in sents]) for title, sents in raw]


def candidate_sentences(passages: Passages, candidates: Sequence[str]) -> List[int]:
    """
    Global sentence index (over ``passages`` in order) of each candidate line
    (``"{title} {sentence}"`` or ``"{title} __knowledge__ {sentence}"``, as the WoW teachers
    write knowledge lines), -1 for a candidate that is no knowledge sentence
    (``no_passages_used``). A line that occurs twice maps to its first sentence.
    """
    lookup: Dict[str, int] = {}
    g = 0
    for title, sents in passages:
        for sent in sents:
            for line in (f"{title} {sent}", f"{title} {KNOWLEDGE_SEPARATOR} {sent}"):
                lookup.setdefault(line.strip(), g)
            g += 1
    return [lookup.get(c.strip(), -1) for c in candidates]


@dataclass
class ExampleGraph:
    """
    One pool's graph ready for collation: ``tensors`` (``to_tensors()`` of the graph plus one
    trailing *no-passage* node: type ``passage``, zero features, no edges, the node that a
    ``no_passages_used`` candidate's context node attaches to), ``x`` node features
    (``[N + 1, dim]``), ``sentence_node`` (``[S]`` node id of global sentence ``s``),
    ``concept_node`` (``[M]``) and the ``graph`` itself (concept labels).
    """

    tensors: Dict[str, Any]
    x: Tensor
    sentence_node: Tensor
    concept_node: Tensor
    graph: DocumentGraph

    @property
    def no_passage_node(self) -> int:
        return int(self.tensors["num_nodes"]) - 1


class GraphProvider:
    """
    Graphs and frozen node features per knowledge pool, built once and memoised.

    Graphs come from a :class:`~parlai_docgraph.graphs.cache.GraphStore` (``store_root``;
    built and stored when missing) or are built in process (``store_root=None``); node
    features are :func:`~parlai_docgraph.graphs.embed.embed_graph` vectors from the frozen
    ``node_encoder``. Both are kept in an in-process LRU memo of ``memo_size`` pools.
    """

    def __init__(
        self, variant: str, node_encoder: Any, tokenizer: Any, store_root: Optional[str] = None,
        parser: str = "dep", coref: str = "rule", memo_size: int = 256,
    ) -> None:
        check_variant(variant)
        self.variant = variant
        self.options = VARIANT_BUILD_OPTIONS[variant]
        self.node_encoder, self.tokenizer = node_encoder, tokenizer
        self.parser_name, self.coref_name = parser, coref
        self._parser = self._coref = None
        self.store = None
        if store_root and self.options is not None:
            from ..graphs.cache import GraphStore

            self.store = GraphStore(store_root)
        self.memo_size = memo_size
        self._memo: "OrderedDict[str, ExampleGraph]" = OrderedDict()

    @property
    def uses_graph(self) -> bool:
        return self.options is not None

    def _backends(self) -> Tuple[Any, Any]:
        if self._parser is None and not self.options.get("sentence_graph"):
            from ..graphs.coref import get_coref
            from ..graphs.parsers import get_parser

            kwargs = {"memo_size": 20000} if self.parser_name == "dep" else {}
            self._parser = get_parser(self.parser_name, **kwargs)
            self._coref = get_coref(self.coref_name)
        return self._parser, self._coref

    def build(self, passages: Passages) -> DocumentGraph:
        """The document graph of ``passages`` for this variant (store, else built)."""
        from ..graphs.semantic import build_document_graph

        parser, coref = self._backends()
        kwargs = dict(self.options)
        if not kwargs.get("sentence_graph"):
            kwargs.update(parser=parser, coref=coref)
        if self.store is not None:
            return self.store.get_or_build(passages, "semantic", **kwargs)
        return build_document_graph(passages, **kwargs)

    def get(self, passages: Passages) -> ExampleGraph:
        """The memoised :class:`ExampleGraph` of one pool."""
        key = hashlib.sha256(json.dumps(passages, ensure_ascii=False).encode()).hexdigest()
        hit = self._memo.get(key)
        if hit is not None:
            self._memo.move_to_end(key)
            return hit
        from ..graphs.embed import embed_graph
        from ..models.common import graph_index

        graph = self.build(passages)
        feats = embed_graph(graph, self.node_encoder, self.tokenizer).vectors
        tensors = graph.to_tensors()
        tensors["node_type"] = torch.cat(
            [tensors["node_type"], torch.tensor([NODE_TYPE_ID["passage"]])])
        tensors["num_nodes"] = int(tensors["num_nodes"]) + 1
        x = torch.cat([feats, feats.new_zeros(1, feats.size(1))])
        index = graph_index(graph)
        item = ExampleGraph(tensors, x, index["sentence_node"], index["concept_node"], graph)
        self._memo[key] = item
        while len(self._memo) > self.memo_size:
            self._memo.popitem(last=False)
        return item


def shuffled_order(n: int, rng: random.Random) -> List[int]:
    """A uniformly random permutation of ``range(n)`` (training candidate order, ParlAI#1570)."""
    order = list(range(n))
    rng.shuffle(order)
    return order


def collate_examples(
    provider: Optional[GraphProvider], passages: Sequence[Passages],
    candidates: Sequence[Sequence[str]], gold: Sequence[int], contexts: Sequence[str],
    tokenizer: Any, max_length: int,
) -> Dict[str, Any]:
    """
    Flat batch fields for ``B`` examples (candidates already in the order to score them).

    Tensor fields: ``cand_input_ids`` / ``cand_attention_mask`` (/ ``cand_token_type_ids``)
    ``[C, T]`` (Eq. 1 input ``[s_i; x]``, the context truncated from the left),
    ``cand2example`` ``[C]``, ``gold`` ``[B]`` (-1: label not among the candidates), and with
    a graph ``graph_x``, ``graph_edge_index``, ``graph_node_type``, ``graph_edge_type``,
    ``cand_node`` ``[C]``, ``concept_index`` ``[M]``, ``concept_label`` ``[M]``,
    ``concept2example`` ``[M]``. ``cand_node`` is a zero vector without a graph.
    """
    flat_cands = [c for cands in candidates for c in cands]
    flat_ctx = [ctx for ctx, cands in zip(contexts, candidates) for _ in cands]
    side = getattr(tokenizer, "truncation_side", "right")
    tokenizer.truncation_side = "left"  # keep the most recent dialogue turns
    try:
        enc = tokenizer(flat_cands, flat_ctx, padding=True, truncation="longest_first",
                        max_length=max_length, return_tensors="pt")
    finally:
        tokenizer.truncation_side = side
    out: Dict[str, Any] = {
        "cand_input_ids": enc["input_ids"], "cand_attention_mask": enc["attention_mask"],
        "cand2example": torch.cat([torch.full((len(c),), b, dtype=torch.long)
                                   for b, c in enumerate(candidates)]),
        "gold": torch.tensor(list(gold), dtype=torch.long),
    }
    if "token_type_ids" in enc:
        out["cand_token_type_ids"] = enc["token_type_ids"]
    if provider is None or not provider.uses_graph:
        out["cand_node"] = torch.zeros(len(flat_cands), dtype=torch.long)
        return out
    xs, edges, ntypes, etypes, cand_node, concepts, labels, c2e = [], [], [], [], [], [], [], []
    offset = 0
    for b, (pool, cands) in enumerate(zip(passages, candidates)):
        eg = provider.get(pool)
        sent = candidate_sentences(pool, cands)
        cand_node += [offset + (int(eg.sentence_node[s]) if s >= 0 else eg.no_passage_node)
                      for s in sent]
        gold_sentences = [sent[gold[b]]] if gold[b] >= 0 and sent[gold[b]] >= 0 else []
        lab = concept_labels(eg.graph, gold_sentences)
        ids = eg.concept_node.tolist()
        concepts += [offset + i for i in ids]
        labels += [lab[i] for i in ids]
        c2e += [b] * len(ids)
        xs.append(eg.x)
        edges.append(eg.tensors["edge_index"] + offset)
        ntypes.append(eg.tensors["node_type"])
        etypes.append(eg.tensors["edge_type"])
        offset += int(eg.tensors["num_nodes"])
    out.update(
        graph_x=torch.cat(xs), graph_edge_index=torch.cat(edges, dim=1),
        graph_node_type=torch.cat(ntypes), graph_edge_type=torch.cat(etypes),
        cand_node=torch.tensor(cand_node, dtype=torch.long),
        concept_index=torch.tensor(concepts, dtype=torch.long),
        concept_label=torch.tensor(labels, dtype=torch.float),
        concept2example=torch.tensor(c2e, dtype=torch.long),
    )
    return out

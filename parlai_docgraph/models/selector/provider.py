"""
:class:`GraphProvider`: the graph and frozen node features of each knowledge pool, for the
graph selector (built through :class:`~parlai_docgraph.graphs.factory.GraphFactory`, found in
the :class:`~parlai_docgraph.graphs.store.GraphStore`, memoised), and :class:`ExampleGraph`,
one pool's graph ready for collation (:mod:`.collate`). No ParlAI imports.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Optional, Sequence

import torch
from torch import Tensor

from parlai_docgraph.graphs.config import GraphConfig
from parlai_docgraph.graphs.embed import FrozenSentenceVectors
from parlai_docgraph.graphs.factory import GraphFactory
from parlai_docgraph.graphs.knowledge_lines import Passages
from parlai_docgraph.graphs.schema import NODE_TYPE_ID, DocumentGraph
from parlai_docgraph.memo import LRUMemo


@dataclass
class ExampleGraph:
    """
    One pool's graph ready for collation: ``tensors`` (``to_tensors()`` of the graph; a
    semantic graph gets one trailing *no-passage* node: type ``passage``, zero features, no
    edges, the node a ``no_passages_used`` candidate attaches to; the multi-level graph has
    its own ``[no_passage_used]`` segment), ``x`` node features (``[N, dim]``, ``None`` for
    the text-only ``paths`` variant), ``sentence_node`` (``[S]`` node id of global sentence
    ``s``), ``concept_node`` (``[M]``: concept nodes, or word nodes of the multi-level
    graph), ``no_passage`` (node id), ``node_passage`` (``[N]``), the ``graph`` itself and
    ``unit_x`` (``[N, dim]`` unit-length mean-pooled node vectors for the question
    relevance of :mod:`~parlai_docgraph.models.selector.relevance`; zero row for the no-passage node).
    """

    tensors: Dict[str, Any]
    x: Optional[Tensor]
    sentence_node: Tensor
    concept_node: Tensor
    graph: DocumentGraph
    no_passage: int
    node_passage: Tensor
    unit_x: Optional[Tensor] = None
    #: per ``concept_node`` entry its display name (:func:`~parlai_docgraph.graphs.concept_label.concept_label`)
    concept_texts: Optional[List[Optional[str]]] = None
    #: :func:`~.dialog_aware.concept_sentences` of ``graph`` (the concept labels' input)
    concept_sets: Optional[Dict[int, FrozenSet[int]]] = None

    @property
    def no_passage_node(self) -> int:
        return self.no_passage


def _pool_key(passages: Passages) -> str:
    return hashlib.sha256(json.dumps(passages, ensure_ascii=False).encode()).hexdigest()


class GraphProvider:
    """
    Graphs and frozen node features per knowledge pool, built once and memoised.

    Graphs come from ``factory`` (a :class:`~parlai_docgraph.graphs.factory.GraphFactory` of
    ``config``) through :meth:`~parlai_docgraph.graphs.store.GraphStore.get_or_build` of the
    store at ``store_root`` (the keys ``parlai-docgraph build_graphs`` writes: graphs it
    precomputed are loaded, never built again), or are built in process
    (``store_root=None``); a pool that extends a memoised one (``base``, ``--background
    per_turn``) is made by ``factory.extend``. Node features are
    :func:`~parlai_docgraph.graphs.embed.embed_graph` vectors from the frozen
    ``node_encoder`` (none for the text-only variants), sentence and passage nodes pooled by
    ``pooling`` (``cls`` or ``mean``), the node types in ``own_text`` (``--node-text-encoding
    own_text``) encoded from their own text alone, mean-pooled. Both are kept in an in-process
    :class:`~parlai_docgraph.memo.LRUMemo` of ``memo_size`` pools. A graph a teacher attached
    (``--attach-graphs``: :meth:`offer`) is used instead of a store read or a build when its
    key is this provider's own key for the pool.
    """

    def __init__(
        self, config: GraphConfig, node_encoder: Any, tokenizer: Any,
        store_root: Optional[str] = None, memo_size: int = 256,
        embed_cache: Optional[str] = None, pooling: str = "cls",
        own_text: Sequence[str] = (),
    ) -> None:
        self.config = config
        self.variant = config.variant.value
        self.pooling = pooling
        self.own_text = tuple(own_text)
        self.node_encoder, self.tokenizer = node_encoder, tokenizer
        #: the frozen encoder's memoised sentence embeddings (turns for node relevance; the
        #: agent's frozen similarity term shares them)
        self.sentence_vectors = (FrozenSentenceVectors(node_encoder, tokenizer)
                                 if node_encoder is not None else None)
        self.factory: Optional[GraphFactory] = None
        self.store = None
        if config.uses_graph:
            # the dep parser's sentence memo: re-building a stored graph to extend it
            # (per_turn) parses only the new sentences
            self.factory = GraphFactory(config, parse_memo=20000)
            if store_root:
                from parlai_docgraph.graphs.store import GraphStore

                self.store = GraphStore(store_root)
        self.embed_cache = None  # folder -> EmbeddingCache on first use (needs the encoder)
        if embed_cache is not None and node_encoder is not None:
            from parlai_docgraph.graphs.embed import encoder_limit
            from parlai_docgraph.graphs.embed_cache import EmbeddingCache, describe_encoder

            limit = encoder_limit(node_encoder, tokenizer, None)
            self.embed_cache = EmbeddingCache(
                embed_cache, describe_encoder(node_encoder, tokenizer, limit))
        self._memo: LRUMemo[str, ExampleGraph] = LRUMemo(memo_size)
        self._offered: LRUMemo[str, DocumentGraph] = LRUMemo(memo_size)
        self.attached = 0  # graphs taken from teachers' messages (offer)

    @property
    def uses_graph(self) -> bool:
        return self.factory is not None

    @property
    def extended(self) -> int:
        """Graphs made by extending a memoised pool's (``--background per_turn``); the
        factory counts them."""
        return self.factory.extended if self.factory is not None else 0

    def offer(self, passages: Passages, key: Optional[str], graph: Any) -> bool:
        """
        A graph a teacher attached to a message (``knowledge_graph_key``,
        ``knowledge_graph``: ``DocumentGraph.to_dict()``) for the pool ``passages``: kept for
        :meth:`build` when ``key`` is this provider's own key for the pool (the teacher read
        the same graph options), ignored otherwise. Returns whether it was kept.
        """
        if self.factory is None or key is None or graph is None:
            return False
        pool = _pool_key(passages)
        if pool in self._memo or pool in self._offered:
            return True
        if key != self.factory.key(passages):
            return False
        self._offered.put(pool, DocumentGraph.from_dict(graph))
        return True

    def build(self, passages: Passages, base: Optional[Passages] = None) -> DocumentGraph:
        """The document graph of ``passages`` for this config (extended, stored, or built)."""
        if self.factory is None:
            raise ValueError(f"--graph-variant {self.variant} has no graph")
        if (base is not None and self.factory.spec.extendable
                and len(base) < len(passages) and passages[:len(base)] == base):
            hit = self._memo.get(_pool_key(base))
            if hit is not None:
                return self.factory.extend(hit.graph, passages[len(base):])
        offered = self._offered.get(_pool_key(passages))
        if offered is not None:
            self.attached += 1
            return offered
        if self.store is not None:
            return self.store.get_or_build(passages, self.factory).graph
        return self.factory.build(passages)

    def get(self, passages: Passages, base: Optional[Passages] = None) -> ExampleGraph:
        """The memoised :class:`ExampleGraph` of one pool (``base``: a pool it extends)."""
        key = _pool_key(passages)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        from parlai_docgraph.models.selector.common import graph_index

        graph = self.build(passages, base)
        tensors = graph.to_tensors()
        index = graph_index(graph)
        x = unit = None
        if not self.config.variant.text_only:
            from parlai_docgraph.graphs.embed import embed_graph

            emb = embed_graph(graph, self.node_encoder, self.tokenizer,
                              cache=self.embed_cache, pooling=self.pooling,
                              own_text=self.own_text)
            x, unit = emb.vectors, torch.nn.functional.normalize(emb.mean_vectors, dim=-1)
        spec = self.factory.spec
        words = index[spec.concept_nodes]
        if spec.own_no_passage_node:
            no_passage = int(graph.meta["no_passage_node"])
            passage = index["node_passage"]
        else:  # a trailing no-passage node
            no_passage = int(tensors["num_nodes"])
            tensors["node_type"] = torch.cat(
                [tensors["node_type"], torch.tensor([NODE_TYPE_ID["passage"]])])
            tensors["num_nodes"] = no_passage + 1
            if x is not None:
                x = torch.cat([x, x.new_zeros(1, x.size(1))])
                unit = torch.cat([unit, unit.new_zeros(1, unit.size(1))])
            passage = torch.cat([index["node_passage"], torch.tensor([len(passages)])])
        # what every turn over this pool reads, computed once (recomputed per
        # turn they were a third of the graph's extra cost of an evaluation turn)
        from parlai_docgraph.graphs.concept_label import concept_label
        from parlai_docgraph.models.selector.dialog_aware import concept_sentences

        texts = [concept_label(graph.nodes[i].text, graph.nodes[i].kind) for i in words.tolist()]
        item = ExampleGraph(tensors, x, index["sentence_node"], words, graph, no_passage,
                            passage, unit, texts, concept_sentences(graph))
        return self._memo.put(key, item)

    def question_vectors(self, turns: Sequence[str]) -> Tensor:
        """``[B, dim]`` unit-length mean-pooled frozen-encoder vectors of ``turns``
        (memoised in :attr:`sentence_vectors`)."""
        return self.sentence_vectors(list(turns)).cpu()

"""
From WoW-format messages to the flat tensors that
:class:`~parlai_docgraph.models.selector.dialog_aware.DialogAwareSelector` reads: graph building / loading with node features, candidate -> sentence-node mapping, and
collation into fields a ParlAI ``Batch`` carries (``Batch.to(device)`` moves every tensor
field, so nothing here is a PyG object).

No ParlAI imports: the agent (``graph_selector.py``) calls these from ``batchify``.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import torch
from torch import Tensor

from parlai_docgraph.graphs.concept_label import concept_label
from parlai_docgraph.graphs.config import GraphConfig, GraphVariant
from parlai_docgraph.graphs.embed import FrozenSentenceVectors
from parlai_docgraph.graphs.factory import GraphFactory
from parlai_docgraph.graphs.schema import NODE_TYPE_ID, DocumentGraph
from parlai_docgraph.memo import LRUMemo
from parlai_docgraph.models.selector.relevance import node_relevance
from parlai_docgraph.models.selector.common import collate_graphs
from parlai_docgraph.models.selector.dialog_aware import concept_labels
from parlai_docgraph.agents.graph_selector.inputs import encode_candidates
from parlai_docgraph.agents.graph_selector.messages import Passages, candidate_sentences

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

    @property
    def no_passage_node(self) -> int:
        return self.no_passage


def _pool_key(passages: Passages) -> str:
    return hashlib.sha256(json.dumps(passages, ensure_ascii=False).encode()).hexdigest()


class GraphProvider:
    """
    Graphs and frozen node features per knowledge pool, built once and memoised.

    Graphs come from ``factory`` (a :class:`~parlai_docgraph.graphs.factory.GraphFactory` of
    ``config``) through :meth:`~parlai_docgraph.graphs.cache.GraphStore.get_or_build` of the
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
                from parlai_docgraph.graphs.cache import GraphStore

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
        if (base is not None and self.factory.builder == "semantic"
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
        if self.factory.builder == "multilevel":
            no_passage = int(graph.meta["no_passage_node"])
            words = index["word_node"]
            passage = index["node_passage"]
        else:  # a trailing no-passage node
            no_passage = int(tensors["num_nodes"])
            tensors["node_type"] = torch.cat(
                [tensors["node_type"], torch.tensor([NODE_TYPE_ID["passage"]])])
            tensors["num_nodes"] = no_passage + 1
            if x is not None:
                x = torch.cat([x, x.new_zeros(1, x.size(1))])
                unit = torch.cat([unit, unit.new_zeros(1, unit.size(1))])
            words = index["concept_node"]
            passage = torch.cat([index["node_passage"], torch.tensor([len(passages)])])
        item = ExampleGraph(tensors, x, index["sentence_node"], words, graph, no_passage,
                            passage, unit)
        return self._memo.put(key, item)

    def question_vectors(self, turns: Sequence[str]) -> Tensor:
        """``[B, dim]`` unit-length mean-pooled frozen-encoder vectors of ``turns``
        (memoised in :attr:`sentence_vectors`)."""
        return self.sentence_vectors(list(turns)).cpu()


def shuffled_order(n: int, rng: random.Random) -> List[int]:
    """A uniformly random permutation of ``range(n)`` (training candidate order, ParlAI#1570)."""
    order = list(range(n))
    rng.shuffle(order)
    return order


def with_paths(candidate: str, paths: str, tokenizer: Any, budget: int) -> str:
    """
    ``"{candidate} {paths}"`` with ``paths`` cut on a token boundary so that the whole first
    segment takes at most ``budget`` tokens (the candidate is never cut here). The pair is
    then truncated ``longest_first``: a first segment within half the limit leaves the
    trimming to the (left-cut) context, so the candidate reaches the encoder.
    """
    if not paths:
        return candidate
    # [CLS] a [SEP] b [SEP]: 3; RoBERTa's <s> a </s></s> b </s>: 4
    room = budget - len(tokenizer.tokenize(candidate)) - tokenizer.num_special_tokens_to_add(pair=True)
    if room <= 0:
        return candidate
    offsets = tokenizer(paths, add_special_tokens=False,
                        return_offsets_mapping=True)["offset_mapping"]
    if len(offsets) > room:
        paths = paths[: offsets[room - 1][1]]
    return f"{candidate} {paths}"


def collate_examples(
    provider: Optional[GraphProvider], passages: Sequence[Passages],
    candidates: Sequence[Sequence[str]], gold: Sequence[int], contexts: Sequence[str],
    tokenizer: Any, max_length: int, bases: Optional[Sequence[Optional[Passages]]] = None,
    path_hops: int = 2, path_max_tuples: Optional[int] = 10, input_format: str = "li",
    questions: Optional[Sequence[str]] = None,
) -> Dict[str, Any]:
    """
    Flat batch fields for ``B`` examples (candidates already in the order to score them).

    Tensor fields: ``cand_input_ids`` / ``cand_attention_mask`` (/ ``cand_token_type_ids``)
    ``[C, T]`` (Eq. 1 input ``[s_i; x]``, or Zhang & Tan's tagged sequence for
    ``input_format="zhang_tan"`` (:mod:`.inputs`), the context truncated from the
    left; ``paths``:
    ``s_i`` followed by at most ``path_max_tuples`` path tuples, cut to fit half of
    ``max_length`` so the candidate itself always survives), ``cand2example`` ``[C]``, ``gold``
    ``[B]`` (-1: label not among the candidates), and with node features ``graph_x``,
    ``graph_edge_index``, ``graph_node_type``, ``graph_edge_type``, ``graph_node_passage``
    (passage ids unique across the batch), ``cand_node`` ``[C]``, ``concept_index`` ``[M]``
    (multi-level: word nodes), ``concept_label`` ``[M]``, ``concept2example`` ``[M]``,
    ``no_passage_index`` ``[B]``; ``concept_texts`` (per example, the display names of its
    ``concept_index`` nodes in order, ``None`` for predicates and pronouns). ``cand_node`` is a zero vector without features.
    With ``questions`` (one turn per example) and node features, ``graph_relevance`` ``[N]``:
    each node's :func:`~parlai_docgraph.models.selector.relevance.node_relevance` to its example's turn.
    """
    bases = list(bases) if bases is not None else [None] * len(passages)
    graphs = ([provider.get(pool, base) for pool, base in zip(passages, bases)]
              if provider is not None and provider.uses_graph else None)
    sents = [candidate_sentences(pool, cands) for pool, cands in zip(passages, candidates)]
    texts = [list(c) for c in candidates]
    if graphs is not None and provider.config.variant is GraphVariant.PATHS:
        from parlai_docgraph.agents.graph_selector.paths import linearized_paths

        for b, eg in enumerate(graphs):
            for i, s in enumerate(sents[b]):
                paths = (linearized_paths(eg.graph, s, path_hops, path_max_tuples)
                         if s >= 0 else "")
                texts[b][i] = with_paths(texts[b][i], paths, tokenizer, max_length // 2)
    flat_cands = [c for cands in texts for c in cands]
    flat_ctx = [ctx for ctx, cands in zip(contexts, candidates) for _ in cands]
    enc = encode_candidates(tokenizer, flat_cands, flat_ctx, max_length, input_format)
    out: Dict[str, Any] = {
        "cand_input_ids": enc["input_ids"], "cand_attention_mask": enc["attention_mask"],
        "cand2example": torch.cat([torch.full((len(c),), b, dtype=torch.long)
                                   for b, c in enumerate(candidates)]),
        "gold": torch.tensor(list(gold), dtype=torch.long),
    }
    if "token_type_ids" in enc:
        out["cand_token_type_ids"] = enc["token_type_ids"]
    if graphs is None or graphs[0].x is None:
        out["cand_node"] = torch.zeros(len(flat_cands), dtype=torch.long)
        return out
    # the disjoint union of the examples' graphs: the one collate of the selector models
    union = collate_graphs([eg.tensors for eg in graphs], [eg.x for eg in graphs],
                           [{"node_passage": eg.node_passage} for eg in graphs])
    offsets = union["node_offset"].tolist()
    cand_node, concepts, labels, c2e, no_passage, concept_texts, relevance = (
        [], [], [], [], [], [], [])
    question = (provider.question_vectors(questions)
                if questions is not None and graphs[0].unit_x is not None else None)
    for b, (eg, sent, offset) in enumerate(zip(graphs, sents, offsets)):
        if question is not None:
            relevance.append(node_relevance(eg.unit_x, question[b]))
        cand_node += [offset + (int(eg.sentence_node[s]) if s >= 0 else eg.no_passage_node)
                      for s in sent]
        gold_sentences = [sent[gold[b]]] if gold[b] >= 0 and sent[gold[b]] >= 0 else []
        lab = concept_labels(eg.graph, gold_sentences)
        ids = eg.concept_node.tolist()
        concepts += [offset + i for i in ids]
        labels += [lab.get(i, 0.0) for i in ids]
        concept_texts.append([concept_label(eg.graph.nodes[i].text, eg.graph.nodes[i].kind)
                              for i in ids])
        c2e += [b] * len(ids)
        no_passage.append(offset + eg.no_passage_node)
    out.update(
        graph_x=union["x"], graph_edge_index=union["edge_index"],
        graph_node_type=union["node_type"], graph_edge_type=union["edge_type"],
        graph_node_passage=union["node_passage"],
        cand_node=torch.tensor(cand_node, dtype=torch.long),
        concept_index=torch.tensor(concepts, dtype=torch.long),
        concept_label=torch.tensor(labels, dtype=torch.float),
        concept2example=torch.tensor(c2e, dtype=torch.long),
        no_passage_index=torch.tensor(no_passage, dtype=torch.long),
        concept_texts=concept_texts,
    )
    if question is not None:
        out["graph_relevance"] = torch.cat(relevance)
    return out

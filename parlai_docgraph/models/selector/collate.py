"""
From knowledge pools, candidates and contexts to the flat tensors that
:class:`~parlai_docgraph.models.selector.dialog_aware.DialogAwareSelector` reads: candidate ->
sentence-node mapping, the paths text of the ``paths`` variant, and collation into fields a
ParlAI ``Batch`` carries (``Batch.to(device)`` moves every tensor field, so nothing here is a
PyG object). No ParlAI imports: the agent calls :func:`collate_examples` from ``batchify``.
"""

from __future__ import annotations

import random
from typing import Any, Dict, List, Optional, Sequence

import torch

from parlai_docgraph.graphs.concept_label import concept_label
from parlai_docgraph.graphs.config import GraphVariant
from parlai_docgraph.graphs.knowledge_lines import Passages, candidate_sentences
from parlai_docgraph.models.selector.common import collate_graphs
from parlai_docgraph.models.selector.dialog_aware import concept_labels
from parlai_docgraph.models.selector.inputs import encode_candidates
from parlai_docgraph.models.selector.provider import GraphProvider
from parlai_docgraph.models.selector.relevance import node_relevance

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
    ``input_format="zhang_tan"`` (:mod:`parlai_docgraph.models.selector.inputs`), the context truncated from the
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
        texts = _with_graph_paths(graphs, sents, texts, tokenizer, max_length // 2, path_hops,
                                  path_max_tuples)
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
    out.update(_graph_fields(provider, graphs, sents, gold, questions))
    return out


def _with_graph_paths(graphs: Sequence[Any], sents: Sequence[Sequence[int]],
                      texts: List[List[str]], tokenizer: Any, budget: int, path_hops: int,
                      path_max_tuples: Optional[int]) -> List[List[str]]:
    """The ``paths`` baseline's candidate texts: each sentence followed by the linearized
    paths of its graph, cut to ``budget`` tokens."""
    from parlai_docgraph.graphs.paths import linearized_paths

    for b, eg in enumerate(graphs):
        for i, s in enumerate(sents[b]):
            paths = linearized_paths(eg.graph, s, path_hops, path_max_tuples) if s >= 0 else ""
            texts[b][i] = with_paths(texts[b][i], paths, tokenizer, budget)
    return texts


def _graph_fields(provider: GraphProvider, graphs: Sequence[Any], sents: Sequence[Sequence[int]],
                  gold: Sequence[int], questions: Optional[Sequence[str]]) -> Dict[str, Any]:
    """The node-feature fields of :func:`collate_examples` (``graph_*``, ``cand_node``,
    ``concept_*``, ``no_passage_index``, ``graph_relevance``) over the disjoint union of the
    examples' graphs."""
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
        lab = concept_labels(eg.graph, gold_sentences, eg.concept_sets)
        ids = eg.concept_node.tolist()
        concepts += [offset + i for i in ids]
        labels += [lab.get(i, 0.0) for i in ids]
        concept_texts.append(list(eg.concept_texts) if eg.concept_texts is not None else
                             [concept_label(eg.graph.nodes[i].text, eg.graph.nodes[i].kind)
                              for i in ids])
        c2e += [b] * len(ids)
        no_passage.append(offset + eg.no_passage_node)
    out: Dict[str, Any] = dict(
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

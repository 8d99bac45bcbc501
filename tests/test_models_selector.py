"""Li et al. Eq. 1, 4-8: the dialog-aware selector (``models/selector/dialog_aware.py``), alone and on built graphs with MiniLM."""

from __future__ import annotations

from typing import Dict, List

import pytest
import torch

from conftest import HISTORY, PASSAGES
from parlai_docgraph.graphs.schema import DocumentGraph, Edge, Node
from parlai_docgraph.models import (
    VARIANTS, DialogAwareSelector, collate_graphs, concept_labels, sample_negatives,
    segment_log_softmax,
)
from parlai_docgraph.models.selector.common import rank_candidates

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _doc_graph(num_sent: int) -> DocumentGraph:
    """Passage 0, sentences 1..n, per sentence one entity concept; concept of sentence 0
    merged with a mention in the last sentence (coreference)."""
    texts = [f"Entity{i} does thing{i} here." for i in range(num_sent)]
    nodes = [Node(0, "passage", "Title", 0)]
    nodes += [Node(1 + i, "sentence", t, 0, sentence=i) for i, t in enumerate(texts)]
    edges = [Edge(0, 1 + i, "passage_sentence") for i in range(num_sent)]
    edges += [Edge(1 + i, 2 + i, "next_sentence") for i in range(num_sent - 1)]
    for i in range(num_sent):
        cid = len(nodes)
        mentions = ((i, 0, len(f"Entity{i}")),)
        if i == 0:
            mentions += ((num_sent - 1, 0, len(f"Entity{num_sent - 1}")),)
        nodes.append(Node(cid, "concept", f"Entity{i}", 0, sentence=i, span=mentions[0][1:],
                          mentions=mentions, kind="entity"))
        edges.append(Edge(1 + i, cid, "sentence_concept"))
        for s, _, _ in mentions[1:]:
            edges.append(Edge(1 + s, cid, "sentence_concept"))
        if i:
            edges.append(Edge(cid - 1, cid, "ARG0"))
    graph = DocumentGraph(nodes=nodes, edges=edges)
    graph.validate()
    return graph


def _selector_batch(seed: int = 0) -> Dict[str, object]:
    g = torch.Generator().manual_seed(seed)
    graphs = [_doc_graph(4), _doc_graph(3)]
    tensors = [gr.to_tensors() for gr in graphs]
    feats = [torch.randn(t["num_nodes"], 16, generator=g) for t in tensors]
    flat = collate_graphs(tensors, feats)
    cand, c2e, concepts, labels, concept2example = [], [], [], [], []
    gold = torch.tensor([2, 0])
    for b, gr in enumerate(graphs):
        off = int(flat["node_offset"][b])
        sents = [n.id for n in gr.nodes_of_type("sentence")]
        cand += [off + i for i in sents]
        c2e += [b] * len(sents)
        lab = concept_labels(gr, [gr.nodes[sents[int(gold[b])]].sentence])
        concepts += [off + i for i in sorted(lab)]
        labels += [lab[i] for i in sorted(lab)]
        concept2example += [b] * len(lab)
    return dict(
        x=flat["x"], edge_index=flat["edge_index"], node_type=flat["node_type"],
        edge_type=flat["edge_type"], cand_node=torch.tensor(cand), cand2example=torch.tensor(c2e),
        context=torch.randn(len(cand), 12, generator=g), num_examples=2,
        concept_index=torch.tensor(concepts), gold=gold, concept_label=torch.tensor(labels),
        concept2example=torch.tensor(concept2example),
    )


def _run(model: DialogAwareSelector, batch: Dict[str, object], **kw: object):
    args = {k: v for k, v in batch.items() if k not in ("concept_label", "concept2example")}
    args.update(kw)
    out = model(**args)
    if not model.use_concepts:
        return out, model.loss(out)
    return out, model.loss(out, batch["concept_label"], batch["concept2example"])


def _selector(variant: str = "full", **kw: object) -> DialogAwareSelector:
    torch.manual_seed(0)
    return DialogAwareSelector(16, 12, hidden=24, type_dim=6, variant=variant, **kw)


def test_concept_labels_only_from_gold_sentence_spans() -> None:
    graph = _doc_graph(4)
    labels = concept_labels(graph, [1])
    concept_ids = [n.id for n in graph.nodes_of_type("concept")]
    assert sorted(labels) == concept_ids  # concept nodes only
    by_text = {graph.nodes[i].text: v for i, v in labels.items()}
    assert by_text == {"Entity0": 0.0, "Entity1": 1.0, "Entity2": 0.0, "Entity3": 0.0}
    # a merged concept counts through any of its mentions (Entity0 is also in sentence 3)
    by_text = {graph.nodes[i].text: v for i, v in concept_labels(graph, [3]).items()}
    assert by_text == {"Entity0": 1.0, "Entity1": 0.0, "Entity2": 0.0, "Entity3": 1.0}


def test_selector_shapes_and_eval_uses_all_candidates() -> None:
    batch = _selector_batch()
    model = _selector(num_negatives=1).eval()
    out, (loss, parts) = _run(model, batch)
    assert out.scores.shape == (7,) and torch.equal(out.keep, torch.arange(7))
    assert out.concept_logits.shape == (7,)
    assert torch.equal(out.gold, torch.tensor([2, 4]))
    assert loss.ndim == 0 and set(parts) == {"loss_c", "loss_n", "loss_n_examples"}
    logp = segment_log_softmax(out.scores, out.cand2example, 2)
    torch.testing.assert_close(
        torch.zeros(2).index_add_(0, out.cand2example, logp.exp()), torch.ones(2))
    torch.testing.assert_close(parts["loss_c"], -(logp[2] + logp[4]) / 2)
    ranked = rank_candidates(out)
    assert [sorted(r.tolist()) for r in ranked] == [[0, 1, 2, 3], [0, 1, 2]]
    # each example's softmax only sees its own candidates
    bumped = dict(batch, context=batch["context"].clone())
    bumped["context"][5] += 10.0  # a candidate of example 1
    out2, _ = _run(model, bumped)
    probs = [torch.softmax(o.scores[:4], 0) for o in (out, out2)]
    torch.testing.assert_close(probs[0], probs[1])  # example 0 unaffected (disjoint graphs)


def test_negative_sampling_never_samples_gold() -> None:
    c2e = torch.tensor([0] * 6 + [1] * 2 + [2] * 9)
    gold = torch.tensor([4, 1, 0])
    ptr = torch.tensor([0, 6, 8])
    g = torch.Generator().manual_seed(3)
    seen = set()
    for _ in range(50):
        keep = sample_negatives(c2e, gold, 3, g)
        counts = torch.bincount(c2e[keep], minlength=3).tolist()
        assert counts == [4, 2, 4]  # gold + min(k, n - 1)
        assert set((ptr + gold).tolist()) <= set(keep.tolist())
        assert torch.equal(keep, keep.sort().values)
        seen |= set(keep.tolist())
    assert seen == set(range(17))
    batch = _selector_batch()
    model = _selector(num_negatives=2).train()
    out, _ = _run(model, batch, generator=g)
    assert torch.bincount(out.cand2example).tolist() == [3, 3]
    assert torch.equal(out.keep[out.gold], torch.tensor([2, 4]))
    assert torch.equal(out.keep[out.gold] - out.cand_offset, batch["gold"])


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_parameter_gets_a_gradient(variant: str) -> None:
    batch = _selector_batch()
    model = _selector(variant, num_negatives=2, heads=2, share_layers=False).train()
    _, (loss, _) = _run(model, batch, generator=torch.Generator().manual_seed(0))
    loss.backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None]
    assert not missing
    assert (variant == "none") == (not hasattr(model, "node_proj"))
    assert (variant in ("full", "coref", "homogeneous")) == model.use_concepts
    # a batch without concepts still touches every parameter (DDP)
    model.zero_grad()
    _, (loss, parts) = _run(model, dict(batch, concept_index=torch.zeros(0, dtype=torch.long),
                                        concept_label=torch.zeros(0),
                                        concept2example=torch.zeros(0, dtype=torch.long)))
    loss.backward()
    assert float(parts["loss_n"].detach()) == 0.0
    assert all(p.grad is not None for p in model.parameters())


@pytest.mark.parametrize("variant", ["full", "none"])
def test_selector_overfits_one_batch(variant: str) -> None:
    batch = _selector_batch()
    model = _selector(variant, num_negatives=2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    model.train()
    first = None
    for _ in range(50):
        opt.zero_grad()
        _, (loss, _) = _run(model, batch, generator=g)
        first = float(loss.detach()) if first is None else first
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        out, (loss, parts) = _run(model, batch)
    assert float(loss) < 0.05 < first
    assert [int(r[0]) for r in rank_candidates(out)] == [2, 0]


def test_selector_deterministic_with_seed_and_shared_layers() -> None:
    batch = _selector_batch()
    results = []
    for _ in range(2):
        model = _selector(num_negatives=2).train()
        out, (loss, _) = _run(model, batch, generator=torch.Generator().manual_seed(5))
        results.append((out.keep, out.scores.detach(), float(loss.detach())))
    assert torch.equal(results[0][0], results[1][0])
    assert torch.equal(results[0][1], results[1][1]) and results[0][2] == results[1][2]
    assert len(_selector().convs) == 1 and len(_selector(share_layers=False).convs) == 2


def test_selector_injected_context_encoder() -> None:
    batch = _selector_batch()
    seen: List[int] = []

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = torch.nn.Embedding(50, 12)

        def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
            seen.append(input_ids.size(0))
            return self.emb(input_ids)  # [C, T, 12]: the first token is pooled

    torch.manual_seed(0)
    model = DialogAwareSelector(16, 12, hidden=24, type_dim=6, num_negatives=1,
                                context_encoder=Encoder()).train()
    ids = torch.randint(0, 50, (7, 5))
    out, (loss, _) = _run(model, dict(batch, context={"input_ids": ids}))
    assert seen == [4] and out.scores.shape == (4,)  # only gold + 1 negative each encoded
    loss.backward()
    assert model.context_encoder.emb.weight.grad is not None


def test_pool_tokens_cls_and_masked_mean() -> None:
    """Eq. 1 pooling: the first token, or the mean over the attention mask (padding ignored)."""
    from parlai_docgraph.models.selector.common import pool_tokens

    hidden = torch.arange(2 * 3 * 2, dtype=torch.float).view(2, 3, 2)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    assert torch.equal(pool_tokens(hidden, mask, "cls"), hidden[:, 0])
    mean = pool_tokens(hidden, mask, "mean")
    assert torch.allclose(mean[0], hidden[0, :2].mean(0)) and torch.allclose(mean[1], hidden[1].mean(0))
    assert torch.equal(pool_tokens(hidden[:, 0], mask, "mean"), hidden[:, 0])  # already pooled
    with pytest.raises(ValueError, match="pooling"):
        pool_tokens(hidden, mask, "max")


def test_sentence_loss_only_is_li_table7_sent_loss_row() -> None:
    """Li Table 7 'Sent. loss' = the full graph trained with the sentence loss alone
    (``--concept-loss-weight 0``): Eq. 8 reduces to L_c, the concept head gets no gradient
    but still scores concepts (the row reports concept MAP/MRR), the rest trains; beta < 0
    is refused."""
    batch = _selector_batch()
    model = _selector("full", num_negatives=2, concept_loss_weight=0.0).train()
    out, (loss, parts) = _run(model, batch, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(loss, parts["loss_c"])
    assert float(parts["loss_n"].detach()) > 0 and model.concept_metrics
    assert out.concept_logits.numel() == batch["concept_index"].numel()
    loss.backward()
    assert all(float(p.grad.abs().sum()) == 0.0 for p in model.concept_head.parameters())
    assert float(model.score_head[0].weight.grad.abs().sum()) > 0
    full = _selector("full", num_negatives=2).train()
    _, (loss_full, _) = _run(full, batch, generator=torch.Generator().manual_seed(0))
    loss_full.backward()
    assert float(full.concept_head[0].weight.grad.abs().sum()) > 0  # beta 1 trains it
    with pytest.raises(ValueError, match="--concept-loss-weight"):
        _selector("full", concept_loss_weight=-1.0)


def test_selector_on_built_graphs_with_minilm(minilm) -> None:
    from parlai_docgraph.graphs import build_document_graph
    from parlai_docgraph.graphs.embed import embed_graph
    from parlai_docgraph.models import graph_index

    encoder, tokenizer = minilm
    graphs = [build_document_graph(p, parser="dep") for p in PASSAGES]
    feats = [embed_graph(g, encoder, tokenizer).vectors for g in graphs]
    idx = [graph_index(g) for g in graphs]
    flat = collate_graphs([g.to_tensors() for g in graphs], feats, idx)
    sents = [g.sentence_texts()[i] for g in graphs for i in sorted(g.sentence_texts())]
    x = " ".join(HISTORY)  # last two turns; Eq. 1 encodes [s_i; x]
    ctx = tokenizer(sents, [x] * len(sents), padding=True, return_tensors="pt")
    gold = torch.tensor([1, 1])
    labels = []
    for b, g in enumerate(graphs):
        lab = concept_labels(g, [int(gold[b]) + 0])
        labels += [lab[int(i)] for i in idx[b]["concept_node"]]
    assert sum(labels) >= 1
    torch.manual_seed(0)
    model = DialogAwareSelector(384, 384, num_negatives=1, context_encoder=encoder).train()
    args = dict(
        x=flat["x"], edge_index=flat["edge_index"], node_type=flat["node_type"],
        edge_type=flat["edge_type"], cand_node=flat["sentence_node"],
        cand2example=flat["sentence_node2example"], num_examples=2,
        context={k: ctx[k] for k in ("input_ids", "attention_mask")},
        concept_index=flat["concept_node"], gold=gold,
    )
    out = model(**args, generator=torch.Generator().manual_seed(0))
    assert out.scores.shape == (4,)
    loss, _ = model.loss(out, torch.tensor(labels), flat["concept_node2example"])
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    with torch.no_grad():
        out = model.eval()(**args)
    assert [len(r) for r in rank_candidates(out)] == [3, 2]


def test_concept_loss_is_the_mean_over_each_graphs_concepts() -> None:
    """Li Eq. 7: L_n is averaged over the N concept nodes of the example's graph G, so an
    example counts once whatever its graph's size (``concept_loss_mean="graph"``, the
    default); ``"batch"`` divides the batch's summed BCE by all its concept nodes."""
    import torch.nn.functional as F

    batch = _selector_batch()  # graphs of 4 and 3 concept nodes
    c2e = batch["concept2example"]
    assert c2e.tolist() == [0, 0, 0, 0, 1, 1, 1]
    model = _selector("full").eval()
    out, (loss, parts) = _run(model, batch)
    bce = F.binary_cross_entropy_with_logits(
        out.concept_logits, batch["concept_label"].float(), reduction="none")
    per_graph = torch.stack([bce[c2e == b].mean() for b in range(2)])
    torch.testing.assert_close(parts["loss_n"], per_graph.mean())
    torch.testing.assert_close(parts["loss_n_examples"], per_graph)
    torch.testing.assert_close(loss, parts["loss_c"] + parts["loss_n"])
    # the old reduction differs on graphs of unequal size, and is still available
    pooled = _selector("full", concept_loss_mean="batch").eval()
    _, (_, pooled_parts) = _run(pooled, batch)
    torch.testing.assert_close(pooled_parts["loss_n"], bce.mean())
    assert not torch.isclose(bce.mean(), per_graph.mean())
    with pytest.raises(ValueError, match="concept2example"):
        model.loss(out, batch["concept_label"])
    with pytest.raises(ValueError, match="--concept-loss-mean"):
        _selector("full", concept_loss_mean="node")

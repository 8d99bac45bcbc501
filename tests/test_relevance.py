"""Question relevance of graph nodes (models/selector/relevance.py) and its use by the selector."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from parlai_docgraph.models.selector.common import rank_candidates
from parlai_docgraph.models.selector.relevance import RelevanceEmbedding, node_relevance
from parlai_docgraph.models.selector.dialog_aware import DialogAwareSelector
from test_models_selector import _run, _selector_batch

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_node_relevance_is_standardised_cosine_and_skips_rows_without_a_vector() -> None:
    g = torch.Generator().manual_seed(0)
    nodes = F.normalize(torch.randn(6, 8, generator=g), dim=-1)
    nodes = torch.cat([nodes, torch.zeros(1, 8)])  # a node without a vector (no-passage)
    question = F.normalize(torch.randn(8, generator=g), dim=-1)
    rel = node_relevance(nodes, question)
    cosine = nodes[:6] @ question
    assert rel.shape == (7,) and float(rel[6]) == 0.0
    torch.testing.assert_close(rel[:6], (cosine - cosine.mean()) / cosine.std())
    assert int(rel.argmax()) == int(cosine.argmax())  # order is kept
    # a shift of every cosine (another pool's band) does not change the standardised values
    shifted = node_relevance(torch.cat([nodes[:6], question[None]]), question)
    assert float(shifted[6]) == pytest.approx(float(shifted.max()))
    # fewer than two nodes with a vector: nothing to compare, all zero
    assert torch.equal(node_relevance(torch.zeros(3, 8), question), torch.zeros(3))


def test_relevance_embedding_shapes_and_dtype() -> None:
    emb = RelevanceEmbedding(hidden=12, dim=4)
    out = emb(torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64))
    assert out.shape == (3, 12) and out.dtype == torch.float32


def _relevance(batch) -> torch.Tensor:
    return torch.randn(batch["x"].size(0), generator=torch.Generator().manual_seed(5))


def test_selector_reads_relevance_only_when_built_with_it() -> None:
    batch = _selector_batch()
    torch.manual_seed(0)
    model = DialogAwareSelector(16, 12, hidden=24, type_dim=6, relevance=True).eval()
    base, _ = _run(model, batch)
    moved, _ = _run(model, batch, relevance=_relevance(batch))
    assert not torch.allclose(base.scores, moved.scores)  # the graph carries it to candidates
    # None: every node's relevance is 0
    zero, _ = _run(model, batch, relevance=torch.zeros(batch["x"].size(0)))
    torch.testing.assert_close(base.scores, zero.scores)
    torch.manual_seed(0)
    paper = DialogAwareSelector(16, 12, hidden=24, type_dim=6).eval()  # Li et al.: none
    assert not hasattr(paper, "relevance_emb") and not paper.use_relevance
    a, _ = _run(paper, batch)
    b, _ = _run(paper, batch, relevance=_relevance(batch))
    torch.testing.assert_close(a.scores, b.scores)
    # no graph, nothing to carry it
    assert not DialogAwareSelector(16, 12, variant="none", relevance=True).use_relevance


def test_relevance_gets_a_gradient_and_is_learnt() -> None:
    """One relevant node per example whose relevance marks the gold's sentence: a model
    with relevance fits it, and the relevance MLP is trained."""
    batch = _selector_batch()
    rel = torch.full((batch["x"].size(0),), -1.0)
    cand, gold, c2e = batch["cand_node"], batch["gold"], batch["cand2example"]
    offsets = torch.tensor([0, int((c2e == 0).sum())])
    rel[cand[offsets + gold]] = 3.0
    torch.manual_seed(0)
    model = DialogAwareSelector(16, 12, hidden=24, type_dim=6, relevance=True,
                                num_negatives=0).train()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    for _ in range(60):
        _, (loss, _) = _run(model, batch, relevance=rel)
        opt.zero_grad()
        loss.backward()
        assert model.relevance_emb.mlp[0].weight.grad.abs().sum() > 0
        opt.step()
    model.eval()
    out, _ = _run(model, batch, relevance=rel)
    assert [int(r[0]) for r in rank_candidates(out)] == gold.tolist()


def test_multilevel_selector_reads_relevance_only_when_built_with_it() -> None:
    from parlai_docgraph.models import MultiLevelSelector
    from test_models_multilevel import _ml_batch

    b = _ml_batch()
    args = dict(cand_node=b["segment_index"], cand2example=b["segment2example"],
                context=torch.randn(7, 16, generator=torch.Generator().manual_seed(1)),
                num_examples=2, concept_index=b["word_index"], node_passage=b["node_passage"],
                no_passage_index=b["no_passage_index"])
    rel = torch.randn(b["x"].size(0), generator=torch.Generator().manual_seed(2))
    for built in (True, False):
        torch.manual_seed(0)
        model = MultiLevelSelector(16, hidden=8, heads=2, num_layers=2, relevance=built).eval()
        base = model(b["x"], b["edge_index"], **args).scores
        moved = model(b["x"], b["edge_index"], relevance=rel, **args).scores
        assert built != torch.allclose(base, moved)
        assert hasattr(model, "relevance_emb") == built

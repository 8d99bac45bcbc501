"""
``--similarity-prior``: lambda * cosine(last turn, candidate) of the shared or frozen
encoder's mean-pooled embeddings is added to every candidate's score, in training and
inference; ``--zero-shot-prior`` adds mu * the same cosine under the frozen encoder too.
"""

from __future__ import annotations

import pytest
import torch

from parlai_docgraph.models.selector.prior import last_turn
from parlai_docgraph.graphs.embed import sentence_vectors
from test_selector_optim import _agent

POOL = [("Bees", ["A hive has a brood box.", "The queen lays eggs in the brood box."]),
        ("Honey", ["Honey is taken in late summer.", "A colony gives twenty kilograms."])]


def test_last_turn():
    assert last_turn("topic\nfirst\n\nwhen is honey taken?\n") == "when is honey taken?"
    assert last_turn("") == ""


@pytest.mark.parametrize("variant,encoder", [("full", "shared"), ("none", "frozen")])
def test_a_dominant_prior_ranks_by_cosine(variant, encoder, tiny_encoder, datapath):
    agent = _agent(tiny_encoder, datapath, "--graph-variant", variant,
                   "--similarity-prior", "10000", "--similarity-prior-encoder", encoder)
    (prior,) = agent.priors
    shared = prior.encoder is agent.model.context_encoder
    assert shared == (encoder == "shared")
    question = "earlier turn\nwhen can the honey be taken?"
    out = agent.select(POOL, question)
    lines = [f"{t} {s}" for t, ss in POOL for s in ss]
    enc, tok = prior.encoder, prior.tokenizer
    cos = sentence_vectors(lines, enc, tok) @ sentence_vectors([last_turn(question)], enc,
                                                               tok)[0]
    assert list(out["scores"]) == [lines[i] for i in torch.argsort(cos, descending=True)]


def test_prior_shifts_every_logit_by_lambda_cos(tiny_encoder, datapath):
    """The same weights and batch with and without the prior: the logits (which the ranking
    loss of training reads through the same ``_forward``) differ by lambda * cos."""
    from test_graph_selector import _as_eval, _observed

    torch.manual_seed(0)
    plain = _agent(tiny_encoder, datapath, "--graph-variant", "full")
    with_prior = _agent(tiny_encoder, datapath, "--graph-variant", "full",
                        "--similarity-prior", "5")
    with_prior.model.load_state_dict(plain.model.state_dict())
    assert plain.priors == [] and len(with_prior.priors) == 1
    obs = _as_eval(_observed(plain, plain.opt, 2))
    batch_a = plain.batchify(obs)
    plain.model.eval(), with_prior.model.eval()
    with torch.no_grad():
        a = plain._forward(batch_a, with_gold=False).scores
        b = with_prior._forward(batch_a, with_gold=False).scores
    keep = torch.arange(sum(len(c) for c in batch_a.candidates))
    with torch.no_grad():
        expected = with_prior.priors[0](batch_a.turns, batch_a.candidates, keep)
    assert torch.allclose(b - a, expected, atol=1e-5)
    assert expected.abs().max() > 0


@pytest.mark.parametrize("encoder", ["shared", "frozen"])
def test_only_the_shared_prior_trains_the_encoder(encoder, tiny_encoder, datapath):
    """A training step's loss reaches the encoder through the term with ``shared`` (a
    bi-encoder fine-tuned with the selector); ``frozen`` keeps a fixed prior."""
    from test_graph_selector import _observed

    agent = _agent(tiny_encoder, datapath, "--graph-variant", "none", "--similarity-prior",
                   "5", "--similarity-prior-encoder", encoder)
    batch = agent.batchify(_observed(agent, agent.opt, 2))
    agent.model.train()
    keep = torch.arange(sum(len(c) for c in batch.candidates))
    term = agent.priors[0](batch.turns, batch.candidates, keep)
    assert term.requires_grad == (encoder == "shared")
    if encoder == "shared":
        term.sum().backward()
        grads = [p.grad for p in agent.model.context_encoder.parameters()]
        assert any(g is not None and g.abs().sum() > 0 for g in grads)


def test_zero_shot_prior_adds_the_frozen_cosine_beside_the_shared_term(tiny_encoder, datapath):
    """``--zero-shot-prior mu``: a second term over the frozen (never trained) encoder; the
    logits move by lambda * cos(shared) + mu * cos(frozen), and only the first has a gradient."""
    from test_graph_selector import _as_eval, _observed

    torch.manual_seed(0)
    one = _agent(tiny_encoder, datapath, "--graph-variant", "full", "--similarity-prior", "5")
    two = _agent(tiny_encoder, datapath, "--graph-variant", "full", "--similarity-prior", "5",
                 "--zero-shot-prior", "3")
    two.model.load_state_dict(one.model.state_dict())
    shared, zero_shot = two.priors
    assert shared.encoder is two.model.context_encoder and shared.weight == 5
    assert zero_shot.encoder is not two.model.context_encoder and zero_shot.weight == 3
    assert not any(p.requires_grad for p in zero_shot.encoder.parameters())
    batch = one.batchify(_as_eval(_observed(one, one.opt, 2)))
    one.model.eval(), two.model.eval()
    keep = torch.arange(sum(len(c) for c in batch.candidates))
    with torch.no_grad():
        a = one._forward(batch, with_gold=False).scores
        b = two._forward(batch, with_gold=False).scores
        expected = zero_shot(batch.turns, batch.candidates, keep)
    assert expected.abs().max() > 0
    assert torch.allclose(b - a, expected, atol=1e-5)


@pytest.mark.parametrize("variant", ["full", "none"])
def test_two_frozen_terms_are_one_term(variant, tiny_encoder, datapath):
    """``--similarity-prior-encoder frozen`` with ``--zero-shot-prior``: both terms use the
    same frozen encoder, so they are one term of weight lambda + mu (cosines computed once),
    on the node encoder's copy when the variant has one."""
    agent = _agent(tiny_encoder, datapath, "--graph-variant", variant, "--similarity-prior",
                   "5", "--similarity-prior-encoder", "frozen", "--zero-shot-prior", "3")
    (term,) = agent.priors
    assert term.weight == 8 and term.encoder is not agent.model.context_encoder
    assert not any(p.requires_grad for p in term.encoder.parameters())


def _own_loss_after_steps(weight: str, steps: int, tiny_encoder, datapath):
    """The model's own ranking loss (no similarity terms) on a fixed training batch after
    ``steps`` train steps with ``--own-loss-weight weight``, from the same initial weights,
    with a similarity term that already ranks every gold first by a wide margin (as MiniLM's
    cosine does for most training questions); and the metrics of the last step."""
    from test_graph_selector import _observed

    from parlai_docgraph.models.selector.common import ranking_loss

    torch.manual_seed(0)
    agent = _agent(tiny_encoder, datapath, "--graph-variant", "none", "--similarity-prior",
                   "5", "--similarity-prior-encoder", "frozen", "--own-loss-weight", weight,
                   "--num-negatives", "0", "--shuffle-candidates", "false", "-lr", "1e-2")
    obs = _observed(agent, agent.opt, 4)
    batch = agent.batchify(obs)
    sizes = [len(c) for c in batch.candidates]
    gold = torch.zeros(sum(sizes))
    gold[torch.tensor(sizes).cumsum(0) - torch.tensor(sizes) + batch.gold] = 1.0

    def knows_the_gold(turns, candidates, keep):
        return 50.0 * gold[keep]

    agent.priors = [knows_the_gold]
    metrics = {}
    for _ in range(steps):
        metrics = agent.batch_act(obs)[0].get("metrics", {})
    agent.model.eval()
    with torch.no_grad():
        own = agent._model_forward(batch, with_gold=True)
        return float(ranking_loss(own.scores, own.cand2example, own.num_examples, own.gold)), metrics


def test_own_loss_weight_trains_the_models_own_ranking(tiny_encoder, datapath):
    """When the similarity terms already rank the gold first, the summed ranking loss is ~0
    and teaches the model's own scores nothing; ``--own-loss-weight 1`` adds their own
    ranking loss (reported as ``own_loss``), and after the same steps they rank the gold by
    themselves."""
    start, _ = _own_loss_after_steps("0", 0, tiny_encoder, datapath)
    without, plain_metrics = _own_loss_after_steps("0", 16, tiny_encoder, datapath)
    with_own, metrics = _own_loss_after_steps("1", 16, tiny_encoder, datapath)
    assert "own_loss" in metrics and "own_loss" not in plain_metrics
    assert abs(without - start) < 0.05 * start
    assert with_own < 0.6 * start


def test_frozen_term_embeds_each_text_once(tiny_encoder, datapath):
    """The frozen term memoises its embeddings (candidates repeat across a document's
    questions): a second call embeds nothing new and returns the same values as embedding
    every text again; the shared, trained term keeps no memo."""
    agent = _agent(tiny_encoder, datapath, "--graph-variant", "none", "--similarity-prior",
                   "5", "--similarity-prior-encoder", "frozen")
    (term,) = agent.priors
    lines = [[f"{t} {s}" for t, ss in POOL for s in ss]]
    keep = torch.tensor([0, 2, 3])
    first = term(["when is honey taken?"], lines, keep)
    assert len(term.memo) == 4 and term.memo.misses == 4
    calls = []
    term.encoder.register_forward_hook(lambda *a: calls.append(1))
    again = term(["when is honey taken?"], lines, keep)
    assert calls == [] and torch.equal(first, again)
    enc, tok = term.encoder, term.tokenizer
    fresh = sentence_vectors([lines[0][i] for i in (0, 2, 3)], enc, tok) @ sentence_vectors(
        ["when is honey taken?"], enc, tok)[0]
    assert torch.allclose(first, 5 * fresh, atol=1e-5)
    shared = _agent(tiny_encoder, datapath, "--graph-variant", "none", "--similarity-prior", "5")
    assert shared.priors[0].memo is None


def test_node_relevance_and_the_frozen_term_embed_a_turn_once(tiny_encoder, datapath):
    """With node features, the frozen term uses the graph provider's memoised embeddings:
    the turn node relevance embeds is not embedded again for the term."""
    agent = _agent(tiny_encoder, datapath, "--graph-variant", "full", "--node-relevance",
                   "true", "--similarity-prior", "5", "--zero-shot-prior", "3")
    (frozen,) = [p for p in agent.priors if p.encoder is not agent.model.context_encoder]
    assert frozen.vectors is agent.graphs.sentence_vectors and frozen.weight == 3
    out = agent.select(POOL, "earlier turn\nwhen is honey taken?")
    assert len(out["scores"]) == 4
    # node relevance embeds the turn (a miss), the term embeds the 4 lines (misses) and
    # finds the turn
    assert (frozen.memo.misses, frozen.memo.hits, len(frozen.memo)) == (5, 1, 5)
    assert "when is honey taken?" in frozen.memo

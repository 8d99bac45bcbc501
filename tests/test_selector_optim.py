"""
The graph selector's two learning rates (``--encoder-learningrate`` / ``--graph-learningrate``):
every trainable parameter in exactly one optimizer group, each group at its rate, ParlAI's
warm-up scaling both, and a reload through ``-mf`` keeping both groups and their state.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from conftest import run_cli

pytest.importorskip("transformers")
SMALL = ("--selector-hidden", "16", "--type-dim", "4", "--pair-truncate", "48",
         "--gat-hidden", "8", "--gat-heads", "2")
VARIANTS = ("full", "sentence", "coref", "homogeneous", "multilevel", "paths", "none")


def _agent(tiny_encoder: str, datapath: Path, *args: str):
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser

    opt = ParlaiParser(True, True).parse_args([
        "-m", "docgraph/graph_selector", "-t", "docgraph:sample", "--label-type",
        "chosen_sent", "--datapath", str(datapath), "-dt", "train", "--encoder-model",
        tiny_encoder, "--graph-cache", "memory", *SMALL, *args])
    return create_agent(opt)


def _groups(agent):
    opt = getattr(agent.optimizer, "optimizer", agent.optimizer)  # fp16 wrappers
    return opt.param_groups


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_parameter_in_exactly_one_group_at_its_rate(variant, tiny_encoder, datapath):
    agent = _agent(tiny_encoder, datapath, "--graph-variant", variant)
    groups = _groups(agent)
    assert [g["name"] for g in groups] == ["encoder", "graph"]
    assert [g["lr"] for g in groups] == [pytest.approx(3e-5), pytest.approx(2e-3)]
    ids = [id(p) for g in groups for p in g["params"]]
    assert len(ids) == len(set(ids))  # no parameter in two groups
    trainable = {id(p): n for n, p in agent.model.named_parameters() if p.requires_grad}
    assert set(ids) == set(trainable)  # and none left out
    encoder = {id(p) for p in agent.model.context_encoder.parameters()}
    assert {id(p) for p in groups[0]["params"]} == encoder
    rest = {trainable[i] for i in trainable if i not in encoder}
    assert rest and not any(n.startswith("context_encoder.") for n in rest)
    if variant in ("full", "coref", "homogeneous"):  # the concept head trains at the graph rate
        assert any(n.startswith("concept") for n in rest), sorted(rest)
    if variant == "multilevel":  # GAT layers and the word head too
        assert any("gat" in n or "conv" in n for n in rest), sorted(rest)


def test_rates_follow_the_options(tiny_encoder, datapath):
    agent = _agent(tiny_encoder, datapath, "-lr", "1e-4", "--graph-learningrate", "7e-3")
    assert [g["lr"] for g in _groups(agent)] == [pytest.approx(1e-4), pytest.approx(7e-3)]
    agent = _agent(tiny_encoder, datapath, "-lr", "1e-4", "--encoder-learningrate", "2e-5")
    assert [g["lr"] for g in _groups(agent)] == [pytest.approx(2e-5), pytest.approx(2e-3)]


def test_warmup_and_reload_keep_both_groups(tiny_encoder, tmp_path, datapath):
    """Stock ``train_model`` with ParlAI's warm-up: both rates ramp together; the saved
    optimizer state reloads into two groups at the configured rates with Adam moments."""
    mf = tmp_path / "sel"
    out = run_cli(
        ["parlai", "train_model", "-m", "docgraph/graph_selector", "-t", "docgraph:sample",
         "--label-type", "chosen_sent", "--datapath", str(datapath), "-mf", str(mf),
         "--graph-variant", "full", "--encoder-model", tiny_encoder, "--max-train-steps", "4",
         "-bs", "4", "--warmup-updates", "2", "--lr-scheduler", "reduceonplateau",
         "--encoder-learningrate", "1e-4", "--graph-learningrate", "4e-3",
         "-vtim", "1000000", "--short-final-eval", "true", "-vme", "4",
         "--graph-cache", "memory", *SMALL],
        cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    agent = _agent(tiny_encoder, datapath, "-mf", str(mf), "--graph-variant", "full")
    groups = _groups(agent)
    assert [g["name"] for g in groups] == ["encoder", "graph"]
    # each group at its own rate, scaled alike by ParlAI's warm-up/scheduler state
    factor = groups[0]["lr"] / 1e-4
    assert 0.0 < factor <= 1.0
    assert groups[1]["lr"] == pytest.approx(4e-3 * factor)
    state = getattr(agent.optimizer, "optimizer", agent.optimizer).state
    for g in groups:  # the Adam moments of both groups were saved and reloaded
        assert all(int(state[p]["step"]) == 4 for p in g["params"])
    # mid warm-up the two rates keep their ratio (LambdaLR scales every group)
    agent = _agent(tiny_encoder, datapath, "--warmup-updates", "10", "--warmup-rate", "0.1")
    lrs = [g["lr"] for g in _groups(agent)]
    assert lrs[1] / lrs[0] == pytest.approx(2e-3 / 3e-5)
    assert lrs[0] == pytest.approx(3e-6)
    assert torch.is_tensor(next(iter(agent.model.parameters())))

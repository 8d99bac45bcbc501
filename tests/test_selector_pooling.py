"""
``--encoder-pooling`` of the graph selector: one setting reaches both the Eq. 1 context
vectors (the fine-tuned encoder) and the sentence/passage node features (the frozen copy);
``auto`` follows the checkpoint folder; models saved before the option load with ``cls``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")


def _agent(tiny_encoder: str, datapath: Path, *args: str):
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser

    opt = ParlaiParser(True, True).parse_args([
        "-m", "docgraph/graph_selector", "-t", "docgraph:sample", "--label-type",
        "chosen_sent", "--datapath", str(datapath), "-dt", "train", "--encoder-model",
        tiny_encoder, "--graph-cache", "memory", "--selector-hidden", "16", "--type-dim", "4",
        *args])
    return create_agent(opt)


@pytest.mark.parametrize("flag, expected", [((), "cls"), (("--encoder-pooling", "mean"), "mean"),
                                            (("--encoder-pooling", "auto"), "cls")])
def test_pooling_reaches_model_and_node_features(flag, expected, tiny_encoder, datapath):
    agent = _agent(tiny_encoder, datapath, *flag)
    assert agent.selector.pooling == expected and agent.graphs.pooling == expected


def test_models_saved_before_the_option_keep_cls():
    from parlai.core.opt import Opt

    from parlai_docgraph.agents.graph_selector.agent import GraphSelectorAgent

    old = GraphSelectorAgent.upgrade_opt(Opt({"encoder_model": "minilm-l6"}))
    assert old["encoder_pooling"] == "cls"
    kept = GraphSelectorAgent.upgrade_opt(Opt({"encoder_pooling": "mean"}))
    assert kept["encoder_pooling"] == "mean"

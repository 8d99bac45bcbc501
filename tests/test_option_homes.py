"""
Options in one place per agent: the graph options come from one field table
(:class:`~parlai_docgraph.graphs.config.GraphConfig`), the ``-m docgraph`` pipeline refuses an
option its two parts declare differently unless it settles it, and a selector model file
that names the dictionary class at its old path still loads.
"""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from parlai_docgraph.graphs.config import GraphConfig, GraphVariant


def test_graph_options_come_from_the_field_table():
    parser = argparse.ArgumentParser()
    GraphConfig.add_args(parser)
    parsed = vars(parser.parse_args([]))
    fields = dataclasses.fields(GraphConfig)
    assert len(parsed) == len(fields) == len(GraphConfig.options())
    default = GraphConfig()
    assert GraphConfig.from_opt(parsed) == default
    for f, (name, option, _) in zip(fields, GraphConfig.options()):
        value = getattr(default, f.name)
        assert parsed[option.lstrip("-").replace("-", "_")] == (
            value.value if isinstance(value, GraphVariant) else value)
    config = GraphConfig(variant="multilevel", multilevel_ablation="no_topic_nodes")
    args = config.command_args()
    assert args == ["--graph-variant", "multilevel", "--multilevel-ablation", "no_topic_nodes"]
    assert GraphConfig.from_opt(vars(parser.parse_args(args))) == config
    with pytest.raises(SystemExit):  # choices come from the table too
        parser.parse_args(["--graph-variant", "nope"])


def _pipeline_parser():
    from parlai.core.params import ParlaiParser

    parser = ParlaiParser(True, True)
    parser.add_model_subargs("docgraph", None)
    return parser


def test_pipeline_parts_option_clash_is_an_error(monkeypatch):
    from parlai_docgraph.agents.pipeline import args as pipeline_args

    opt = _pipeline_parser().parse_args([])
    assert opt["inference"] == "greedy" and opt["topk"] == 20  # the responder's, as settled
    monkeypatch.setattr(pipeline_args, "SETTLED", {
        k: v for k, v in pipeline_args.SETTLED.items() if k != "topk"})
    with pytest.raises(ValueError, match="--topk"):
        _pipeline_parser()


def test_selector_dictionary_moved_path_upgrades():
    from parlai.core.opt import Opt
    from parlai.core.params import str2class  # what build_dict resolves --dict-class with

    from parlai_docgraph.agents.graph_selector.agent import GraphSelectorAgent
    from parlai_docgraph.agents.graph_selector.dictionary import (
        OLD_PATHS, GraphSelectorDictionaryAgent,
    )

    old = Opt({"model": "docgraph/graph_selector", "dict_class": OLD_PATHS[0]})
    new = GraphSelectorAgent.upgrade_opt(old)
    assert new["dict_class"] != OLD_PATHS[0]
    assert str2class(new["dict_class"]) is GraphSelectorDictionaryAgent

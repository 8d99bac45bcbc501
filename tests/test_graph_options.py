"""
Every graph option the graph selector reads is declared, and declared once: one argument
group (``GraphConfig.add_args``) shared by teachers, scripts and the selector.
"""

from __future__ import annotations

import pytest
from parlai.core.params import ParlaiParser

from parlai_docgraph.agents.graph_selector import GraphSelectorAgent
from parlai_docgraph.graphs.config import GraphConfig, GraphVariant


def _actions(parser: ParlaiParser, option: str) -> int:
    return sum(option in a.option_strings for a in parser._actions)


def test_selector_declares_the_backends_it_reads() -> None:
    parser = ParlaiParser(False, False)
    GraphSelectorAgent.add_cmdline_args(parser)
    opt = parser.parse_args(["--graph-coref", "none", "--graph-parser", "amr"])
    assert (opt["graph_coref"], opt["graph_parser"]) == ("none", "amr")
    assert parser.parse_args([])["graph_coref"] == "rule"


def test_teacher_and_selector_share_one_declaration() -> None:
    parser = ParlaiParser(False, False)
    GraphConfig.add_args(parser)
    GraphSelectorAgent.add_cmdline_args(parser)
    for option in ("--graph-variant", "--graph-parser", "--graph-coref", "--amr-file",
                   "--amr-model-dir", "--multilevel-ablation"):
        assert _actions(parser, option) == 1, option
    assert parser.parse_args(["--graph-coref", "coreferee"])["graph_coref"] == "coreferee"


def test_old_option_names_are_gone() -> None:
    """``--graph-variant`` is the one vocabulary: ``--graph-kind`` / ``--graph-ablation``
    no longer exist anywhere."""
    parser = ParlaiParser(False, False)
    GraphSelectorAgent.add_cmdline_args(parser)
    for option in ("--graph-kind", "--graph-ablation"):
        assert _actions(parser, option) == 0, option


def test_config_from_opt_validates_and_round_trips() -> None:
    parser = ParlaiParser(False, False)
    GraphConfig.add_args(parser)
    args = ["--graph-variant", "multilevel", "--multilevel-ablation", "no_topic_nodes"]
    config = GraphConfig.from_opt(parser.parse_args(args))
    assert config.variant is GraphVariant.MULTILEVEL and config.builder == "multilevel"
    assert config.build_options() == {"topic_nodes": False}
    assert config.command_args() == args
    assert GraphConfig(**config.to_dict()) == config
    assert GraphConfig.from_opt({}) == GraphConfig()
    assert [v.value for v in GraphVariant if v.text_only] == ["paths", "none"]
    assert not GraphVariant.NONE.uses_graph and GraphVariant.PATHS.builder == "semantic"
    for bad, match in (
        (dict(variant="multi-level"), "choose from full, sentence"),
        (dict(variant="full", multilevel_ablation="no_word_nodes"), "multilevel only"),
        (dict(variant="multilevel", coref="none"), "dep parser"),
        (dict(parser="amr"), "needs --amr-file"),
        (dict(coref="fastcoref"), "coreference backend"),
    ):
        with pytest.raises(ValueError, match=match):
            GraphConfig(**bad)

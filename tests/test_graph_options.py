"""
Every graph-backend option the graph selector reads is declared, and declared once.
"""

from __future__ import annotations

from parlai.core.params import ParlaiParser

from parlai_docgraph.agents.graph_selector.agent import GraphSelectorAgent
from parlai_docgraph.graphs.spec import add_graph_args


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
    add_graph_args(parser)
    GraphSelectorAgent.add_cmdline_args(parser)
    for option in ("--graph-parser", "--graph-coref", "--graph-kind"):
        assert _actions(parser, option) == 1, option
    assert parser.parse_args(["--graph-coref", "coreferee"])["graph_coref"] == "coreferee"

"""
``-m docgraph``: the selector -> responder pipeline.
"""

from __future__ import annotations

from typing import Optional

from parlai.core.agents import Agent
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser

from .base import NotBuiltYet, qualified_name


class DocgraphAgent(Agent):
    """
    Selects a knowledge sentence with :class:`GraphSelectorAgent`, then writes the
    reply with :class:`GPT2ResponderAgent`.

    Registered so ParlAI resolves ``-m docgraph``; the pipeline arrives with the
    responder work and constructing the agent says so instead of pretending.
    """

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        group = parser.add_argument_group("docgraph pipeline")
        group.add_argument(
            "--selector-model-file",
            type=str,
            default=None,
            help="model file of a trained docgraph/graph_selector",
        )
        group.add_argument(
            "--responder-model-file",
            type=str,
            default=None,
            help="model file of a trained docgraph/gpt2_responder",
        )
        return parser

    def __init__(self, opt: Opt, shared=None) -> None:
        super().__init__(opt, shared)
        self.opt["model"] = qualified_name(type(self))
        raise NotBuiltYet("DocgraphAgent", "the selector -> responder pipeline", 6)

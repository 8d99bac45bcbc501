"""
The ParlAI side of the generated structure tasks (``docgraph:synthetic``,
``docgraph:expedition``): one example type and one teacher base that streams a generator's
dialogues as WoW-format messages. Nothing is read or written but ParlAI's length cache.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any, Iterator, List, Tuple

from parlai.core.message import Message
from parlai.core.opt import Opt

from parlai_docgraph.tasks.docgraph.base import DocgraphDialogTeacher
from parlai_docgraph.tasks.docgraph.graphs import GraphAttachMixin
from parlai_docgraph.tasks.docgraph.knowledge_teacher import pool_message


@dataclass
class GeneratedTurn:
    """One example: the pool, the question, the gold ``(passage, sentence)`` and a reply."""

    passages: List[Tuple[str, List[str]]]
    text: str
    gold: Tuple[int, int]
    response: str
    topic: str


def turn_message(task: str, turn: GeneratedTurn, label_type: str, separator: bool) -> Message:
    """The WoW-format message of one turn (the fields of ``docgraph:sample``)."""
    return pool_message(task, turn.text, turn.topic, turn.passages, turn.gold,
                        turn.response, label_type, separator)


class GeneratedTaskTeacher(GraphAttachMixin, DocgraphDialogTeacher):
    """
    Streams ``generate(split)`` of a subclass (a pure function of its config) as episodes;
    ``:topic_split`` (default) holds the people of valid/test out of train, ``:random_split``
    draws them from all names. Subclasses set ``TASK_NAME`` and implement ``make_config``,
    ``generate`` and ``generator_version``.
    """

    TASK_OPTIONS = (("topic_split", "random_split"),)
    TASK_NAME = ""

    def __init__(self, opt: Opt, shared=None) -> None:
        opt = Opt(opt)
        self.label_type = opt["label_type"]
        self.separator = bool(opt["include_knowledge_separator"])
        split = self.parse_task_options(opt["task"])[0]
        self.config = self.make_config(opt, unseen=split == "topic_split")
        self.config.check()  # a bad size fails here, before ParlAI's loaders
        self.fold = opt["datatype"].split(":")[0]
        # ParlAI wants a datafile; ours names the generated stream (nothing is read)
        opt["datafile"] = f"{self.TASK_NAME}:{self.fold}"
        self.id = self.TASK_NAME
        super().__init__(opt, shared)

    def make_config(self, opt: Opt, unseen: bool) -> Any:
        """The generator's config from ``opt`` (raises on a bad value in ``check``)."""
        raise NotImplementedError

    def generate(self, split: str) -> Iterator[List[GeneratedTurn]]:
        """The dialogues of ``split``, each a list of turns."""
        raise NotImplementedError

    def generator_version(self) -> int:
        """Bumped when a change alters the examples of a seed (keys the length cache)."""
        raise NotImplementedError

    def count_options(self) -> tuple:
        return super().count_options() + (self.label_type, repr(self.config),
                                          self.generator_version())

    def length_cache_path(self, opt: Opt) -> str:
        """Streaming-mode counts, keyed by the generator options (no file to stat)."""
        key = hashlib.sha256(f"{self.fold}\0{self.count_options()}".encode()).hexdigest()[:20]
        folder = os.path.join(opt["datapath"], "docgraph_cache", "lengths")
        os.makedirs(folder, exist_ok=True)
        return os.path.join(folder, f"{type(self).__name__}-{key}.lengths")

    def setup_data(self, datafile: str) -> Iterator[Tuple[Message, bool]]:
        for turns in self.generate(self.fold):
            for i, turn in enumerate(turns):
                yield turn_message(self.TASK_NAME, turn, self.label_type, self.separator), i == 0

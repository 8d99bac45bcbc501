"""
Wizard of Wikipedia teachers: ``docgraph:wow[:random_split|:topic_split]`` and the
bundled ``docgraph:sample`` (same reader, bundled datapath).

Messages carry the fields of ParlAI's ``WizardDialogKnowledgeTeacher`` (``text``,
``labels``, ``chosen_topic``, ``knowledge``, ``title``, ``checked_sentence``,
``label_candidates``) so any ParlAI agent works, plus the structure graph builders need:
``knowledge_passages`` (``[[title, [sentence, ...]], ...]`` in pool order) and
``checked_sentence_index`` (position of the gold sentence in the ``knowledge`` lines,
-1 when no knowledge was used). With ``--attach-graphs store|build`` they also carry the
pool's document graph (``knowledge_graph``, ``knowledge_graph_key``; see :mod:`.graphs`).
``--knowledge-turns-only`` keeps the turns whose wizard used knowledge (Li et al. 3.2;
:func:`~.knowledge_teacher.episode_messages`, shared with every knowledge teacher); when it drops an episode's first turn, the
first message served carries ``first_turn_passages``, the pool of the episode's first turn
(what Li et al.'s first-turn background is built from, 3.1).
"""

from __future__ import annotations

import os
from typing import Iterator, Optional, Tuple

from parlai.core.message import Message
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser

from parlai_docgraph.tasks.docgraph.base import DocgraphDialogTeacher
from parlai_docgraph.tasks.docgraph.graphs import GraphAttachMixin
from parlai_docgraph.tasks.docgraph.build import SAMPLE_DATAPATH, wow_file
from parlai_docgraph.tasks.docgraph.knowledge_teacher import (
    TurnCounts, add_knowledge_label_args, episode_messages, log_turn_counts,
)
from parlai_docgraph.tasks.docgraph.readers.wow import read_wow


def split_file_name(datatype: str, split: str) -> str:
    """
    ``train`` -> ``train.json``; ``valid`` + ``topic_split`` -> ``valid_topic_split.json``.
    """
    dt = datatype.split(":")[0]
    return "train.json" if dt == "train" else f"{dt}_{split}.json"


class WowTeacher(GraphAttachMixin, DocgraphDialogTeacher):
    """
    Wizard of Wikipedia, one example per Wizard turn, seen (``random_split``, default)
    or unseen (``topic_split``) valid/test files.
    """

    TASK_OPTIONS = (("random_split", "topic_split"),)

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("docgraph Wizard of Wikipedia")
        add_knowledge_label_args(group)
        group.add_argument(
            "--add-missing-turns",
            type=str,
            choices=["none", "train", "all"],
            default="all",
            help="keep the last Wizard turn of Wizard-first dialogues ('all', default), "
            "or drop it like ParlAI's teacher does by default ('none'), or keep it in "
            "train only; each split then has one turn more per Wizard-first dialogue than "
            "ParlAI's default (the teacher logs how many)",
        )
        return parser

    def __init__(self, opt: Opt, shared=None) -> None:
        opt = Opt(opt)  # keep Opt's methods; we add 'datafile' to our copy only
        self.label_type = opt["label_type"]
        self.separator = bool(opt["include_knowledge_separator"])
        split = self.parse_task_options(opt["task"])[0]
        opt["datafile"] = self.locate(opt, split_file_name(opt["datatype"], split))
        missing = opt["add_missing_turns"]
        self.add_missing = missing == "all" or (
            missing == "train" and opt["datatype"].startswith("train")
        )
        self.knowledge_only = bool(opt["knowledge_turns_only"])
        self.turn_counts = TurnCounts()
        self.id = self.__class__.__name__.replace("Teacher", "").lower()
        super().__init__(opt, shared)

    def count_options(self) -> tuple:
        return super().count_options() + (self.label_type, self.add_missing,
                                          self.knowledge_only)

    def locate(self, opt: Opt, fname: str) -> str:
        return wow_file(opt["datapath"], fname)

    def setup_data(self, datafile: str) -> Iterator[Tuple[Message, bool]]:
        dialogues = read_wow(datafile, self.bad_rows, add_missing_turns=self.add_missing)
        self.turn_counts = counts = TurnCounts()  # streaming calls this once per epoch
        for turns in self.iterate_with_report(dialogues):
            # a Wizard-first dialogue's last turn is the one ParlAI's default drops
            added = self.add_missing and turns[0].turn_index == 0
            yield from episode_messages(turns, self.label_type, self.separator, self.id,
                                        self.knowledge_only, counts, last_is_added=added)
        log_turn_counts(datafile, counts, self.knowledge_only, self.add_missing)


class SampleTeacher(WowTeacher):
    """
    The bundled WoW-format sample (offline, the embedded default), read by the same
    reader from the package's own datapath.
    """

    def locate(self, opt: Opt, fname: str) -> str:
        path = os.path.join(SAMPLE_DATAPATH, "wizard_of_wikipedia", fname)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"bundled sample file missing from the package: {path}")
        return path

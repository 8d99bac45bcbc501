"""
Holl-E teacher: ``docgraph:holle`` and ``docgraph:holle:multi``.

Reads the official ``main_data`` files from ``<datapath>/holl_e/`` (train
``train_data.json``, valid ``dev_data.json``, test ``test_data.json``) and converts them
the way SKT does (see :mod:`.readers.holle`). Messages carry the fields of the WoW
teachers (:func:`.knowledge_teacher.knowledge_message`): ``text``, ``labels``, ``chosen_topic`` (the
movie), ``knowledge``, ``title`` (``plot`` / ``review`` / ``comments`` /
``fact_table`` or ``no_passages_used``; with ``--holle-title movie`` the movie name, as
SKT writes every knowledge line), ``checked_sentence``, ``knowledge_passages``,
``checked_sentence_index``, and ``label_candidates``: the response plus
``--num-label-candidates`` - 1 responses of other chats of the same file (seeded, in
every datatype, so ranking models can train). ``:multi`` adds, on the test set only,
``multi_eval_labels`` and ``multi_checked_sentences`` from
``multi_reference_test.json``.
"""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

from parlai.core.message import Message
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser
from parlai.utils import logging

from parlai_docgraph.tasks.docgraph.base import DocgraphDialogTeacher
from parlai_docgraph.tasks.docgraph.graphs import GraphAttachMixin
from parlai_docgraph.tasks.docgraph.build import raw_file
from parlai_docgraph.tasks.docgraph.candidates import add_candidate_args, example_rng, sample_candidates
from parlai_docgraph.tasks.docgraph.readers.holle import HolleStats, read_holle, read_multi_reference
from parlai_docgraph.graphs.knowledge_lines import NO_PASSAGE
from parlai_docgraph.tasks.docgraph.knowledge_teacher import (
    TurnCounts, add_knowledge_label_args, episode_messages, log_turn_counts,
)
from parlai_docgraph.tasks.docgraph.readers.turns import KnowledgeTurn

SPLIT_FILES = {"train": "train_data.json", "valid": "dev_data.json", "test": "test_data.json"}
MULTI_FILE = "multi_reference_test.json"


class HolleTeacher(GraphAttachMixin, DocgraphDialogTeacher):
    """
    Holl-E with SKT-style gold knowledge sentences (``:multi``: multi-reference test).
    """

    TASK_OPTIONS = (("single", "multi"),)

    @classmethod
    def add_cmdline_args(
        cls, parser: ParlaiParser, partial_opt: Optional[Opt] = None
    ) -> ParlaiParser:
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("docgraph Holl-E")
        add_knowledge_label_args(group)
        add_candidate_args(group)
        group.add_argument(
            "--holle-title", type=str, default="source", choices=["source", "movie"],
            help="title of the knowledge passages and lines (what a cross-encoder reads in "
            "front of each candidate and the responder in its prompt): source = plot / "
            "review / comments / fact_table (the four documents stay apart by name); "
            "movie = the movie name for every passage, as SKT (Kim et al. 2020), whose "
            "conversion Li et al. and Zhang & Tan follow")
        return parser

    def __init__(self, opt: Opt, shared=None) -> None:
        opt = Opt(opt)  # a copy that keeps Opt's methods
        self.candidates_seed = int(opt["label_candidates_seed"])
        self.label_type = opt["label_type"]
        self.separator = bool(opt["include_knowledge_separator"])
        self.num_candidates = int(opt["num_label_candidates"] or 0)
        flag = self.parse_task_options(opt["task"])[0]
        dt = opt["datatype"].split(":")[0]
        opt["datafile"] = raw_file(opt["datapath"], "holl_e", SPLIT_FILES[dt])
        self.multi_path = None
        if flag == "multi" and dt == "test":
            self.multi_path = raw_file(opt["datapath"], "holl_e", MULTI_FILE)
        self.id = "holle"
        self.knowledge_only = bool(opt["knowledge_turns_only"])
        self.title = opt.get("holle_title", "source")
        self.turn_counts = TurnCounts()
        self.stats = HolleStats()
        super().__init__(opt, shared)

    def count_options(self) -> tuple:
        return super().count_options() + (self.knowledge_only, self.title)

    def setup_data(self, datafile: str) -> Iterator[Tuple[Message, bool]]:
        self.stats = HolleStats()  # streaming calls this once per epoch
        multi = None
        if self.multi_path is not None:
            multi = read_multi_reference(self.multi_path, self.bad_rows)
        chats: List[List[KnowledgeTurn]] = list(
            self.iterate_with_report(read_holle(datafile, self.bad_rows, multi=multi, stats=self.stats))
        )
        c = self.stats.counts
        log = logging.warning if c["unmatched"] or c["multi_gold_absent"] else logging.info
        log(f"{datafile}: {self.stats.summary()}")
        pool = [(t.dialogue_id, t.response) for turns in chats for t in turns]
        self.turn_counts = counts = TurnCounts()
        for turns in chats:
            for turn in turns:
                if self.title == "movie":
                    movie_titles(turn)
                if self.num_candidates > 1:
                    rng = example_rng(self.candidates_seed, turn.dialogue_id, turn.turn_index)
                    turn.candidate_responses = sample_candidates(
                        turn.response, pool, turn.dialogue_id, self.num_candidates, rng
                    )
            yield from episode_messages(turns, self.label_type, self.separator, self.id,
                                        self.knowledge_only, counts)
        log_turn_counts(datafile, counts, self.knowledge_only)


def movie_titles(turn: KnowledgeTurn) -> None:
    """Title every passage of ``turn`` (and its gold) with the movie name, in place
    (``--holle-title movie``); ``no_passages_used`` stays."""
    turn.passages = [(turn.chosen_topic, sents) for _, sents in turn.passages]
    if turn.title != NO_PASSAGE:
        turn.title = turn.chosen_topic

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
:func:`episode_messages`, shared with Holl-E); when it drops an episode's first turn, the
first message served carries ``first_turn_passages``, the pool of the episode's first turn
(what Li et al.'s first-turn background is built from, 3.1).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Tuple

from parlai.core.message import Message
from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser
from parlai.utils import logging

from parlai_docgraph.tasks.docgraph.base import DocgraphDialogTeacher
from parlai_docgraph.tasks.docgraph.graphs import GraphAttachMixin
from parlai_docgraph.tasks.docgraph.build import SAMPLE_DATAPATH, wow_file
from parlai_docgraph.tasks.docgraph.readers.wow import NO_PASSAGE, KnowledgeTurn, read_wow

TOKEN_KNOWLEDGE = "__knowledge__"


def split_file_name(datatype: str, split: str) -> str:
    """
    ``train`` -> ``train.json``; ``valid`` + ``topic_split`` -> ``valid_topic_split.json``.
    """
    dt = datatype.split(":")[0]
    return "train.json" if dt == "train" else f"{dt}_{split}.json"


def knowledge_message(
    turn: KnowledgeTurn, label_type: str, separator: bool, teacher_id: str
) -> Message:
    """
    Format one :class:`KnowledgeTurn` the way ParlAI's WoW knowledge teacher does.
    """
    sep = f" {TOKEN_KNOWLEDGE} " if separator else " "
    lines = [f"{title}{sep}{sent}" for title, sent in turn.knowledge_lines()]
    nochosen = f"{NO_PASSAGE} {NO_PASSAGE}"
    text = turn.text
    if label_type == "response":
        labels = [turn.response]
        # Real WoW train turns have no candidate_responses; where a file has them
        # (valid/test, the bundled sample) they are the candidates.
        cands = list(turn.candidate_responses)
    else:
        if turn.previous_response is not None:
            text = f"{turn.previous_response}\n{text}"
        if turn.title == NO_PASSAGE:
            labels = [nochosen]
        else:
            labels = [f"{turn.title}{sep}{turn.checked_sentence}"]
        cands = [nochosen] + lines
    msg = Message(
        {
            "id": teacher_id,
            "text": text,
            "labels": labels,
            "chosen_topic": turn.chosen_topic,
            "knowledge": "".join(line + "\n" for line in lines),
            "title": turn.title,
            "checked_sentence": turn.checked_sentence,
            "knowledge_passages": [[t, list(s)] for t, s in turn.passages],
            "checked_sentence_index": turn.gold_flat_index(),
        }
    )
    if cands:  # ParlAI rejects an empty candidate list that lacks the label
        msg["label_candidates"] = cands
    if turn.multi_responses:
        msg["multi_eval_labels"] = list(turn.multi_responses)
        msg["multi_checked_sentences"] = list(turn.multi_checked_sentences)
    return msg


def pool_message(
    teacher_id: str, text: str, topic: str, passages: Sequence[Tuple[str, Sequence[str]]],
    gold: Tuple[int, int], response: str, label_type: str, separator: bool,
) -> Message:
    """
    A WoW-format message (the fields of ``docgraph:sample``) of a turn over ``passages``
    whose gold sentence is ``passages[p][1][s]`` for ``gold == (p, s)``: labelled with
    ``response``, or with the gold knowledge line among the pool's lines (``chosen_sent``).
    """
    sep = f" {TOKEN_KNOWLEDGE} " if separator else " "
    lines = [f"{title}{sep}{s}" for title, sents in passages for s in sents]
    p, s = gold
    title, sentence = passages[p][0], passages[p][1][s]
    index = sum(len(sents) for _, sents in passages[:p]) + s
    msg = Message({
        "id": teacher_id, "text": text, "chosen_topic": topic,
        "knowledge": "".join(line + "\n" for line in lines), "title": title,
        "checked_sentence": sentence,
        "knowledge_passages": [[t, list(ss)] for t, ss in passages],
        "checked_sentence_index": index,
    })
    if label_type == "response":
        msg["labels"] = [response]
    else:
        msg["labels"] = [lines[index]]
        msg["label_candidates"] = [f"{NO_PASSAGE} {NO_PASSAGE}"] + lines
    return msg


def add_knowledge_label_args(group) -> None:
    """
    ``--label-type`` and ``--include-knowledge-separator``, as ParlAI's WoW teacher has.
    """
    group.add_argument(
        "--label-type",
        type=str,
        choices=["response", "chosen_sent"],
        default="response",
        help="label with the response, or with the checked knowledge sentence "
        "('title sentence'; candidates are then the knowledge pool)",
    )
    group.add_argument(
        "--include-knowledge-separator",
        type="bool",
        default=False,
        help="put __knowledge__ between title and sentence in knowledge lines",
    )
    group.add_argument(
        "--knowledge-turns-only",
        type="bool",
        default=False,
        help="keep only the turns whose wizard used knowledge (drop 'no_passages_used' "
        "turns, Li et al. 3.2: 'we only use the turns that utilize knowledge for training "
        "and prediction'); a dropped turn's utterances are prepended to the next kept "
        "message's text so the dialogue history is unchanged; kept/total turns are logged "
        "per split. Generated teachers (synthetic, expedition, docqa) always use knowledge",
    )


@dataclass
class TurnCounts:
    """Turns read and kept by :func:`episode_messages` in one pass over a split."""

    total: int = 0
    kept: int = 0
    in_first_pool: int = 0  # kept turns whose gold sentence is in the episode's first pool
    added: int = 0  # kept turns that ParlAI's teacher drops (--add-missing-turns none)

    def summary(self) -> str:
        return (f"--knowledge-turns-only kept {self.kept} of {self.total} turns (those that "
                f"use knowledge); {self.in_first_pool} of them have the gold sentence in the "
                f"episode's first knowledge pool (Li et al.'s first_turn background)")

    def added_summary(self) -> str:
        return (f"--add-missing-turns kept {self.added} turns (the last Wizard turn of "
                f"Wizard-first dialogues) that ParlAI's WizardDialogKnowledgeTeacher drops by "
                f"default (--add-missing-turns none): {self.kept} served here, "
                f"{self.kept - self.added} there")


def uses_knowledge(turn: KnowledgeTurn) -> bool:
    """Whether the wizard used knowledge: ParlAI's WoW marks the others ``no_passages_used``
    (``checked_sentence`` ``{"no_passages_used": "no_passages_used"}`` or ``{}``)."""
    return turn.title != NO_PASSAGE


def _in_pool(turn: KnowledgeTurn, passages: Sequence[Tuple[str, Sequence[str]]]) -> bool:
    return any(t == turn.title and turn.checked_sentence in sents for t, sents in passages)


def episode_messages(
    turns: List[KnowledgeTurn], label_type: str, separator: bool, teacher_id: str,
    knowledge_only: bool, counts: TurnCounts, last_is_added: bool = False,
) -> Iterator[Tuple[Message, bool]]:
    """
    ``(message, new_episode)`` for one episode's turns; with ``knowledge_only`` the turns
    that use no knowledge are dropped and what they would have added to the history (their
    text, and their response for ``--label-type response``, whose agents keep the label) is
    prepended to the next kept message's text, newline-separated, and the first kept
    message of an episode whose first turn was dropped carries ``first_turn_passages``
    (that turn's pool). ``last_is_added``: the last turn is one ParlAI's teacher drops
    (counted in ``counts.added`` when kept).
    """
    carry: List[str] = []
    first = True
    for n, turn in enumerate(turns):
        msg = knowledge_message(turn, label_type, separator, teacher_id)
        counts.total += 1
        if knowledge_only and not uses_knowledge(turn):
            carry.append(msg["text"])
            if label_type == "response":
                carry.append(turn.response)
            continue
        counts.kept += 1
        counts.added += int(last_is_added and n == len(turns) - 1)
        counts.in_first_pool += int(uses_knowledge(turn) and _in_pool(turn, turns[0].passages))
        if carry:
            msg.force_set("text", "\n".join(carry + [msg["text"]]))
            carry = []
        if first and n > 0:
            msg["first_turn_passages"] = [[t, list(ss)] for t, ss in turns[0].passages]
        yield msg, first
        first = False


def log_turn_counts(datafile: str, counts: TurnCounts, knowledge_only: bool,
                    add_missing: bool = False) -> None:
    if knowledge_only:
        logging.info(f"{datafile}: {counts.summary()}")
    if add_missing:
        logging.info(f"{datafile}: {counts.added_summary()}")


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

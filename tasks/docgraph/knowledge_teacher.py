"""
The pieces every knowledge-grounded teacher shares: a :class:`~.readers.turns.KnowledgeTurn`
as a ParlAI message with the fields of ParlAI's ``WizardDialogKnowledgeTeacher``
(:func:`knowledge_message`, :func:`pool_message` for generated pools), the label options
(:func:`add_knowledge_label_args`), and one episode's messages with
``--knowledge-turns-only`` (:func:`episode_messages`, counted in :class:`TurnCounts`). A new
dataset's teacher reads its files into ``KnowledgeTurn`` lists and yields
``episode_messages`` of each (``wow.py``, ``holle.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, List, Sequence, Tuple

from parlai.core.message import Message
from parlai.utils import logging

from parlai_docgraph.graphs.knowledge_lines import (
    KNOWLEDGE_SEPARATOR, NO_KNOWLEDGE_LINE, NO_PASSAGE,
)
from parlai_docgraph.tasks.docgraph.readers.turns import KnowledgeTurn


def knowledge_message(
    turn: KnowledgeTurn, label_type: str, separator: bool, teacher_id: str
) -> Message:
    """
    Format one :class:`KnowledgeTurn` the way ParlAI's WoW knowledge teacher does.
    """
    sep = f" {KNOWLEDGE_SEPARATOR} " if separator else " "
    lines = [f"{title}{sep}{sent}" for title, sent in turn.knowledge_lines()]
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
            labels = [NO_KNOWLEDGE_LINE]
        else:
            labels = [f"{turn.title}{sep}{turn.checked_sentence}"]
        cands = [NO_KNOWLEDGE_LINE] + lines
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
    sep = f" {KNOWLEDGE_SEPARATOR} " if separator else " "
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
        msg["label_candidates"] = [NO_KNOWLEDGE_LINE] + lines
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

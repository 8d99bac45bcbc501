"""
Reader of CMU_DoG as ParlAI's build lays it out (no ParlAI imports): the turns ParlAI's own
teacher (``parlai/tasks/cmu_dog/agents.py``, ParlAI 1.7.2) serves, in its order, with what
that teacher leaves out (conversation id, rating, the section index).

Files under ``<datapath>/cmu_dog/`` (``parlai-docgraph datasets install cmu_dog`` or
ParlAI's build): ``wiki_data.json``, one object of articles keyed by ``wikiDocumentIdx``;
``conversations/<split file>``, one object of conversations keyed by their id, each with
``history`` (``{"text", "uid", "docIdx", ...}`` messages), ``rating`` (1-3), ``whoSawDoc``
(``["user1"]``, ``["user2"]`` or both) and ``wikiDocumentIdx``. A malformed conversation
raises :class:`~parlai_docgraph.dataset_errors.DatasetFormatError` with file and line (or is
counted and skipped with ``--skip-bad-rows``).

ParlAI's episodes (:func:`episodes`): consecutive messages of one user are joined
(``--cmu-dog-multi-msg-delimiter``); each conversation gives two episodes, one per speaker,
each labelled with that speaker's messages (every conversation first, then every
conversation again for the second speaker, ParlAI's order); with
``--cmu-dog-only-with-knowledge`` (default) only the speakers who saw the article. A turn's
context is the partner's message before it; the episode's first turn has none (ParlAI then
sends the shown section's text, or ``__SILENCE__``).

**ParlAI's joining changes its own data.** Its ``_collapse_multi_msgs`` writes the joined
text into the first message's dict of the loaded conversation, and the second pass (the
second speaker's episode) joins the already joined text again: ``"Hey!" + "Nice to meet you."``
becomes ``"Hey! Nice to meet you. Nice to meet you."`` in every second-speaker episode.
This reader joins copies (:func:`collapse_messages`), so both episodes read the messages as
they were sent; :func:`parlai_joined_texts` reproduces ParlAI's texts (the tests compare
both with ParlAI's teacher).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from parlai_docgraph.dataset_errors import BadRows, DatasetFormatError
from parlai_docgraph.jsonio import iter_json_object, read_json

#: the ParlAI build's version marker (``parlai/tasks/cmu_dog/build.py``)
BUILD_VERSION = "1.2"
SILENCE = "__SILENCE__"
#: ``--cmu-dog-split-type`` -> the file of each fold (ParlAI's ``_datafile``)
SPLIT_TYPES = ("deduped", "original", "seen", "unseen")


def split_file(fold: str, split_type: str) -> str:
    """The conversations file of ``fold`` (train / valid / test) under ``split_type``,
    as ParlAI's ``_datafile`` names it."""
    if split_type == "original":
        return f"{fold}.json"
    if split_type == "seen":
        return "test_seen_split_seen_unseen.json" if fold == "test" else \
            f"{fold}_split_seen_unseen.json"
    if split_type == "unseen":
        return "test_unseen_split_seen_unseen.json"
    return f"{fold}_deduped.json"


@dataclass
class Message:
    """One message of a conversation, after joining a user's consecutive messages."""

    text: str
    uid: str
    doc_idx: int


@dataclass
class Conversation:
    """One checked conversation of a split file."""

    id: str
    line: int
    rating: int
    wiki_idx: int
    saw_doc: Tuple[str, ...]
    messages: List[Dict[str, Any]]


@dataclass
class Turn:
    """One example: the speaker's message ``response`` after ``context`` (the partner's
    message before it; ``None`` on the episode's first turn), written while section
    ``doc_idx`` of article ``wiki_idx`` was shown (``visible``: the speaker saw it)."""

    conversation_id: str
    rating: int
    wiki_idx: int
    doc_idx: int
    context: Optional[str]
    response: str
    visible: bool


def _bad(path: str, line: int, where: str, problem: str) -> DatasetFormatError:
    return DatasetFormatError(path, line, where, problem)


def read_articles(path: str) -> Dict[str, Dict[str, Any]]:
    """``wiki_data.json``: article per ``wikiDocumentIdx`` (as a string); each must have
    sections ``"0"`` (an object naming ``movieName``) to ``"3"``."""
    articles = {}
    for key, line, article in iter_json_object(path):
        where = f"article {key}"
        if not isinstance(article, dict) or not isinstance(article.get("0"), dict):
            raise _bad(path, line, where, "an article is an object whose section '0' is an object")
        missing = [s for s in ("1", "2", "3") if not isinstance(article.get(s), str)]
        if missing or not isinstance(article["0"].get("movieName"), str):
            raise _bad(path, line, where, f"needs the scene texts '1'-'3' and '0'.movieName "
                       f"(missing: {missing or ['movieName']})")
        articles[str(key)] = article
    return articles


def _check(path: str, cid: str, line: int, conv: Any, articles: Dict[str, Any]) -> Conversation:
    where = f"conversation {cid}"
    if not isinstance(conv, dict):
        raise _bad(path, line, where, "not an object")
    history = conv.get("history")
    if not isinstance(history, list) or not history:
        raise _bad(path, line, where, "'history' must be a non-empty list of messages")
    for n, m in enumerate(history):
        if not (isinstance(m, dict) and isinstance(m.get("text"), str)
                and isinstance(m.get("uid"), str) and isinstance(m.get("docIdx"), int)):
            raise _bad(path, line, where, f"history[{n}] needs text (str), uid (str) and "
                       f"docIdx (int)")
        if not 0 <= m["docIdx"] <= 3:
            raise _bad(path, line, where, f"history[{n}].docIdx {m['docIdx']} is not 0-3")
    rating, wiki, saw = conv.get("rating"), conv.get("wikiDocumentIdx"), conv.get("whoSawDoc")
    if not isinstance(rating, int) or not isinstance(wiki, int):
        raise _bad(path, line, where, "'rating' and 'wikiDocumentIdx' must be integers")
    if str(wiki) not in articles:
        raise _bad(path, line, where, f"wikiDocumentIdx {wiki} has no article in wiki_data.json")
    if not isinstance(saw, list) or not all(isinstance(u, str) for u in saw):
        raise _bad(path, line, where, "'whoSawDoc' must be a list of user ids")
    return Conversation(str(cid), line, rating, wiki, tuple(saw), history)


def read_conversations(path: str, articles: Dict[str, Any], bad_rows: BadRows,
                       ratings: Sequence[int] = (1, 2, 3)) -> List[Conversation]:
    """The conversations of one split file with a rating in ``ratings``, in file order."""
    out = []
    for cid, line, conv in iter_json_object(path):
        try:
            checked = _check(path, cid, line, conv, articles)
        except DatasetFormatError as err:
            bad_rows.report(err)
            continue
        if checked.rating in ratings:
            out.append(checked)
    return out


def collapse_messages(history: Sequence[Dict[str, Any]], delimiter: str) -> List[Message]:
    """A user's consecutive messages joined with ``delimiter`` (on copies: the loaded
    conversation is left as it is; see the module docstring)."""
    out: List[Message] = []
    for m in history:
        if out and out[-1].uid == m["uid"]:
            out[-1].text = delimiter.join((out[-1].text, m["text"]))
        else:
            out.append(Message(m["text"], m["uid"], m["docIdx"]))
    return out


def parlai_joined_texts(conversations: Sequence[Conversation], delimiter: str) -> List[List[str]]:
    """
    The message texts ParlAI's teacher reads in its second pass, joined as its
    ``_collapse_multi_msgs`` joins them when run twice on the same dicts: the texts of
    the second speaker's episodes there (module docstring).
    """
    out = []
    for conv in conversations:
        history = copy.deepcopy(conv.messages)
        for _ in range(2):
            last = history[0]
            joined = []
            for m in history[1:]:
                if last["uid"] == m["uid"]:
                    last["text"] = delimiter.join((last["text"], m["text"]))
                else:
                    joined.append(last)
                    last = m
            joined.append(last)
        out.append([m["text"] for m in joined])
    return out


def episodes(conversations: Sequence[Conversation], delimiter: str = " ",
             only_with_knowledge: bool = True) -> Iterator[List[Turn]]:
    """ParlAI's episodes, in its order (module docstring), as lists of turns."""
    dialogs = [collapse_messages(conv.messages, delimiter) for conv in conversations]
    for start in (0, 1):
        for conv, dialog in zip(conversations, dialogs):
            if start >= len(dialog):
                continue  # one speaker only: ParlAI's teacher fails on such a conversation
            if only_with_knowledge and dialog[start].uid not in conv.saw_doc:
                continue
            turns = []
            for idx in range(start, len(dialog), 2):
                said = dialog[idx]
                turns.append(Turn(
                    conversation_id=conv.id, rating=conv.rating, wiki_idx=conv.wiki_idx,
                    doc_idx=said.doc_idx,
                    context=None if idx == start else dialog[idx - 1].text.strip(),
                    response=said.text.strip(), visible=said.uid in conv.saw_doc))
            yield turns


def section_text(section: Any, delimiter: str = ";", keys: Optional[Sequence[str]] = None) -> Any:
    """ParlAI's ``_article_section_to_text``: a facts section as ``"key:v1,v2;key:v"``
    (only ``keys`` when given), a scene's text as it is."""
    if not section or isinstance(section, str):
        return section
    texts = []
    for k, v in section.items():
        if keys and k not in keys:
            continue
        texts.append(f"{k}:" + (v if isinstance(v, str) else ",".join(v)))
    return delimiter.join(texts)


def read_split(folder: str, fname: str, bad_rows: BadRows, ratings: Sequence[int] = (1, 2, 3)
               ) -> Tuple[Dict[str, Any], List[Conversation]]:
    """The articles and the conversations of one split file under ``folder``."""
    import os

    articles = read_articles(os.path.join(folder, "wiki_data.json"))
    path = os.path.join(folder, "conversations", fname)
    return articles, read_conversations(path, articles, bad_rows, ratings)


def conversation_ids(path: str) -> List[str]:
    """The conversation ids of a split file (its keys), read without checking them."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise _bad(path, 1, "split file", "not an object of conversations")
    return list(data)

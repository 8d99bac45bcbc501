"""
ParlAI's own CMU_DoG teacher (``-t cmu_dog``) in the message form the docgraph agents read.

ParlAI's ``CMUDocumentGroundedConversationsTeacher`` sends the shown article section
(``available_knowledge_raw``: section 0's facts as a dict, or a scene's text), its text
(``available_knowledge_text``), the movie (``title``) and the section as text
(``checked_sentence``), and no sentence-level knowledge. :class:`ArticleTurns` gives such a
message the fields of ``-t docgraph:cmu_dog`` (:mod:`parlai_docgraph.tasks.docgraph.cmu_dog`),
so the graph selector, the responder and the pipeline read both teachers alike:

* ``knowledge_passages`` / ``knowledge``: the turn's pool, the shown section split by the
  project's sentence splitter plus the movie's facts
  (:func:`~parlai_docgraph.graphs.movie_articles.turn_pool`; the facts of a movie are
  remembered from the section-0 messages it has seen, as every conversation opens on them);
* ``title`` / ``checked_sentence`` / ``checked_sentence_index``: the pseudo label of the reply
  (:func:`~parlai_docgraph.graphs.movie_articles.pseudo_label` at
  :data:`~parlai_docgraph.graphs.movie_articles.PSEUDO_LABEL_F1`); ``gold_knowledge``:
  ParlAI's ``checked_sentence``; ``chosen_topic``: the movie;
* ``text``: on an episode's first turn the movie name instead of ParlAI's opening context
  (the whole section's text, or ``__SILENCE__``: nothing was said yet, and the section
  reaches the models as the pool); a ``prepend_knowledge_to_message`` block is cut off;
* for the selector (``label_type="chosen_sent"``): the candidates ``no_passages_used`` plus
  the pool's lines, the pseudo label's line as the label, and the speaker's previous reply
  before the text, as ``--label-type chosen_sent`` of the docgraph teachers gives them.

One :class:`ArticleTurns` per agent copy: it follows that copy's episodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import List, Optional

from parlai.core.message import Message

from parlai_docgraph.graphs.knowledge_lines import KNOWLEDGE_SEPARATOR, NO_KNOWLEDGE_LINE, NO_PASSAGE
from parlai_docgraph.graphs.movie_articles import (
    PSEUDO_LABEL_F1, PoolWords, facts_passage, flat_index, pool_lines, pseudo_label, turn_pool,
)
from parlai_docgraph.memo import LRUMemo

#: ParlAI's knowledge tokens (``parlai.tasks.wizard_of_wikipedia.agents``), which the
#: ``prepend_knowledge_to_message`` mutator puts around the section before the text
TOKEN_END_KNOWLEDGE = "__endknowledge__"
#: movies whose facts a copy remembers (CMU_DoG has 30)
FACTS_MEMO = 64


def is_article_turn(msg) -> bool:
    """A message of ParlAI's ``cmu_dog`` teacher not yet in the docgraph form."""
    return (msg is not None and hasattr(msg, "get") and "available_knowledge_raw" in msg
            and msg.get("knowledge_passages") is None)


def strip_knowledge_block(text: str) -> str:
    """``text`` without a leading ``__knowledge__ ... __endknowledge__`` block and the
    delimiter after it (``""`` when the block was all of it)."""
    if not text.startswith(KNOWLEDGE_SEPARATOR) or TOKEN_END_KNOWLEDGE not in text:
        return text
    return text.split(TOKEN_END_KNOWLEDGE, 1)[1].lstrip("\n ")


class ArticleTurns:
    """Turns ParlAI's ``cmu_dog`` messages into the docgraph form (module docstring)."""

    def __init__(self, threshold: float = PSEUDO_LABEL_F1) -> None:
        self.threshold = threshold
        self._facts: LRUMemo = LRUMemo(FACTS_MEMO)
        self._pools: LRUMemo = LRUMemo(4 * FACTS_MEMO)
        self._words = PoolWords()
        self._opening = True
        self._previous: Optional[str] = None

    def reset(self) -> None:
        """A new episode starts with the next message."""
        self._opening = True
        self._previous = None

    def adapt(self, msg, label_type: str = "response"):
        """``msg`` in the docgraph form (a copy), or ``msg`` itself when it needs none."""
        if msg is None or not hasattr(msg, "get") or msg.get("batch_padding"):
            return msg
        opening, previous = self._opening, self._previous
        if "text" in msg:
            self._opening = bool(msg.get("episode_done"))
        if not is_article_turn(msg):
            return msg
        movie = str(msg.get("title") or "")
        section = msg["available_knowledge_raw"]
        if isinstance(section, Mapping) and movie not in self._facts:
            self._facts.put(movie, facts_passage(section, movie))
        facts = self._facts.get(movie)
        pool_key = (movie, section if isinstance(section, str) else None, facts is not None)
        pool = self._pools.get(pool_key)
        if pool is None:  # a conversation's turns show the same few sections
            pool = self._pools.put(pool_key, turn_pool(section, movie, facts))
        lines = pool_lines(pool)
        key = "labels" if msg.get("labels") else "eval_labels"
        replies: List[str] = list(msg.get(key) or [])
        label = pseudo_label(replies[0], pool, self.threshold, self._words) if replies else None
        out = Message(msg)
        text = movie if opening else strip_knowledge_block(str(msg.get("text") or ""))
        if label_type == "chosen_sent" and previous is not None and not opening:
            text = f"{previous}\n{text}"
        out.force_set("text", text)
        out.force_set("chosen_topic", movie)
        out.force_set("knowledge_passages", [[t, list(s)] for t, s in pool])
        out.force_set("knowledge", "".join(line + "\n" for line in lines))
        out.force_set("gold_knowledge", msg.get("checked_sentence"))
        position = label.position if label is not None else None
        title = label.title(pool) if label is not None else None
        sentence = label.sentence(pool) if label is not None else None
        out.force_set("title", title or NO_PASSAGE)
        out.force_set("checked_sentence", sentence or NO_PASSAGE)
        out.force_set("checked_sentence_index", flat_index(pool, position))
        if label_type == "chosen_sent":
            out.force_set("label_candidates", [NO_KNOWLEDGE_LINE] + lines)
            if replies:
                out.force_set(key, [lines[flat_index(pool, position)]
                                    if position is not None else NO_KNOWLEDGE_LINE])
        self._previous = replies[0] if replies else None
        return out

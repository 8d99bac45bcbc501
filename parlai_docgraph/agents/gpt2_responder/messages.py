"""
What the responder reads from a message: the knowledge line of its prompt
(``"title: sentence"``, or the sentence alone with ``--knowledge-title none``;
``no_passages_used`` without one) and the references a generated reply is scored against.
"""

from __future__ import annotations

from typing import List, Optional

from parlai.core.message import Message

from parlai_docgraph.graphs.knowledge_lines import NO_PASSAGE


def knowledge_text(obs: Message, with_title: bool = True) -> str:
    """
    ``"title: checked sentence"`` from the message (the sentence alone without
    ``with_title``), ``no_passages_used`` without one.
    """
    return format_knowledge(obs.get("title"), obs.get("checked_sentence"), with_title)


def format_knowledge(title: Optional[str], sentence: Optional[str], with_title: bool = True) -> str:
    """
    ``"title: sentence"`` (``--knowledge-title prefix``), the sentence alone without
    ``with_title`` (``none``); ``no_passages_used`` for an empty or no-passage sentence.
    """
    sentence = (sentence or "").strip()
    title = (title or "").strip()
    if not sentence or sentence == NO_PASSAGE:
        return NO_PASSAGE
    if with_title and title and title != NO_PASSAGE:
        return f"{title}: {sentence}"
    return sentence


def reply_references(obs: Message) -> List[str]:
    """
    The references a reply is scored against: ``multi_eval_labels`` (Holl-E's multi-reference
    test) when present, else every label of the message.
    """
    for key in ("multi_eval_labels", "eval_labels", "labels"):
        refs = [r for r in (obs.get(key) or ()) if isinstance(r, str) and r.strip()]
        if refs:
            return refs
    return []

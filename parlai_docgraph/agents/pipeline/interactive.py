"""
Interactive use of the ``-m docgraph`` pipeline over the user's own documents.

The user's documents are read and indexed by
:class:`~parlai_docgraph.graphs.retrieval.DocumentIndex` (whose reader is that of
``build_graphs --corpus`` and ``docgraph:docqa`` too).

* :func:`check_user_text`: empty and over-long user turns; :data:`LOAD_REFUSED`, the answer
  to a ``/load`` message (no chat message opens a file, in a terminal or in the web chat).
* :func:`write_turn_graph`: the document graph the selector scored on the last turn as HTML (:mod:`parlai_docgraph.graphs.render`), the selected sentence and the
  top concepts highlighted, written atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from parlai_docgraph.atomic import write_text_atomic

#: the note that answers a chat message asking to load a file
LOAD_REFUSED = ("no chat message opens a file: documents come from --documents when the chat "
                "starts (the web chat: its Upload button or a pasted document)")


def check_user_text(text: Optional[str], max_chars: int) -> Tuple[Optional[str], Optional[str]]:
    """
    ``(text to use, note for the user)``: ``(None, note)`` for an empty turn; a turn
    longer than ``max_chars`` keeps its last ``max_chars`` characters (the latest words
    matter most to the context encoder) and says so.
    """
    text = (text or "").strip()
    if not text:
        return None, "empty message: type a question or a remark ([DONE] ends the chat)"
    if max_chars > 0 and len(text) > max_chars:
        return text[-max_chars:], (
            f"your message has {len(text)} characters; only its last {max_chars} are used "
            f"(--interactive-max-chars)")
    return text, None


def _sentence_node(graph: Any, sentence: str) -> Optional[int]:
    for node in graph.nodes:
        if node.type == "sentence" and node.text.strip() == sentence.strip():
            return node.id
    return None


def write_turn_graph(graph: Any, path: str, selection: Dict[str, Any], user_text: str,
                     reply: str) -> Path:
    """Write :func:`turn_graph_html` to ``path`` (atomically)."""
    return write_text_atomic(path, turn_graph_html(graph, selection, user_text, reply))


def turn_graph_html(graph: Any, selection: Dict[str, Any], user_text: str, reply: str) -> str:
    """
    The HTML page of ``graph``: the selected sentence node and the nodes of the top
    concepts highlighted, the turn in the caption.
    """
    from parlai_docgraph.graphs.concept_label import concept_label
    from parlai_docgraph.graphs.render import render_html

    concepts = {c.lower() for c in selection.get("top_concepts") or []}
    chosen = [n.id for n in graph.nodes if n.type != "sentence"
              and (concept_label(n.text, n.kind) or "").lower() in concepts]
    node = _sentence_node(graph, selection.get("sentence") or "")
    if node is not None:
        chosen.append(node)
    caption = (f"user: {user_text} | selected: {selection.get('sentence')} | "
               f"concepts: {', '.join(selection.get('top_concepts') or []) or '-'} | "
               f"reply: {reply}")
    return render_html(graph, selected=chosen, title="docgraph: last turn", caption=caption)

"""
One streamed turn of a browser chat session (:mod:`.web_sessions`): the ``-m docgraph``
agent copy of the session observes the user's text and acts, and the turn is reported as
events through ``emit``:

* ``selection`` (after the selector, before the responder writes: the selected sentence,
  its title, the top concepts);
* ``token`` (reply text as the responder generates it, through
  :class:`~parlai_docgraph.models.responder.streaming.ReplyStreamer`; in extract mode the
  reply is one token event);
* ``done``: the whole reply, the agent's note and the graph HTML of the turn (the graph the
  selector scored, :func:`~parlai_docgraph.graphs.render.turn_graph_html` in its panel
  form, which fits the chat page's graph panel). Where the pipeline's answer check
  (``--reply-keeps-answer``) replaced the generated reply with the selected sentence, the
  reply is that sentence, and ``generated_text`` (the text the tokens streamed) and
  ``answer_dropped`` (the words it left out) say so; the page shows the reply of ``done``.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

from parlai.core.message import Message

from parlai_docgraph.graphs.render import turn_graph_html
from parlai_docgraph.graphs.selection import Selection
from parlai_docgraph.models.responder.streaming import ReplyStreamer
from parlai_docgraph.textnorm import clean_text

Emit = Callable[[Dict[str, Any]], None]


def stream_turn(agent: Any, text: str, emit: Emit, should_stop: Callable[[], bool],
                shown_note: Callable[[str], str] = lambda note: note) -> None:
    """
    One user turn of ``agent`` (a ``DocgraphAgent`` in interactive mode), reported through
    ``emit`` (see the module docstring); ``should_stop`` is polled at every generated token,
    ``shown_note`` turns the agent's note into what the user may read.
    """
    responder = agent.responder
    generate = agent.opt["reply_mode"] != "extract"

    def on_selection(selection: Selection) -> None:
        if agent.documents and selection.uses_knowledge:
            emit({"event": "selection", "selected_sentence": selection.sentence,
                  "selected_title": selection.title,
                  "top_concepts": list(selection.top_concepts)})

    streamer = ReplyStreamer(
        responder.dict.vec2txt, should_stop=should_stop,
        on_text=(lambda t: emit({"event": "token", "text": t})) if generate else None,
        eos_id=getattr(responder, "END_IDX", None))
    agent.on_selection, responder.reply_streamer = on_selection, streamer
    try:
        agent.observe(Message({"text": text, "episode_done": False}))
        reply = agent.act()
    finally:
        agent.on_selection, responder.reply_streamer = None, None
    out = done_event(text=reply.get("text") or "",
                     note=shown_note(reply.get("docgraph_note") or ""),
                     selected_sentence=reply.get("selected_sentence"),
                     selected_title=reply.get("selected_title"),
                     top_concepts=list(reply.get("top_concepts") or []))
    if "answer_dropped" in reply:
        out.update(generated_text=reply.get("generated_text") or "",
                   answer_dropped=list(reply["answer_dropped"]))
    if out["text"] and not (generate and streamer.sent):  # extract mode: one piece
        emit({"event": "token", "text": out["text"]})
    selection = agent.last_selection
    graph = agent.turn_graph() if agent.documents and selection else None
    if graph is not None and out["selected_sentence"]:
        # the graph the selector scored on this turn's retrieved pool
        out["graph_html"] = turn_graph_html(graph, selection, clean_text(text)[0], out["text"],
                                            panel=True)
    emit(out)


def done_event(**fields: Any) -> Dict[str, Any]:
    """The final event of a turn (missing fields empty)."""
    out: Dict[str, Any] = {"event": "done", "text": "", "note": "", "selected_sentence": None,
                           "selected_title": None, "top_concepts": [], "graph_html": None}
    out.update(fields)
    return out

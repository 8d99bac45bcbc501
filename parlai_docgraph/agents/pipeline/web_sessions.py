"""
Chat sessions of the browser chat (``parlai-docgraph chat``): one ``-m docgraph`` agent copy
per browser session over one shared model.

Each session gets its own dialogue state (ParlAI's ``share()`` / ``create_agent_from_shared``:
weights are shared, history is not), its own documents and its own temporary folder. The
models run one turn at a time (:attr:`SessionStore.lock`), so users chat at once without
mixing their histories or racing on the shared graph memo; a turn that cannot get the
models before its deadline fails with :class:`TurnTimeout` instead of waiting forever.

Safety: documents come only from the server's ``--documents`` and from uploads (written
into the session's folder under a sanitised name). No chat message opens a file: the agent
answers ``/load ...`` with :data:`LOAD_REFUSED`, as in ``parlai interactive``. Uploads are
not cached outside the session's folder (the session's index has no disk cache, and the
chat's model keeps its graphs in memory unless ``--graph-cache`` says otherwise). Notes
never show the server's temporary paths.

A turn is reported as events (``emit``): ``selection`` (after the selector, before the
responder writes), ``token`` (reply text as the responder generates it, through
:class:`~parlai_docgraph.models.responder.streaming.ReplyStreamer`; in extract mode the
reply is one token event), then ``done`` with the whole reply and the graph HTML.

Session folders are removed when a session expires (idle longer than ``idle_timeout``,
:meth:`SessionStore.expire`), when ``max_sessions`` evicts the least recently used one,
and all at once by :meth:`SessionStore.close` (the server's shutdown).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional

from parlai.core.agents import create_agent_from_shared

from parlai_docgraph.graphs.knowledge_lines import NO_PASSAGE
from parlai_docgraph.graphs.render import turn_graph_html
from parlai_docgraph.models.responder.streaming import ReplyStreamer

#: the longest document a browser may upload (characters)
MAX_DOCUMENT_CHARS = 200_000
MAX_SESSIONS = 64
SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")

Emit = Callable[[Dict[str, Any]], None]


class ChatError(ValueError):
    """A bad request; its message is shown in the page."""


class ServerBusy(ChatError):
    """Every session slot is in use by a running turn; try again later."""


class TurnTimeout(RuntimeError):
    """The models were not free, or the work not done, before the request's deadline."""


@dataclass
class Session:
    """One browser's agent copy, its document folder and its documents' names."""

    agent: Any
    folder: str
    last_used: float
    documents: List[str] = field(default_factory=list)
    busy: int = 0  # requests working on this session now (never expired while > 0)


class SessionStore:
    """Sessions over one loaded ``-m docgraph`` agent (see the module docstring)."""

    def __init__(self, agent: Any, documents: Optional[List[str]] = None,
                 max_sessions: int = MAX_SESSIONS, idle_timeout: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, not {max_sessions}")
        self.base = agent
        self.shared = agent.share()
        self.start_documents = list(documents or [])
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.clock = clock
        self.sessions: "OrderedDict[str, Session]" = OrderedDict()  # least recently used first
        self.lock = threading.Lock()  # the models: one turn (or upload) at a time
        self._index = threading.Lock()  # the sessions dict and busy counts (held briefly)
        self.root = tempfile.mkdtemp(prefix="docgraph_chat_")
        # the server's --documents are read and indexed once; every session's agent copy
        # forks that index (DocgraphAgent.share)
        self.start_notes: List[str] = []
        if self.start_documents:
            agent.load_documents(self.start_documents)
            self.start_notes, agent._notes = list(agent._notes), []

    # ------------------------------------------------------------------ sessions
    def new(self, deadline: Optional[float] = None) -> Dict[str, Any]:
        """A new session id and the notes of loading the server's ``--documents``."""
        self.expire()
        sid = secrets.token_hex(16)
        with self._index:
            while len(self.sessions) >= self.max_sessions:
                idle = [s for s, sess in self.sessions.items() if sess.busy == 0]
                if not idle:
                    raise ServerBusy(f"all {self.max_sessions} chat sessions are busy; "
                                     "try again in a moment")
                self._remove_folder(self.sessions.pop(idle[0]))
            session = Session(None, os.path.join(self.root, sid), self.clock(), busy=1)
            os.makedirs(session.folder)
            self.sessions[sid] = session
        try:
            with self._models(deadline):
                session.agent = create_agent_from_shared(self.shared)  # forks the index
                session.agent.index.cache_root = None  # uploads stay in the session folder
                session.documents = _names(session.agent)
                notes = list(self.start_notes)
        except BaseException:
            self._discard(sid)
            raise
        self._release(session)
        return {"session": sid, "notes": notes, "documents": session.documents}

    def check(self, sid: Any) -> None:
        """Raise :class:`ChatError` unless ``sid`` is a live session."""
        with self._index:
            if self._find(sid) is None:
                raise ChatError("unknown or expired session: reload the page")

    def _find(self, sid: Any) -> Optional[Session]:
        session = self.sessions.get(str(sid)) if isinstance(sid, str) else None
        return session if session is not None and session.agent is not None else None

    @contextlib.contextmanager
    def _use(self, sid: Any) -> Iterator[Session]:
        """The session of ``sid``, marked busy (never expired or evicted) meanwhile."""
        with self._index:
            session = self._find(sid)
            if session is None:
                raise ChatError("unknown or expired session: reload the page")
            session.busy += 1
            self.sessions.move_to_end(str(sid))
        try:
            yield session
        finally:
            self._release(session)

    def _release(self, session: Session) -> None:
        with self._index:
            session.busy -= 1
            session.last_used = self.clock()

    @contextlib.contextmanager
    def _models(self, deadline: Optional[float]) -> Iterator[None]:
        """Hold the models; :class:`TurnTimeout` when they are not free before ``deadline``."""
        if deadline is None:
            self.lock.acquire()
        else:
            left = deadline - time.monotonic()
            if left <= 0 or not self.lock.acquire(timeout=left):
                raise TurnTimeout("the model was busy with other turns for too long")
        try:
            yield
        finally:
            self.lock.release()

    # ------------------------------------------------------------------ expiry
    def expire(self, now: Optional[float] = None) -> List[str]:
        """Remove the sessions idle for longer than ``idle_timeout``; their ids."""
        if not self.idle_timeout:
            return []
        now = self.clock() if now is None else now
        with self._index:
            gone = [s for s, sess in self.sessions.items()
                    if sess.busy == 0 and now - sess.last_used > self.idle_timeout]
            removed = [self.sessions.pop(s) for s in gone]
        for session in removed:
            self._remove_folder(session)
        return gone

    def _discard(self, sid: str) -> None:
        with self._index:
            session = self.sessions.pop(sid, None)
        if session is not None:
            self._remove_folder(session)

    @staticmethod
    def _remove_folder(session: Session) -> None:
        shutil.rmtree(session.folder, ignore_errors=True)

    def close(self) -> None:
        """Forget every session and remove the server's temporary folder."""
        with self._index:
            self.sessions.clear()
        shutil.rmtree(self.root, ignore_errors=True)

    # ------------------------------------------------------------------ documents
    def _load(self, session: Session, paths: List[str]) -> List[str]:
        agent = session.agent
        agent.load_documents(paths)
        notes, agent._notes = list(agent._notes), []
        session.documents = _names(agent)
        return [n.replace(session.folder + os.sep, "") for n in notes]

    def upload(self, sid: Any, name: Any, data: Any,
               deadline: Optional[float] = None) -> Dict[str, Any]:
        """Add a text/Markdown document sent by the page; binary or huge ones are refused."""
        if not isinstance(data, str) or not isinstance(name, str) or not name.strip():
            raise ChatError("a document needs a name and text")
        if "\x00" in data:
            raise ChatError(f"{name}: looks like a binary file; upload text or Markdown")
        if len(data) > MAX_DOCUMENT_CHARS:
            raise ChatError(f"{name}: {len(data)} characters, more than the "
                            f"{MAX_DOCUMENT_CHARS} a document may have")
        safe = SAFE_NAME.sub("_", os.path.basename(name.strip()))[:80].lstrip(".")
        with self._use(sid) as session, self._models(deadline):
            path = os.path.join(session.folder, safe or "document.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write(data)
            notes = self._load(session, [path])
        return {"notes": notes, "documents": session.documents}

    # ------------------------------------------------------------------ turns
    def turn(self, sid: Any, text: Any, emit: Emit,
             should_stop: Callable[[], bool] = lambda: False,
             deadline: Optional[float] = None) -> None:
        """
        One user turn, reported through ``emit`` (see the module docstring); the last event
        is ``done``. ``should_stop`` (polled at every generated token) cancels it.
        """
        check_message(text)
        with self._use(sid) as session:
            with self._models(deadline):
                if should_stop():
                    return
                self._turn(session, text, emit, should_stop)

    def _turn(self, session: Session, text: str, emit: Emit,
              should_stop: Callable[[], bool]) -> None:
        agent = session.agent
        responder = agent.responder
        generate = agent.opt["reply_mode"] != "extract"

        def on_selection(selection: Dict[str, Any]) -> None:
            if agent.documents and selection["sentence"] != NO_PASSAGE:
                emit({"event": "selection", "selected_sentence": selection["sentence"],
                      "selected_title": selection["title"],
                      "top_concepts": list(selection.get("top_concepts") or [])})

        streamer = ReplyStreamer(
            responder.dict.vec2txt, should_stop=should_stop,
            on_text=(lambda t: emit({"event": "token", "text": t})) if generate else None,
            eos_id=getattr(responder, "END_IDX", None))
        agent.on_selection, responder.reply_streamer = on_selection, streamer
        try:
            agent.observe({"text": text, "episode_done": False})
            reply = agent.act()
        finally:
            agent.on_selection, responder.reply_streamer = None, None
        out = _done(text=reply.get("text") or "", note=reply.get("docgraph_note") or "",
                    selected_sentence=reply.get("selected_sentence"),
                    selected_title=reply.get("selected_title"),
                    top_concepts=list(reply.get("top_concepts") or []))
        if out["text"] and not (generate and streamer.sent):  # extract mode: one piece
            emit({"event": "token", "text": out["text"]})
        selection = agent.last_selection
        graph = agent.turn_graph() if agent.documents and selection else None
        if graph is not None and out["selected_sentence"]:
            # the graph the selector scored on this turn's retrieved pool
            out["graph_html"] = turn_graph_html(graph, selection, text, out["text"])
        emit(out)


def _names(agent: Any) -> List[str]:
    """The file names of the documents ``agent`` has indexed, in order."""
    return [os.path.basename(d.path) for d in agent.index.documents]


def check_message(text: Any) -> None:
    """Raise :class:`ChatError` for a message that is not text (or looks binary)."""
    if not isinstance(text, str):
        raise ChatError("a message must be text")
    if "\x00" in text:
        raise ChatError("the message looks binary (it has NUL characters); type text")


def _done(**fields: Any) -> Dict[str, Any]:
    """The final event of a turn (missing fields empty)."""
    out: Dict[str, Any] = {"event": "done", "text": "", "note": "", "selected_sentence": None,
                           "selected_title": None, "top_concepts": [], "graph_html": None}
    out.update(fields)
    return out

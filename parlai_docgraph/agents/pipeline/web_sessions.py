"""
Chat sessions of the browser chat (``parlai-docgraph chat``): one ``-m docgraph`` agent copy
per browser session over one shared model.

Each session gets its own dialogue state (ParlAI's ``share()`` / ``create_agent_from_shared``:
weights are shared, history is not), its own documents and its own temporary folder. The
models run one turn at a time (:attr:`SessionStore.lock`), so users chat at once without
mixing their histories or racing on the shared graph memo; a turn that cannot get the
models before its deadline fails with :class:`TurnTimeout` instead of waiting forever. A
new session runs no model: it copies the agent under a lock of its own, so it never waits
behind queued turns.

Safety: documents come only from the server's ``--documents`` and from uploads (written
atomically into the session's folder under a sanitised name; an upload with the name of a
document the session has replaces it). No chat message opens a file: the agent answers
``/load ...`` with :data:`LOAD_REFUSED`, as in ``parlai interactive``. Uploads are not
cached outside the session's folder (the session's index has no disk cache, and the chat's
model keeps its graphs in memory unless ``--graph-cache`` says otherwise). Notes name
documents by file name, never by a path on the server (:func:`~parlai_docgraph.graphs.corpus.file_names_only`; the server's
log keeps the paths). Text is normalised where it enters (:mod:`parlai_docgraph.textnorm`:
chat messages in the agent, uploads here, ``--documents`` in the index), and a turn the
model fails on starts the session's dialogue afresh, so no input leaves a session unusable.

Limits: ``max_uploads`` uploads and ``max_upload_bytes`` bytes of uploaded text per session
(:class:`UploadLimit`, 413). A new session beyond ``max_sessions`` evicts the least recently
used session that has never had a turn or upload, or one idle for longer than
``idle_timeout``; a session active within ``idle_timeout`` is never evicted: when every
slot holds one, the new session is refused (:class:`ServerBusy`).

A turn is reported as events (:func:`~.web_turn.stream_turn`): ``selection``, ``token``
..., then ``done`` with the whole reply and the graph HTML.

Session folders are removed when a session expires (idle longer than ``idle_timeout``,
:meth:`SessionStore.expire`), when a new session evicts one, and all at once by
:meth:`SessionStore.close` (the server's shutdown).
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
from parlai.utils import logging

from parlai_docgraph.agents.pipeline.web_turn import Emit, stream_turn
from parlai_docgraph.atomic import write_text_atomic
from parlai_docgraph.graphs.corpus import file_names_only, path_spellings
from parlai_docgraph.models.responder.streaming import GenerationStopped
from parlai_docgraph.textnorm import clean_text, replaced_note

#: the longest document a browser may upload (characters)
MAX_DOCUMENT_CHARS = 200_000
MAX_SESSIONS = 64
#: uploads a session may make (a replacing upload counts), and bytes (UTF-8) it may upload
MAX_UPLOADS = 20
MAX_UPLOAD_BYTES = 8_000_000
SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class ChatError(ValueError):
    """A bad request; its message is shown in the page."""


class ServerBusy(ChatError):
    """Every session slot holds a session active within the idle timeout; try again later."""


class UploadLimit(ChatError):
    """The session has used its uploads or upload bytes (``--max-uploads``, ...)."""


class TurnFailed(ChatError):
    """The model failed on a turn; the session's dialogue was started afresh."""


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
    active: bool = False  # has had a turn or an upload
    uploads: int = 0
    upload_bytes: int = 0


class SessionStore:
    """Sessions over one loaded ``-m docgraph`` agent (see the module docstring)."""

    def __init__(self, agent: Any, documents: Optional[List[str]] = None,
                 max_sessions: int = MAX_SESSIONS, idle_timeout: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic, max_uploads: int = MAX_UPLOADS,
                 max_upload_bytes: int = MAX_UPLOAD_BYTES) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, not {max_sessions}")
        self.base = agent
        self.shared = agent.share()
        self.start_documents = list(documents or [])
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.max_uploads, self.max_upload_bytes = max_uploads, max_upload_bytes
        self.clock = clock
        self.sessions: "OrderedDict[str, Session]" = OrderedDict()  # least recently used first
        self.lock = threading.Lock()  # the models: one turn (or upload) at a time
        self._index = threading.Lock()  # the sessions dict and busy counts (held briefly)
        self._copying = threading.Lock()  # new sessions' agent copies, one at a time
        self.root = tempfile.mkdtemp(prefix="docgraph_chat_")
        # the server's --documents are read and indexed once; every session's agent copy
        # forks that index (DocgraphAgent.share)
        self.server_paths = path_spellings(self.start_documents)
        self.start_notes: List[str] = []
        if self.start_documents:
            agent.load_documents(self.start_documents)  # the log names the paths
            self.start_notes = [file_names_only(n, self.server_paths) for n in agent._notes]
            agent._notes = []

    # ------------------------------------------------------------------ sessions
    def new(self, deadline: Optional[float] = None) -> Dict[str, Any]:
        """
        A new session id and the notes of loading the server's ``--documents``. No model
        runs: the agent copy is made under :attr:`_copying`, never behind queued turns.
        """
        self.expire()
        sid = secrets.token_hex(16)
        with self._index:
            while len(self.sessions) >= self.max_sessions:
                victim = self._evictable()
                if victim is None:
                    raise ServerBusy(f"the chat has {self.max_sessions} sessions in use "
                                     "(--max-sessions); try again later")
                self._remove_folder(self.sessions.pop(victim))
            session = Session(None, os.path.join(self.root, sid), self.clock(), busy=1)
            os.makedirs(session.folder)
            self.sessions[sid] = session
        try:
            with self._copying:
                agent = create_agent_from_shared(self.shared)  # forks the index
            agent.index.cache_root = None  # uploads stay in the session folder
            session.documents = _names(agent)
            session.agent = agent
        except BaseException:
            self._discard(sid)
            raise
        self._release(session)
        return {"session": sid, "notes": list(self.start_notes), "documents": session.documents}

    def _evictable(self) -> Optional[str]:
        """The least recently used session a new one may evict (see the module docstring):
        not busy, and never active or idle for longer than ``idle_timeout``."""
        now = self.clock()
        for sid, sess in self.sessions.items():
            stale = bool(self.idle_timeout) and now - sess.last_used > self.idle_timeout
            if sess.busy == 0 and (not sess.active or stale):
                return sid
        return None

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
        """The session of ``sid``, marked busy (never expired or evicted) meanwhile, and
        active from then on."""
        with self._index:
            session = self._find(sid)
            if session is None:
                raise ChatError("unknown or expired session: reload the page")
            session.busy += 1
            session.active = True
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
    def upload(self, sid: Any, name: Any, data: Any,
               deadline: Optional[float] = None) -> Dict[str, Any]:
        """
        Add a text/Markdown document sent by the page; binary or huge ones are refused,
        characters that are not text replaced (with a note). A document of the session with
        the same name is replaced when the new one can be used.
        """
        if not isinstance(data, str) or not isinstance(name, str) or not name.strip():
            raise ChatError("a document needs a name and text")
        safe = SAFE_NAME.sub("_", os.path.basename(name.strip()))[:80].lstrip(".")
        safe = safe or "document.txt"
        data, replaced = clean_text(data)
        if "\x00" in data:
            raise ChatError(f"{safe}: looks like a binary file; upload text or Markdown")
        if len(data) > MAX_DOCUMENT_CHARS:
            raise ChatError(f"{safe}: {len(data)} characters, more than the "
                            f"{MAX_DOCUMENT_CHARS} a document may have")
        size = len(data.encode("utf-8"))
        with self._use(sid) as session:
            self._count_upload(session, safe, size)
            with self._models(deadline):
                notes = self._store_upload(session, os.path.join(session.folder, safe), data)
        if replaced:
            notes.insert(0, replaced_note(safe, replaced))
        return {"notes": notes, "documents": session.documents}

    def _count_upload(self, session: Session, name: str, size: int) -> None:
        """Count an upload against the session's limits; :class:`UploadLimit` past them."""
        with self._index:
            if session.uploads >= self.max_uploads:
                raise UploadLimit(f"{name}: this session has made its {self.max_uploads} "
                                  "uploads (--max-uploads); reload the page for a new session")
            if session.upload_bytes + size > self.max_upload_bytes:
                raise UploadLimit(f"{name}: {size} bytes would bring this session's uploads "
                                  f"past {self.max_upload_bytes} bytes (--max-upload-bytes; "
                                  f"{session.upload_bytes} used); reload the page for a new "
                                  "session")
            session.uploads += 1
            session.upload_bytes += size

    def _store_upload(self, session: Session, path: str, data: str) -> List[str]:
        """Write ``data`` to ``path`` (atomically: no torn or empty file) and index it; the
        file stays only while the index holds the document it has."""
        index = session.agent.index
        before = {d.path: d for d in index.documents}
        previous = None
        if path in before:  # the session's earlier upload of this name
            with open(path, "rb") as f:
                previous = f.read()
        write_text_atomic(path, data)
        notes = self._load(session, [path])
        now = {d.path: d for d in index.documents}
        if path not in now:  # not used (no text, ...): nothing of it is kept
            os.remove(path)
        elif now[path] is before.get(path):  # not used; the earlier version stays
            write_text_atomic(path, previous.decode("utf-8"))
        else:  # used: it replaces any other document of the session with its name
            name = os.path.basename(path)
            index.remove([p for p in now if p != path and os.path.basename(p) == name])
            session.documents = _names(session.agent)
        return notes

    def _load(self, session: Session, paths: List[str]) -> List[str]:
        agent = session.agent
        agent.load_documents(paths)
        notes, agent._notes = list(agent._notes), []
        session.documents = _names(agent)
        return [file_names_only(n.replace(session.folder + os.sep, ""), self.server_paths)
                for n in notes]

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
                try:
                    stream_turn(session.agent, text, emit, should_stop,
                                lambda note: file_names_only(note, self.server_paths))
                except (ChatError, GenerationStopped, TurnTimeout):  # the dialogue reads on
                    raise
                except Exception as err:
                    raise self._restart(session, err) from err

    def _restart(self, session: Session, err: Exception) -> TurnFailed:
        """After a turn the model failed on: the session's dialogue starts afresh (the
        failed turn may be in its history, where it would fail every later turn); its
        documents stay. The log has the error, the page its type only."""
        logging.error(f"chat: a turn failed ({type(err).__name__}: {err}); its session's "
                      "dialogue starts afresh")
        try:
            session.agent.reset()
        except Exception as again:  # a copy that cannot even reset: a fresh one
            logging.error(f"chat: reset failed too ({type(again).__name__}: {again})")
            fresh = create_agent_from_shared(self.shared)
            fresh.index = session.agent.index
            session.agent = fresh
        return TurnFailed(f"the model failed on this turn ({type(err).__name__}); the "
                          "dialogue starts afresh, your documents stay: ask again")


def _names(agent: Any) -> List[str]:
    """The file names of the documents ``agent`` has indexed, in order."""
    return [os.path.basename(d.path) for d in agent.index.documents]


def check_message(text: Any) -> None:
    """Raise :class:`ChatError` for a message that is not text (or looks binary)."""
    if not isinstance(text, str):
        raise ChatError("a message must be text")
    if "\x00" in text:
        raise ChatError("the message looks binary (it has NUL characters); type text")

"""
Chat sessions of the browser chat (``parlai-docgraph chat``): one ``-m docgraph`` agent copy
per browser session over one shared model.

Each session gets its own dialogue state (ParlAI's ``share()`` / ``create_agent_from_shared``:
weights are shared, history is not) and its own documents. The models run one turn at a time
(a lock), so two users can chat at once without mixing their histories or racing on the
shared graph memo. Uploaded documents are written to the session's temporary folder and read
with the same reader as ``parlai interactive --documents``; bad ones become notes.
"""

from __future__ import annotations

import os
import re
import secrets
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from parlai.core.agents import create_agent_from_shared

from parlai_docgraph.agents.pipeline.interactive import build_graph, turn_graph_html

#: the longest document a browser may upload (characters)
MAX_DOCUMENT_CHARS = 200_000
MAX_SESSIONS = 64
SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class ChatError(ValueError):
    """A bad request; its message is shown in the page."""


@dataclass
class Session:
    """One browser's agent copy, its document folder and the graph of its documents."""

    agent: Any
    folder: str
    documents: List[str] = field(default_factory=list)
    graph: Any = None


class SessionStore:
    """Sessions over one loaded ``-m docgraph`` agent (see the module docstring)."""

    def __init__(self, agent: Any, documents: Optional[List[str]] = None) -> None:
        self.base = agent
        self.shared = agent.share()
        self.start_documents = list(documents or [])
        self.sessions: Dict[str, Session] = {}
        self.lock = threading.Lock()
        self.root = tempfile.mkdtemp(prefix="docgraph_chat_")

    def new(self) -> Dict[str, Any]:
        """A new session id and the notes of loading the server's ``--documents``."""
        with self.lock:
            if len(self.sessions) >= MAX_SESSIONS:
                oldest = next(iter(self.sessions))
                del self.sessions[oldest]
            sid = secrets.token_hex(8)
            agent = create_agent_from_shared(self.shared)
            agent.documents = []
            session = Session(agent, os.path.join(self.root, sid))
            os.makedirs(session.folder)
            self.sessions[sid] = session
            notes = self._load(session, self.start_documents) if self.start_documents else []
        return {"session": sid, "notes": notes, "documents": session.documents}

    def get(self, sid: Any) -> Session:
        session = self.sessions.get(str(sid))
        if session is None:
            raise ChatError("unknown or expired session: reload the page")
        return session

    def _load(self, session: Session, paths: List[str]) -> List[str]:
        agent = session.agent
        before = len(agent.documents)
        agent.load_documents(paths)
        notes, agent._notes = list(agent._notes), []
        if len(agent.documents) > before:
            session.documents.extend(os.path.basename(p) for p in paths)
            session.graph = None
        return notes

    def upload(self, sid: Any, name: Any, data: Any) -> Dict[str, Any]:
        """Add a text/Markdown document sent by the page; binary or huge ones are refused."""
        session = self.get(sid)
        if not isinstance(data, str) or not isinstance(name, str) or not name.strip():
            raise ChatError("a document needs a name and text")
        if "\x00" in data:
            raise ChatError(f"{name}: looks like a binary file; upload text or Markdown")
        if len(data) > MAX_DOCUMENT_CHARS:
            raise ChatError(f"{name}: {len(data)} characters, more than the "
                            f"{MAX_DOCUMENT_CHARS} a document may have")
        safe = SAFE_NAME.sub("_", os.path.basename(name.strip()))[:80] or "document.txt"
        path = os.path.join(session.folder, safe)
        with open(path, "w", encoding="utf-8") as f:
            f.write(data)
        with self.lock:
            notes = self._load(session, [path])
        return {"notes": notes, "documents": session.documents}

    def turn(self, sid: Any, text: Any) -> Dict[str, Any]:
        """One user turn: the reply, the selection and the graph of the documents as HTML."""
        session = self.get(sid)
        if not isinstance(text, str):
            raise ChatError("a message must be text")
        with self.lock:
            agent = session.agent
            agent.observe({"text": text, "episode_done": False})
            reply = agent.act()
            out = {"text": reply.get("text") or "", "note": reply.get("docgraph_note") or "",
                   "selected_sentence": reply.get("selected_sentence"),
                   "selected_title": reply.get("selected_title"),
                   "top_concepts": list(reply.get("top_concepts") or []), "graph_html": None}
            selection = agent.last_selection
            if agent.documents and selection and out["selected_sentence"]:
                if session.graph is None:
                    session.graph = build_graph(agent.documents)
                out["graph_html"] = turn_graph_html(session.graph, selection, text, out["text"])
        return out

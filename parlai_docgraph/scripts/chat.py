"""
``parlai-docgraph chat -mf MODEL [--datapath DIR] [--documents a.md b.txt] [--port 8080]``:
chat with a ``-m docgraph`` model in the browser, over documents named on the command line
or uploaded in the page; each turn streams the selection and then the reply token by
token, and shows the document graph with the selection highlighted.

The parser is ParlAI's with the model arguments (``ParlaiParser(True, True)``), so ``-mf`` /
``--model-file``, ``--datapath`` and the model's own options (``--reply-mode``,
``--inference``, ...) parse as in ``parlai interactive``; options given on the command line
override the model file's, as ParlAI's ``override`` does.

Why not ParlAI's ``parlai interactive_web``: its handler serves one fixed page and one agent
through a module-level world, with no way to pass documents, per-user sessions or extra
reply fields. This script serves a Starlette app (:mod:`.chat_app`) with uvicorn; the
sessions are :class:`~parlai_docgraph.agents.pipeline.web_sessions.SessionStore`.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script
from parlai.utils import logging

from parlai_docgraph.agents.pipeline.web_sessions import (
    MAX_SESSIONS, MAX_UPLOAD_BYTES, MAX_UPLOADS, SessionStore,
)
from parlai_docgraph.scripts.chat_http import HEADER_TIMEOUT, SESSIONS_PER_MINUTE

#: options of this script (not the model's): left out of the model's overrides
SCRIPT_OPTIONS = ("host", "port", "turn_timeout", "read_timeout", "header_timeout",
                  "idle_timeout", "max_sessions", "sessions_per_minute", "max_uploads",
                  "max_upload_bytes", "documents")


def load_store(opt: Dict[str, Any]) -> SessionStore:
    """
    The ``-m docgraph`` agent of ``-mf`` in interactive mode, wrapped in sessions; the
    model options given on the command line (``opt['override']``) override the model's.
    """
    from parlai.core.agents import create_agent_from_model_file
    from parlai.core.build_data import modelzoo_path

    model_file = modelzoo_path(opt["datapath"], opt["model_file"])
    given = opt.get("override")
    if given is None:  # a plain dict from a Python caller: its reply mode, if any
        given = {"reply_mode": opt["reply_mode"]} if opt.get("reply_mode") else {}
    overrides: Dict[str, Any] = {k: v for k, v in given.items()
                                 if k not in SCRIPT_OPTIONS and k != "model_file"}
    overrides.update(interactive_mode=True, datapath=opt["datapath"], documents=None)
    # graphs (and the sentence parses of uploads) in memory: an upload is not written to the
    # datapath's graph store, and is gone with its session; --graph-cache store keeps them
    overrides.setdefault("graph_cache", "memory")
    agent = create_agent_from_model_file(model_file, overrides)
    if agent is None or not hasattr(agent, "load_documents"):
        raise ValueError(f"chat: {opt['model_file']} is not a -m docgraph model file")
    return SessionStore(agent, opt.get("documents") or [],
                        max_sessions=opt.get("max_sessions") or MAX_SESSIONS,
                        idle_timeout=opt.get("idle_timeout") or None,
                        max_uploads=opt.get("max_uploads", MAX_UPLOADS),
                        max_upload_bytes=opt.get("max_upload_bytes", MAX_UPLOAD_BYTES))


@register_script("chat", hidden=False)
class Chat(ParlaiScript):
    """Chat with a -m docgraph model in the browser, with the document graph of each turn."""

    @classmethod
    def setup_args(cls) -> ParlaiParser:
        parser = ParlaiParser(True, True, description=cls.__doc__.strip())
        group = parser.add_argument_group("docgraph chat")
        # -m docgraph registers --documents and --reply-mode too; these make them known
        # before -mf is read (ParlAI's parser resolves the clash in the model's favour)
        group.add_argument("--documents", type=str, nargs="*", default=None,
                           help="text/Markdown files every new session starts with (the "
                           "page adds more by upload; chat messages cannot load files)")
        group.add_argument("--reply-mode", type=str, default=None,
                           choices=["generate", "extract"],
                           help="override the model's --reply-mode")
        group.add_argument("--host", type=str, default="127.0.0.1",
                           help="address to bind (127.0.0.1: this machine only). Requests "
                           "must name a loopback host unless this is another address "
                           "(0.0.0.0: any); the chat has no authentication")
        group.add_argument("--port", type=int, default=8080, help="port (0: a free one)")
        group.add_argument("--turn-timeout", type=float, default=120.0,
                           help="seconds a turn or upload may take, waiting for other "
                           "turns included; a later one gets an error reply")
        group.add_argument("--read-timeout", type=float, default=20.0,
                           help="seconds a client has to send a request body")
        group.add_argument("--header-timeout", type=float, default=HEADER_TIMEOUT,
                           help="seconds a client has to send a request's headers; a "
                           "connection that has not is closed")
        group.add_argument("--idle-timeout", type=float, default=3600.0,
                           help="seconds after which an idle session expires (its "
                           "uploads are removed); 0: never")
        group.add_argument("--max-sessions", type=int, default=MAX_SESSIONS,
                           help="sessions kept at once; a new one evicts the least "
                           "recently used session that never had a turn or upload, or "
                           "one idle for longer than --idle-timeout, else gets 503")
        group.add_argument("--sessions-per-minute", type=int, default=SESSIONS_PER_MINUTE,
                           help="new sessions one client address may start per minute "
                           "(429 past it); 0: no limit")
        group.add_argument("--max-uploads", type=int, default=MAX_UPLOADS,
                           help="documents one session may upload (a re-upload counts; "
                           "413 past it)")
        group.add_argument("--max-upload-bytes", type=int, default=MAX_UPLOAD_BYTES,
                           help="bytes (UTF-8) of text one session may upload in all "
                           "(413 past it)")
        return parser

    def run(self) -> Optional[str]:
        import uvicorn

        from parlai_docgraph.scripts.chat_app import ChatSettings, build_app, is_loopback
        from parlai_docgraph.scripts.chat_http import server_config

        opt = self.opt
        if not opt.get("model_file"):
            raise ValueError("chat: give the model with -mf (e.g. zoo:docgraph/sample/model)")
        host = opt["host"]
        settings = ChatSettings(
            host=host, turn_timeout=opt["turn_timeout"], read_timeout=opt["read_timeout"],
            header_timeout=opt.get("header_timeout", HEADER_TIMEOUT),
            sessions_per_minute=opt.get("sessions_per_minute", SESSIONS_PER_MINUTE))
        store = load_store(opt)
        try:
            config = server_config(build_app(store, settings), host, opt["port"],
                                   settings.header_timeout)
            sock = config.bind_socket()
            port = sock.getsockname()[1]
            shown = f"[{host}]" if ":" in host else host
            if not is_loopback(host):
                logging.warning(f"docgraph chat: bound to {host}, reachable from other "
                                "machines; it has no authentication: anyone who can reach "
                                "this port can chat and upload documents")
            logging.info(f"docgraph chat on http://{shown}:{port}/ (Ctrl-C stops it)")
            uvicorn.Server(config).run(sockets=[sock])
        except KeyboardInterrupt:  # uvicorn re-raises Ctrl-C after its graceful shutdown
            logging.info("docgraph chat stopped")
        finally:
            store.close()  # lifespan shutdown did it too; this covers a failed start
        return None


if __name__ == "__main__":
    Chat.main()

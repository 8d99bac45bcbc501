"""
``parlai-docgraph chat -mf MODEL [--documents a.md b.txt] [--port 8080]``: chat with a
``-m docgraph`` model in the browser, over documents named on the command line or uploaded
in the page; each turn shows the reply, the selected sentence, the top concepts and the
document graph with the selection highlighted.

Why not ParlAI's ``parlai interactive_web``: its handler serves one fixed page and one agent
through a module-level world, with no way to pass documents, per-user sessions or extra
reply fields, so extending it would mean replacing its handler anyway. This script uses the
standard library's ``ThreadingHTTPServer`` and a JSON API:

* ``GET /``: the page (``parlai_docgraph/assets/chat.html``);
* ``POST /api/session``: a new session (its own dialogue history and documents);
* ``POST /api/documents`` ``{session, name, text}``: add a text/Markdown document;
* ``POST /api/chat`` ``{session, text}``: one turn (see :mod:`..agents.web_sessions`).

Bad input (empty or over-long messages, binary or huge uploads, unreadable documents, a
malformed request) gets a message in the page and the server keeps running. The server
binds to ``127.0.0.1`` unless ``--host`` says otherwise (it has no authentication).
"""

from __future__ import annotations

import json
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Dict, Optional

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script
from parlai.utils import logging

from parlai_docgraph.agents.pipeline.web_sessions import ChatError, SessionStore

PAGE = Path(__file__).resolve().parent.parent / "assets" / "chat.html"
MAX_REQUEST_BYTES = 2_000_000


def make_handler(store: SessionStore) -> type:
    """A request handler class bound to ``store``."""
    page = PAGE.read_bytes()
    routes: Dict[str, Callable[[Dict[str, Any]], Dict[str, Any]]] = {
        "/api/session": lambda body: store.new(),
        "/api/documents": lambda body: store.upload(body.get("session"), body.get("name"),
                                                    body.get("text")),
        "/api/chat": lambda body: store.turn(body.get("session"), body.get("text")),
    }

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, data: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _json(self, status: int, obj: Dict[str, Any]) -> None:
            self._send(status, json.dumps(obj).encode("utf-8"), "application/json")

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path in ("/", "/index.html"):
                self._send(HTTPStatus.OK, page, "text/html; charset=utf-8")
            else:
                self._json(HTTPStatus.NOT_FOUND, {"error": f"no page {self.path}"})

        def do_POST(self) -> None:  # noqa: N802
            route = routes.get(self.path)
            if route is None:
                return self._json(HTTPStatus.NOT_FOUND, {"error": f"no API {self.path}"})
            size = int(self.headers.get("Content-Length") or 0)
            if size > MAX_REQUEST_BYTES:
                return self._json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                                  {"error": f"request of {size} bytes is too large"})
            try:
                body = json.loads(self.rfile.read(size).decode("utf-8") or "{}")
                if not isinstance(body, dict):
                    raise ChatError("the request must be a JSON object")
                self._json(HTTPStatus.OK, route(body))
            except (ChatError, ValueError, UnicodeDecodeError) as err:
                self._json(HTTPStatus.BAD_REQUEST, {"error": str(err)})
            except Exception as err:  # the server must keep running; the page says why
                logging.error(f"chat: {type(err).__name__}: {err}")
                self._json(HTTPStatus.INTERNAL_SERVER_ERROR,
                           {"error": f"the model failed on this turn ({type(err).__name__}: "
                            f"{err}); the chat goes on"})

        def log_message(self, fmt: str, *args: Any) -> None:
            logging.debug("chat: " + fmt % args)

    return Handler


def serve(store: SessionStore, host: str = "127.0.0.1", port: int = 8080
          ) -> ThreadingHTTPServer:
    """A started-ready server (call ``serve_forever``); ``port`` 0 picks a free port."""
    server = ThreadingHTTPServer((host, port), make_handler(store))
    server.daemon_threads = True
    return server


def load_store(opt: Dict[str, Any]) -> SessionStore:
    """The ``-m docgraph`` agent of ``-mf`` in interactive mode, wrapped in sessions."""
    from parlai.core.agents import create_agent_from_model_file
    from parlai.core.build_data import modelzoo_path

    model_file = modelzoo_path(opt["datapath"], opt["model_file"])
    overrides: Dict[str, Any] = {"interactive_mode": True, "datapath": opt["datapath"],
                                 "documents": None}
    if opt.get("reply_mode"):
        overrides["reply_mode"] = opt["reply_mode"]
    agent = create_agent_from_model_file(model_file, overrides)
    if agent is None or not hasattr(agent, "load_documents"):
        raise ValueError(f"chat: {opt['model_file']} is not a -m docgraph model file")
    return SessionStore(agent, opt.get("documents") or [])


@register_script("chat", hidden=False)
class Chat(ParlaiScript):
    """Chat with a -m docgraph model in the browser, with the document graph of each turn."""

    @classmethod
    def setup_args(cls) -> ParlaiParser:
        parser = ParlaiParser(True, False, description=cls.__doc__.strip())
        group = parser.add_argument_group("docgraph chat")
        group.add_argument("--documents", type=str, nargs="*", default=None,
                           help="text/Markdown files every new session starts with")
        group.add_argument("--host", type=str, default="127.0.0.1",
                           help="address to bind (127.0.0.1: this machine only; 0.0.0.0 "
                           "exposes the chat, which has no authentication)")
        group.add_argument("--port", type=int, default=8080, help="port (0: a free one)")
        group.add_argument("--reply-mode", type=str, default=None,
                           choices=["generate", "extract"],
                           help="override the model's --reply-mode")
        return parser

    def run(self) -> Optional[str]:
        if not self.opt.get("model_file"):
            raise ValueError("chat: give the model with -mf (e.g. zoo:docgraph/sample/model)")
        server = serve(load_store(self.opt), self.opt["host"], self.opt["port"])
        host, port = server.server_address[:2]
        logging.info(f"docgraph chat on http://{host}:{port}/ (Ctrl-C stops it)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
        return None


if __name__ == "__main__":
    Chat.main()

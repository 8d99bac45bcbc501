"""
The ASGI application of ``parlai-docgraph chat`` (Starlette; served by uvicorn in
:mod:`.chat`): the page, a JSON API and the streamed turns.

* ``GET /``: the page (``parlai_docgraph/assets/chat.html``), ``GET /chat.js`` its script;
* ``POST /api/session``: a new session (its own dialogue history and documents);
* ``POST /api/documents`` ``{session, name, text}``: add a text/Markdown document;
* ``POST /api/chat`` ``{session, text}``: one turn, streamed as NDJSON (one JSON object per
  line): ``selection``, ``token`` ..., then ``done`` (or ``error``); see
  :mod:`..agents.pipeline.web_sessions`. NDJSON rather than server-sent events: the page
  posts the message (``EventSource`` can only GET), and a line-per-event body is read the
  same way by the page's ``fetch`` reader and by any HTTP client, without SSE framing.

Safety (see :func:`build_app`): Host must be one of :func:`allowed_hosts` (DNS rebinding);
a POST whose ``Origin`` is present and not the server's own is refused (403), as is a body
that is not JSON (415: a cross-site form cannot send JSON without a CORS preflight, which
this server never grants); bodies are capped (:attr:`ChatSettings.max_body`, 413), must
arrive within ``read_timeout`` seconds (408) and be JSON objects of any depth (400, not
Python's ``RecursionError``); a turn gets ``turn_timeout`` seconds, after which the page
gets an error event and the generation is stopped at its next token. Malformed or negative
``Content-Length`` is refused by uvicorn's h11 parser (400) before the app sees the
request. Every response has the security headers of :mod:`.chat_http`; a client address
may start ``sessions_per_minute`` sessions a minute (429). The model runs in worker
threads (:attr:`ChatSettings.workers`, one turn at a time under the store's lock), never on
the event loop; new sessions run in threads of their own, so they never queue behind
turns. Errors name their type to the page and their text in the server's log only.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Dict, List, Optional

from parlai.utils import logging
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from parlai_docgraph.agents.pipeline.web_sessions import (
    ChatError, ServerBusy, SessionStore, TurnTimeout, UploadLimit, check_message,
)
from parlai_docgraph.models.responder.streaming import GenerationStopped
from parlai_docgraph.scripts.chat_http import (
    HEADER_TIMEOUT, SESSIONS_PER_MINUTE, SecurityHeaders, SessionRate,
)

PAGE = Path(__file__).resolve().parent.parent / "assets" / "chat.html"
SCRIPT = PAGE.with_name("chat.js")
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARDS = ("0.0.0.0", "::", "")


@dataclass
class ChatSettings:
    """Limits of the server (the ``parlai-docgraph chat`` options)."""

    host: str = "127.0.0.1"
    turn_timeout: float = 120.0  # seconds for one turn (or upload), waiting included
    read_timeout: float = 20.0  # seconds to receive a request body
    max_body: int = 2_000_000  # bytes of a request body
    sweep_interval: Optional[float] = None  # seconds between expiry sweeps (None: derived)
    workers: int = 8  # threads that run (or wait for) the model
    header_timeout: float = HEADER_TIMEOUT  # seconds to receive a request's headers
    sessions_per_minute: int = SESSIONS_PER_MINUTE  # new sessions per client address


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def allowed_hosts(bind: str) -> List[str]:
    """
    Host header values the server accepts: the loopback names, plus the bound address when
    it is another one; any host when bound to all interfaces (0.0.0.0, ::).
    """
    if bind in WILDCARDS:
        return ["*"]
    name = f"[{bind}]" if ":" in bind and not bind.startswith("[") else bind
    return list(dict.fromkeys(list(LOOPBACK_NAMES) + [name.lower()]))


class SameOriginPosts:
    """ASGI middleware: a POST whose ``Origin`` is present and not this server's gets 403."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD", "OPTIONS"):
            headers = Headers(scope=scope)
            origin = headers.get("origin")
            own = f"{scope.get('scheme', 'http')}://{headers.get('host', '')}".lower()
            if origin is not None and origin.lower() != own:
                response = JSONResponse({"error": f"cross-origin request from {origin} "
                                         "refused"}, status_code=403)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class HTTPError(Exception):
    """A request refused with ``status`` and a message for the page."""

    def __init__(self, status: int, message: str, retry_after: Optional[int] = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


async def read_json(request: Request, settings: ChatSettings) -> Dict[str, Any]:
    """The request's JSON object, read within the size and time limits."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise HTTPError(415, "send the request as JSON (Content-Type: application/json)")
    limit, size, chunks = settings.max_body, 0, []
    try:
        async with asyncio.timeout(settings.read_timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size <= limit:
                    chunks.append(chunk)
                elif size > 4 * limit:  # stop draining; uvicorn closes the connection
                    break
    except TimeoutError:
        raise HTTPError(408, f"the request body did not arrive within {settings.read_timeout:g} s")
    if size > limit:
        raise HTTPError(413, f"the request has {size} bytes, more than the {limit} this "
                        "chat accepts (a message or document that long is refused)")
    try:
        body = json.loads(b"".join(chunks).decode("utf-8") or "{}")
    except (UnicodeDecodeError, ValueError):
        raise HTTPError(400, "the request is not valid JSON")
    except RecursionError:  # the decoder's depth limit: no request of the page nests
        raise HTTPError(400, "the request is not valid JSON (nested too deeply)")
    if not isinstance(body, dict):
        raise HTTPError(400, "the request must be a JSON object")
    return body


def _line(event: Dict[str, Any]) -> bytes:
    return (json.dumps(event) + "\n").encode("utf-8")


class ChatApp:
    """The routes over one :class:`SessionStore` (see the module docstring)."""

    def __init__(self, store: SessionStore, settings: ChatSettings) -> None:
        self.store = store
        self.settings = settings
        self.page, self.script = PAGE.read_bytes(), SCRIPT.read_bytes()
        self.executor = ThreadPoolExecutor(settings.workers, thread_name_prefix="docgraph-chat")
        # new sessions copy the agent without the models: threads of their own, never
        # queued behind the turns that fill the executor above
        self.session_executor = ThreadPoolExecutor(2, thread_name_prefix="docgraph-session")
        self.session_rate = SessionRate(settings.sessions_per_minute)

    # ------------------------------------------------------------------ plumbing
    def deadline(self) -> float:
        return time.monotonic() + self.settings.turn_timeout

    async def _in_worker(self, fn: Callable[..., Dict[str, Any]], *args: Any,
                         executor: Optional[ThreadPoolExecutor] = None) -> Dict[str, Any]:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(executor or self.executor, fn, *args, self.deadline())
        try:
            return await asyncio.wait_for(future, self.settings.turn_timeout)
        except (TimeoutError, TurnTimeout):
            raise HTTPError(504, f"the server did not finish within "
                            f"{self.settings.turn_timeout:g} s (--turn-timeout); try again")

    @staticmethod
    def _refusal(err: Exception) -> Response:
        """The JSON error response of a refused or failed request."""
        headers: Dict[str, str] = {}
        if isinstance(err, HTTPError):
            status = err.status
        elif isinstance(err, ChatError):
            status = {ServerBusy: 503, UploadLimit: 413}.get(type(err), 400)
        else:  # the server must keep running; the page says why, the log what
            logging.error(f"chat: {type(err).__name__}: {err}")
            err = RuntimeError(f"the server failed on this request ({type(err).__name__}); "
                               "the chat goes on")
            status = 500
        if isinstance(err, HTTPError) and err.status in (408, 413):
            # a body left unread (too slow, too large) ends the connection with the answer
            headers["Connection"] = "close"
        if status in (429, 503):
            headers["Retry-After"] = str(getattr(err, "retry_after", None) or 30)
        return JSONResponse({"error": str(err)}, status_code=status, headers=headers)

    async def _json_route(self, request: Request, work) -> Response:
        try:
            return JSONResponse(await work(await read_json(request, self.settings)))
        except Exception as err:
            return self._refusal(err)

    # ------------------------------------------------------------------ routes
    async def index(self, request: Request) -> Response:
        return HTMLResponse(self.page, headers={"Cache-Control": "no-cache"})

    async def page_script(self, request: Request) -> Response:
        return Response(self.script, media_type="text/javascript; charset=utf-8",
                        headers={"Cache-Control": "no-cache"})

    async def new_session(self, request: Request) -> Response:
        async def start(body: Dict[str, Any]) -> Dict[str, Any]:
            address = request.client.host if request.client else ""
            wait = self.session_rate.wait(address)
            if wait:
                raise HTTPError(429, f"{address} started {self.session_rate.per_minute} "
                                "sessions in the last minute (--sessions-per-minute); try "
                                f"again in {wait:.0f} s", retry_after=max(int(wait + 0.999), 1))
            return await self._in_worker(self.store.new, executor=self.session_executor)

        return await self._json_route(request, start)

    async def documents(self, request: Request) -> Response:
        return await self._json_route(request, lambda body: self._in_worker(
            self.store.upload, body.get("session"), body.get("name"), body.get("text")))

    async def chat(self, request: Request) -> Response:
        try:
            body = await read_json(request, self.settings)
            check_message(body.get("text"))
            self.store.check(body.get("session"))
        except Exception as err:
            return self._refusal(err)
        return StreamingResponse(self.turn_events(body["session"], body["text"]),
                                 media_type="application/x-ndjson",
                                 headers={"Cache-Control": "no-store"})

    async def turn_events(self, sid: str, text: str) -> AsyncIterator[bytes]:
        """The NDJSON lines of one turn; an ``error`` event when it fails or runs late."""
        loop = asyncio.get_running_loop()
        queue: "asyncio.Queue[Optional[Dict[str, Any]]]" = asyncio.Queue()
        stop = False
        deadline = self.deadline()

        def emit(event: Optional[Dict[str, Any]]) -> None:  # called in the worker thread
            nonlocal stop
            try:
                loop.call_soon_threadsafe(queue.put_nowait, event)
            except RuntimeError:  # the event loop is gone (server shutting down)
                stop = True

        def work() -> None:
            try:
                self.store.turn(sid, text, emit, lambda: stop, deadline)
            except (TurnTimeout, GenerationStopped):
                emit({"event": "error", "error": self._late()})
            except ChatError as err:  # a failed turn too (TurnFailed: the dialogue restarts)
                emit({"event": "error", "error": str(err)})
            except Exception as err:  # the chat goes on; the page says why, the log what
                logging.error(f"chat: {type(err).__name__}: {err}")
                emit({"event": "error", "error": f"the server failed on this turn "
                      f"({type(err).__name__}); the chat goes on"})
            finally:
                emit(None)

        loop.run_in_executor(self.executor, work)
        try:
            while True:
                try:
                    event = queue.get_nowait()
                except asyncio.QueueEmpty:
                    try:
                        event = await asyncio.wait_for(queue.get(), deadline - time.monotonic())
                    except TimeoutError:
                        yield _line({"event": "error", "error": self._late()})
                        return
                if event is None:
                    return
                yield _line(event)
        finally:
            stop = True  # a late turn, or a client that went away: stop generating

    def _late(self) -> str:
        return (f"this turn took longer than {self.settings.turn_timeout:g} s "
                "(--turn-timeout) and was stopped; ask again or shorten the documents")

    async def not_found(self, request: Request) -> Response:
        return JSONResponse({"error": f"no API {request.url.path}"}, status_code=404)

    # ------------------------------------------------------------------ lifespan
    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        sweeper = asyncio.create_task(self._sweep()) if self.store.idle_timeout else None
        try:
            yield
        finally:
            if sweeper is not None:
                sweeper.cancel()
            self.executor.shutdown(wait=False, cancel_futures=True)
            self.session_executor.shutdown(wait=False, cancel_futures=True)
            self.store.close()

    async def _sweep(self) -> None:
        interval = self.settings.sweep_interval or min(max(self.store.idle_timeout / 4, 0.1), 30)
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(interval)
            gone = await loop.run_in_executor(None, self.store.expire)
            if gone:
                logging.info(f"chat: {len(gone)} idle session(s) expired")


def build_app(store: SessionStore, settings: Optional[ChatSettings] = None) -> Starlette:
    """The Starlette app over ``store``; ``app.state.chat`` is its :class:`ChatApp`."""
    settings = settings or ChatSettings()
    chat = ChatApp(store, settings)
    routes = [
        Route("/", chat.index, methods=["GET"]),
        Route("/index.html", chat.index, methods=["GET"]),
        Route("/chat.js", chat.page_script, methods=["GET"]),
        Route("/api/session", chat.new_session, methods=["POST"]),
        Route("/api/documents", chat.documents, methods=["POST"]),
        Route("/api/chat", chat.chat, methods=["POST"]),
        Route("/{path:path}", chat.not_found, methods=["GET", "POST"]),
    ]
    middleware = [Middleware(SecurityHeaders),  # outermost: on every response, refusals too
                  Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(settings.host)),
                  Middleware(SameOriginPosts)]
    app = Starlette(routes=routes, middleware=middleware, lifespan=chat.lifespan)
    app.state.chat = chat
    return app

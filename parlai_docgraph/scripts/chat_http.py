"""
The HTTP side of ``parlai-docgraph chat`` that is not a route (:mod:`.chat_app`):

* :class:`SecurityHeaders`: every response says ``X-Frame-Options: DENY``,
  ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer`` and the
  :func:`content_security_policy`: no page may frame the chat (``frame-ancestors 'none'``),
  and scripts run only from the server's own files (the page's ``/chat.js``) or are the
  graph view's own inline scripts, allowed by their SHA-256 (the graph panel is an
  ``<iframe srcdoc>``, which keeps the page's policy);
* :func:`header_timeout_protocol`: uvicorn's h11 protocol with a deadline for request
  headers. uvicorn's ``timeout_keep_alive`` only covers the idle time between requests and
  is cancelled by any byte received, so a connection that sends part of its headers and
  stops (or trickles them) was never closed: 300 such connections were all open after 75 s;
* :class:`SessionRate`: new sessions per client address per minute (429 past it);
* :func:`server_config`: the uvicorn configuration of the chat, every option stated.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections import deque
from typing import Any, Deque, Dict, Iterable, Optional

import uvicorn
from parlai.utils import logging
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from parlai_docgraph.graphs.render import inline_scripts

#: seconds a client has to send a request's headers (``--header-timeout``)
HEADER_TIMEOUT = 10.0
#: new sessions a client address may start per minute (``--sessions-per-minute``)
SESSIONS_PER_MINUTE = 60


def script_hash(script: str) -> str:
    """The CSP source that allows the inline script ``script``: ``'sha256-<base64>'``."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def content_security_policy(inline: Iterable[str] = ()) -> str:
    """
    The chat's CSP: nothing by default; scripts from the server itself and the inline
    scripts ``inline`` (by hash); styles inline (the page's and the graph's ``<style>`` and
    ``style`` attributes); fetches, frames and forms to the server itself; never framed.
    """
    scripts = " ".join(["'self'"] + [script_hash(s) for s in inline])
    return ("default-src 'none'; "
            f"script-src {scripts}; "
            "style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; "
            "frame-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")


class SecurityHeaders:
    """ASGI middleware: the security headers (see the module docstring) on every response."""

    def __init__(self, app: ASGIApp, policy: Optional[str] = None) -> None:
        self.app = app
        policy = policy or content_security_policy(inline_scripts())
        self.headers = [(b"x-frame-options", b"DENY"),
                        (b"content-security-policy", policy.encode("ascii")),
                        (b"x-content-type-options", b"nosniff"),
                        (b"referrer-policy", b"no-referrer")]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": list(message.get("headers", [])) + self.headers}
            await send(message)

        await self.app(scope, receive, with_headers)


class HeaderTimeoutProtocol(H11Protocol):
    """
    uvicorn's h11 protocol, plus: while no request of the connection is being answered
    (from the connection's start, and from the first byte after a response), its headers
    must arrive within :attr:`header_timeout` seconds of the first wait, however slowly they
    trickle; else the connection is closed. A request being answered is the app's (its body
    has the app's ``--read-timeout``); the idle time between requests is uvicorn's
    ``timeout_keep_alive``.
    """

    header_timeout: float = HEADER_TIMEOUT

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        self._header_timer: Optional[Any] = None
        super().connection_made(transport)
        self._watch()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self._stop_timer()
        super().connection_lost(exc)

    def _answering(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _watch(self) -> None:
        """Arm the deadline while the connection waits for headers; disarm it otherwise."""
        if self._answering() or self.transport.is_closing():
            self._stop_timer()
        elif self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._late)

    def _stop_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _late(self) -> None:
        self._header_timer = None
        if self._answering() or self.transport.is_closing():
            return
        logging.debug(f"chat: closed a connection whose request headers did not arrive "
                      f"within {self.header_timeout:g} s (--header-timeout)")
        self.transport.close()  # connection_lost follows and tells h11


def header_timeout_protocol(seconds: float) -> type:
    """:class:`HeaderTimeoutProtocol` with a deadline of ``seconds`` (uvicorn's ``http``)."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": seconds})


class SessionRate:
    """
    At most ``per_minute`` new sessions per client address in any 60 s (0: no limit).
    Called on the event loop only (no lock). Addresses with nothing in the last minute are
    forgotten, so the table holds at most the addresses of the last minute.
    """

    WINDOW = 60.0

    def __init__(self, per_minute: int, clock=time.monotonic) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self.seen: Dict[str, Deque[float]] = {}

    def wait(self, address: str) -> float:
        """0 and the session counted when ``address`` may start one now; else the seconds
        until it may."""
        if self.per_minute <= 0:
            return 0.0
        now = self.clock()
        for key in [k for k, times in self.seen.items() if now - times[-1] >= self.WINDOW]:
            del self.seen[key]
        times = self.seen.setdefault(address, deque())
        while times and now - times[0] >= self.WINDOW:
            times.popleft()
        if len(times) >= self.per_minute:
            return max(self.WINDOW - (now - times[0]), 0.001)
        times.append(now)
        return 0.0


def server_config(app: ASGIApp, host: str, port: int, header_timeout: float = HEADER_TIMEOUT
                  ) -> uvicorn.Config:
    """
    The chat's uvicorn configuration: h11 with the header deadline; ``proxy_headers`` off,
    so no request header (``X-Forwarded-For``) changes the client address that the session
    limit counts (behind a reverse proxy every client has the proxy's address).
    """
    return uvicorn.Config(app, host=host, port=port, http=header_timeout_protocol(header_timeout),
                          lifespan="on", log_level="warning", proxy_headers=False,
                          timeout_graceful_shutdown=5, timeout_keep_alive=5)

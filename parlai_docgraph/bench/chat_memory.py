"""
``parlai-docgraph bench --only chat_memory``: the resident memory of the web chat server
(``parlai-docgraph chat -mf zoo:docgraph/sample/model``, a subprocess) holding 64 sessions
with one large upload each, and after those sessions expire.

Two kinds of upload, each in a server of its own:

* ``body_1_9mb``: a request body of 1.9 MB, just under the server's 2 MB cap. A document may have
  200,000 characters, so a body that large is mostly JSON escapes: English sentences (the
  bundled demo document's, numbered) each followed by emoji, which the page's
  ``JSON.stringify`` would send as 4 bytes and Python's ``json.dumps`` sends as 12
  (``\\ud83c\\udf0a``);
* ``prose_200k``: 199,000 characters of those English sentences alone (a body of about
  0.2 MB): the most sentences one upload can hold, so the largest index.

Per kind: ``start_mb`` (the server's RSS once it answers), ``sessions_mb`` (every session
holding its upload), ``expired_mb`` (after every session expired and the sweeper removed
it), then the same again for a second round of as many sessions (``sessions2_mb``,
``expired2_mb``: freed memory is reused, not leaked, when the second round grows the process
by little), ``peak_mb`` (VmHWM), ``per_session_mb`` ((sessions - start) / sessions),
``kept_ratio`` ((expired - start) / (sessions - start): the share of the sessions' memory the
process still holds after they are gone: the expired sessions' objects are freed, but the C
allocator keeps most of the freed memory mapped for reuse), seconds per upload, and the
upload's characters and body bytes. Linux only (``/proc/PID/status``). Memory does not
depend on other load on the cores; the upload seconds do.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

from parlai_docgraph.bench.cli import register_benchmark
from parlai_docgraph.bench.long_documents import _default_datapath

MODEL = "zoo:docgraph/sample/model"
DEMO = Path(__file__).resolve().parent.parent / "assets" / "demo_document.md"
MAX_CHARS = 199_000  # under the chat's 200,000 characters per document
BODY_BYTES = 1_900_000
IDLE_TIMEOUT = 60  # seconds; sessions are kept alive while uploading, then left to expire


def _sentences() -> List[str]:
    from parlai_docgraph.graphs.corpus import read_document

    return [s for _, ss in read_document(str(DEMO)) for s in ss]


def upload_text(kind: str) -> str:
    """The text of one upload of ``kind`` (see the module docstring)."""
    sentences, pieces, chars, body, i = _sentences(), [], 0, 60, 0
    while True:
        sentence = f"{sentences[i % len(sentences)][:-1]} ({i})."
        piece = sentence + (" " + "\N{WATER WAVE}" * round(3.5 * len(sentence))
                            if kind == "body_1_9mb" else "") + ("\n\n" if i % 5 == 4 else " ")
        size = len(json.dumps(piece)) - 2
        if chars + len(piece) > MAX_CHARS or (kind == "body_1_9mb" and body + size > BODY_BYTES):
            return "".join(pieces)
        pieces.append(piece)
        chars, body, i = chars + len(piece), body + size, i + 1


def _rss_mb(pid: int) -> Dict[str, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024  # kB
    return fields


def _post(port: int, path: str, body: bytes) -> Dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        data = response.read().decode("utf-8")
        if path == "/api/chat" and response.status == 200:
            data = data.strip().splitlines()[-1]
        return {"status": response.status, **json.loads(data)}
    finally:
        conn.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_memory(kind: str, sessions: int, datapath: str) -> Dict[str, Any]:
    """Start a chat server, give ``sessions`` sessions one upload of ``kind`` each, let them
    expire; its memory at each step."""
    if not Path("/proc/self/status").is_file():
        raise RuntimeError("chat_memory reads /proc/PID/status: Linux only")
    text = upload_text(kind)
    port, tmp = _free_port(), tempfile.mkdtemp(prefix="chat_memory_")
    command = [str(Path(sys.executable).parent / "parlai-docgraph"), "chat", "-mf", MODEL,
               "--port", str(port), "--idle-timeout", str(IDLE_TIMEOUT),
               "--sessions-per-minute", "0", "--max-sessions", str(max(64, sessions))]
    log = open(Path(tmp) / "server.log", "w")
    proc = subprocess.Popen(command, env={**os.environ, "PARLAI_DATAPATH": datapath,
                                          "TMPDIR": tmp}, stdout=log, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 600
        while True:
            if proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"the chat server did not start: {Path(tmp) / 'server.log'}")
            try:
                _post(port, "/api/session", b"{}")
                break
            except (OSError, ValueError):
                time.sleep(1)
        start = _rss_mb(proc.pid)["VmRSS"]
        rounds = [_one_round(proc.pid, port, Path(tmp), text, sessions) for _ in range(2)]
        peak = _rss_mb(proc.pid)["VmHWM"]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
    shutil.rmtree(tmp, ignore_errors=True)  # kept (with the server's log) when it failed
    (held, expired, upload_s), (held2, expired2, _) = rounds
    grown = held - start
    return {
        "sessions": sessions, "upload_chars": len(text),
        "upload_body_bytes": len(json.dumps({"session": "0" * 32, "name": "upload.md",
                                             "text": text})),
        "upload_s": round(upload_s / sessions, 2),
        "start_mb": round(start), "sessions_mb": round(held), "expired_mb": round(expired),
        "sessions2_mb": round(held2), "expired2_mb": round(expired2),
        "peak_mb": round(peak), "per_session_mb": round(grown / sessions, 1),
        "kept_ratio": round((expired - start) / grown, 2) if grown > 0 else 0.0,
    }


def _one_round(pid: int, port: int, tmp: Path, text: str, sessions: int):
    """``(RSS with the sessions, RSS after they expired, upload seconds)`` of one round of
    ``sessions`` sessions with one upload of ``text`` each."""
    sids: List[str] = []
    upload_s, touched = 0.0, time.monotonic()
    for _ in range(sessions):
        sids.append(_post(port, "/api/session", b"{}")["session"])
        body = json.dumps({"session": sids[-1], "name": "upload.md", "text": text}).encode()
        began = time.perf_counter()
        answer = _post(port, "/api/documents", body)
        upload_s += time.perf_counter() - began
        if answer["status"] != 200:
            raise RuntimeError(f"upload refused: {answer}")
        if time.monotonic() - touched > IDLE_TIMEOUT / 3:  # keep them all alive
            for sid in sids:
                _post(port, "/api/chat", json.dumps({"session": sid, "text": " "}).encode())
            touched = time.monotonic()
    held = _rss_mb(pid)["VmRSS"]
    gone_by = time.monotonic() + IDLE_TIMEOUT + 120
    while time.monotonic() < gone_by and list(tmp.glob("docgraph_chat_*/*")):
        time.sleep(2)
    left = len(list(tmp.glob("docgraph_chat_*/*")))
    if left:
        raise RuntimeError(f"{left} session folders left after the idle timeout")
    time.sleep(5)  # the sweeper pops a session before it removes its folder
    return held, _rss_mb(pid)["VmRSS"], upload_s


@register_benchmark("chat_memory")
def chat_memory_benchmark(quick: bool = False) -> Dict[str, Any]:
    """The web chat server's RSS with 64 sessions of one large upload, and after."""
    datapath = os.environ.get("PARLAI_DATAPATH") or _default_datapath()
    kinds = ("body_1_9mb",) if quick else ("body_1_9mb", "prose_200k")
    return {"model": MODEL, "idle_timeout_s": IDLE_TIMEOUT,
            **{kind: server_memory(kind, 8 if quick else 64, datapath) for kind in kinds}}

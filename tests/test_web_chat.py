"""
``parlai-docgraph chat``: the browser chat (Starlette on uvicorn).

Two servers, each started once for the module:

* ``cli_server``: the documented command (``docs/guide/chat.md``) as a user types it, in a subprocess (``parlai-docgraph
  chat -mf MODEL --documents notes.md --port PORT``, with the test model and
  a free port; the model's own reply mode, ``generate``, so replies stream token by token),
  with its own ``TMPDIR``;
* ``app_server``: the same app in this process (uvicorn in a thread, ``--reply-mode
  extract``), where a test can shorten a time limit or slow the model down.

Checked: streamed turns, ``/load`` never reaching the agent, foreign Origin and Host,
malformed Content-Length, the body size and read-time limits, the turn time limit, session
expiry and eviction (their folders removed), the folders gone after the server exits, and
the page in a real headless Chromium (Playwright): a streamed reply, an upload, bad
messages, 20 sessions at once (throughput printed). With ``$DOCGRAPH_SCREENSHOTS`` set to a
folder (``make screenshots``: ``docs/_static/screenshots``), the Chromium test writes the
documentation's screenshots there: the page after a turn, and the document graph of that turn.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from conftest import BIN, offline_env
from doc_sources import page as doc_page
from parlai_docgraph.agents.pipeline.messages import LOAD_REFUSED
from parlai_docgraph.agents.pipeline.web_sessions import ChatError, SessionStore
from parlai_docgraph.graphs.corpus import read_document
from parlai_docgraph.scripts.chat import load_store
from parlai_docgraph.scripts.chat_app import ChatSettings, allowed_hosts, build_app
from test_interactive import DOC, model_file  # noqa: F401  (model_file: a fixture)

CHAT_PAGE = "guide/chat.md"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SECRET = "root:x:0:0"  # a line of /etc/passwd


@dataclass
class Server:
    url: str
    doc: Path
    tmp: Optional[Path] = None  # the subprocess's TMPDIR
    proc: Optional[subprocess.Popen] = None
    log: Optional[Path] = None
    app: Any = None  # the in-process ChatApp
    uvicorn: Any = None
    thread: Optional[threading.Thread] = None

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def sentences(self) -> List[str]:
        return [s for _, ss in read_document(str(self.doc)) for s in ss]

    def stop(self) -> Optional[int]:
        """Stop the server (Ctrl-C for the subprocess); its exit code."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
                self.proc.wait(timeout=120)
            return self.proc.returncode
        if self.thread is not None and self.thread.is_alive():
            self.uvicorn.should_exit = True
            self.thread.join(timeout=60)
        return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_up(server: Server, seconds: float = 300) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if server.proc is not None and server.proc.poll() is not None:
            pytest.fail(f"the chat server exited ({server.proc.returncode}):\n"
                        f"{server.log.read_text()[-3000:]}")
        try:
            if _request(server.url, "GET", "/", timeout=5)[0] == 200:
                return
        except OSError:
            time.sleep(0.5)
    pytest.fail("the chat server did not start in time")


def readme_command() -> List[str]:
    """The command of the "Web chat" section of the chat page, as written."""
    text = doc_page(CHAT_PAGE)
    section = text[text.index("## Web chat: `parlai-docgraph chat`"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    [line] = [ln for ln in block.splitlines() if ln.startswith("parlai-docgraph chat ")]
    return shlex.split(line)


@pytest.fixture(scope="module")
def cli_server(model_file, tmp_path_factory):  # noqa: F811
    """The documented command in a subprocess: its model replaced by the test model, its port
    by a free one, its document (written into the working folder) holding :data:`DOC`."""
    args = readme_command()
    assert args[:2] == ["parlai-docgraph", "chat"]
    assert "--datapath" not in args  # ParlAI's datapath, as every documented command
    given = {a: args[args.index(a) + 1] for a in ("-mf", "--documents", "--port")}
    port = _free_port()
    args[args.index("-mf") + 1], args[args.index("--port") + 1] = model_file, str(port)
    folder = tmp_path_factory.mktemp("cli_chat")
    (folder / given["--documents"]).write_text(DOC, encoding="utf-8")
    tmp = folder / "tmp"
    tmp.mkdir()
    log = folder / "server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(BIN / args[0])] + args[1:], cwd=str(folder),
                                env=offline_env({"TMPDIR": str(tmp),
                                                 "PARLAI_DATAPATH": str(folder / "data")}),
                                stdout=out,
                                stderr=subprocess.STDOUT)
    server = Server(f"http://127.0.0.1:{port}", folder / given["--documents"], tmp=tmp,
                    proc=proc, log=log)
    try:
        _wait_until_up(server)
        yield server
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def app_server(model_file, tmp_path_factory):  # noqa: F811
    import uvicorn

    folder = tmp_path_factory.mktemp("app_chat")
    doc = folder / "tide.md"
    doc.write_text(DOC, encoding="utf-8")
    store = load_store({"model_file": model_file, "datapath": str(folder / "data"),
                        "documents": [str(doc)], "reply_mode": "extract",
                        "idle_timeout": 600})
    app = build_app(store, ChatSettings(turn_timeout=60, read_timeout=20, sweep_interval=0.2))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, http="h11", log_level="warning")
    sock = config.bind_socket()
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    server = Server(f"http://127.0.0.1:{sock.getsockname()[1]}", doc, app=app.state.chat,
                    uvicorn=runner, thread=thread)
    _wait_until_up(server, 60)
    yield server
    server.stop()


# ------------------------------------------------------------------ HTTP helpers
def _request(url: str, method: str, path: str, body: Optional[bytes] = None,
             headers: Optional[Dict[str, str]] = None, timeout: float = 120):
    """``(status, body bytes)`` over one connection, headers exactly as given."""
    host, port = url.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _post(url: str, path: str, body: Any, headers: Optional[Dict[str, str]] = None
          ) -> Dict[str, Any]:
    """POST JSON; ``{"status", **the JSON reply}`` (a chat turn: its last event, and
    ``events``, every event of the stream)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"Content-Type": "application/json", **(headers or {})}
    status, raw = _request(url, "POST", path, data, sent)
    text = raw.decode("utf-8")
    if path == "/api/chat" and status == 200:
        events = [json.loads(line) for line in text.splitlines() if line.strip()]
        return {"status": status, "events": events, **events[-1]}
    try:
        return {"status": status, **json.loads(text)}
    except ValueError:
        return {"status": status, "raw": text}


def _chat(url: str, sid: str, text: str) -> Dict[str, Any]:
    return _post(url, "/api/chat", {"session": sid, "text": text})


def _session(url: str) -> str:
    reply = _post(url, "/api/session", {})
    assert reply["status"] == 200, reply
    return reply["session"]


def _raw(port: int, request: bytes, timeout: float = 10) -> bytes:
    """Send raw bytes; the server's answer (complete as its Content-Length says)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(request)
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = [int(h.split(b":")[1]) for h in head.lower().split(b"\r\n")
                          if h.startswith(b"content-length:")]
                if _ and length and len(body) >= length[0]:
                    break
        except socket.timeout:
            pass
    return data


def _answers_normally(server: Server) -> None:
    sid = _session(server.url)
    turn = _chat(server.url, sid, "how does a tide mill work?")
    assert turn["status"] == 200 and turn["event"] == "done", turn
    assert turn["text"] and turn["selected_sentence"] in server.sentences()


# ------------------------------------------------------------------ the command as typed
def test_the_command_as_typed_streams_a_turn(cli_server):
    reply = _post(cli_server.url, "/api/session", {})
    assert reply["documents"] == [cli_server.doc.name] and reply["notes"]
    assert not any(str(cli_server.tmp) in n for n in reply["notes"])
    turn = _chat(cli_server.url, reply["session"], "how does a tide mill work?")
    kinds = [e["event"] for e in turn["events"]]
    # the selection first, then the reply token by token, then the whole reply
    assert kinds[0] == "selection" and kinds[-1] == "done"
    assert set(kinds[1:-1]) == {"token"} and len(kinds) - 2 >= 2
    assert turn["events"][0]["selected_sentence"] == turn["selected_sentence"]
    assert turn["selected_sentence"] in cli_server.sentences()
    assert "".join(e["text"] for e in turn["events"] if e["event"] == "token") == turn["text"]
    assert 'class="node selected' in turn["graph_html"]
    assert list(cli_server.tmp.glob("docgraph_chat_*/" + reply["session"]))  # its folder


def test_long_option_names_and_model_options_parse(model_file):  # noqa: F811
    from parlai_docgraph.scripts.chat import Chat

    opt = Chat.setup_args().parse_args([
        "--model-file", model_file, "--datapath", "data", "--documents", "a.md", "b.md",
        "--port", "8765", "--reply-mode", "extract", "--inference", "beam"])
    assert opt["model_file"] == model_file and opt["datapath"] == "data"
    assert opt["documents"] == ["a.md", "b.md"] and opt["port"] == 8765
    # what the command line gave overrides the model file's options; nothing else does
    assert opt["override"]["reply_mode"] == "extract" and opt["override"]["inference"] == "beam"
    assert "turn_timeout" not in opt["override"] and opt["turn_timeout"] == 120


def test_load_message_opens_no_file(cli_server, tmp_path):
    url, sid = cli_server.url, _session(cli_server.url)
    there = tmp_path / "notes.md"
    there.write_text("# Secret\n\nThe vault code is 4711.\n", encoding="utf-8")
    answers = []
    for text in ("/load /etc/passwd", "/load ~/.bashrc", f"  /load {cli_server.doc.name}",
                 f"/load {there}", f"/load {tmp_path / 'missing.md'}", "/load"):
        turn = _chat(url, sid, text)
        assert turn["status"] == 200 and turn["event"] == "done"
        assert turn["text"] == "" and turn["note"] == LOAD_REFUSED
        answers.append(json.dumps(turn["events"]))
    # the same answer whether the path exists or not, and no file content
    assert len(set(answers)) == 1 and SECRET not in answers[0] and "4711" not in answers[0]
    turn = _chat(url, sid, "what is the vault code in the passwd file?")
    assert turn["selected_sentence"] in cli_server.sentences()
    assert SECRET not in json.dumps(turn) and "4711" not in json.dumps(turn)


def test_foreign_origin_and_bad_host_are_refused(cli_server):
    url, port = cli_server.url, cli_server.port
    sid = _session(url)
    body = {"session": sid, "text": "how does a tide mill work?"}
    for origin in ("http://evil.example", "null", f"http://localhost:{port + 1}"):
        for path in ("/api/session", "/api/chat", "/api/documents"):
            refused = _post(url, path, {**body, "name": "x.md"}, {"Origin": origin})
            assert refused["status"] == 403 and "cross-origin" in refused["error"]
    own = _post(url, "/api/chat", body, {"Origin": f"http://127.0.0.1:{port}"})
    assert own["status"] == 200 and own["event"] == "done"
    assert _post(url, "/api/session", {}, {"Content-Type": "text/plain"})["status"] == 415
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.nip.io"):
        assert _request(url, "GET", "/", headers={"Host": host})[0] == 400
        assert _post(url, "/api/session", {}, {"Host": host})["status"] == 400
    assert _request(url, "GET", "/", headers={"Host": f"localhost:{port}"})[0] == 200


def test_allowed_hosts_follow_the_bind_address():
    assert allowed_hosts("127.0.0.1") == ["127.0.0.1", "localhost", "[::1]"]
    assert allowed_hosts("::1") == ["127.0.0.1", "localhost", "[::1]"]
    assert allowed_hosts("192.168.1.5")[-1] == "192.168.1.5"
    assert allowed_hosts("0.0.0.0") == ["*"] and allowed_hosts("::") == ["*"]


@pytest.mark.parametrize("host,warned", [("0.0.0.0", True), ("127.0.0.1", False)])
def test_a_non_loopback_host_is_announced_as_unauthenticated(app_server, monkeypatch, host,
                                                            warned):
    import uvicorn

    from parlai_docgraph.scripts import chat

    store = SessionStore(app_server.app.store.base, [])
    served, warnings = [], []
    monkeypatch.setattr(chat, "load_store", lambda opt: store)
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets: served.extend(sockets))
    monkeypatch.setattr(chat.logging, "warning", warnings.append)
    chat.Chat({"model_file": "m", "host": host, "port": 0, "turn_timeout": 5,
               "read_timeout": 5}).run()
    assert [s.getsockname()[0] for s in served] == [host]
    served[0].close()
    assert any("no authentication" in w for w in warnings) is warned
    assert not Path(store.root).exists()  # removed when the server stops


def test_malformed_content_length_then_the_server_answers(cli_server):
    for value in ("abc", "-1", "1e3", ""):
        start = time.monotonic()
        answer = _raw(cli_server.port, (
            "POST /api/session HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
            f"\r\nContent-Length: {value}\r\n\r\n{{}}").encode())
        assert answer.startswith(b"HTTP/1.1 400"), (value, answer)
        assert time.monotonic() - start < 5  # refused, not left hanging
        _answers_normally(cli_server)


# ------------------------------------------------------------------ in-process limits
def test_api_turns_bad_input_and_two_sessions(app_server):
    url, sentences = app_server.url, app_server.sentences()
    a = _post(url, "/api/session", {})
    b = _post(url, "/api/session", {})
    assert a["session"] != b["session"] and a["documents"] == ["tide.md"]
    turn = _chat(url, a["session"], "how does a mill work?")
    assert turn["status"] == 200 and turn["selected_sentence"] in sentences
    assert turn["text"] == turn["selected_sentence"]  # extract mode
    assert [e["event"] for e in turn["events"]] == ["selection", "token", "done"]  # one chunk
    assert 'class="node selected' in turn["graph_html"]
    # bad input: a message in the reply, the server goes on
    assert "empty message" in _chat(url, a["session"], "  ")["note"]
    long = _chat(url, a["session"], "mill " * 1000)
    assert "only its last" in long["note"] and long["selected_sentence"] in sentences
    binary = _post(url, "/api/documents", {"session": b["session"], "name": "x.bin",
                                           "text": "PK\x03\x04\x00\x00"})
    assert binary["status"] == 400 and "binary" in binary["error"]
    assert "binary" in _chat(url, a["session"], "PK\x03\x04\x00\x00")["error"]
    empty = _post(url, "/api/documents", {"session": b["session"], "name": "e.md",
                                          "text": "\n\n"})
    assert empty["status"] == 200 and "document not used" in " ".join(empty["notes"])
    assert not any(app_server.app.store.root in n for n in empty["notes"])
    assert _chat(url, "nope", "hi")["status"] == 400
    assert _post(url, "/api/chat", b"{not json")["status"] == 400
    assert _post(url, "/api/chat", b"\xff\xfe\x00")["status"] == 400
    assert _post(url, "/api/nothing", {})["status"] == 404
    huge = _chat(url, a["session"], "x" * 2_100_000)
    assert huge["status"] == 413 and "more than the 2000000" in huge["error"]
    # two users at once: each session keeps its own documents and history
    added = _post(url, "/api/documents", {"session": b["session"], "name": "../owls.md",
                                          "text": "# Owls\n\nOwls hunt at night. They "
                                          "swallow their prey whole.\n"})
    assert added["documents"] == ["tide.md", "owls.md"]
    results: Dict[str, Any] = {}

    def ask(name: str, sid: str, text: str) -> None:
        results[name] = _chat(url, sid, text)

    threads = [threading.Thread(target=ask, args=("a", a["session"], "and the wheel?")),
               threading.Thread(target=ask, args=("b", b["session"], "when do owls hunt?"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["a"]["selected_sentence"] in sentences
    assert results["b"]["status"] == 200 and results["b"]["selected_sentence"]
    sessions = _post(url, "/api/session", {})  # the server still answers
    assert sessions["status"] == 200


def test_an_upload_is_written_nowhere_but_its_session_folder(app_server):
    """The server writes no file the user did not give it: an uploaded document reaches
    neither the datapath's document index cache nor its graph store or parse cache."""
    url = app_server.url
    datapath = app_server.doc.parent / "data"
    marker = "Quillwort"
    sid = _session(url)
    added = _post(url, "/api/documents", {"session": sid, "name": "ferns.md", "text": (
        f"# Ferns\n\n{marker} grows under water in cold lakes. Its spores ripen in "
        "autumn.\n")})
    assert added["status"] == 200 and "ferns.md" in added["documents"]
    turn = _chat(url, sid, f"where does {marker.lower()} grow?")
    assert turn["event"] == "done" and turn["selected_sentence"]
    written = [f for f in datapath.rglob("*") if f.is_file()
               and marker.encode() in f.read_bytes()]
    assert written == [], written


def test_request_body_read_is_bounded(app_server):
    settings = app_server.app.settings
    before, settings.read_timeout = settings.read_timeout, 0.5
    try:
        start = time.monotonic()
        answer = _raw(app_server.port, b"POST /api/session HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":")
        assert answer.startswith(b"HTTP/1.1 408") and b"did not arrive" in answer
        assert time.monotonic() - start < 5
    finally:
        settings.read_timeout = before
    _answers_normally(app_server)


def test_a_late_turn_gets_an_error_reply_not_a_hang(app_server):
    settings, store = app_server.app.settings, app_server.app.store
    sid = _session(app_server.url)
    agent = store.sessions[sid].agent
    real_act = agent.act

    def slow_act():
        time.sleep(2.0)
        return real_act()

    agent.act, (before, settings.turn_timeout) = slow_act, (settings.turn_timeout, 0.5)
    try:
        start = time.monotonic()
        late = _chat(app_server.url, sid, "how does a tide mill work?")
        took = time.monotonic() - start
    finally:
        settings.turn_timeout = before
        del agent.act
    assert late["status"] == 200 and late["event"] == "error" and took < 1.9
    assert "--turn-timeout" in late["error"]
    turn = _chat(app_server.url, sid, "is eling still working?")  # the chat goes on
    assert turn["event"] == "done" and turn["selected_sentence"] in app_server.sentences()


def test_an_idle_session_expires_and_its_folder_is_removed(app_server):
    store = app_server.app.store
    sid = _session(app_server.url)
    folder = Path(store.root) / sid
    assert folder.is_dir()
    store.sessions[sid].last_used -= store.idle_timeout + 1  # idle for longer than allowed
    end = time.monotonic() + 10
    while folder.exists() and time.monotonic() < end:  # the lifespan's sweeper removes it
        time.sleep(0.1)
    assert not folder.exists() and sid not in store.sessions
    gone = _chat(app_server.url, sid, "hello")
    assert gone["status"] == 400 and "expired" in gone["error"]


def test_max_sessions_evicts_the_least_recently_used(app_server):
    store = SessionStore(app_server.app.store.base, [], max_sessions=2)
    try:
        a, b = store.new()["session"], store.new()["session"]
        c = store.new()["session"]
        assert not (Path(store.root) / a).exists()
        assert (Path(store.root) / b).is_dir() and (Path(store.root) / c).is_dir()
        with pytest.raises(ChatError, match="expired"):
            store.check(a)
    finally:
        store.close()
    assert not Path(store.root).exists()


# ------------------------------------------------------------------ the page in Chromium
@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


FINAL = ".bot:not(.partial)"


def _open(context, url: str):
    page = context.new_page()
    page.goto(url)
    page.wait_for_function("document.getElementById('docs').textContent != 'none'")
    return page


def _send(page, text: str, timeout: float = 120_000) -> str:
    """Type ``text``, send it, wait for the reply; the reply line's text."""
    before = page.locator(FINAL).count()
    page.fill("#msg", text)
    page.click("#send")
    page.wait_for_function(f"document.querySelectorAll('{FINAL}').length > {before}",
                           timeout=timeout)
    return page.locator(FINAL).nth(before).inner_text()


def test_page_in_headless_chromium(app_server, browser, tmp_path):
    url, sentences = app_server.url, app_server.sentences()
    shot = tmp_path / "web_chat.png"
    page = _open(browser.new_context(), url)
    other = _open(browser.new_context(), url)  # a second user at the same time
    page.fill("#msg", "how does a tide mill work?")
    page.click("#send")
    other.fill("#msg", "is eling still working?")
    other.click("#send")
    for pg in (page, other):
        pg.wait_for_selector(FINAL, timeout=60_000)
        assert pg.inner_text("#sentence") in sentences
    reply = page.inner_text(FINAL)
    assert reply.startswith("docgraph: ") and reply[10:] in sentences
    frame = page.frame_locator("#graph")
    frame.locator(".node.selected").first.wait_for(timeout=30_000)
    assert frame.locator(".node.selected").count() >= 1
    screenshots = os.environ.get("DOCGRAPH_SCREENSHOTS")
    if screenshots:  # the documentation's pictures: the page after a turn, and its graph
        Path(screenshots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(screenshots) / "web_chat.png"), full_page=True)
        graph = browser.new_page(viewport={"width": 1200, "height": 900})  # the whole graph
        graph.set_content(frame.locator("html").evaluate("e => e.outerHTML"))
        graph.screenshot(path=str(Path(screenshots) / "graph.png"), full_page=True)
        graph.close()
        for name in ("web_chat.png", "graph.png"):
            assert (Path(screenshots) / name).stat().st_size > 10_000, name
    # bad input shown in the page: a binary upload
    page.set_input_files("#file", files=[{"name": "x.bin", "mimeType": "text/plain",
                                          "buffer": b"PK\x03\x04\x00\x00bin"}])
    page.click("#upload")
    page.wait_for_selector(".error")
    assert "binary" in page.inner_text(".error")
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    keep = os.environ.get("DOCGRAPH_TEST_ARTIFACTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    print(f"web chat screenshot: {shot}")


WATCH = """() => { window.seen = [];
  new MutationObserver(() => document.querySelectorAll('.bot').forEach(
      (b) => window.seen.push([b.className, b.textContent])))
    .observe(document.getElementById('log'),
             {subtree: true, childList: true, characterData: true}); }"""


def test_page_streams_a_reply_and_takes_an_upload(cli_server, browser):
    page = _open(browser.new_context(), cli_server.url)
    page.evaluate(WATCH)
    final = _send(page, "how does a tide mill work?")
    assert final.startswith("docgraph: ") and len(final) > 10
    partial = [text for cls, text in page.evaluate("window.seen") if "partial" in cls]
    # the page showed the reply growing before the final one
    assert partial and all(final.startswith(t) for t in partial)
    assert min(len(t) for t in partial) < len(final)
    assert int(page.locator(FINAL).first.get_attribute("data-tokens")) >= 2
    assert page.inner_text("#sentence") in cli_server.sentences()
    page.set_input_files("#file", files=[{"name": "owls.md", "mimeType": "text/markdown",
                                          "buffer": b"# Owls\n\nOwls hunt at night. They "
                                          b"swallow their prey whole.\n"}])
    page.click("#upload")
    page.wait_for_function("document.getElementById('docs').textContent.includes('owls.md')")
    assert page.inner_text("#docs") == f"{cli_server.doc.name}, owls.md"
    assert _send(page, "when do owls hunt?").startswith("docgraph: ")
    assert page.locator(".error").count() == 0


def test_page_survives_bad_messages(cli_server, browser):
    page = _open(browser.new_context(), cli_server.url)
    errors = lambda: page.locator(".error").count()  # noqa: E731

    def then_a_normal_turn() -> None:
        before = errors()
        assert _send(page, "how does a tide mill work?").startswith("docgraph: ")
        assert errors() == before

    page.fill("#msg", "")
    page.click("#send")
    page.wait_for_function("[...document.querySelectorAll('.note')].some("
                           "(n) => n.textContent.includes('empty message'))")
    then_a_normal_turn()
    for message, expected in (("'x'.repeat(2100000)", "more than the 2000000"),
                              ("'PK\\u0003\\u0004\\u0000\\u0000\\u00ff'", "binary")):
        before = errors()
        page.evaluate(f"turn({message})")
        assert errors() == before + 1 and expected in page.locator(".error").last.inner_text()
        then_a_normal_turn()
    bad_json = page.evaluate("""async () => { const r = await fetch('/api/chat', {
        method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{not json'});
        return [r.status, (await r.json()).error]; }""")
    assert bad_json == [400, "the request is not valid JSON"]
    then_a_normal_turn()
    mine = page.evaluate("(() => { const s = session; session = 'nope'; return s; })()")
    before = errors()
    page.fill("#msg", "hello?")
    page.click("#send")
    page.wait_for_function(f"document.querySelectorAll('.error').length > {before}")
    assert "unknown or expired session" in page.locator(".error").last.inner_text()
    page.evaluate(f"session = '{mine}'")
    then_a_normal_turn()


def test_twenty_sessions_at_once(cli_server, browser):
    n, context = 20, browser.new_context()
    pages = [_open(context, cli_server.url) for _ in range(n)]
    own: List[List[str]] = []
    for i, page in enumerate(pages):
        text = f"# Site {i}\n\nThe beacon of site {i} burns oil number {i}. Keepers light it at dusk.\n"
        page.fill("#docname", f"site{i}.md")
        page.fill("#doctext", text)
        page.click("#adddoc")
        page.wait_for_function(f"document.getElementById('docs').textContent.includes('site{i}.md')")
        own.append([f"The beacon of site {i} burns oil number {i}.", "Keepers light it at dusk."])
    start = time.monotonic()
    for i, page in enumerate(pages):
        page.fill("#msg", f"what does the beacon of site {i} burn?")
        page.click("#send")
    for page in pages:
        page.wait_for_selector(FINAL, timeout=600_000)
    seconds = time.monotonic() - start
    print(f"web chat: {n} sessions at once, {n} turns in {seconds:.1f} s = "
          f"{n / seconds:.2f} turns/s")
    for i, page in enumerate(pages):
        assert page.locator(".error").count() == 0
        assert page.inner_text(FINAL).startswith("docgraph: ")
        assert page.inner_text("#docs") == f"{cli_server.doc.name}, site{i}.md"  # its own only
        # the selection comes from this session's documents, never another session's
        assert page.inner_text("#sentence") in cli_server.sentences() + own[i]
    context.close()


# ------------------------------------------------------------------ shutdown (keep last)
def test_session_folders_are_removed_when_the_server_exits(cli_server, app_server):
    assert list(cli_server.tmp.glob("docgraph_chat_*/*"))  # the sessions of the tests above
    assert cli_server.stop() == 0
    assert not list(cli_server.tmp.glob("docgraph_chat_*"))
    assert f"docgraph chat on {cli_server.url}/" in cli_server.log.read_text()
    root = app_server.app.store.root
    app_server.stop()
    assert not Path(root).exists()

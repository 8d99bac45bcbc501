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

import gc
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
import weakref
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
from parlai_docgraph.scripts.chat_http import SessionRate, server_config
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
    # no limit on new sessions here: the tests of this server make many; the test of the
    # limit installs one
    app = build_app(store, ChatSettings(turn_timeout=60, read_timeout=20, sweep_interval=0.2,
                                        sessions_per_minute=0))
    config = server_config(app, "127.0.0.1", 0)
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
    streamed = "".join(e["text"] for e in turn["events"] if e["event"] == "token")
    if "answer_dropped" in turn:  # the answer check replaced the generated reply
        assert turn["text"] == turn["selected_sentence"] and turn["answer_dropped"]
    assert streamed == turn.get("generated_text", turn["text"])
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


def test_the_options_table_states_every_chat_option_and_its_default():
    """Issue 39: the limits are options, with their defaults stated on the chat page."""
    from parlai_docgraph.scripts.chat import Chat

    text = doc_page(CHAT_PAGE)
    rows = dict(re.findall(r"^\| `(--[a-z-]+)[^`]*` \| `?([^|`]+?)`? \|", text, re.M))
    [group] = [g for g in Chat.setup_args()._action_groups if g.title == "docgraph chat"]
    checked = 0
    for action in group._group_actions:
        name = action.option_strings[-1]
        if name == "--reply-mode":  # the model's option, described above the table
            continue
        assert name in rows, f"{name} is not in the options table of {CHAT_PAGE}"
        shown, default = rows[name], action.default
        if default is None:
            assert shown == "none", (name, shown)
        elif isinstance(default, (int, float)):
            assert float(shown) == float(default), (name, shown, default)
        else:
            assert shown == str(default), (name, shown, default)
        checked += 1
    assert checked >= 11


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
    agent = weakref.ref(store.sessions[sid].agent)
    gc.disable()  # freed when the store lets it go, not whenever the collector runs
    try:
        store.sessions[sid].last_used -= store.idle_timeout + 1  # idle for too long
        end = time.monotonic() + 10
        while folder.exists() and time.monotonic() < end:  # the lifespan's sweeper
            time.sleep(0.1)
        assert not folder.exists() and sid not in store.sessions
        # its agent copy (and index) is freed: nothing keeps an expired session
        end = time.monotonic() + 10
        while agent() is not None and time.monotonic() < end:
            time.sleep(0.1)
        assert agent() is None
    finally:
        gc.enable()
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


# ------------------------------------------------------------------ issue 39: bad text, paths
def _raw_post(url: str, path: str, body: str) -> Dict[str, Any]:
    """POST a JSON body written by hand (its escapes, e.g. a lone ``\\ud800``, as given)."""
    return _post(url, path, body.encode("ascii"))


def _session_folder(server: Server, sid: str) -> Path:
    if server.tmp is not None:
        [folder] = list(server.tmp.glob(f"docgraph_chat_*/{sid}"))
        return folder
    return Path(server.app.store.root) / sid


def test_a_lone_surrogate_never_breaks_a_session(cli_server):
    """Issue 39 (1): ``"\\ud800"`` in a message had every later turn of its session fail
    (``TextEncodeInput must be Union[...]``); in an upload, a 500 and a 0-byte file."""
    url, sid = cli_server.url, _session(cli_server.url)
    odd = _raw_post(url, "/api/chat", f'{{"session": "{sid}", "text": "\\ud800"}}')
    assert odd["status"] == 200 and odd["event"] == "done", odd
    assert "replaced" in odd["note"] and "your message" in odd["note"]
    odd = _raw_post(url, "/api/chat", f'{{"session": "{sid}", "text": "tide \\udfff mill '
                    f'\\uffff?"}}')
    assert odd["event"] == "done" and "2 characters" in odd["note"], odd
    for text in ("how does a tide mill work?", "[DONE]", "is eling still working?"):
        turn = _chat(url, sid, text)
        assert turn["status"] == 200 and turn["event"] == "done", (text, turn)
    assert turn["text"] and turn["selected_sentence"] in cli_server.sentences()
    added = _raw_post(url, "/api/documents", f'{{"session": "{sid}", "name": "odd.md", '
                      '"text": "# Odd\\n\\nThe odd mill \\ud800 grinds barley at night.\\n"}')
    assert added["status"] == 200 and "odd.md" in added["documents"], added
    assert any("odd.md: 1 character" in n and "replaced" in n for n in added["notes"])
    folder = _session_folder(cli_server, sid)
    assert (folder / "odd.md").read_text(encoding="utf-8").count("\ufffd") == 1
    assert [f.name for f in folder.iterdir() if f.stat().st_size == 0] == []
    turn = _chat(url, sid, "what does the odd mill grind?")
    assert turn["event"] == "done" and turn["selected_sentence"], turn


def test_after_a_failed_turn_the_next_turn_works(app_server):
    """A turn the model fails on leaves the session usable: here the failure stays in the
    dialogue (as the surrogate did) and would fail every later turn of a kept history."""
    url, store = app_server.url, app_server.app.store
    sid = _session(url)
    agent = store.sessions[sid].agent
    real = agent.batch_act

    def refuses_poison(observations):
        if any("POISON" in turn for turn in agent._dialogue):
            raise TypeError("TextEncodeInput must be Union[TextInputSequence, ...]")
        return real(observations)

    agent.batch_act = refuses_poison
    try:
        failed = _chat(url, sid, "POISON how does a tide mill work?")
        assert failed["event"] == "error" and "TypeError" in failed["error"], failed
        assert "afresh" in failed["error"] and "Union" not in failed["error"]  # the log has it
        for text in ("how does a tide mill work?", "and at eling?"):
            turn = _chat(url, sid, text)
            assert turn["event"] == "done", (text, turn)
            assert turn["selected_sentence"] in app_server.sentences()
    finally:
        del agent.batch_act


def test_notes_name_documents_by_file_name_only(app_server, tmp_path):
    """Issue 39 (2): ``--documents start.md /private/missing_payroll.md`` answered every new
    session with the server's paths; a non-English document was named by its path too."""
    start = tmp_path / "deep" / "start.md"
    start.parent.mkdir()
    start.write_text(DOC, encoding="utf-8")
    german = tmp_path / "deep" / "muehle.md"
    german.write_text("# Die Mühle\n\nDie Gezeitenmühle mahlt das Korn zweimal am Tag. Das "
                      "Wasser fließt durch ein großes Rad, wenn die Flut zurückgeht.\n",
                      encoding="utf-8")
    empty = tmp_path / "deep" / "empty.md"
    empty.write_text("\n", encoding="utf-8")
    from parlai.core.agents import create_agent_from_shared

    base = create_agent_from_shared(app_server.app.store.shared)  # its own index
    store = SessionStore(base, [str(start), "/private/missing_payroll.md", str(german),
                                str(empty), str(tmp_path / "none" / "*.md")])
    try:
        notes = store.new()["notes"]
        shown = json.dumps(notes)
        assert str(tmp_path) not in shown and "/private" not in shown, notes
        assert "document not found: missing_payroll.md (skipped)" in notes
        assert any(n.startswith("muehle.md looks like German") for n in notes), notes
        assert any("document not used: empty.md" in n for n in notes), notes
        assert any(n.startswith("no file matches *.md") for n in notes), notes
    finally:
        store.close()


def test_deeply_nested_json_gets_400(app_server):
    """Issue 39 (3): JSON nested 1,000+ deep got 500 with Python's ``RecursionError``."""
    url = app_server.url
    sid = _session(url)
    for depth in (1_000, 10_000, 100_000, 300_000):  # the deepest bodies: 1.8 MB
        bodies = ["[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth,
                  "[" * depth,
                  f'{{"session": "{sid}", "name": "x.md", "text": ' + "[" * depth + "]" * depth + "}"]
        for body in bodies:
            for path in ("/api/session", "/api/chat", "/api/documents"):
                answer = _post(url, path, body.encode())
                assert answer["status"] == 400, (depth, path, answer)
                assert "not valid JSON" in answer["error"], answer
    _answers_normally(app_server)


def test_uploading_a_name_again_replaces_the_document(app_server):
    """Issue 39 (3): the same name uploaded twice was indexed twice."""
    url = app_server.url
    sid = _session(url)

    def upload(name: str, text: str) -> Dict[str, Any]:
        return _post(url, "/api/documents", {"session": sid, "name": name, "text": text})

    first = upload("owls.md", "# Owls\n\nOwls hunt voles in the meadow at night.\n")
    assert first["documents"] == ["tide.md", "owls.md"]
    second = upload("owls.md", "# Owls\n\nBarn owls nest in church towers and old barns.\n")
    assert second["status"] == 200 and second["documents"] == ["tide.md", "owls.md"]
    index = app_server.app.store.sessions[sid].agent.index
    sentences = [s for _, ss in index.whole for s in ss]
    assert "Barn owls nest in church towers and old barns." in sentences
    assert not any("voles" in s for s in sentences)
    turn = _chat(url, sid, "where do barn owls nest?")
    assert turn["selected_sentence"] in sentences and "voles" not in json.dumps(turn)
    # a new version that cannot be used leaves the earlier one, in the index and on disk
    empty = upload("owls.md", "\n\n")
    assert empty["documents"] == ["tide.md", "owls.md"] and "not used" in " ".join(empty["notes"])
    folder = _session_folder(app_server, sid)
    assert "church towers" in (folder / "owls.md").read_text(encoding="utf-8")
    # an upload named like a server document replaces it in this session only
    mine = upload("tide.md", "# Tides\n\nMy own notes say the tide turns at noon.\n")
    assert mine["documents"] == ["owls.md", "tide.md"]
    assert len(index.documents) == 2
    assert not any("noon" in s for s in app_server.sentences())  # others keep the server's
    assert _post(url, "/api/session", {})["documents"] == ["tide.md"]
    assert sorted(f.name for f in folder.iterdir()) == ["owls.md", "tide.md"]


# ------------------------------------------------------------------ issue 39: the browser's side
HEADERS = {"x-frame-options": "DENY", "x-content-type-options": "nosniff",
           "referrer-policy": "no-referrer"}


def _headers(url: str, method: str, path: str, body: Optional[bytes] = None,
             headers: Optional[Dict[str, str]] = None):
    host, port = url.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


def test_security_headers_on_every_response(cli_server):
    """Issue 39 (4): no X-Frame-Options, CSP or nosniff: another origin framed the chat."""
    url = cli_server.url
    json_type = {"Content-Type": "application/json"}
    answers = [
        _headers(url, "GET", "/"), _headers(url, "GET", "/index.html"),
        _headers(url, "GET", "/chat.js"), _headers(url, "GET", "/nothing"),
        _headers(url, "POST", "/api/session", b"{}", json_type),
        _headers(url, "POST", "/api/session", b"{}", {**json_type, "Origin": "http://evil.example"}),
        _headers(url, "GET", "/", headers={"Host": "evil.example"}),
        _headers(url, "POST", "/api/chat", b"{not json", json_type)]
    assert [status for status, _ in answers] == [200, 200, 200, 404, 200, 403, 400, 400]
    for status, headers in answers:
        for name, value in HEADERS.items():
            assert headers.get(name) == value, (status, name, headers)
        policy = dict(p.strip().split(" ", 1) for p in headers["content-security-policy"].split(";"))
        assert policy["frame-ancestors"] == "'none'" and policy["default-src"] == "'none'"
        # the page's own script file and the graph view's inline scripts (by hash) only
        sources = policy["script-src"].split()
        assert sources[0] == "'self'" and len(sources) == 3
        assert all(s.startswith("'sha256-") for s in sources[1:])
    assert answers[2][1]["content-type"].startswith("text/javascript")
    assert b"<script>" not in _request(url, "GET", "/")[1]  # no inline script in the page


def _closed(sock: socket.socket, by: float) -> bool:
    """Whether the server has closed ``sock`` (EOF or reset) by the time ``by``
    (``time.monotonic()``); waits for it until then."""
    sock.settimeout(max(0.01, by - time.monotonic()))
    try:
        return sock.recv(1024) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def test_half_sent_headers_are_closed_after_the_header_timeout(cli_server):
    """Issue 39 (4): 300 connections that never finished their headers were all open after
    75 s. The command's default ``--header-timeout`` (10 s) closes them, trickling or not."""
    port, sockets = cli_server.port, []
    partial = b"POST /api/session HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: applic"
    try:
        for i in range(300):
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            if i % 3:  # a third sends nothing at all
                s.sendall(partial)
            sockets.append(s)
        trickler = socket.create_connection(("127.0.0.1", port), timeout=30)
        sockets.append(trickler)
        start = time.monotonic()
        sent = 0
        while time.monotonic() - start < 9.0:  # a byte every half second: never enough
            trickler.sendall(partial[sent:sent + 1])
            sent += 1
            time.sleep(0.5)
        _answers_normally(cli_server)  # meanwhile, real clients are served
        still_open = [i for i, s in enumerate(sockets) if not _closed(s, by=start + 16)]
        took = time.monotonic() - start
        assert still_open == [], f"{len(still_open)} of {len(sockets)} open after {took:.0f} s"
        assert took < 16
    finally:
        for s in sockets:
            s.close()
    _answers_normally(cli_server)


# ------------------------------------------------------------------ issue 39: fair limits
def test_new_sessions_per_address_are_limited_and_active_ones_kept(app_server):
    """Issue 39 (5): 100 ``POST /api/session`` in 0.3 s evicted every earlier session, and a
    user's next turn got 400."""
    url, chat = app_server.url, app_server.app
    user = _session(url)
    assert _chat(url, user, "how does a tide mill work?")["event"] == "done"
    before, chat.session_rate = chat.session_rate, SessionRate(60)
    statuses: List[int] = []
    retry: List[str] = []

    def flood() -> None:
        for _ in range(10):
            status, headers = _headers(url, "POST", "/api/session", b"{}",
                                       {"Content-Type": "application/json"})
            statuses.append(status)
            retry.append(headers.get("retry-after", ""))

    try:
        threads = [threading.Thread(target=flood) for _ in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        chat.session_rate = before
    assert len(statuses) == 100 and statuses.count(200) == 60 and statuses.count(429) == 40
    assert all(int(r) >= 1 for r, s in zip(retry, statuses) if s == 429)
    turn = _chat(url, user, "is eling still working?")  # the user's session is still there
    assert turn["status"] == 200 and turn["event"] == "done", turn


def test_eviction_never_takes_an_active_session(app_server):
    store = SessionStore(app_server.app.store.base, [], max_sessions=3, idle_timeout=600)
    try:
        busy = [store.new()["session"] for _ in range(2)]
        for sid in busy:  # they chat: active within the idle timeout
            store.turn(sid, "hello", lambda event: None)
        floods = [store.new()["session"] for _ in range(20)]  # each evicts the one before
        assert all(sid in store.sessions for sid in busy) and len(store.sessions) == 3
        assert floods[-1] in store.sessions and floods[0] not in store.sessions
        store.turn(floods[-1], "hello", lambda event: None)  # now every slot is active
        with pytest.raises(ChatError, match="--max-sessions") as refused:
            store.new()
        assert type(refused.value).__name__ == "ServerBusy"  # 503
        store.sessions[busy[0]].last_used -= 601  # idle for longer than the timeout
        assert store.new()["session"] and busy[0] not in store.sessions
    finally:
        store.close()


def test_uploads_per_session_are_limited(app_server):
    """Issue 39 (5): one session took 40 uploads of 1.9 MB with no cap on their number."""
    url, store = app_server.url, app_server.app.store
    sid = _session(url)
    text = "# Notes {i}\n\nThe note number {i} says the tide turns early.\n"
    answers = [_post(url, "/api/documents", {"session": sid, "name": f"n{i}.md",
                                             "text": text.format(i=i)}) for i in range(40)]
    statuses = [a["status"] for a in answers]
    assert statuses == [200] * store.max_uploads + [413] * (40 - store.max_uploads)
    assert "--max-uploads" in answers[-1]["error"]
    assert len(store.sessions[sid].documents) == 1 + store.max_uploads
    other = _session(url)
    before, store.max_upload_bytes = store.max_upload_bytes, 3_000
    try:
        big = "# Big\n\n" + "The big mill grinds a great deal of grain. " * 40  # 1,727 bytes
        assert _post(url, "/api/documents", {"session": other, "name": "a.md",
                                             "text": big})["status"] == 200
        over = _post(url, "/api/documents", {"session": other, "name": "b.md", "text": big})
        assert over["status"] == 413 and "--max-upload-bytes" in over["error"], over
    finally:
        store.max_upload_bytes = before
    assert _chat(url, other, "what does the big mill grind?")["event"] == "done"


def test_a_new_session_does_not_wait_behind_queued_turns(app_server):
    """Issue 39 (5): while 16 turns were in flight, a new session waited 20.6 s."""
    url, store, settings = app_server.url, app_server.app.store, app_server.app.settings
    sids = [_session(url) for _ in range(16)]
    agents = [store.sessions[sid].agent for sid in sids]
    for agent in agents:
        real = agent.act
        agent.act = (lambda real: lambda: (time.sleep(0.5), real())[1])(real)
    done: List[str] = []
    # 16 queued turns on loaded cores may take longer than the fixture's 60 s in all
    before_timeout, settings.turn_timeout = settings.turn_timeout, 600

    def ask(sid: str) -> None:
        turn = _chat(url, sid, "how does a tide mill work?")
        done.append(turn["event"] if turn["event"] == "done" else json.dumps(turn))

    threads = [threading.Thread(target=ask, args=(sid,)) for sid in sids]
    try:
        for t in threads:
            t.start()
        time.sleep(1.0)  # the turns queue on the model (16 x 0.5 s)
        assert store.lock.locked() and len(done) < 8
        start = time.monotonic()
        reply = _post(url, "/api/session", {})
        waited = time.monotonic() - start
        in_flight = 16 - len(done)
        assert reply["status"] == 200 and waited < 2.0, (waited, reply)
        assert in_flight >= 8, in_flight
        print(f"web chat: a new session took {waited:.2f} s with {in_flight} turns in flight")
    finally:
        for t in threads:
            t.join()
        for agent in agents:
            del agent.act
        settings.turn_timeout = before_timeout
    assert done == ["done"] * 16


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


def _wait_for(page, expression: str, timeout: float = 30_000) -> None:
    """Poll ``expression`` in ``page`` until it is true. Playwright's ``wait_for_function``
    evaluates its predicate with ``eval``, which the chat's Content-Security-Policy refuses
    (no ``'unsafe-eval'``); ``evaluate`` goes through the debugger protocol and is not."""
    end = time.monotonic() + timeout / 1000
    while not page.evaluate(expression):
        if time.monotonic() > end:
            raise TimeoutError(f"not true after {timeout / 1000:g} s: {expression}")
        time.sleep(0.1)


def _open(context, url: str):
    page = context.new_page()
    page.goto(url)
    _wait_for(page, "document.getElementById('docs').textContent != 'none'")
    return page


def _send(page, text: str, timeout: float = 120_000) -> str:
    """Type ``text``, send it, wait for the reply; the reply line's text."""
    before = page.locator(FINAL).count()
    page.fill("#msg", text)
    page.click("#send")
    _wait_for(page, f"document.querySelectorAll('{FINAL}').length > {before}",
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
        # the pointer on the selected sentence: its full text in the hover box
        frame.locator('g.node.selected[data-type="sentence"] circle').first.hover(force=True)
        frame.locator("#tip").wait_for(state="visible", timeout=5_000)
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


def test_page_says_when_the_answer_check_replaced_the_reply(app_server, browser):
    """A ``done`` event with ``answer_dropped`` (the answer check replaced the streamed text
    with the selected sentence): the page shows the sentence as the reply and a note naming
    the words the generated text left out. The turn's stream is a canned one (the stand-in
    model's replies seldom drop an answer)."""
    sentence = "The youngest player goes first."
    events = [{"event": "selection", "selected_sentence": sentence, "top_concepts": []},
              {"event": "token", "text": "A player goes first."},
              {"event": "done", "text": sentence, "selected_sentence": sentence,
               "top_concepts": [], "generated_text": "A player goes first.",
               "answer_dropped": ["youngest"]}]
    page = _open(browser.new_context(), app_server.url)
    page.route("**/api/chat", lambda route: route.fulfill(
        status=200, content_type="application/x-ndjson",
        body="".join(json.dumps(e) + "\n" for e in events)))
    page.fill("#msg", "Who starts the game?")
    page.click("#send")
    page.wait_for_selector(FINAL, timeout=30_000)
    assert page.inner_text(FINAL) == "docgraph: " + sentence
    notes = page.locator(".note").all_inner_texts()
    assert any("left out youngest" in n and "the reply is that sentence" in n
               for n in notes), notes


#: a document whose graph in a turn has more than 40 nodes (47 on its own)
LIGHTHOUSES = """# Lighthouses of the north coast

The Bell Rock Lighthouse stands on a reef off the coast of Angus. Robert Stevenson designed \
it and the builders finished it in 1810. Its keepers lived in the tower for weeks at a time.

## Keepers and supply boats

A supply boat brought food, oil and letters from Arbroath every fortnight. Storms often \
delayed the boat, so the keepers stored extra water and biscuits. The last keepers left the \
rock when the light became automatic in 1988.

## The signal tower

The signal tower in Arbroath now holds a museum about the lighthouse. Visitors can see the \
lenses, the logbooks and a model of the reef.
"""


def _inside(box: Dict[str, float], outer: Dict[str, float], slack: float = 0.5) -> bool:
    return (box["x"] >= outer["x"] - slack and box["y"] >= outer["y"] - slack
            and box["x"] + box["width"] <= outer["x"] + outer["width"] + slack
            and box["y"] + box["height"] <= outer["y"] + outer["height"] + slack)


def _view_box(frame) -> List[float]:
    return [float(v) for v in frame.locator("svg.graph").get_attribute("viewBox").split()]


def test_graph_panel_fits_zooms_pans_and_shows_full_text(app_server, browser):
    """Issue 39: in the docs' screenshot the graph ran past its panel's right edge and
    sentence labels were cut. Every node of a 40-node graph lies inside the panel; the
    wheel zooms, dragging pans, hovering shows a node's full text; no script is refused."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = _open(context, app_server.url)
    refused: List[str] = []
    page.on("console", lambda m: refused.append(m.text)
            if "Content Security Policy" in m.text or "Refused" in m.text else None)
    page.fill("#docname", "lighthouses.md")
    page.fill("#doctext", LIGHTHOUSES)
    page.click("#adddoc")
    _wait_for(page, "document.getElementById('docs').textContent.includes('lighthouses')")
    _send(page, "who designed the bell rock lighthouse?")
    frame = page.frame_locator("#graph")
    frame.locator(".node.selected").first.wait_for(timeout=30_000)
    nodes = frame.locator("g.node")
    count = nodes.count()
    assert count >= 40, count
    panel = page.locator("#graph").bounding_box()
    assert _inside(panel, page.locator("#right").bounding_box())
    outside = [i for i in range(count) if not _inside(nodes.nth(i).bounding_box(), panel)]
    assert outside == [], f"{len(outside)} of {count} nodes (circle and label) outside the panel"
    # a node's full text on hover (labels are cut at 28 characters)
    node = frame.locator('g.node.selected[data-type="sentence"]').first
    label = node.locator("text").text_content()
    full = node.get_attribute("data-tip")
    assert label.endswith("…") and label[:-1] in full and len(full) > len(label) + 10
    node.locator("circle").hover(force=True)
    tip = frame.locator("#tip")
    tip.wait_for(state="visible", timeout=5_000)
    assert tip.inner_text() == full and page.inner_text("#sentence") in full
    assert _inside(tip.bounding_box(), panel)
    # zoom about the pointer, pan by dragging, a double click fits again
    fitted = _view_box(frame)
    svg = frame.locator("svg.graph").bounding_box()
    cx, cy = svg["x"] + svg["width"] / 2, svg["y"] + svg["height"] / 2
    page.mouse.move(cx, cy)
    page.mouse.wheel(0, -300)
    _wait_for(page.frames[1], "document.querySelector('svg.graph').viewBox.baseVal.width < "
              f"{fitted[2] * 0.9}")
    zoomed = _view_box(frame)
    assert zoomed[2] < fitted[2] * 0.9 and zoomed[3] < fitted[3] * 0.9, (fitted, zoomed)
    page.mouse.move(cx - 40, cy - 40)
    page.mouse.down()
    page.mouse.move(cx + 60, cy + 30, steps=5)
    page.mouse.up()
    panned = _view_box(frame)
    assert panned[0] < zoomed[0] and panned[1] < zoomed[1] and panned[2:] == zoomed[2:]
    frame.locator("svg.graph").dblclick(position={"x": 5, "y": 5})
    assert _view_box(frame) == pytest.approx(fitted, abs=1.0)
    # the graph view's own script still runs: a click highlights a node's neighbours
    node.locator("circle").click(force=True)
    assert frame.locator("g.node.dim").count() > 0
    assert refused == [], refused
    context.close()


def test_another_origin_cannot_frame_the_chat(app_server, browser):
    """Issue 39 (4): a page on another origin framed the chat in Chromium."""
    context = browser.new_context()
    page = context.new_page()

    def framed() -> bool:
        page.set_content(f'<iframe id="chat" src="{app_server.url}/" width="800" '
                         'height="600"></iframe>')
        page.wait_for_timeout(1500)
        frame = page.query_selector("#chat").content_frame()
        try:
            return frame is not None and frame.query_selector("#msg") is not None
        except Exception:  # the error page of a refused frame
            return False

    assert not framed()

    def without_headers(route) -> None:  # the same page, its security headers dropped
        response = route.fetch()
        kept = {k: v for k, v in response.headers.items()
                if k.lower() not in ("x-frame-options", "content-security-policy")}
        route.fulfill(response=response, headers=kept)

    page.route(f"{app_server.url}/", without_headers)
    assert framed()  # the check above can fail: without them, the chat is framed
    context.close()


def test_the_page_runs_no_injected_inline_script(app_server, browser):
    page = _open(browser.new_context(), app_server.url)  # its own script did run (/chat.js)
    with pytest.raises(Exception):
        page.add_script_tag(content="window.injected = 1;")
    assert page.evaluate("typeof window.injected") == "undefined"
    page.context.close()


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
    # the page showed the reply growing before the final one, which is the streamed text
    # or, where the answer check replaced it, the selected sentence
    streamed = partial[-1] if partial else ""
    assert partial and all(streamed.startswith(t) for t in partial)
    assert min(len(t) for t in partial) < len(streamed)
    assert final in (streamed, "docgraph: " + page.inner_text("#sentence"))
    assert int(page.locator(FINAL).first.get_attribute("data-tokens")) >= 2
    assert page.inner_text("#sentence") in cli_server.sentences()
    page.set_input_files("#file", files=[{"name": "owls.md", "mimeType": "text/markdown",
                                          "buffer": b"# Owls\n\nOwls hunt at night. They "
                                          b"swallow their prey whole.\n"}])
    page.click("#upload")
    _wait_for(page, "document.getElementById('docs').textContent.includes('owls.md')")
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
    _wait_for(page, "[...document.querySelectorAll('.note')].some("
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
    _wait_for(page, f"document.querySelectorAll('.error').length > {before}")
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
        _wait_for(page, f"document.getElementById('docs').textContent.includes('site{i}.md')")
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

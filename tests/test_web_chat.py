"""
``parlai-docgraph chat``: the browser chat. The JSON API with bad input and two sessions at
once, and the page in a real headless Chromium (Playwright): upload, a turn, the reply, the
selected sentence and the highlighted node of the graph, a screenshot.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Dict

import pytest

from parlai_docgraph.graphs.corpus import read_document
from parlai_docgraph.scripts.chat import load_store, serve
from test_interactive import DOC, model_file  # noqa: F401  (model_file: a fixture)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def server(model_file, tmp_path_factory):  # noqa: F811
    folder = tmp_path_factory.mktemp("chat")
    doc = folder / "tide.md"
    doc.write_text(DOC, encoding="utf-8")
    store = load_store({"model_file": model_file, "datapath": str(folder / "data"),
                        "documents": [str(doc)], "reply_mode": "extract"})
    httpd = serve(store, "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", doc
    httpd.shutdown()
    httpd.server_close()


def _post(url: str, path: str, body: Any) -> Dict[str, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return {"status": r.status, **json.loads(r.read())}
    except urllib.error.HTTPError as err:
        return {"status": err.code, **json.loads(err.read())}


def test_api_turns_bad_input_and_two_sessions(server):
    url, doc = server
    sentences = [s for _, ss in read_document(str(doc)) for s in ss]
    a = _post(url, "/api/session", {})
    b = _post(url, "/api/session", {})
    assert a["session"] != b["session"] and a["documents"] == ["tide.md"]
    turn = _post(url, "/api/chat", {"session": a["session"], "text": "how does a mill work?"})
    assert turn["status"] == 200 and turn["selected_sentence"] in sentences
    assert turn["text"] == turn["selected_sentence"]  # extract mode
    assert 'class="node selected' in turn["graph_html"]
    # bad input: a message in the reply, the server goes on
    assert "empty message" in _post(url, "/api/chat", {"session": a["session"],
                                                       "text": "  "})["note"]
    long = _post(url, "/api/chat", {"session": a["session"], "text": "mill " * 1000})
    assert "only its last" in long["note"] and long["selected_sentence"] in sentences
    binary = _post(url, "/api/documents", {"session": b["session"], "name": "x.bin",
                                           "text": "PK\x03\x04\x00\x00"})
    assert binary["status"] == 400 and "binary" in binary["error"]
    empty = _post(url, "/api/documents", {"session": b["session"], "name": "e.md",
                                          "text": "\n\n"})
    assert empty["status"] == 200 and "document not used" in " ".join(empty["notes"])
    assert _post(url, "/api/chat", {"session": "nope", "text": "hi"})["status"] == 400
    assert _post(url, "/api/chat", b"{not json")["status"] == 400
    assert _post(url, "/api/nothing", {})["status"] == 404
    # two users at once: each session keeps its own documents and history
    added = _post(url, "/api/documents", {"session": b["session"], "name": "owls.md",
                                          "text": "# Owls\n\nOwls hunt at night. They "
                                          "swallow their prey whole.\n"})
    assert added["documents"] == ["tide.md", "owls.md"]
    results: Dict[str, Any] = {}

    def ask(name: str, sid: str, text: str) -> None:
        results[name] = _post(url, "/api/chat", {"session": sid, "text": text})

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


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt install chromium)")
def test_page_in_headless_chromium(server, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    url, doc = server
    sentences = [s for _, ss in read_document(str(doc)) for s in ss]
    shot = tmp_path / "web_chat.png"
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            other = browser.new_context().new_page()  # a second user at the same time
            for pg in (page, other):
                pg.goto(url)
                pg.wait_for_function("document.getElementById('docs').textContent != 'none'")
            page.fill("#msg", "how does a tide mill work?")
            page.click("#send")
            other.fill("#msg", "is eling still working?")
            other.click("#send")
            for pg in (page, other):
                pg.wait_for_selector(".bot", timeout=60_000)
                assert pg.inner_text("#sentence") in sentences
            reply = page.inner_text(".bot")
            assert reply.startswith("docgraph: ") and reply[10:] in sentences
            frame = page.frame_locator("#graph")
            frame.locator(".node.selected").first.wait_for(timeout=30_000)
            assert frame.locator(".node.selected").count() >= 1
            # bad input shown in the page: a binary upload
            page.set_input_files("#file", files=[{"name": "x.bin", "mimeType": "text/plain",
                                                  "buffer": b"PK\x03\x04\x00\x00bin"}])
            page.click("#upload")
            page.wait_for_selector(".error")
            assert "binary" in page.inner_text(".error")
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
    keep = os.environ.get("DOCGRAPH_TEST_ARTIFACTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    print(f"web chat screenshot: {shot}")

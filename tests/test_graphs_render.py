"""
Self-contained HTML rendering of document graphs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from parlai_docgraph.graphs import build_document_graph, build_multilevel_graph
from parlai_docgraph.graphs.render import render_html, write_html

PASSAGES = [
    ("Bach", ["Johann Sebastian Bach was a composer.", "Bach wrote <b>music</b> & more.",
              "He died in Leipzig."]),
]


class Collect(HTMLParser):
    """Tags with their attributes, and whether parsing saw anything unbalanced."""

    def __init__(self) -> None:
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def parse(page: str) -> list:
    collector = Collect()
    collector.feed(page)
    return collector.tags


def test_page_has_every_node_and_edge_and_highlights_selection():
    graph = build_document_graph(PASSAGES)
    selected = [n.id for n in graph.nodes if n.text == "Johann Sebastian Bach"]
    page = render_html(graph, selected=selected)
    tags = parse(page)
    nodes = [a for t, a in tags if t == "g" and "node" in a.get("class", "")]
    assert sorted(int(a["data-id"]) for a in nodes) == [n.id for n in graph.nodes]
    assert [int(a["data-id"]) for a in nodes if "selected" in a["class"]] == selected
    lines = [a for t, a in tags if t == "line"]
    assert len(lines) == len(graph.edges)
    assert {a["data-type"] for a in lines} == {e.type for e in graph.edges}
    assert "ARG0</text>" in page  # role edges carry labels
    assert "&lt;b&gt;music&lt;/b&gt; &amp; more" in page and "<b>music</b>" not in page
    assert not re.search(r"\s(src|href)\s*=|<link|@import|url\(", page)  # self-contained
    assert render_html(graph, selected=selected) == page  # seeded layout: deterministic


def test_the_panel_form_adds_fit_zoom_and_hover_and_the_page_stays_as_it_was():
    """Issue 39: the web chat's panel form fits, zooms and pans; ``--show-graph``'s page (the
    default form) is the fixed 1200 x 900 drawing with the click script only."""
    from parlai_docgraph.graphs.render import PANEL_SCRIPT, SCRIPT, inline_scripts

    graph = build_document_graph(PASSAGES)
    page, panel = render_html(graph), render_html(graph, panel=True)
    svg = [a for t, a in parse(page) if t == "svg"][0]
    assert (svg["width"], svg["height"], svg["viewbox"]) == ("1200", "900", "0 0 1200 900")
    assert re.findall(r"<script>(.*?)</script>", page, re.S) == [SCRIPT]
    assert 'id="tip"' not in page and 'id="view"' not in page
    svg = [a for t, a in parse(panel) if t == "svg"][0]
    assert (svg["class"], svg["width"], svg["height"]) == ("graph", "100%", "100%")
    assert re.findall(r"<script>(.*?)</script>", panel, re.S) == [SCRIPT, PANEL_SCRIPT]
    assert inline_scripts() == (SCRIPT, PANEL_SCRIPT)  # what the chat's CSP allows by hash
    # the same nodes and edges, drawn inside the group the script fits to the panel
    drawing = panel[panel.index('<g id="view">'):panel.index("</svg>")]
    assert drawing.count('class="node') == len(graph.nodes)
    assert page.split("<svg")[1].split(">", 1)[1].split("</svg>")[0] in drawing


def test_multilevel_and_empty_graphs(tmp_path):
    page = render_html(build_multilevel_graph(PASSAGES), title="ml <graph>")
    assert "<title>ml &lt;graph&gt;</title>" in page and 'data-type="topic"' in page
    path = write_html(build_document_graph([]), tmp_path / "empty.html")
    assert "0 nodes, 0 edges" in path.read_text(encoding="utf-8")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed")
def test_renders_in_headless_chromium(tmp_path):
    page = write_html(build_document_graph(PASSAGES), tmp_path / "g.html")
    shot = tmp_path / "g.png"
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
         "--window-size=1200,900", page.as_uri()],
        check=True, capture_output=True, timeout=60,
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000

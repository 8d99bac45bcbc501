"""
Render a :class:`~.schema.DocumentGraph` as a self-contained HTML page (inline SVG + JS).

Nodes are placed by a seeded spring layout (networkx), coloured by type (concept entities
and predicates in two colours, as in Li et al.'s Figure 3), labelled with their text
(shortened; the full text, type and mentions in a tooltip). Structure edges are dotted,
semantic edges (roles, coreference, word edges) solid with their type as a label. Nodes in
``selected`` (e.g. a selector's picks) get a thick black outline, nodes in ``gold`` (e.g. the
gold sentence and its concepts) a thick red one; ``caption`` is shown under the heading.
Clicking a node highlights it and its neighbours. No external resources are referenced.
:func:`turn_graph_html` / :func:`write_turn_graph`: the page of a chat turn (``--show-graph``,
the web chat), the selected sentence and the top concepts highlighted.

``panel=True`` (the web chat's graph panel, an ``<iframe>``): the same graph drawn to fill
the frame, scaled so that every node and label fits (the view box is the drawing's bounding
box, set again whenever a turn's page loads); the wheel zooms about the pointer, dragging
pans, a double click fits again, and hovering a node shows its full text in a box (labels
are cut at 28 characters). The scripts are constants (:func:`inline_scripts`), so a
Content-Security-Policy can allow them by hash.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Tuple, Union

from parlai_docgraph.atomic import write_text_atomic
from parlai_docgraph.graphs.schema import DocumentGraph, Node
from parlai_docgraph.graphs.selection import Selection

COLOURS: Dict[str, str] = {
    "passage": "#f4f4f4", "sentence": "#8fd18f", "entity": "#f6d55c", "predicate": "#7fb3e6",
    "topic": "#e6a0c4", "word": "#f0b27a", "concept": "#f6d55c",
}
STRUCTURE = frozenset({
    "passage_sentence", "sentence_concept", "next_sentence", "topic_sentence", "sentence_word",
    "self_loop",
})
WIDTH, HEIGHT, MARGIN = 1200, 900, 60
LABEL_CHARS = 28

SCRIPT = """
document.querySelectorAll('g.node').forEach(function (g) {
  g.addEventListener('click', function () {
    var id = g.dataset.id, keep = {};
    keep[id] = true;
    document.querySelectorAll('line.edge').forEach(function (e) {
      var hit = e.dataset.src === id || e.dataset.dst === id;
      if (hit) { keep[e.dataset.src] = true; keep[e.dataset.dst] = true; }
      e.classList.toggle('dim', !hit);
    });
    document.querySelectorAll('g.node').forEach(function (n) {
      n.classList.toggle('dim', !keep[n.dataset.id]);
    });
  });
});
"""

PANEL_SCRIPT = """
(function () {
  var svg = document.querySelector('svg.graph'), view = document.getElementById('view');
  var tip = document.getElementById('tip'), box = null, drag = null, moved = false;
  function show(b) { box = b; svg.setAttribute('viewBox', b.join(' ')); }
  function fit() {
    var b = view.getBBox(), pad = 8;
    show([b.x - pad, b.y - pad, Math.max(b.width, 1) + 2 * pad, Math.max(b.height, 1) + 2 * pad]);
  }
  function at(ev) {
    var p = svg.createSVGPoint();
    p.x = ev.clientX; p.y = ev.clientY;
    return p.matrixTransform(svg.getScreenCTM().inverse());
  }
  svg.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    var p = at(ev), k = ev.deltaY > 0 ? 1.2 : 1 / 1.2;
    show([p.x - (p.x - box[0]) * k, p.y - (p.y - box[1]) * k, box[2] * k, box[3] * k]);
  }, {passive: false});
  svg.addEventListener('pointerdown', function (ev) {
    drag = {x: ev.clientX, y: ev.clientY, box: box.slice(), scale: 1 / svg.getScreenCTM().a};
    moved = false;
  });
  svg.addEventListener('pointermove', function (ev) {
    if (!drag) return;
    var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) moved = true;
    if (moved) {
      svg.classList.add('panning');
      show([drag.box[0] - dx * drag.scale, drag.box[1] - dy * drag.scale, drag.box[2], drag.box[3]]);
    }
  });
  function end() { drag = null; svg.classList.remove('panning'); }
  svg.addEventListener('pointerup', end);
  svg.addEventListener('pointerleave', end);
  svg.addEventListener('click', function (ev) {
    if (moved) { ev.stopPropagation(); moved = false; }
  }, true);
  svg.addEventListener('dblclick', fit);
  function place(ev) {
    var x = ev.clientX + 12, y = ev.clientY + 12;
    if (x + tip.offsetWidth > innerWidth) x = Math.max(0, ev.clientX - tip.offsetWidth - 12);
    if (y + tip.offsetHeight > innerHeight) y = Math.max(0, ev.clientY - tip.offsetHeight - 12);
    tip.style.left = x + 'px'; tip.style.top = y + 'px';
  }
  document.querySelectorAll('g.node').forEach(function (g) {
    var title = g.querySelector('title');
    g.dataset.tip = title ? title.textContent : '';
    if (title) title.remove();
    g.addEventListener('mouseenter', function (ev) {
      tip.textContent = g.dataset.tip; tip.hidden = false; place(ev);
    });
    g.addEventListener('mousemove', place);
    g.addEventListener('mouseleave', function () { tip.hidden = true; });
  });
  fit();
})();
"""

PANEL_STYLE = """
html, body { height: 100%; }
body { display: flex; flex-direction: column; overflow: hidden; font-size: 12px; }
h3 { margin: 2px 0; font-size: 13px; }
svg.graph { flex: 1; min-height: 0; width: 100%; display: block; cursor: grab; touch-action: none; }
svg.graph.panning { cursor: grabbing; }
.node { cursor: pointer; }
.node text { pointer-events: auto; }
#tip { position: fixed; max-width: 60%; background: #fffbe6; border: 1px solid #888; padding: 4px 6px;
       white-space: pre-wrap; pointer-events: none; z-index: 1; }
#tip[hidden] { display: none; }
"""

STYLE = """
body { font: 13px sans-serif; margin: 0; }
.node circle { stroke: #555; stroke-width: 1; }
.node.selected circle { stroke: #000; stroke-width: 4; }
.node.gold circle { stroke: #d62728; stroke-width: 4; }
.node.gold.selected circle { stroke: #000; stroke-dasharray: 4 2; }
#caption { margin: 4px 0; }
.node text { font-size: 10px; pointer-events: none; }
line.edge { stroke: #999; stroke-width: 1; }
line.edge.structure { stroke-dasharray: 3 3; stroke: #bbb; }
.edge-label { font-size: 9px; fill: #a33; }
.dim { opacity: 0.15; }
#legend span { display: inline-block; padding: 2px 8px; margin: 4px; border: 1px solid #777; }
"""


def _colour(node: Node) -> str:
    return COLOURS.get(node.kind or node.type, COLOURS.get(node.type, "#ccc"))


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def layout(graph: DocumentGraph, seed: int = 0) -> Dict[int, Tuple[float, float]]:
    """Node id -> (x, y) pixel position from a seeded spring layout."""
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(n.id for n in graph.nodes)
    g.add_edges_from((e.src, e.dst) for e in graph.edges if e.src != e.dst)
    if not graph.nodes:
        return {}
    pos = nx.spring_layout(g, seed=seed, k=None, iterations=100)
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    span_x, span_y = (max(xs) - min(xs)) or 1.0, (max(ys) - min(ys)) or 1.0
    return {
        i: (MARGIN + (x - min(xs)) / span_x * (WIDTH - 2 * MARGIN),
            MARGIN + (y - min(ys)) / span_y * (HEIGHT - 2 * MARGIN))
        for i, (x, y) in pos.items()
    }


def inline_scripts() -> Tuple[str, ...]:
    """The inline scripts the pages of :func:`render_html` hold, exactly as written there."""
    return SCRIPT, PANEL_SCRIPT


def render_html(
    graph: DocumentGraph, selected: Iterable[int] = (), title: Optional[str] = None,
    seed: int = 0, gold: Iterable[int] = (), caption: Optional[str] = None,
    panel: bool = False,
) -> str:
    """The HTML page of ``graph`` (see the module docstring; ``panel``: the page that fits
    the web chat's graph panel)."""
    chosen = set(selected)
    golden = set(gold)
    pos = layout(graph, seed)
    esc = html.escape
    parts = []
    for j, e in enumerate(graph.edges):
        if e.src == e.dst:
            continue
        (x1, y1), (x2, y2) = pos[e.src], pos[e.dst]
        kind = "structure" if e.type in STRUCTURE else "semantic"
        parts.append(
            f'<line class="edge {kind}" data-src="{e.src}" data-dst="{e.dst}" '
            f'data-type="{esc(e.type)}" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}">'
            f"<title>{esc(e.type)}</title></line>"
        )
        if kind == "semantic":
            parts.append(
                f'<text class="edge-label" x="{(x1 + x2) / 2:.1f}" y="{(y1 + y2) / 2:.1f}">'
                f"{esc(e.type)}</text>"
            )
    sentences = graph.sentence_texts()
    for n in graph.nodes:
        x, y = pos[n.id]
        radius = 12 if n.type in ("passage", "topic") else 9 if n.type == "sentence" else 6
        mentions = "; ".join(sentences[s][a:b] for s, a, b in n.mentions)
        tip = f"{n.id} {n.kind or n.type}: {n.text}"
        if mentions:
            tip += f"\nmentions: {mentions}"
        cls = "node selected" if n.id in chosen else "node"
        if n.id in golden:
            cls += " gold"
        parts.append(
            f'<g class="{cls}" data-id="{n.id}" data-type="{n.type}">'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}" fill="{_colour(n)}"/>'
            f'<text x="{x + radius + 2:.1f}" y="{y + 3:.1f}">{esc(_short(n.text))}</text>'
            f"<title>{esc(tip)}</title></g>"
        )
    legend = "".join(
        f'<span style="background:{c}">{esc(k)}</span>' for k, c in COLOURS.items()
        if k != "concept"
    )
    if golden:
        legend += '<span style="border:4px solid #d62728">gold</span>'
    note = f'<div id="caption">{esc(caption)}</div>' if caption else ""
    heading = esc(title or f"{graph.meta.get('builder', 'graph')} graph")
    meta = esc(", ".join(f"{k}={graph.meta[k]}" for k in ("parser", "coref") if k in graph.meta))
    if panel:
        svg = (f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" width="100%" height="100%" '
               f'preserveAspectRatio="xMidYMid meet" viewBox="0 0 {WIDTH} {HEIGHT}">'
               f'<g id="view">{"".join(parts)}</g></svg><div id="tip" hidden></div>')
        style, scripts = STYLE + PANEL_STYLE, f"<script>{SCRIPT}</script><script>{PANEL_SCRIPT}</script>"
    else:
        svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
               f'viewBox="0 0 {WIDTH} {HEIGHT}">{"".join(parts)}</svg>')
        style, scripts = STYLE, f"<script>{SCRIPT}</script>"
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
        f"<title>{heading}</title><style>{style}</style></head><body>"
        f"<h3>{heading}</h3>"
        f"{note}<div>{len(graph.nodes)} nodes, {len(graph.edges)} edges. {meta}</div>"
        f'<div id="legend">{legend}<span style="border:4px solid #000">selected</span></div>'
        f"{svg}{scripts}</body></html>\n"
    )


def write_html(
    graph: DocumentGraph, path: Union[str, Path], selected: Iterable[int] = (),
    title: Optional[str] = None, gold: Iterable[int] = (), caption: Optional[str] = None,
) -> Path:
    """Write :func:`render_html` output to ``path`` (UTF-8) and return the path."""
    path = Path(path)
    path.write_text(
        render_html(graph, selected, title, gold=gold, caption=caption), encoding="utf-8"
    )
    return path


# ------------------------------------------------------------------ a chat turn's page


def _sentence_node(graph: DocumentGraph, sentence: str) -> Optional[int]:
    for node in graph.nodes:
        if node.type == "sentence" and node.text.strip() == sentence.strip():
            return node.id
    return None


def write_turn_graph(graph: DocumentGraph, path: str, selection: Selection, user_text: str,
                     reply: str) -> Path:
    """Write :func:`turn_graph_html` to ``path`` (atomically)."""
    return write_text_atomic(path, turn_graph_html(graph, selection, user_text, reply))


def turn_graph_html(graph: DocumentGraph, selection: Selection, user_text: str, reply: str,
                    panel: bool = False) -> str:
    """
    The HTML page of ``graph``: the selected sentence node and the nodes of the top
    concepts highlighted, the turn in the caption (``panel``: see :func:`render_html`).
    """
    from parlai_docgraph.graphs.concept_label import concept_label

    concepts = {c.lower() for c in selection.top_concepts}
    chosen = [n.id for n in graph.nodes if n.type != "sentence"
              and (concept_label(n.text, n.kind) or "").lower() in concepts]
    node = _sentence_node(graph, selection.sentence) if selection.uses_knowledge else None
    if node is not None:
        chosen.append(node)
    caption = (f"user: {user_text} | selected: {selection.sentence} | "
               f"concepts: {', '.join(selection.top_concepts) or '-'} | "
               f"reply: {reply}")
    return render_html(graph, selected=chosen, title="docgraph: last turn", caption=caption,
                       panel=panel)

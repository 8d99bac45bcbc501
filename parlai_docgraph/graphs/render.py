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
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Tuple, Union

from parlai_docgraph.atomic import write_text_atomic
from parlai_docgraph.graphs.schema import DocumentGraph, Node

COLOURS: Dict[str, str] = {
    "passage": "#f4f4f4", "sentence": "#8fd18f", "entity": "#f6d55c", "predicate": "#7fb3e6",
    "topic": "#e6a0c4", "word": "#f0b27a", "concept": "#f6d55c",
}
STRUCTURE = frozenset({
    "passage_sentence", "sentence_concept", "next_sentence", "topic_sentence", "sentence_word",
    "self_loop",
})
WIDTH, HEIGHT, MARGIN = 1200, 900, 60

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


def _short(text: str, limit: int = 28) -> str:
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


def render_html(
    graph: DocumentGraph, selected: Iterable[int] = (), title: Optional[str] = None,
    seed: int = 0, gold: Iterable[int] = (), caption: Optional[str] = None,
) -> str:
    """The HTML page of ``graph`` (see the module docstring)."""
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
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
        f"<title>{heading}</title><style>{STYLE}</style></head><body>"
        f"<h3>{heading}</h3>"
        f"{note}<div>{len(graph.nodes)} nodes, {len(graph.edges)} edges. {meta}</div>"
        f'<div id="legend">{legend}<span style="border:4px solid #000">selected</span></div>'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}">{"".join(parts)}</svg>'
        f"<script>{SCRIPT}</script></body></html>\n"
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


def write_turn_graph(graph: DocumentGraph, path: str, selection: Dict[str, Any], user_text: str,
                     reply: str) -> Path:
    """Write :func:`turn_graph_html` to ``path`` (atomically)."""
    return write_text_atomic(path, turn_graph_html(graph, selection, user_text, reply))


def turn_graph_html(graph: DocumentGraph, selection: Dict[str, Any], user_text: str, reply: str) -> str:
    """
    The HTML page of ``graph``: the selected sentence node and the nodes of the top
    concepts highlighted, the turn in the caption.
    """
    from parlai_docgraph.graphs.concept_label import concept_label

    concepts = {c.lower() for c in selection.get("top_concepts") or []}
    chosen = [n.id for n in graph.nodes if n.type != "sentence"
              and (concept_label(n.text, n.kind) or "").lower() in concepts]
    node = _sentence_node(graph, selection.get("sentence") or "")
    if node is not None:
        chosen.append(node)
    caption = (f"user: {user_text} | selected: {selection.get('sentence')} | "
               f"concepts: {', '.join(selection.get('top_concepts') or []) or '-'} | "
               f"reply: {reply}")
    return render_html(graph, selected=chosen, title="docgraph: last turn", caption=caption)

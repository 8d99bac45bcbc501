"""
A Sphinx extension that writes the generated pages before Sphinx reads the sources, into
``docs/gen/`` (git-ignored): the paper-reproduction pages (from the recipe file), the results
page with its plots (from ``docs/results/*.json``) and the layer picture (from the layer
test's table). ``conf.py`` loads it; ``python -m docgraph_docs readme [--check]`` (``make
readme-table``) rewrites the README's table of current figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict

GENERATED = "gen"


def _write(path: Path, text: str) -> None:
    """Write ``text`` unless the file already holds it (Sphinx then keeps its build)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def generate(srcdir: Path) -> Dict[str, Path]:
    """Write every generated page under ``srcdir/gen``; ``{page name: path}``."""
    from docgraph_docs import layers, papers, results

    out = Path(srcdir) / GENERATED
    written: Dict[str, Path] = {}
    for paper, text in papers.pages().items():
        written[f"papers/{paper}"] = out / "papers" / f"{paper}.md"
        _write(written[f"papers/{paper}"], text)
    written["results"] = out / "results.md"
    _write(written["results"], results.results_page(results.load(), out / "img"))
    written["layers"] = layers.draw(out / "layers.png")
    return written


def _on_builder_inited(app) -> None:
    generate(Path(app.srcdir))


def setup(app) -> dict:
    app.connect("builder-inited", _on_builder_inited)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

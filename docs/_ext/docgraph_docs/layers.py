"""
The picture of the import layers, drawn from the table that ``tests/test_import_layers.py``
checks (:data:`LAYERS` there), so the picture cannot describe other layers than the test.
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from typing import Sequence, Tuple

ROOT = Path(__file__).resolve().parents[3]
LAYER_TEST = ROOT / "tests" / "test_import_layers.py"


def layer_table() -> Sequence[Tuple[str, ...]]:
    """``LAYERS`` of the layer test: top-level names per layer, lowest first."""
    spec = importlib.util.spec_from_file_location("docgraph_layer_test", LAYER_TEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LAYERS


def _label(name: str) -> str:
    return "(package root modules)" if name == "" else name


def draw(path: Path, layers: Sequence[Tuple[str, ...]] = ()) -> Path:
    """Draw the layers (highest on top; each imports only its own layer or lower ones)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    layers = layers or layer_table()
    height = 1.0
    fig, ax = plt.subplots(figsize=(8, 0.9 * len(layers) + 0.6))
    for i, names in enumerate(layers):
        y = i * (height + 0.35)
        ax.add_patch(FancyBboxPatch((0.9, y), 8.6, height, boxstyle="round,pad=0.05",
                                    facecolor=plt.cm.Blues(0.2 + 0.12 * i), edgecolor="0.3"))
        ax.text(0.45, y + height / 2, str(i), ha="center", va="center", fontsize=14,
                fontweight="bold")
        shown = ", ".join(_label(n) + ("" if n in ("", "cli", "_hook", "compat", "env", "atomic",
                                                   "memo", "nlp", "metrics", "text_metrics",
                                                   "reply_quality", "jsonio", "dataset_errors",
                                                   "lazy") else "/")
                          for n in names)
        ax.text(5.2, y + height / 2, textwrap.fill(shown, 70), ha="center", va="center",
                fontsize=9)
        if i:
            ax.annotate("", xy=(9.8, y - 0.32), xytext=(9.8, y - 0.03),
                        arrowprops=dict(arrowstyle="->", color="0.3"))
    ax.text(9.95, (len(layers) - 1) * (height + 0.35) / 2 + height / 2, "imports only\ndownwards",
            rotation=90, ha="left", va="center", fontsize=8, color="0.3")
    ax.set_xlim(0, 10.4)
    ax.set_ylim(-0.2, len(layers) * (height + 0.35))
    ax.axis("off")
    ax.set_title("Import layers of parlai_docgraph (checked by tests/test_import_layers.py)",
                 fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path

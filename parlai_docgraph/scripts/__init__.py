"""
Scripts of parlai-docgraph, registered with ParlAI's script registry on import (see
:mod:`parlai_docgraph.cli`). Each is also runnable as ``python -m
parlai_docgraph.scripts.<name>``.
"""

from . import datasets  # noqa: F401
from . import build_graphs  # noqa: F401
from . import show_graph  # noqa: F401
from . import bench  # noqa: F401
from . import ablate  # noqa: F401
from . import heldout  # noqa: F401
from . import chat  # noqa: F401
from . import recipes  # noqa: F401  (parlai-docgraph recipes: the papers' table rows)
from . import bench_selector  # noqa: F401  (registers the "selector" benchmark)
from . import bench_gsr  # noqa: F401  (registers the "gsr" benchmark)
from . import bench_trie  # noqa: F401  (registers the "trie" benchmark)
from . import bench_families  # noqa: F401  (registers the "families" benchmark)
from . import bench_scale  # noqa: F401  (registers the "scale" benchmark)

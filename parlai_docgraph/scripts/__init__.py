"""
Scripts of parlai-docgraph, registered with ParlAI's script registry on import (see
:mod:`parlai_docgraph.cli`). Each is also runnable as ``python -m
parlai_docgraph.scripts.<name>``.
"""

from parlai_docgraph.scripts import datasets  # noqa: F401
from parlai_docgraph.scripts import build_graphs  # noqa: F401
from parlai_docgraph.scripts import show_graph  # noqa: F401
from parlai_docgraph.scripts import ablate  # noqa: F401
from parlai_docgraph.scripts import heldout_eval  # noqa: F401
from parlai_docgraph.scripts import reply_eval  # noqa: F401
from parlai_docgraph.scripts import cmu_dog_eval  # noqa: F401
from parlai_docgraph.scripts import cmu_dog_labels  # noqa: F401
from parlai_docgraph.scripts import cmu_dog_margin  # noqa: F401
from parlai_docgraph.scripts import chat  # noqa: F401
from parlai_docgraph.scripts import recipes  # noqa: F401  (parlai-docgraph recipes: the papers' table rows)

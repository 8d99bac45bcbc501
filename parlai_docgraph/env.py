"""
Environment switches shared by every part of parlai-docgraph (standard library only).
"""

from __future__ import annotations

import os

#: any of these set to 1/true/yes/on means: never reach a hub or dataset server
OFFLINE_VARIABLES = ("PARLAI_DOCGRAPH_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def offline() -> bool:
    """
    True when the environment asks for offline operation (one rule for datasets,
    encoders and responders alike).
    """
    return any(
        os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
        for name in OFFLINE_VARIABLES
    )

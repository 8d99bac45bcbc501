"""
Where a ``--*-model`` name points (bundled tiny asset, local directory, the datapath's
offline ``hf/`` folder or a hub name), the error that says what to do when it cannot
be loaded, and how many positions a decoder-only LM can number. Shared by the responder
(causal LM) and DialogGSR (seq2seq or causal).
"""

from __future__ import annotations

import os
from typing import List, Optional, Sequence, Tuple

from parlai_docgraph.env import offline

TINY = "tiny"


def resolve_source(name: str, tiny_dir: str, datapath: Optional[str] = None) -> str:
    """
    ``tiny`` -> ``tiny_dir``; an existing directory as is; ``<datapath>/hf/<name>`` when
    that directory has a ``config.json`` (ParlAI PR #3027's offline layout); else ``name``.
    """
    if name == TINY:
        return tiny_dir
    if os.path.isdir(name):
        return name
    if datapath:
        local = os.path.join(datapath, "hf", name)
        if os.path.isfile(os.path.join(local, "config.json")):
            return local
    return name


def unavailable_message(
    option: str, name: str, datapath: Optional[str], error: Exception, tokenizer_files: str
) -> str:
    """Why ``option name`` could not be loaded and the three ways to fix it."""
    where = os.path.join(datapath, "hf", name) if datapath else "<datapath>/hf/" + name
    mode = ("offline (PARLAI_DOCGRAPH_OFFLINE, HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set)"
            if offline() else "online")
    return (
        f"{option} {name!r} could not be loaded {mode}: it is not a local directory and "
        f"not in the Hugging Face cache ({type(error).__name__}: {error}).\n"
        f"Either (1) fetch it once with network access: `hf download {name}` (older "
        f"huggingface_hub: `huggingface-cli download {name}`), then rerun; "
        f"or (2) put config.json, model.safetensors (or pytorch_model.bin) and the tokenizer "
        f"files ({tokenizer_files}) in {where} or any directory and pass "
        f"{option} /that/directory; or (3) use the bundled offline model: {option} tiny."
    )


def position_limit(config) -> Optional[int]:
    """
    Tokens (prompt and generated) a decoder-only LM can take: GPT-2's ``n_positions``
    (a learned table: one more position is an index error) or ``max_position_embeddings``
    (Llama, Qwen: the trained context of their rotary positions). ``None`` for an
    encoder-decoder (T5's relative positions have no table to overflow).
    """
    if getattr(config, "is_encoder_decoder", False):
        return None
    for key in ("n_positions", "max_position_embeddings"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def fit_window(source: Sequence[int], wanted: int, limit: Optional[int]) -> Tuple[List[int], int]:
    """
    ``(source, budget)`` so that ``len(source) + budget <= limit``: the output keeps up to
    ``wanted`` tokens, at least ``min(wanted, limit // 2)``; the source gives way first and
    is cut from the left (the latest dialogue and the closing separator survive).
    """
    source = list(source)
    if limit is None:
        return source, wanted
    room = limit - min(wanted, limit // 2)
    if len(source) > room:
        source = source[len(source) - room :]
    return source, max(min(wanted, limit - len(source)), 0)

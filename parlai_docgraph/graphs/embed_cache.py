"""
On-disk cache of frozen-encoder hidden states per text (used by :mod:`.embed`).

Layout: ``<root>/embed-v<VERSION>/<encoder tag>/<sha[:2]>/<sha>.json`` where ``sha`` is the
SHA-256 of the text and the encoder tag is a short hash of the encoder description
(:func:`describe_encoder`: model name or path, class, tokenizer, truncation limit and a
fingerprint of some weights, so a different or re-trained encoder never reads another's
vectors). Each entry is JSON: version, encoder description, text hash, shape, token offsets,
a SHA-256 checksum of the raw float32 bytes and those bytes in base64. Writes are atomic
(:func:`parlai_docgraph.atomic.write_text_atomic`); an entry that fails any check (unreadable,
other version/encoder/text, checksum or shape mismatch) is deleted and reported missing, so
the caller recomputes it. Loaded entries are also kept in an in-process LRU memo.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any, List, Optional, Tuple, Union

from parlai_docgraph.atomic import read_verified, write_text_atomic
from parlai_docgraph.memo import LRUMemo

VERSION = 1
State = Tuple[Any, List[Tuple[int, int]]]


def describe_encoder(encoder: Any, tokenizer: Any, limit: int) -> str:
    """
    What the cached states depend on: encoder name/path and class, tokenizer name and
    class, the truncation limit, and a SHA-256 of the first and last parameter tensors.
    """
    config = getattr(encoder, "config", None)
    params = list(encoder.parameters())
    digest = hashlib.sha256()
    for p in (params[0], params[-1]) if params else ():
        digest.update(p.detach().float().cpu().contiguous().numpy().tobytes())
    parts = [
        str(getattr(config, "_name_or_path", "") or "?"), type(encoder).__name__,
        str(getattr(tokenizer, "name_or_path", "") or "?"), type(tokenizer).__name__,
        f"max{limit}", digest.hexdigest()[:16],
    ]
    return "|".join(parts)


class EmbeddingCache:
    """Hidden states of texts under one encoder description (see the module docstring)."""

    def __init__(self, root: Union[str, Path], encoder: str, memo_size: int = 1024) -> None:
        self.encoder = encoder
        tag = hashlib.sha256(encoder.encode("utf-8")).hexdigest()[:16]
        self.root = Path(root) / f"embed-v{VERSION}" / tag
        self._memo: LRUMemo[str, State] = LRUMemo(memo_size)
        self.counts = {"memo": 0, "disk": 0, "saved": 0, "corrupt": 0}

    @staticmethod
    def text_key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def path(self, text: str) -> Path:
        """Where the entry of ``text`` lives."""
        key = self.text_key(text)
        return self.root / key[:2] / f"{key}.json"

    def load(self, text: str) -> Optional[State]:
        """``(hidden T x dim, offsets)`` of ``text`` or ``None`` (absent, or corrupt: deleted
        by :func:`~parlai_docgraph.atomic.read_verified`, the package's one policy)."""
        hit = self._memo.get(text)
        if hit is not None:
            self.counts["memo"] += 1
            return hit
        path = self.path(text)
        if not path.is_file():
            return None
        state = read_verified(path, lambda body: self._decode(text, body))
        if state is None:
            self.counts["corrupt"] += 1
            return None
        self.counts["disk"] += 1
        return self._memo.put(text, state)

    def _decode(self, text: str, body: str) -> State:
        """The state in an entry's JSON ``body``; ``ValueError`` when it fails a check."""
        import torch

        entry = json.loads(body)
        if entry["version"] != VERSION or entry["encoder"] != self.encoder:
            raise ValueError("stale entry")
        if entry["text_sha256"] != self.text_key(text):
            raise ValueError("other text")
        raw = base64.b64decode(entry["data"].encode("ascii"), validate=True)
        if hashlib.sha256(raw).hexdigest() != entry["checksum"]:
            raise ValueError("checksum mismatch")
        rows, dim = (int(n) for n in entry["shape"])
        offsets = [(int(a), int(b)) for a, b in entry["offsets"]]
        if len(raw) != rows * dim * 4 or len(offsets) != rows:
            raise ValueError("shape mismatch")
        if not raw:
            return torch.zeros(rows, dim), offsets
        hidden = torch.frombuffer(bytearray(raw), dtype=torch.float32).reshape(rows, dim)
        return hidden.clone(), offsets

    def save(self, text: str, state: State) -> Path:
        """Write the entry of ``text`` atomically (and memoise it)."""
        hidden, offsets = state
        raw = hidden.detach().float().cpu().contiguous().numpy().tobytes()
        entry = {
            "version": VERSION, "encoder": self.encoder, "text_sha256": self.text_key(text),
            "shape": list(hidden.shape), "offsets": [list(o) for o in offsets],
            "checksum": hashlib.sha256(raw).hexdigest(),
            "data": base64.b64encode(raw).decode("ascii"),
        }
        self._memo.put(text, (hidden, list(offsets)))
        self.counts["saved"] += 1
        return write_text_atomic(self.path(text), json.dumps(entry, separators=(",", ":")))

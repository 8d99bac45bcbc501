"""
KOMODIS's reproducible split (no ParlAI imports).

Split (``compute_split``): the official split (80/10/10 by title with an unseeded
``np.random.shuffle``) cannot be reproduced, so ours is ``SPLIT_PROCEDURE``: the distinct
``movie_title`` values sorted, shuffled with ``random.Random(42)``, then the first 70 %
of titles train, the next 15 % valid, the rest test; valid and test get
``max(1, round_half_up(0.15 * n))`` titles each (at least 3 titles needed), train the
rest, so no movie is in two splits. Only ``dialogue_id`` and ``movie_title`` are read,
so ``--skip-bad-rows`` does not change the split.
"""

from __future__ import annotations

import json
import math
import os
import random
from typing import Dict, Iterable, List, Optional, Tuple

from parlai_docgraph.atomic import write_text_atomic
from parlai_docgraph.tasks.docgraph.build import sha256_of
from parlai_docgraph.jsonio import iter_json_array, read_json
from parlai_docgraph.tasks.docgraph.readers.komodis import is_dialogue_id

SPLITS = ("train", "valid", "test")
SPLIT_SEED = 42
SPLIT_FRACTIONS = (0.70, 0.15, 0.15)
SPLIT_PROCEDURE = "komodis-by-movie-title:sorted,random.Random(42).shuffle,70/15/15:v1"
SPLIT_FILE_NAME = "docgraph_split_v1.json"

def _round_half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


def split_titles(titles: Iterable[str]) -> Dict[str, List[str]]:
    """
    Assign each distinct title to train / valid / test (``SPLIT_PROCEDURE``).
    """
    ordered = sorted(set(titles))
    n = len(ordered)
    if n < 3:
        raise ValueError(f"KOMODIS split needs at least 3 movie titles, got {n}")
    random.Random(SPLIT_SEED).shuffle(ordered)
    n_valid = max(1, _round_half_up(SPLIT_FRACTIONS[1] * n))
    n_test = max(1, _round_half_up(SPLIT_FRACTIONS[2] * n))
    n_train = n - n_valid - n_test
    return {
        "train": ordered[:n_train],
        "valid": ordered[n_train : n_train + n_valid],
        "test": ordered[n_train + n_valid :],
    }


def id_title_rows(path: str) -> List[Tuple[object, str]]:
    """
    ``(dialogue_id, movie_title)`` of every row that has both with the right types.
    """
    rows = []
    for _, _, raw in iter_json_array(path):
        if isinstance(raw, dict) and is_dialogue_id(raw.get("dialogue_id")) and isinstance(raw.get("movie_title"), str):
            rows.append((raw["dialogue_id"], raw["movie_title"]))
    return rows


def compute_split(dataset_path: str) -> dict:
    """
    The split document for ``dataset_path`` (what ``tools/make_komodis_split.py`` writes).
    """
    rows = id_title_rows(dataset_path)
    titles = split_titles(t for _, t in rows)
    where = {t: s for s, ts in titles.items() for t in ts}
    ids: Dict[str, list] = {s: [] for s in SPLITS}
    seen = set()
    for dialogue_id, title in rows:
        if dialogue_id in seen:
            continue
        seen.add(dialogue_id)
        ids[where[title]].append(dialogue_id)
    return {
        "procedure": SPLIT_PROCEDURE,
        "dataset": "komodis/dataset.json",
        "dataset_sha256": sha256_of(dataset_path),
        "seed": SPLIT_SEED,
        "fractions": list(SPLIT_FRACTIONS),
        "counts": {
            s: {"titles": len(titles[s]), "dialogues": len(ids[s])} for s in SPLITS
        },
        "titles": titles,
        "dialogue_ids": ids,
    }


def write_json_atomic(path: str, obj) -> None:
    """
    Write JSON to a temporary file in the same folder, then rename it over ``path``.
    """
    write_text_atomic(path, json.dumps(obj, indent=1, ensure_ascii=False) + "\n")


def _read_split(path: str) -> Optional[dict]:
    try:
        doc = read_json(path)
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("dialogue_ids"), dict):
        return None
    if not all(isinstance(doc["dialogue_ids"].get(s), list) for s in SPLITS):
        return None
    return doc


def load_split(
    dataset_path: str, local_path: str, shipped_path: Optional[str] = None
) -> Tuple[dict, List[str]]:
    """
    The split for ``dataset_path`` and notes worth a warning.

    Preference: the shipped file when its ``dataset_sha256`` matches, then the local
    cache ``local_path`` when it matches, else the split is computed and written to
    ``local_path`` atomically (replacing a cache made for another ``dataset.json``).
    """
    notes: List[str] = []
    sha = sha256_of(dataset_path)

    def matching(doc: Optional[dict]) -> bool:
        return (doc is not None and doc.get("dataset_sha256") == sha
                and doc.get("procedure") == SPLIT_PROCEDURE)

    if shipped_path and os.path.isfile(shipped_path):
        doc = _read_split(shipped_path)
        if matching(doc):
            return doc, notes
        notes.append(
            f"shipped KOMODIS split {shipped_path} is for another dataset.json "
            f"(sha256 {doc.get('dataset_sha256') if doc else 'unreadable'}, this one {sha}); "
            f"using a locally computed split"
        )
    if os.path.isfile(local_path):
        doc = _read_split(local_path)
        if matching(doc):
            return doc, notes
        notes.append(
            f"KOMODIS split cache {local_path} was made for another dataset.json "
            f"(or is unreadable); re-creating it"
        )
    doc = compute_split(dataset_path)
    try:
        write_json_atomic(local_path, doc)
    except OSError as e:
        notes.append(f"could not write the KOMODIS split cache {local_path}: {e}")
    return doc, notes

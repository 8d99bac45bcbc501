"""
OpenDialKG's splits (no ParlAI imports): the shipped split of the official
13,802-session ``opendialkg.csv`` and DialogGSR's seed-42 70 / 15 / 15 random split for
any other row count (:func:`split_rows` picks).
"""

from __future__ import annotations

import os
import random
from functools import lru_cache
from typing import Dict, List, Optional, Tuple

from parlai_docgraph.jsonio import read_json

#: data rows of the official ``opendialkg.csv`` (13,802 sessions)
OFFICIAL_NUM_ROWS = 13802
#: DialogGSR ``preprocess/preprocess_data.py``: random.seed(42), 70 / 15 / 15
SPLIT_SEED = 42
TRAIN_RATIO = 0.7
VALID_RATIO = 0.15
#: DialogGSR numbers the rows from this id (``unique_id``)
DIALOGGSR_FIRST_ID = 1000000

SPLIT_FILE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "splits", "opendialkg_split.json"
)


def dialoggsr_split(num_rows: int, seed: int = SPLIT_SEED) -> Dict[str, List[int]]:
    """
    DialogGSR's random 70 / 15 / 15 split of ``num_rows`` sessions, as row indices.

    ``preprocess/preprocess_data.py::main`` (mlvlab/DialogGSR @ 9540fd8d, lines 274-301):
    the ids ``1000000 + row`` are listed in row order, ``random.seed(42)`` then
    ``random.shuffle`` permutes that list, and the boundaries are
    ``int(n * 0.7)`` and ``int(n * (0.7 + 0.15))`` (truncation, not rounding). Each
    split then keeps the CSV row order. Only ``num_rows`` matters, not the contents.
    """
    ids = list(range(DIALOGGSR_FIRST_ID, DIALOGGSR_FIRST_ID + num_rows))
    rng = random.Random()
    rng.seed(seed)
    rng.shuffle(ids)
    a = int(len(ids) * TRAIN_RATIO)
    b = int(len(ids) * (TRAIN_RATIO + VALID_RATIO))
    parts = {"train": ids[:a], "valid": ids[a:b], "test": ids[b:]}
    return {k: sorted(i - DIALOGGSR_FIRST_ID for i in v) for k, v in parts.items()}


@lru_cache(maxsize=1)
def official_split(path: str = SPLIT_FILE) -> Dict[str, List[int]]:
    """
    The shipped split of the official 13,802-session ``opendialkg.csv``.
    """
    data = read_json(path)
    if data.get("num_rows") != OFFICIAL_NUM_ROWS:
        raise ValueError(f"{path}: num_rows should be {OFFICIAL_NUM_ROWS}")
    return {k: list(data[k]) for k in ("train", "valid", "test")}


def split_rows(
    num_rows: int, csv_name: str = "opendialkg.csv"
) -> Tuple[Dict[str, List[int]], Optional[str]]:
    """
    Row indices of each split for a CSV with ``num_rows`` data rows, and a note to log
    when the rows are not the official file's (the split is then computed).
    """
    if num_rows == OFFICIAL_NUM_ROWS and os.path.isfile(SPLIT_FILE):
        return official_split(), None
    note = (
        f"{csv_name} has {num_rows:,} rows, not the official {OFFICIAL_NUM_ROWS:,}: "
        f"splitting with DialogGSR's seed-{SPLIT_SEED} 70/15/15 procedure"
    )
    return dialoggsr_split(num_rows), note

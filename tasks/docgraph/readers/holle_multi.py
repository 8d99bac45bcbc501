"""
Holl-E's multi-reference test file ``multi_reference_test.json`` (a JSON object
``ts_{episodeIdx}_{turnIdx} -> {"responses": [...], "spans": [...]}``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional

from parlai_docgraph.dataset_errors import BadRows, DatasetFormatError, require_type
from parlai_docgraph.jsonio import iter_json_object


@dataclass
class MultiReference:
    """The reference responses and their spans of one test turn (int spans counted)."""

    responses: List[str]
    spans: List[str]
    int_spans: int = 0


_KEY_RE = re.compile(r"^ts_(\d+)_(\d+)$")


def read_multi_reference(path: str, bad_rows: Optional[BadRows] = None) -> Dict[str, MultiReference]:
    """
    Read ``multi_reference_test.json``; int spans become strings (counted).
    """
    bad_rows = bad_rows if bad_rows is not None else BadRows()
    out: Dict[str, MultiReference] = {}
    for key, line, value in iter_json_object(path):
        where = f"key '{key}'"
        try:
            if not _KEY_RE.match(key):
                raise DatasetFormatError(path, line, where, "key should read ts_{episode}_{turn}")
            require_type(value, dict, path, line, where, key)
            for name in ("responses", "spans"):
                if name not in value:
                    raise DatasetFormatError(path, line, where, f"missing field '{name}'")
                require_type(value[name], list, path, line, where, name)
            responses, spans = value["responses"], value["spans"]
            if len(responses) != len(spans):
                raise DatasetFormatError(
                    path, line, where,
                    f"{len(responses)} responses but {len(spans)} spans",
                )
            for j, r in enumerate(responses):
                if not isinstance(r, str):
                    raise DatasetFormatError(
                        path, line, where, f"responses[{j}] should be str, got {type(r).__name__}"
                    )
            ints = 0
            for j, s in enumerate(spans):
                if isinstance(s, bool) or not isinstance(s, (str, int)):
                    raise DatasetFormatError(
                        path, line, where, f"spans[{j}] should be str or int, got {type(s).__name__}"
                    )
                ints += not isinstance(s, str)
        except DatasetFormatError as err:
            bad_rows.report(err)
            continue
        out[key] = MultiReference(list(responses), [str(s) for s in spans], ints)
    return out

"""
How high ``path@k`` can go on the bundled ``docgraph:sample_kg``, registered as the
``kg_ceiling`` benchmark of ``parlai-docgraph bench`` (a figure of the data, no model).

The sample's dialogues are generated (``tools/make_sample_kg.py``): each assistant turn's
gold path is a walk drawn at random from the entity the dialogue is on, one or two hops,
uniform over that entity's edges. The generator writes, next to the CSV,
``path_odds.json``: per walk its probability ``p`` given the dialogue so far and
``best@k``, the summed probability of the ``k`` likeliest walks. Since the walk is drawn
independently of everything a retriever sees, no retriever puts it first more often than
``best@1`` on average, or in its top three more often than ``best@3``:

    E[path@k of any retriever] <= mean over the split's gold-path turns of best@k

The benchmark averages both over each split's turns with a gold path (the turns that
DialogGSR's ``path@k`` averages over), matched to the walks by dialogue row and path.

Run: ``parlai-docgraph bench --only kg_ceiling --out docs/results/kg_ceiling.json``.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, List, Tuple

from parlai_docgraph.bench.cli import register_benchmark

TASK = "docgraph:sample_kg"
SPLITS = ("valid", "test")
ODDS_NAME = "path_odds.json"


def odds_file() -> str:
    """The bundled ``path_odds.json`` (written by ``tools/make_sample_kg.py``)."""
    from parlai_docgraph.tasks.docgraph.build import SAMPLE_DATAPATH

    path = os.path.join(SAMPLE_DATAPATH, "opendialkg", ODDS_NAME)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"bundled sample file missing from the package: {path}")
    return path


def split_turns(split: str, datapath: str) -> List[Tuple[int, Tuple]]:
    """``(dialogue row, first gold path)`` of every turn of ``split`` with a gold path."""
    from parlai.core.params import ParlaiParser
    from parlai.core.teachers import create_task_agent_from_taskname

    from parlai_docgraph.kg.fields import json_to_path

    opt = ParlaiParser(True, False).parse_args(["-t", TASK, "--datapath", datapath, "-dt", split])
    teacher = create_task_agent_from_taskname(opt)[0]
    out = []
    for _ in range(teacher.num_examples()):
        msg = teacher.act()
        if msg.get("kg_gold_paths"):
            out.append((int(msg["dialogue_id"]), json_to_path(msg["kg_gold_paths"][0])))
    return out


def ceiling(split: str, datapath: str, rows: List[List[dict]]) -> Dict[str, Any]:
    """Mean ``best@1``, ``best@3`` and ``p`` over the gold-path turns of ``split``."""
    from parlai_docgraph.kg.fields import triples_to_path

    turns = split_turns(split, datapath)
    picked = []
    for row, path in turns:
        walks = [w for w in rows[row] if triples_to_path(w["path"]) == path]
        if not walks:
            raise ValueError(f"{ODDS_NAME}: row {row} has no walk {path}: regenerate it with "
                             "python tools/make_sample_kg.py")
        picked.append(walks[0])
    n = max(len(picked), 1)
    return {"gold_path_turns": len(turns),
            "path@1_max": round(sum(w["best@1"] for w in picked) / n, 4),
            "path@3_max": round(sum(w["best@3"] for w in picked) / n, 4),
            "p_gold_mean": round(sum(w["p"] for w in picked) / n, 4)}


def run(datapath: str = "") -> Dict[str, Any]:
    """The ceiling of every split of :data:`SPLITS`."""
    from parlai_docgraph.jsonio import read_json

    rows = read_json(odds_file())["rows"]
    with tempfile.TemporaryDirectory() as tmp:
        return {"task": TASK, "splits": {s: ceiling(s, datapath or tmp, rows) for s in SPLITS}}


def markdown_table(result: Dict[str, Any]) -> str:
    """The Markdown table of a :func:`run` result."""
    rows = ["| split | turns with a gold path | best possible path@1 | best possible path@3 "
            "| mean P(gold walk) |", "|---|---:|---:|---:|---:|"]
    for split, f in result["splits"].items():
        rows.append(f"| {split} | {f['gold_path_turns']} | {f['path@1_max']:.3f} | "
                    f"{f['path@3_max']:.3f} | {f['p_gold_mean']:.3f} |")
    rows += ["", f"`{result['task']}`: each gold path is a walk drawn at random by the sample's "
             "generator, so no retriever's expected path@k exceeds these (`path_odds.json`)."]
    return "\n".join(rows)


@register_benchmark("kg_ceiling")
def kg_ceiling_benchmark(quick: bool = False) -> Dict[str, Any]:
    """The best path@1 / path@3 any retriever can expect on ``docgraph:sample_kg``."""
    return run()

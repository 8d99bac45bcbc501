"""
``parlai-docgraph datasets``: where each dataset's raw files are expected, and which
are present under ``--datapath``.
"""

from __future__ import annotations

import os
from typing import Dict, List

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_docgraph.tasks.docgraph.build import RAW_FILES, SAMPLE_DATAPATH, WOW_URL

WOW_FILES = [
    "train.json",
    "valid_random_split.json",
    "valid_topic_split.json",
    "test_random_split.json",
    "test_topic_split.json",
]


def dataset_status(datapath: str) -> List[Dict[str, str]]:
    """
    One row per expected raw file: dataset, path, present (yes/no), source.
    """
    rows = []
    for fname in WOW_FILES:
        path = os.path.join(datapath, "wizard_of_wikipedia", fname)
        rows.append(dict(dataset="wizard_of_wikipedia", path=path, source=WOW_URL))
    for dataset, files in RAW_FILES.items():
        for fname, raw in files.items():
            path = os.path.join(datapath, dataset, fname)
            rows.append(dict(dataset=dataset, path=path, source=raw.describe()))
    for row in rows:
        row["present"] = "yes" if os.path.isfile(row["path"]) else "no"
    return rows


@register_script("datasets", hidden=False)
class Datasets(ParlaiScript):
    """
    List the raw dataset files the docgraph teachers read and whether they are present.
    """

    @classmethod
    def setup_args(cls) -> ParlaiParser:
        # ParlAI's own --datapath: $PARLAI_DATAPATH, else ParlAI's default, as every command
        return ParlaiParser(True, False, description=cls.__doc__.strip())

    def run(self) -> List[Dict[str, str]]:
        datapath = self.opt["datapath"]
        rows = dataset_status(datapath)
        lines = [f"datapath: {os.path.abspath(datapath)}", f"bundled samples: {SAMPLE_DATAPATH}"]
        for row in rows:
            lines.append(f"[{row['present']:>3}] {row['dataset']:<20} {row['path']}")
            if row["present"] == "no":
                lines.append(f"      from {row['source']}")
        print("\n".join(lines))
        return rows


if __name__ == "__main__":
    Datasets.main()

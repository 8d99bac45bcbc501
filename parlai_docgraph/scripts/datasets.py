"""
``parlai-docgraph datasets``: where each dataset's raw files are expected, and which are
present under ``--datapath``; ``parlai-docgraph datasets install NAME --from PATH`` builds a
dataset's layout from a local copy (:mod:`parlai_docgraph.tasks.docgraph.install`: ``cmu_dog``
from a checkout, a mirror or the zip of the pinned commit; ``wow`` from its archive or a
folder; ``holle`` from a folder of the official files).
"""

from __future__ import annotations

import os
from typing import Dict, List

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_docgraph.tasks.docgraph.build import (
    CMU_DOG_URL, RAW_FILES, SAMPLE_DATAPATH, WOW_URL,
)

WOW_FILES = [
    "train.json",
    "valid_random_split.json",
    "valid_topic_split.json",
    "test_random_split.json",
    "test_topic_split.json",
]
#: what ParlAI's cmu_dog build leaves under <datapath>/cmu_dog (and ``.built``, last)
CMU_DOG_FILES = ["wiki_data.json", "conversations/train_deduped.json",
                 "conversations/valid_deduped.json", "conversations/test_deduped.json",
                 "conversations/train_split_seen_unseen.json",
                 "conversations/test_unseen_split_seen_unseen.json", ".built"]
ACTIONS = ("list", "install")


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
    for fname in CMU_DOG_FILES:
        rows.append(dict(dataset="cmu_dog", path=os.path.join(datapath, "cmu_dog", fname),
                         source=f"{CMU_DOG_URL} (ParlAI's build, or parlai-docgraph datasets "
                         f"install cmu_dog --from DIR_OR_ZIP)"))
    for row in rows:
        row["present"] = "yes" if os.path.isfile(row["path"]) else "no"
    return rows


@register_script("datasets", hidden=False)
class Datasets(ParlaiScript):
    """
    List the raw dataset files the docgraph teachers read and whether they are present, or
    install a dataset from a local copy: datasets install NAME --from PATH (cmu_dog, wow,
    holle).
    """

    @classmethod
    def setup_args(cls) -> ParlaiParser:
        # ParlAI's own --datapath: $PARLAI_DATAPATH, else ParlAI's default, as every command
        parser = ParlaiParser(True, False, description=cls.__doc__.strip())
        group = parser.add_argument_group("datasets")
        # no argparse choices: ParlAI's super-command pre-parses the whole command line
        # (script name included) with this parser, so the action is checked in run()
        group.add_argument("action", nargs="?", default="list",
                           help="list (default): the expected files; install: build NAME "
                           "from --from")
        group.add_argument("name", nargs="?", default=None,
                           help="install: cmu_dog, wow (wizard_of_wikipedia) or holle (holl_e)")
        group.add_argument("--from", dest="source", type=str, default=None,
                           help="install: the local copy (cmu_dog: a git checkout or mirror "
                           "holding the pinned commit, its GitHub zip, or a folder with "
                           "Conversations/ and WikiData/; wow: wizard_of_wikipedia.tgz or a "
                           "folder of its files; holle: a folder of the official files)")
        return parser

    def run(self):
        opt = self.opt
        if opt["action"] == "install":
            return self._install()
        if opt["action"] != "list":
            raise SystemExit(f"datasets: unknown action {opt['action']!r} "
                             f"(choose {' or '.join(ACTIONS)})")
        datapath = opt["datapath"]
        rows = dataset_status(datapath)
        lines = [f"datapath: {os.path.abspath(datapath)}", f"bundled samples: {SAMPLE_DATAPATH}"]
        for row in rows:
            lines.append(f"[{row['present']:>3}] {row['dataset']:<20} {row['path']}")
            if row["present"] == "no":
                lines.append(f"      from {row['source']}")
        print("\n".join(lines))
        return rows

    def _install(self) -> str:
        from parlai_docgraph.tasks.docgraph.install import INSTALLERS, InstallError, install

        opt = self.opt
        if not opt["name"] or not opt["source"]:
            raise SystemExit("datasets install NAME --from PATH: NAME is one of "
                             f"{', '.join(INSTALLERS)}, PATH the local copy")
        try:
            return install(opt["name"], opt["datapath"], opt["source"])
        except InstallError as err:
            raise SystemExit(f"datasets install {opt['name']}: {err}")


if __name__ == "__main__":
    Datasets.main()

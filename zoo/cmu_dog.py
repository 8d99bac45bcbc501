"""
``zoo:docgraph/cmu_dog/model``: the ``-m docgraph`` pipeline trained on CMU_DoG's human
dialogues (Zhou et al., EMNLP 2018): the MiniLM graph selector trained on the pseudo
knowledge labels of ``docgraph:cmu_dog``, and SmolLM2-135M-Instruct with LoRA adapters
trained to reply from the selected sentence and the dialogue.

Built on first use, offline, from the recipe ``zoo.cmu_dog`` of ``recipes.yaml`` (every
setting chosen on valid; each part trained on a seeded random subset of the train turns:
``--max-train-steps`` batches of the shuffled train split) with ParlAI's ``train_model``
(:mod:`parlai_docgraph.zoo.recipe`: fixed seeds, progress logged), into
``<datapath>/models/docgraph/cmu_dog/``. CMU_DoG states no licence, so neither the data nor a
model trained on it is distributed: the data must be in the datapath (``parlai-docgraph
datasets install cmu_dog --from DIR_OR_ZIP``, or ParlAI's own download), and a model built
from other split files (a ParlAI build on another file system draws another seen/unseen
split) is another model: the files it trains on are part of its version.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Dict, Optional

from parlai_docgraph.recipes import zoo_recipe
from parlai_docgraph.tasks.docgraph.build import cmu_dog_folder
from parlai_docgraph.zoo.recipe import build_pipeline

#: the split files the parts train on or leave out (docgraph:cmu_dog, seen split)
TRAINING_FILES = ("wiki_data.json", "conversations/train_split_seen_unseen.json",
                  "conversations/valid_split_seen_unseen.json", "conversations/test.json")


def data_version(folder: str) -> str:
    """sha256 (first 16 hex digits) of the files the recipe trains on, in the datapath."""
    digest = hashlib.sha256()
    for name in TRAINING_FILES:
        with open(os.path.join(folder, name), "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def recipe(datapath: str) -> Dict[str, Any]:
    """The build recipe (:func:`~parlai_docgraph.zoo.recipe.build_pipeline`'s form) of
    ``zoo.cmu_dog`` in ``recipes.yaml``, versioned with the data of ``datapath``."""
    zoo = zoo_recipe("cmu_dog")
    return {"name": "docgraph-cmu_dog", "seed": zoo.seed,
            "data": {"cmu_dog": data_version(cmu_dog_folder(datapath))},
            "selector": zoo.selector, "responder": zoo.responder, "pipeline": zoo.pipeline}


def download(datapath: str, build: Optional[Dict[str, Any]] = None) -> str:
    """
    Make ``<datapath>/models/docgraph/cmu_dog/model`` available (built on first use) and
    return it; without the data in the datapath, ``MissingDatasetFile`` names the install
    command. ``build`` replaces the recipe (tests build a smaller one).
    """
    folder = os.path.join(datapath, "models", "docgraph", "cmu_dog")
    return build_pipeline(folder, build or recipe(datapath), datapath)

"""
Deterministic zoo builds: train the parts of a ``-m docgraph`` pipeline with ParlAI's own
``train_model`` from a fixed recipe, compose them, and mark the folder built.

A recipe is plain data (a dict of argument lists), so its hash versions the build: the
``.built`` marker holds ``<name>-<sha256 of the recipe>[:12]`` (ParlAI's ``built()`` format),
and a folder built from another recipe, or left half-built, is rebuilt. A recipe's optional
``data`` entry holds :func:`data_fingerprint` digests of the bundled files it trains on, so
new or edited training data rebuild the model too. The marker is
written atomically last, so a killed build never looks finished.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Dict, List

from parlai.utils import logging

from parlai_docgraph.atomic import write_text_atomic

Recipe = Dict[str, Any]


def data_fingerprint(folder: "str | os.PathLike[str]") -> str:
    """sha256 over the relative names and bytes of every file under ``folder`` (sorted), so
    the digest depends on the data, not on where the clone lives."""
    root = Path(folder)
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def recipe_version(recipe: Recipe) -> str:
    """``<name>-<first 12 hex digits of the sha256 of the canonical recipe JSON>``."""
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()
    return f"{recipe['name']}-{digest[:12]}"


def is_built(folder: str, version: str) -> bool:
    """True when ``folder/.built`` names ``version`` (ParlAI's ``build_data.built``)."""
    from parlai.core.build_data import built

    return built(folder, version)


def mark_built(folder: str, version: str) -> None:
    """ParlAI's ``.built`` format (timestamp line, version line), written atomically."""
    write_text_atomic(os.path.join(folder, ".built"), f"{datetime.today()}\n{version}")


def _train(args: List[str], label: str) -> None:
    """
    ``parlai train_model <args>`` in a fresh Python process (same interpreter): with
    ``--seed`` its result depends on the recipe only, not on what this process ran before;
    its progress goes to this process's console.

    It runs ParlAI's ``TrainLoop.train_steps`` (the training loop, its validations and the
    model's save) without ``TrainLoop.train``'s final valid and test evaluation: the build
    keeps only the weights and removes the training folder with those reports, so they
    were computed for nobody (91 of the sample model's 322 s on 2 idle cores).
    """
    seed = args[args.index("--seed") + 1]
    # ParlAI applies --seed only after building the agent; seed the process before it so
    # the initial weights are fixed too
    launcher = (f"import random, sys, torch; random.seed({int(seed)}); "
                f"torch.manual_seed({int(seed)}); "
                "from parlai.scripts.train_model import TrainLoop, TrainModel; "
                "loop = TrainLoop(TrainModel.setup_args().parse_args(sys.argv[1:])); "
                "[None for _ in loop.train_steps()]")
    command = [sys.executable, "-c", launcher, *args]
    logging.info(f"zoo build: training the {label}: parlai train_model {' '.join(args)} "
                 f"(weights initialised after seeding with {seed}; no final evaluation)")
    start = time.monotonic()
    # a fixed hash seed: set iteration order must not differ between builds
    env = dict(os.environ, PYTHONHASHSEED="0")
    done = subprocess.run(command, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(
            f"zoo build: training the {label} failed (exit {done.returncode}); the command "
            f"was: {' '.join(command)}")
    logging.info(f"zoo build: {label} trained in {time.monotonic() - start:.0f}s")


def build_pipeline(folder: str, recipe: Recipe, datapath: str) -> str:
    """
    Train ``recipe['selector']`` and ``recipe['responder']`` (argument lists for
    ``train_model``, without ``-mf``/``--datapath``/``--seed``), compose them into
    ``folder/model`` (a ``-m docgraph`` model file, with the options in the optional
    ``recipe['pipeline']``) and mark ``folder`` built.
    Returns the model file. An unfinished or outdated ``folder`` is removed first; a build
    holds ``folder.lock``, so a second process asking for the model meanwhile waits for it.
    """
    version = recipe_version(recipe)
    model_file = os.path.join(folder, "model")
    if is_built(folder, version):
        return model_file
    os.makedirs(os.path.dirname(os.path.abspath(folder)), exist_ok=True)
    with open(f"{folder}.lock", "w") as lock:
        # another process resolving the same zoo name while this one builds must wait for it,
        # not take its unfinished folder for a stale one and remove it
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logging.info(f"zoo build: another process is building {folder}; waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if is_built(folder, version):
            return model_file
        return _build_locked(folder, recipe, datapath, version, model_file)


def _build_locked(folder: str, recipe: Recipe, datapath: str, version: str,
                  model_file: str) -> str:
    """:func:`build_pipeline`'s work, under its lock."""
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser

    if os.path.isdir(folder):
        logging.info(f"zoo build: {folder} is unfinished or from another recipe; rebuilding")
        shutil.rmtree(folder)
    os.makedirs(folder)
    start = time.monotonic()
    logging.info(f"zoo build: {recipe['name']} ({version}) into {folder}")
    seed = str(recipe.get("seed", 0))
    parts = {}
    for part in ("selector", "responder"):
        work = os.path.join(folder, f"train_{part}", part)
        os.makedirs(os.path.dirname(work))
        _train(list(recipe[part]) + ["-mf", work, "--datapath", datapath, "--seed", seed], part)
        parts[part] = work
    parser = ParlaiParser(True, True)
    opt = parser.parse_args(
        ["-m", "docgraph", "-mf", model_file, "--datapath", datapath,
         "--selector-model-file", parts["selector"], "--responder-model-file",
         parts["responder"], "-dt", "valid", *recipe.get("pipeline", ())])
    agent = create_agent(opt)
    agent.save(model_file)
    agent.shutdown()
    for part in parts.values():
        shutil.rmtree(os.path.dirname(part))
    write_text_atomic(os.path.join(folder, "recipe.json"),
                      json.dumps(recipe, indent=1, sort_keys=True) + "\n")
    mark_built(folder, version)
    logging.info(f"zoo build: {model_file} ready in {time.monotonic() - start:.0f}s")
    return model_file

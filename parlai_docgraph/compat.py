"""
Compatibility fixes that let ParlAI 1.7.2 (the last release) run on today's stack.

The start-up hook (:mod:`parlai_docgraph._hook`) calls each function in :data:`PATCHES`
right after the ParlAI module of that name has executed, and builds :data:`SHIMS` for
top-level modules the environment lacks. Patches are idempotent and scoped to ParlAI:
they rebind a name *inside* one ParlAI module to an :class:`_Overlay` (a view of the
real ``torch``/``numpy`` module with a few attributes replaced) or wrap a ParlAI method,
never changing torch or numpy for the rest of the process. ``PARLAI_DOCGRAPH_COMPAT=0``
disables all of it. Only the standard library is imported at module level.
"""

from __future__ import annotations

import logging
import sys
from types import ModuleType
from typing import Any, Callable, Dict, Iterator, List, Optional

logger = logging.getLogger("parlai.docgraph.compat")
_MARK = "_docgraph_compat"


class _Overlay:
    """Read-through view of ``real`` with some attributes replaced."""

    def __init__(self, real: Any, **replaced: Any) -> None:
        self.__dict__.update(replaced)
        self.__dict__["_overlay_real"] = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_overlay_real"], name)

    def __repr__(self) -> str:
        return f"<compat overlay of {self.__dict__['_overlay_real']!r}>"


def _unpatched(module: ModuleType, name: str) -> bool:
    """True unless ``module.<name>`` already is an overlay (keeps patches idempotent)."""
    if isinstance(getattr(module, name), _Overlay):
        return False
    logger.debug("compat: patching %s.%s", module.__name__, name)
    return True


def _marked(function: Callable) -> Callable:
    setattr(function, _MARK, True)
    return function


def fix_lr_scheduler(module: ModuleType) -> None:
    """
    ``ReduceLROnPlateau`` lost its ``verbose`` argument (torch >= 2.7).

    Broke: ``TypeError: ReduceLROnPlateau.__init__() got an unexpected keyword argument
    'verbose'`` in ``parlai/nn/lr_scheduler.py`` (``ReduceOnPlateauLRScheduler``, the
    default ``--lr-scheduler``), i.e. every ``train_model``. ``verbose`` only printed LR
    changes, so ignoring it changes no result. The module's ``optim`` becomes an overlay
    whose ``lr_scheduler.ReduceLROnPlateau`` is a subclass that drops ``verbose``.
    """
    if not _unpatched(module, "optim"):
        return
    from torch import optim

    class ReduceLROnPlateau(optim.lr_scheduler.ReduceLROnPlateau):
        def __init__(self, *args: Any, verbose: Any = None, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)

    schedulers = _Overlay(optim.lr_scheduler, ReduceLROnPlateau=ReduceLROnPlateau)
    module.optim = _Overlay(optim, lr_scheduler=schedulers)


def fix_invsqrt_numpy_scalar(module: ModuleType) -> None:
    """
    Keep numpy scalars out of checkpoints written with ``--lr-scheduler invsqrt``.

    Broke: ``torch.load(model_file)`` (``weights_only=True`` by default, torch >= 2.6)
    of a model or ``.checkpoint`` trained with invsqrt: ``UnpicklingError: Weights only
    load failed ... numpy._core.multiarray.scalar``; e.g. ``train_model -m seq2seq
    --lr-scheduler invsqrt`` dies reloading its best model (``Seq2seqAgent.load``).
    ``InvSqrtLRScheduler._invsqrt_lr`` returns ``np.float64``, which lands in the saved
    ``lr_scheduler._last_lr`` and the optimizer's ``param_groups[*]['lr']``. (TorchAgent's
    loader passes ``pickle_module``, i.e. full unpickling, and is unaffected.) Returning
    a builtin ``float`` (the same double) keeps training identical and makes the payload
    weights-only safe without allowlisting numpy types for the whole process.
    """
    cls = module.InvSqrtLRScheduler
    if getattr(cls._invsqrt_lr, _MARK, False):
        return
    numpy_multiplier = cls._invsqrt_lr

    def _invsqrt_lr(self: Any, step: int) -> float:
        return float(numpy_multiplier(self, step))

    cls._invsqrt_lr = _marked(_invsqrt_lr)


def _fix_lr_scheduler_module(module: ModuleType) -> None:
    fix_lr_scheduler(module)
    fix_invsqrt_numpy_scalar(module)


def fix_dict_np_int(module: ModuleType) -> None:
    """
    ``np.int`` was removed (numpy >= 1.24).

    Broke: ``AttributeError: module 'numpy' has no attribute 'int'`` from
    ``DictionaryAgent.txt2vec(text, vec_type=np.ndarray)`` (``parlai/core/dict.py``).
    ``np.int`` was an alias of the builtin ``int``; the module's ``np`` becomes an
    overlay that restores exactly that alias.
    """
    if _unpatched(module, "np"):
        module.np = _Overlay(module.np, int=int)


def fix_metrics_none(module: ModuleType) -> None:
    """
    Skip metrics that could not be computed instead of crashing on them.

    Broke: ``TypeError: unsupported operand type(s) for +: 'NoneType' and 'NoneType'``
    in ``Metrics.add`` (``parlai/core/metrics.py``) at the first evaluation of a
    generator or ranker when ``nltk`` is missing (ParlAI installed ``--no-deps``):
    ``BleuMetric.compute`` returns ``None`` and ``bleu-4`` is a default metric.
    ``Metric + None`` is already the identity in ParlAI, so ignoring ``None`` removes only
    the crash; the metric vanishes from reports (logged once per name), as ROUGE does.
    """
    cls = module.Metrics
    if getattr(cls.add, _MARK, False):
        return
    real_add = cls.add
    skipped: set = set()

    def add(self: Any, key: str, value: Any) -> None:
        if value is not None:
            real_add(self, key, value)
        elif key not in skipped:
            skipped.add(key)
            logger.warning("metric %r could not be computed (BLEU needs nltk)", key)

    cls.add = _marked(add)


def fix_distributed_cpu(module: ModuleType) -> None:
    """
    Let ``multiprocessing_train``/``multiprocessing_eval`` run on CPU with gloo.

    Broke: ``ZeroDivisionError: integer modulo by zero`` (``rank %
    torch.cuda.device_count()``) in ``distributed_context``
    (``parlai/utils/distributed.py``) on any machine without CUDA; behind it come
    ``backend="nccl"``, ``torch.cuda.init()`` (``AssertionError: Torch not compiled with
    CUDA enabled``) and the CUDA buffers of ``all_gather_list``. Only when CUDA is
    unavailable, the worker gets ``gpu=-1`` (ParlAI's "CPU"), ``nccl`` becomes ``gloo``
    and ``cuda.init`` is skipped. On a gloo group ``all_gather_list`` exchanges pickles
    through the group's key-value store: a gloo collective on Python-made tensors can
    deadlock the worker at exit (its ``runLoop`` thread frees them and needs the GIL while
    the main thread, holding it, joins that thread in ``~ProcessGroupGloo``; seen in about
    1 of 5 CPU runs). With CUDA every call still goes to ParlAI's own code.
    """
    if not _unpatched(module, "dist"):
        return
    import itertools
    import pickle

    import torch
    import torch.distributed as real_dist

    real_context, real_gather = module.distributed_context, module.all_gather_list

    def init_process_group(*args: Any, backend: Optional[str] = None, **kw: Any) -> Any:
        if backend == "nccl" and not torch.cuda.is_available():
            backend = "gloo"
        return real_dist.init_process_group(*args, backend=backend, **kw)

    def cuda_init() -> None:
        if torch.cuda.is_available():
            torch.cuda.init()

    def distributed_context(rank, opt, rank_offset=0, gpu=None, **kwargs):
        if gpu is None and not torch.cuda.is_available():
            gpu = -1
        return real_context(rank, opt, rank_offset, gpu, **kwargs)

    calls = itertools.count()

    def all_gather_list(data: Any) -> List[Any]:
        if not (module.is_distributed() and real_dist.get_backend() == "gloo"):
            return real_gather(data)
        store = real_dist.distributed_c10d._get_default_store()
        call, rank = next(calls), real_dist.get_rank()
        store.set(f"docgraph_gather/{call}/{rank}", pickle.dumps(data))
        keys = [f"docgraph_gather/{call}/{r}" for r in range(real_dist.get_world_size())]
        gathered = [pickle.loads(store.get(key)) for key in keys]
        if call >= 2:  # every rank has read call - 2 before writing call - 1
            store.delete_key(f"docgraph_gather/{call - 2}/{rank}")
        return gathered

    module.dist = _Overlay(real_dist, init_process_group=init_process_group)
    module.torch = _Overlay(torch, cuda=_Overlay(torch.cuda, init=cuda_init))
    replaced = {real_context: distributed_context, real_gather: all_gather_list}
    # also rebind ``from parlai.utils.distributed import ...`` done before _hook.apply()
    for mod in [module] + [m for n, m in list(sys.modules.items()) if n.startswith("parlai.")]:
        for attr in ("distributed_context", "all_gather_list"):
            old = getattr(mod, attr, None)
            if old in replaced:
                setattr(mod, attr, replaced[old])


def fix_ddp_cpu(module: ModuleType) -> None:
    """
    Wrap CPU models in DDP without ``device_ids``.

    Broke (once :func:`fix_distributed_cpu` lets a CPU worker start): ``ValueError:
    DistributedDataParallel device_ids and output_device arguments only work with
    single-device/multiple-device GPU modules or CPU modules, but got device_ids [-1]``
    in ``TorchRankerAgent``/``TorchGeneratorAgent.__init__`` (``device_ids=[opt['gpu']]``).
    torch wants ``device_ids=None`` for CPU modules and ``-1`` is ParlAI's "no GPU", so
    ``[-1]`` maps to ``None``; GPU ids pass through unchanged.
    """
    if not _unpatched(module, "torch"):
        return
    import torch

    class DistributedDataParallel(torch.nn.parallel.DistributedDataParallel):
        def __init__(self, model: Any, device_ids: Any = None, *args: Any, **kw: Any):
            if device_ids is not None and list(device_ids) == [-1]:
                device_ids = None
            super().__init__(model, device_ids, *args, **kw)

    parallel = _Overlay(torch.nn.parallel, DistributedDataParallel=DistributedDataParallel)
    module.torch = _Overlay(torch, nn=_Overlay(torch.nn, parallel=parallel))


def fix_fsdp_join_gloo(module: ModuleType) -> None:
    """
    End CPU (gloo) workers with a barrier instead of ``torch``'s ``Join``.

    Broke (once :func:`fix_distributed_cpu` lets a CPU worker start): ``RuntimeError:
    Device index must not be negative`` when ``multiprocessing_train`` leaves ``with
    fsdp_join(loop)`` (``parlai/utils/fsdp.py``): ``Join`` allocates its counter on
    ``loop.join_device``, i.e. ``opt['gpu']``, ``-1`` on CPU; on ``cuda:`` it works.
    ParlAI's join hooks are no-ops, so ``Join`` only makes every rank wait for the others
    at the end; on a gloo group that is ``dist.barrier()``, which (unlike ``Join``'s
    all-reduce of a Python-made tensor) cannot hit the exit deadlock described in
    :func:`fix_distributed_cpu`. Other backends keep ParlAI's ``fsdp_join``.
    """
    real_join = module.fsdp_join
    if getattr(real_join, _MARK, False):
        return
    import contextlib

    import torch.distributed as dist

    @contextlib.contextmanager
    def fsdp_join(*joinables: Any) -> Iterator[None]:
        if not (dist.is_initialized() and dist.get_backend() == "gloo"):
            with real_join(*joinables):
                yield
            return
        yield
        dist.barrier()

    module.fsdp_join = _marked(fsdp_join)


def shim_pkg_resources(module: ModuleType) -> None:
    """
    Stand-in for ``pkg_resources`` (deprecated, removed in setuptools 82).

    Broke: ``ModuleNotFoundError: No module named 'pkg_resources'`` at ``import parlai``
    (``parlai/core/opt.py`` imports it; ``Opt.load_init`` finds bundled ``opt_presets``
    with ``resource_exists``/``resource_filename``). Both are rebuilt on
    :mod:`importlib.resources` with pkg_resources' semantics: ``/``-separated names
    relative to the package, ``ModuleNotFoundError`` for a missing package, a real
    file-system path (extracted for zipped packages) from ``resource_filename``.
    """
    import atexit
    import contextlib
    import importlib.resources
    import pathlib

    extracted = contextlib.ExitStack()
    atexit.register(extracted.close)

    def _resource(package_or_requirement: Any, resource_name: str) -> Any:
        package = getattr(package_or_requirement, "__name__", package_or_requirement)
        parts = [p for p in resource_name.split("/") if p]
        return importlib.resources.files(package).joinpath(*parts)

    def resource_exists(package_or_requirement: Any, resource_name: str) -> bool:
        res = _resource(package_or_requirement, resource_name)
        return res.is_file() or res.is_dir()

    def resource_filename(package_or_requirement: Any, resource_name: str) -> str:
        res = _resource(package_or_requirement, resource_name)
        if isinstance(res, pathlib.Path):
            return str(res)
        return str(extracted.enter_context(importlib.resources.as_file(res)))

    module.__doc__ = "parlai-docgraph stand-in for pkg_resources (resources API only)"
    module.resource_exists = resource_exists
    module.resource_filename = resource_filename


#: the environment variables that turn downloads off (``parlai_docgraph.env.OFFLINE_VARIABLES``;
#: compat imports nothing of the package)
_OFFLINE = ("PARLAI_DOCGRAPH_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def fix_cmu_dog(module: ModuleType) -> None:
    """
    Three faults of ParlAI's CMU_DoG teacher (``parlai/tasks/cmu_dog/agents.py``).

    * ``--cmu-dog-split-type`` keeps a ``SplitType`` enum in the opt. Broke: ``TypeError:
      Object of type SplitType is not JSON serializable`` when ``train_model -t cmu_dog``
      saves a TorchAgent's dictionary (``DictionaryAgent.save`` dumps the opt). The option
      now parses to the enum's value, a ``str``, which the module turns back into the enum
      wherever it reads it (``SplitType(opt[...])``).
    * ``_collapse_multi_msgs`` joins a user's consecutive messages into the first message's
      dict of the loaded conversation, and the teacher runs it twice on every conversation
      (once per speaker): every second-speaker episode read doubled texts ("Have you seen
      it? Have you seen it?" in 2,594 of the 10,161 test turns). It now joins copies.
    * Offline (``PARLAI_DOCGRAPH_OFFLINE``, ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE``)
      without the data, the build's download failed with a network error; it now says
      how to install a local copy.
    """
    cls = module.CMUDocumentGroundedConversationsTeacher
    if getattr(cls.add_cmdline_args, _MARK, False):
        return
    import copy
    import os

    split_type, real_args = module.SplitType, cls.add_cmdline_args.__func__

    def add_cmdline_args(klass: Any, parser: Any, partial_opt: Any = None) -> Any:
        out = real_args(klass, parser, partial_opt)
        action = parser._option_string_actions.get("--cmu-dog-split-type")
        if action is not None:
            action.type = lambda value: split_type(value).value
            action.choices = [s.value for s in split_type]
            action.default = split_type(action.default).value
        return out

    cls.add_cmdline_args = classmethod(_marked(add_cmdline_args))
    real_collapse, real_build = module._collapse_multi_msgs, module.build
    module._collapse_multi_msgs = lambda history, delim: real_collapse(
        copy.deepcopy(history), delim)

    def build(opt: Any) -> Any:
        from parlai.core.build_data import built

        dpath = os.path.join(opt["datapath"], "cmu_dog")
        if not built(dpath, "1.2") and any(os.environ.get(v, "").strip().lower() in (
                "1", "true", "yes", "on") for v in _OFFLINE):
            raise FileNotFoundError(
                f"cmu_dog: {dpath} is not built and downloads are off (offline). Install a "
                f"local copy of festvox/datasets-CMU_DoG at commit "
                f"618a14f27546165859305649aa84e6ac8710bb63 (a checkout, a mirror or its zip):"
                f"\n    parlai-docgraph datasets install cmu_dog --from DIR_OR_ZIP "
                f"--datapath {opt['datapath']}")
        return real_build(opt)

    module.build = build


def lazy_scripts(module: ModuleType) -> None:
    """Not a fault but 2.3 s of every ``parlai`` command: the super-command imports only
    the script the command line names (:mod:`parlai_docgraph.lazy_scripts`)."""
    from parlai_docgraph.lazy_scripts import lazy_superscript

    lazy_superscript(module)


PATCHES: Dict[str, Callable[[ModuleType], None]] = {
    "parlai.core.script": lazy_scripts,
    "parlai.nn.lr_scheduler": _fix_lr_scheduler_module,
    "parlai.core.dict": fix_dict_np_int,
    "parlai.core.metrics": fix_metrics_none,
    "parlai.utils.distributed": fix_distributed_cpu,
    "parlai.core.torch_ranker_agent": fix_ddp_cpu,
    "parlai.core.torch_generator_agent": fix_ddp_cpu,
    "parlai.utils.fsdp": fix_fsdp_join_gloo,
    "parlai.tasks.cmu_dog.agents": fix_cmu_dog,
}

SHIMS: Dict[str, Callable[[ModuleType], None]] = {
    "pkg_resources": shim_pkg_resources,
}


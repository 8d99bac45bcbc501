"""
Behaviour every parlai-docgraph agent shares.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping

from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser


def qualified_name(cls: type) -> str:
    """
    ``module.path:ClassName``, the form ParlAI's loader resolves anywhere.
    """
    return f"{cls.__module__}:{cls.__name__}"


def option_defaults(add_args: Callable[[ParlaiParser], Any]) -> Dict[str, Any]:
    """Every option that ``add_args`` registers on a parser -> its default."""
    parser = ParlaiParser(False, False)
    add_args(parser)
    return {a.dest: parser.get_default(a.dest) for a in parser._actions if a.dest != "help"}


def fill_saved_opt(opt: Opt, add_args: Callable[[ParlaiParser], Any],
                   saved_before: Mapping[str, Any]) -> Opt:
    """
    ``opt`` of a model file (``upgrade_opt``) with every option of ``add_args`` it lacks: the
    value in ``saved_before`` (what models saved before the option existed did), else the
    option's default. ParlAI's command-line loading fills the defaults too, after
    ``upgrade_opt``; a part loaded by ``create_agent_from_model_file`` gets them only here,
    so agents read their own options as ``opt[key]``.
    """
    for key, value in {**option_defaults(add_args), **saved_before}.items():
        opt.setdefault(key, value)
    return opt


class FullyQualifiedOptMixin:
    """
    Record the agent's fully-qualified class path in ``opt['model']``.

    A model trained with a short or registered name (``-m docgraph/graph_selector``,
    ``@register_agent`` aliases) would otherwise save that name in ``<model_file>.opt``,
    and reloading needs the same registration (ParlAI#4599). ``module:Class`` resolves
    in any environment that has the package installed. Put this mixin first in the
    bases so it runs before ParlAI saves the opt.
    """

    def __init__(self, opt: Opt, shared=None) -> None:
        opt = self.qualify_opt(opt)
        super().__init__(opt, shared)
        self.opt = self.qualify_opt(self.opt)

    @classmethod
    def qualify_opt(cls, opt: Opt) -> Opt:
        name = qualified_name(cls)
        if opt.get("model") != name:
            opt = Opt(opt)  # a copy that keeps ParlAI's Opt methods (dict.copy would not)
            opt["model"] = name
            override = opt.get("override")
            if isinstance(override, dict) and "model" in override:
                override = dict(override)
                override["model"] = name
                opt["override"] = override
        return opt

    @classmethod
    def upgrade_opt(cls, opt_from_disk: Opt) -> Opt:
        opt_from_disk = super().upgrade_opt(opt_from_disk)
        return cls.qualify_opt(opt_from_disk)


class WeightsOnlyLoadMixin:
    """
    Load checkpoints with ``torch.load(weights_only=True)`` (tensors and plain containers
    only: a file cannot run code while loading); a checkpoint that needs full unpickling
    (e.g. written by an older ParlAI with numpy scalars in it) falls back to ParlAI's
    loader with a warning. ParlAI's own ``TorchAgent.load`` passes its pickle module to
    ``torch.load``, which turns torch's weights-only default off. Every torch agent of this
    package puts this mixin before its ParlAI base.
    """

    def load(self, path: str) -> Dict[str, Any]:
        import pickle

        import torch
        from parlai.utils import logging
        from parlai.utils.io import PathManager

        try:
            with PathManager.open(path, "rb") as f:
                states = torch.load(f, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as e:
            logging.warning(f"{path} needs full unpickling (only load files you trust): {str(e).splitlines()[0]}")
            return super().load(path)  # type: ignore[misc]
        if "model" in states:
            self.load_state_dict(states["model"])  # type: ignore[attr-defined]
        if "optimizer" in states and hasattr(self, "optimizer"):
            self.optimizer.load_state_dict(states["optimizer"])  # type: ignore[attr-defined]
        return states

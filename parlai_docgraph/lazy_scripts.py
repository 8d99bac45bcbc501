"""
``parlai COMMAND`` and ``parlai-docgraph COMMAND`` import only COMMAND's script.

ParlAI's super-command (``parlai.core.script.superscript_main``) first imports every module
of ``parlai.scripts`` (``setup_script_registry``) and builds every script's parser, and only
then reads a command line that names one of them. On 2 idle cores ``parlai display_data -t
docgraph:sample -n 1`` took 3.9 s, 2.3 s of it for scripts the command never runs (the
safety scripts alone import scikit-learn, a Transformer agent and ``projects.safety_bench``);
with ``display_data`` alone imported the same command takes 1.6 s, with the same output.

So when the first argument is a command of :data:`PARLAI_SCRIPTS` (ParlAI 1.7.2's script
names and aliases -> module; ``tests/test_lazy_scripts.py`` checks the table against the
full registry) or a command already registered (``parlai-docgraph`` registers its own
command's script first, :data:`parlai_docgraph.scripts.PLUGIN_SCRIPTS`), the super-command
runs with the registry as it is. Anything else -- no command, ``help``, ``--help``, a name
in neither table -- takes ParlAI's own path and lists every command. Installed as the
compatibility patch of ``parlai.core.script`` (:mod:`parlai_docgraph.compat`), so
``PARLAI_DOCGRAPH_COMPAT=0`` turns it off. Only the standard library is imported here.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any, Dict, Mapping, Optional, Sequence, Set

_MARK = "_docgraph_lazy"

#: ParlAI 1.7.2's registered scripts: each name and alias -> the module that registers it
PARLAI_SCRIPTS: Mapping[str, str] = {
    **{name: f"parlai.scripts.{name}" for name in (
        "build_candidates", "build_dict", "convo_render", "data_stats", "display_data",
        "display_model", "eval_model", "eval_wordstat", "extract_image_feature", "flask",
        "generate_model_card", "interactive", "interactive_web", "multiprocessing_eval",
        "multiprocessing_train", "party", "profile_interactive", "profile_train",
        "safe_interactive", "self_chat", "tod_world_script", "token_stats", "torchscript",
        "train_model", "vacuum", "verify_data")},
    "convert_to_json": "parlai.scripts.convert_data_to_json_format",
    "convert_to_parlai": "parlai.scripts.convert_data_to_parlai_format",
    "detect_offensive": "parlai.scripts.detect_offensive_language",
    "dd": "parlai.scripts.display_data",
    "dm": "parlai.scripts.display_model",
    "em": "parlai.scripts.eval_model",
    "eval": "parlai.scripts.eval_model",
    "gmc": "parlai.scripts.generate_model_card",
    "i": "parlai.scripts.interactive",
    "iweb": "parlai.scripts.interactive_web",
    "mp_eval": "parlai.scripts.multiprocessing_eval",
    "mp_train": "parlai.scripts.multiprocessing_train",
    "parrot": "parlai.scripts.party",
    "tm": "parlai.scripts.train_model",
    "train": "parlai.scripts.train_model",
}


def command_of(args: Optional[Sequence[str]]) -> Optional[str]:
    """The command a super-command line names (its first argument unless that is an
    option), reading ``sys.argv`` when ``args`` is None as ``superscript_main`` does."""
    argv = list(sys.argv[1:] if args is None else args)
    return argv[0] if argv and not argv[0].startswith("-") else None


def registered(registry: Mapping[str, Any], command: str) -> bool:
    """``command`` is a name or an alias of a script in ``registry`` (ParlAI's
    ``SCRIPT_REGISTRY``: name -> registration with ``aliases``)."""
    return command in registry or any(command in entry.aliases for entry in registry.values())


def settle(registry: Dict[str, Any]) -> None:
    """Build the parser of every script in ``registry`` until no new script registers: a
    script's ``setup_args`` may import another script's module (``ablate``'s imports
    ``train_model``'s), which registers it, and ``superscript_main`` builds the parsers while
    it iterates over the registry (``RuntimeError: dictionary changed size during
    iteration``). With every import done here, its own pass adds nothing; building a parser
    a second time costs about 1 ms (``ablate``'s: 29 ms the first time, 1 ms after)."""
    built: Set[str] = set()
    while set(registry) - built:
        for name in sorted(set(registry) - built):
            registry[name].klass.setup_args()
            built.add(name)


def lazy_superscript(module: ModuleType) -> None:
    """Make ``module.superscript_main`` (``parlai.core.script``'s) import only the named
    command's script (module doc). Idempotent."""
    original = module.superscript_main
    if getattr(original, _MARK, False):
        return

    def superscript_main(args: Optional[Sequence[str]] = None) -> Any:
        command = command_of(args)
        if command in PARLAI_SCRIPTS:
            importlib.import_module(PARLAI_SCRIPTS[command])
        if command is None or not registered(module.SCRIPT_REGISTRY, command):
            return original(args)
        settle(module.SCRIPT_REGISTRY)
        every_script = module.setup_script_registry
        module.setup_script_registry = lambda: None
        try:
            return original(args)
        finally:
            module.setup_script_registry = every_script

    superscript_main.__doc__ = original.__doc__
    setattr(superscript_main, _MARK, True)
    module.superscript_main = superscript_main

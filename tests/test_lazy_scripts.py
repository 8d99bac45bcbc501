"""
``parlai COMMAND`` / ``parlai-docgraph COMMAND`` import only COMMAND's script
(:mod:`parlai_docgraph.lazy_scripts`): the tables match ParlAI's registry, a named command
leaves the other scripts unimported (and imports them all with the patch off), and the
command list still names every command.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import BIN, offline_env


def _registry():
    """The scripts registered so far: name -> (aliases, module)."""
    from parlai.core.script import SCRIPT_REGISTRY

    return {name: (tuple(e.aliases), e.klass.__module__) for name, e in SCRIPT_REGISTRY.items()}


def test_the_plugin_table_is_its_registry():
    from parlai_docgraph.scripts import PLUGIN_SCRIPTS, register_all

    register_all()
    ours = {name: module for name, (_, module) in _registry().items()
            if module.startswith("parlai_docgraph")}
    # bench registers from parlai_docgraph.bench.cli, which the package imports
    assert {n: m.replace(".bench.cli", ".bench") for n, m in ours.items()} == PLUGIN_SCRIPTS


def test_the_parlai_table_is_its_registry():
    """(Slow tier: importing all 29 of ParlAI's scripts takes seconds.)"""
    from parlai.core.script import setup_script_registry

    from parlai_docgraph.lazy_scripts import PARLAI_SCRIPTS

    setup_script_registry()
    want = {command: module for name, (aliases, module) in _registry().items()
            if module.startswith("parlai.") for command in (name, *aliases)}
    assert dict(PARLAI_SCRIPTS) == want


PROBE = """
import json, sys
from parlai.core.script import superscript_main
superscript_main({args!r})
print(json.dumps(sorted(m for m in sys.modules
                        if m.startswith(("parlai.scripts.", "parlai_docgraph.scripts.",
                                         "parlai.utils.safety")))))
"""


def _imported(args, compat: str = "1", cli: bool = False):
    code = PROBE.format(args=args)
    if cli:
        code = code.replace("from parlai.core.script import superscript_main",
                            "from parlai_docgraph.cli import main as superscript_main")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env=offline_env({"PARLAI_DOCGRAPH_COMPAT": compat}))
    assert out.returncode == 0, out.stderr[-2000:]
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_a_named_command_imports_its_script_only(tmp_path):
    args = ["dd", "-t", "docgraph:sample", "-n", "1", "--datapath", str(tmp_path)]
    assert _imported(args) == {"parlai.scripts.display_data"}
    unpatched = _imported(args, compat="0")
    assert {"parlai.scripts.train_model", "parlai.utils.safety"} <= unpatched
    mine = _imported(["datasets"], cli=True)
    assert mine == {"parlai_docgraph.scripts.datasets"}


def test_the_command_list_still_names_every_command():
    out = subprocess.run([str(BIN / "parlai-docgraph"), "help"],
                         capture_output=True, text=True, timeout=300, env=offline_env())
    assert out.returncode == 0, out.stderr[-2000:]
    for command in ("train_model", "display_data", "datasets", "bench", "heldout_eval"):
        assert command in out.stdout, command


def test_settle_builds_the_parsers_a_setup_args_registers():
    """A script whose ``setup_args`` imports (so registers) another script: settling first
    leaves ``superscript_main``'s own pass over the registry nothing to add."""
    from types import SimpleNamespace

    from parlai_docgraph.lazy_scripts import settle

    registry, built = {}, []

    def script(name, registers=None):
        def setup_args():
            built.append(name)
            if registers:
                registry.setdefault(registers, script(registers))
        return SimpleNamespace(aliases=(), klass=SimpleNamespace(setup_args=setup_args))

    registry["ablate"] = script("ablate", registers="train_model")
    settle(registry)
    assert set(registry) == {"ablate", "train_model"} and sorted(built) == sorted(registry)
    size = len(registry)
    for entry in list(registry.values()):  # what superscript_main's loop then does
        entry.klass.setup_args()
    assert len(registry) == size


def test_a_command_whose_parser_imports_another_script_runs():
    """``parlai-docgraph ablate`` (its parser imports train_model's module) failed with
    ``dictionary changed size during iteration`` before :func:`settle`; make demo runs it."""
    out = subprocess.run([str(BIN / "parlai-docgraph"), "ablate", "--help"], capture_output=True,
                         text=True, timeout=300, env=offline_env())
    assert out.returncode == 0, out.stderr[-2000:]
    assert "--variants" in out.stdout

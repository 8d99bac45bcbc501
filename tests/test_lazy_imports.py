"""
Package imports are lazy (:mod:`parlai_docgraph.lazy`): importing one part of the package
loads only what that part imports. In a fresh interpreter, the responder (its model and
its agent) and DialogGSR's model load neither ``torch_geometric`` nor the selectors nor
spaCy, and the pipeline's message helpers load no model; every lazily exported name is the
object its submodule defines.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

#: module -> modules it must not load (each checked in a fresh interpreter)
MUST_NOT_LOAD = {
    "parlai_docgraph.models.responder.model": (
        "torch_geometric", "spacy", "parlai_docgraph.models.selector.dialog_aware",
        "parlai_docgraph.graphs.semantic"),
    "parlai_docgraph.agents.gpt2_responder.agent": (
        "torch_geometric", "spacy", "parlai_docgraph.models.selector.dialog_aware",
        "parlai_docgraph.agents.graph_selector.agent"),
    "parlai_docgraph.models.gsr.model": ("torch_geometric", "spacy"),
    "parlai_docgraph.agents.pipeline.messages": (
        "torch_geometric", "torch", "parlai_docgraph.agents.graph_selector.agent"),
}
LAZY_PACKAGES = ("parlai_docgraph.models", "parlai_docgraph.graphs",
                 "parlai_docgraph.agents.graph_selector", "parlai_docgraph.agents.gpt2_responder",
                 "parlai_docgraph.agents.gsr")


def loaded_after_import(module: str, names) -> dict:
    """``{name: loaded?}`` after ``import module`` in a fresh interpreter."""
    code = (f"import sys, json; import {module}; "
            f"print(json.dumps({{n: n in sys.modules for n in {list(names)!r}}}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", sorted(MUST_NOT_LOAD))
def test_importing_one_part_loads_only_what_it_needs(module):
    names = MUST_NOT_LOAD[module]
    loaded = loaded_after_import(module, names + (module,))
    assert loaded.pop(module) is True  # the probe sees what it imported
    assert not any(loaded.values()), f"{module} loads {[n for n, v in loaded.items() if v]}"


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_lazy_exports_are_their_submodules_objects(package):
    pkg = importlib.import_module(package)
    exports = pkg._EXPORTS
    assert sorted(pkg.__all__) == sorted(exports) and set(exports) <= set(dir(pkg))
    for name, sub in exports.items():
        assert getattr(pkg, name) is getattr(importlib.import_module(f"{package}.{sub}"), name)
    with pytest.raises(AttributeError, match="no attribute 'not_exported'"):
        pkg.not_exported  # noqa: B018

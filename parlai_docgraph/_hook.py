"""
Start-up import hook that lets the stock ``parlai`` command find this plugin.

ParlAI resolves ``-m docgraph``, ``-t docgraph:sample`` and ``zoo:docgraph/...`` by
importing ``parlai.agents.docgraph``, ``parlai.tasks.docgraph`` and
``parlai.zoo.docgraph``. Those packages do not exist inside ParlAI, and its
``parlai.agents`` / ``parlai.tasks`` / ``parlai.zoo`` are regular packages that cannot be
extended from outside. ``parlai_docgraph_hook.pth`` (installed into site-packages by
``setup.py``) calls :func:`install` at interpreter start-up; the finder it registers

* aliases those three names (and every submodule) onto this package, and
  ``parlai.tasks.cmu_dog.worlds``, which ParlAI's ``cmu_dog`` task lacks, onto its worlds
  here, returning the
  *same* module objects, so a class has one identity and one ``__module__`` whichever
  name loaded it;
* runs the compatibility patches of :mod:`parlai_docgraph.compat` right after the
  ParlAI module they fix has executed, and supplies the stand-ins compat declares for
  modules the environment no longer has (e.g. ``pkg_resources`` on setuptools >= 82).

It costs one string comparison per import until a ``parlai`` module is imported, and
imports nothing at start-up beyond the standard library's already loaded ``importlib``
(the loaders are plain classes: ``importlib.abc`` alone would add ~7 ms to every
interpreter start, measured with ``python -X importtime``). ``PARLAI_DOCGRAPH_COMPAT=0`` turns the patches off (the
aliases stay), which the tests use to show each patch is needed.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys
from types import ModuleType
from collections.abc import Callable, Sequence

ALIASES: dict[str, str] = {
    "parlai.agents.docgraph": "parlai_docgraph.agents",
    "parlai.tasks.docgraph": "parlai_docgraph.tasks.docgraph",
    "parlai.zoo.docgraph": "parlai_docgraph.zoo",
    # ParlAI's cmu_dog task has no worlds module: ours gives interactive / self_chat a movie
    "parlai.tasks.cmu_dog.worlds": "parlai_docgraph.tasks.docgraph.cmu_dog_worlds",
}

# Top-level modules compat may stand in for when the environment lacks them; kept here
# so the hook never imports compat for unrelated imports.
SHIM_NAMES = frozenset({"pkg_resources"})


def alias_target(fullname: str) -> str | None:
    """
    Return the real module name behind an aliased ParlAI name, or None.
    """
    for alias, target in ALIASES.items():
        if fullname == alias or fullname.startswith(alias + "."):
            return target + fullname[len(alias) :]
    return None


def compat_enabled() -> bool:
    return os.environ.get("PARLAI_DOCGRAPH_COMPAT", "1").lower() not in ("0", "false", "no")


class _AliasLoader:
    """
    Loader that hands back an already imported module under a second name.
    """

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.real_spec = module.__spec__

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self.module

    def exec_module(self, module: ModuleType) -> None:
        # importlib overwrote __spec__ with the alias spec; keep the real identity.
        module.__spec__ = self.real_spec


class _PatchingLoader:
    """
    Wraps a module's real loader and applies a compat patch after it executes.
    """

    def __init__(self, loader, patch: Callable[[ModuleType], None]):
        self.loader = loader
        self.patch = patch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        self.patch(module)

    def __getattr__(self, name: str):  # get_source, get_code, ... for tracebacks
        return getattr(self.loader, name)


class _ShimLoader:
    """
    Builds a stand-in module for one that the environment lacks.
    """

    def __init__(self, build: Callable[[ModuleType], None]) -> None:
        self.build = build

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        self.build(module)


class DocgraphFinder:
    """
    Meta-path finder for the aliases, the compat patches and the compat shims.
    """

    def __init__(self) -> None:
        self._compat = None

    def _compat_module(self):
        if self._compat is None:
            self._compat = importlib.import_module("parlai_docgraph.compat")
        return self._compat

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith("parlai."):
            real = alias_target(fullname)
            if real is not None:
                module = importlib.import_module(real)
                return importlib.machinery.ModuleSpec(
                    fullname, _AliasLoader(module), is_package=hasattr(module, "__path__")
                )
            if compat_enabled():
                patch = self._compat_module().PATCHES.get(fullname)
                if patch is not None:
                    spec = importlib.machinery.PathFinder.find_spec(fullname, path)
                    if spec is not None and spec.loader is not None:
                        spec.loader = _PatchingLoader(spec.loader, patch)
                    return spec
            return None
        if fullname in SHIM_NAMES and compat_enabled():
            shim = self._compat_module().SHIMS.get(fullname)
            if shim is not None and importlib.machinery.PathFinder.find_spec(fullname) is None:
                return importlib.machinery.ModuleSpec(fullname, _ShimLoader(shim))
        return None


def install() -> None:
    """
    Put the finder first on ``sys.meta_path`` (idempotent).
    """
    for finder in sys.meta_path:
        if isinstance(finder, DocgraphFinder) or type(finder).__name__ == "DocgraphFinder":
            return
    sys.meta_path.insert(0, DocgraphFinder())


def apply() -> None:
    """
    Patch the ParlAI modules already imported and install the import hook.

    For programs that imported ParlAI before this plugin (e.g. a notebook without the
    ``.pth``); modules imported later are patched by the hook as they load. Does nothing
    when ``PARLAI_DOCGRAPH_COMPAT=0``. (It lives here, not in :mod:`.compat`, so compat
    stays a leaf the hook imports: compat never imports the hook.)
    """
    if not compat_enabled():
        return
    patches = importlib.import_module("parlai_docgraph.compat").PATCHES
    for name, patch in patches.items():
        module = sys.modules.get(name)
        if module is not None:
            patch(module)
    install()

"""
Lazy package exports (PEP 562). A package lists the names it exports and the submodule that
defines each; the submodule is imported when one of its names is first read, so importing
one part of a package (the responder's model, a graph schema) does not import its siblings
(the selectors and ``torch_geometric``, spaCy).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, List, Mapping, Tuple


def lazy_exports(package: str, exports: Mapping[str, str]
                 ) -> Tuple[Callable[[str], Any], Callable[[], List[str]]]:
    """
    ``(__getattr__, __dir__)`` for ``package``'s ``__init__``: ``exports`` maps each
    exported name to its submodule, relative to ``package`` (``"selector.egat"``). A name
    read once is kept on the package; an unknown name raises ``AttributeError`` as usual,
    so ``from package import submodule`` still imports the submodule.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> List[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__

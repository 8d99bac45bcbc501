"""
Semantic parser backends and their registry.

``get_parser(name, **kwargs)`` returns a :class:`~.base.Parser`: ``dep`` (spaCy dependency
parses mapped to AMR-style roles, the offline default; ``memo_size=`` to reuse parses) or
``amr`` (precomputed penman AMR graphs, ``amr_file=`` / ``amr_graphs=``, and/or an amrlib
stog model, ``model_dir=``, aligned to spaCy tokens with amrlib's RBW aligner).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

from parlai_docgraph.graphs.parsers.base import Argument, Mention, ParsedSentence, Parser, Predicate, Relation


def _dep(**kwargs: Any) -> Parser:
    from parlai_docgraph.graphs.parsers.dep import DepParser

    return DepParser(**kwargs)


def _amr(**kwargs: Any) -> Parser:
    from parlai_docgraph.graphs.parsers.amr import AMRParser

    return AMRParser(**kwargs)


PARSERS: Dict[str, Callable[..., Parser]] = {"dep": _dep, "amr": _amr}


def available_parsers() -> Tuple[str, ...]:
    """Registered parser names."""
    return tuple(PARSERS)


def get_parser(name: str = "dep", **kwargs: Any) -> Parser:
    """A new parser backend by name; ``ValueError`` for an unknown name."""
    if name not in PARSERS:
        raise ValueError(f"unknown graph parser {name!r}; choose one of {sorted(PARSERS)}")
    return PARSERS[name](**kwargs)


__all__ = [
    "Argument", "Mention", "ParsedSentence", "Parser", "Predicate", "Relation",
    "available_parsers", "get_parser",
]

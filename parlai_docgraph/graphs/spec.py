"""
One graph configuration (builder, parser, coreference, ablation) and its store keys.

:class:`GraphSpec` is the single place that turns the command-line graph options into a
store key and a build function. ``parlai-docgraph build_graphs`` / ``show_graph``, the
teachers' ``--attach-graphs`` and :meth:`~.cache.GraphStore.get_or_build` (through
:func:`~.cache.graph_key` and :func:`~.cache.key_backends`) all compute the same keys, so a
graph built by one is found by the others.

:func:`add_graph_args` declares the options (``--graph-kind``, ``--graph-parser``,
``--graph-coref``, ``--amr-file``, ``--amr-model-dir``, ``--graph-ablation``) on an argparse
(or ParlAI) parser, skipping any option the parser already has (teachers and agents may both
declare them).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

GRAPH_KINDS = ("semantic", "multilevel")
GRAPH_PARSERS = ("dep", "amr")
GRAPH_COREFS = ("rule", "coreferee", "none")
GRAPH_ABLATIONS = ("full", "sentence", "coref", "homogeneous")


def _has_option(parser: Any, option: str) -> bool:
    return option in getattr(parser, "_option_string_actions", {})


#: ``--graph-parser`` / ``--graph-coref``: the backends of semantic graphs, read by the
#: teachers, ``build_graphs``, ``show_graph`` and the graph selector.
BACKEND_OPTIONS: Tuple[Tuple[str, Dict[str, Any]], ...] = (
    ("--graph-parser", dict(
        choices=GRAPH_PARSERS, default="dep",
        help="semantic parser of semantic graphs (dep: spaCy, offline default; amr: "
        "precomputed penman graphs from --amr-file, or an amrlib parse model from "
        "--amr-model-dir). Multilevel graphs always use dep.")),
    ("--graph-coref", dict(
        choices=GRAPH_COREFS, default="rule",
        help="coreference backend of semantic graphs (rule: deterministic resolver, "
        "offline default; coreferee: neural, needs `pip install coreferee` and its "
        "English model; none: no links)")),
)


def _add_options(group: Any, parser: Any, options: Sequence[Tuple[str, Dict[str, Any]]]) -> None:
    """Declare each option once per parser: a teacher and an agent may both ask for it."""
    for option, kwargs in options:
        if not _has_option(parser, option):
            group.add_argument(option, **kwargs)


def add_backend_args(parser: Any, title: str = "docgraph graphs") -> None:
    """``--graph-parser`` and ``--graph-coref`` alone (the graph selector's backends)."""
    _add_options(parser.add_argument_group(title), parser, BACKEND_OPTIONS)


def add_graph_args(parser: Any, title: str = "docgraph graphs") -> None:
    """The graph-building options shared by ``build_graphs``, ``show_graph`` and teachers."""
    group = parser.add_argument_group(title)
    options = (
        ("--graph-kind", dict(
            choices=GRAPH_KINDS, default="semantic",
            help="semantic: Li et al.'s document semantic graph; multilevel: Zhang & Tan's")),
    ) + BACKEND_OPTIONS + (
        ("--amr-file", dict(
            default=None, help="penman AMR graphs of the sentences (--graph-parser amr)")),
        ("--amr-model-dir", dict(
            default=None,
            help="folder of an amrlib sentence-to-graph (stog) model used to parse "
            "sentences missing from --amr-file (--graph-parser amr)")),
        ("--graph-ablation", dict(
            choices=GRAPH_ABLATIONS, default="full",
            help="Li et al. Table 7 ablation of semantic graphs")),
    )
    _add_options(group, parser, options)


class GraphSpec:
    """
    What to build and how: key and build function of one graph configuration, computed
    exactly as :meth:`~.cache.GraphStore.get_or_build` does, so both find the same entries.
    Backends are created lazily, once per process. ``parse_cache``: a graph store root
    whose sentence parse cache (:mod:`.parse_cache`) the parser of semantic graphs reads
    and fills (not part of any key: the graphs are the same with or without it).
    """

    def __init__(
        self, kind: str = "semantic", parser: str = "dep", amr_file: Optional[str] = None,
        ablation: str = "full", coref: str = "rule", amr_model_dir: Optional[str] = None,
        parse_cache: Optional[str] = None,
    ) -> None:
        if kind not in GRAPH_KINDS:
            raise ValueError(f"unknown graph kind {kind!r}; choose one of {GRAPH_KINDS}")
        if parser not in GRAPH_PARSERS:
            raise ValueError(f"unknown graph parser {parser!r}; choose one of {GRAPH_PARSERS}")
        if coref not in GRAPH_COREFS:
            raise ValueError(f"unknown coreference backend {coref!r}; choose one of {GRAPH_COREFS}")
        if ablation not in GRAPH_ABLATIONS:
            raise ValueError(f"unknown graph ablation {ablation!r}; choose one of {GRAPH_ABLATIONS}")
        if kind == "multilevel" and (parser != "dep" or coref != "rule"):
            raise ValueError("multilevel graphs are built with the dep parser and no "
                             "coreference backend choice (--graph-parser dep --graph-coref rule)")
        if parser == "amr" and not (amr_file or amr_model_dir):
            raise ValueError("--graph-parser amr needs --amr-file (precomputed penman graphs) "
                             "or --amr-model-dir (an installed amrlib stog model)")
        self.config = dict(kind=kind, parser=parser, amr_file=amr_file, ablation=ablation,
                           coref=coref, amr_model_dir=amr_model_dir, parse_cache=parse_cache)
        self.kind = kind
        self._backends: Optional[Tuple[Any, Any, List[str]]] = None

    @classmethod
    def from_opt(cls, opt: Dict[str, Any]) -> "GraphSpec":
        """The spec of the graph options in ``opt`` (absent options take their defaults)."""
        return cls(
            opt.get("graph_kind") or "semantic", opt.get("graph_parser") or "dep",
            opt.get("amr_file"), opt.get("graph_ablation") or "full",
            opt.get("graph_coref") or "rule", opt.get("amr_model_dir"),
        )

    def command_args(self) -> List[str]:
        """The ``build_graphs`` options that reproduce this spec (non-defaults only)."""
        c = self.config
        args = []
        for option, value, default in (
            ("--graph-kind", c["kind"], "semantic"), ("--graph-parser", c["parser"], "dep"),
            ("--graph-coref", c["coref"], "rule"), ("--amr-file", c["amr_file"], None),
            ("--amr-model-dir", c["amr_model_dir"], None),
            ("--graph-ablation", c["ablation"], "full"),
        ):
            if value != default:
                args += [option, str(value)]
        return args

    def backends(self) -> Tuple[Any, Any, List[str]]:
        """``(parser, coref, descriptions)``; loads the parser pipeline on first call."""
        if self._backends is None:
            from parlai_docgraph.graphs.coref import RuleCoref, get_coref
            from parlai_docgraph.graphs.parsers import get_parser
            from parlai_docgraph.graphs.parsers.dep import DepParser

            if self.kind == "semantic":
                kwargs: Dict[str, Any] = {}
                if self.config["parser"] == "amr":
                    kwargs = {"amr_file": self.config["amr_file"],
                              "model_dir": self.config["amr_model_dir"]}
                parser = get_parser(self.config["parser"], **kwargs)
                if self.config["parse_cache"]:
                    from parlai_docgraph.graphs.parse_cache import CachedParser, ParseCache

                    parser = CachedParser(parser, ParseCache.for_store(self.config["parse_cache"]))
                coref = get_coref(self.config["coref"])
                self._backends = (parser, coref, [parser.describe(), coref.describe()])
            else:
                self._backends = (None, None, [DepParser(None).describe(), RuleCoref.version])
        return self._backends

    def describe(self) -> str:
        """One line naming the builder, ablation and backends."""
        extra = "" if self.config["ablation"] == "full" else f" ({self.config['ablation']})"
        return f"{self.kind}{extra}, backends {', '.join(self.backends()[2])}"

    def options(self) -> Dict[str, Any]:
        """The builder keyword options of this spec (part of the key)."""
        from parlai_docgraph.graphs.multilevel import DROP_POS
        from parlai_docgraph.graphs.semantic import ABLATIONS

        if self.kind == "semantic":
            return dict(ABLATIONS[self.config["ablation"]])
        return {"drop_pos": list(DROP_POS)}

    def key(self, passages: Any) -> str:
        """The store key of ``passages``' graph; ``ValueError`` for malformed passages."""
        from parlai_docgraph.graphs.cache import graph_key, key_backends
        from parlai_docgraph.graphs.semantic import check_passages

        items = check_passages(passages)
        parser, coref, _ = self.backends()
        return graph_key(items, self.kind, self.options(),
                         key_backends(self.kind, items, parser, coref))

    def build(self, passages: Any) -> Any:
        """Build the graph of ``passages``."""
        from parlai_docgraph.graphs.multilevel import build_multilevel_graph
        from parlai_docgraph.graphs.semantic import build_document_graph

        if self.kind == "semantic":
            parser, coref, _ = self.backends()
            return build_document_graph(passages, parser, coref, **self.options())
        return build_multilevel_graph(passages)


def load_verified(store: Any, key: str) -> Any:
    """The stored graph of ``key``, or ``None`` (absent, or corrupt/stale and then deleted)."""
    try:
        return store.load(key)
    except Exception:  # anything unexpected in a damaged entry: never load it
        store.path(key).unlink(missing_ok=True)
        return None

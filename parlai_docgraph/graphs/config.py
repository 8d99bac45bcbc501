"""
The one graph configuration vocabulary: :class:`GraphVariant` and :class:`GraphConfig`.

Every graph user reads its graph options from here: ``parlai-docgraph build_graphs`` /
``show_graph``, the teachers' ``--attach-graphs`` and the graph selector. They declare one
argument group (:meth:`GraphConfig.add_args`: ``--graph-variant``, ``--graph-parser``,
``--graph-coref``, ``--amr-file``, ``--amr-model-dir``, ``--multilevel-ablation``), read
it back with :meth:`GraphConfig.from_opt`, and hand the config to
:class:`~.factory.GraphFactory`, the one place that builds graphs and computes their store
keys. Variant names, the builder options of Li et al.'s Table 7 ablations and of Zhang &
Tan's Table 3 ablations live only in this module.

No ParlAI imports; nothing heavy is imported here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any, Dict, List, Mapping, Optional, Tuple

GRAPH_PARSERS: Tuple[str, ...] = ("dep", "amr")
GRAPH_COREFS: Tuple[str, ...] = ("rule", "coreferee", "none")


class GraphVariant(str, Enum):
    """
    What graph a run uses (``--graph-variant``). ``full``, ``sentence``, ``coref`` and
    ``homogeneous``: Li et al.'s semantic graph and its Table 7 ablations; ``multilevel``:
    Zhang & Tan's topic/segment/word graph; ``paths``: the full semantic graph, read as
    text (Li's Graph Paths baseline); ``none``: no graph.
    """

    FULL = "full"
    SENTENCE = "sentence"
    COREF = "coref"
    HOMOGENEOUS = "homogeneous"
    MULTILEVEL = "multilevel"
    PATHS = "paths"
    NONE = "none"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, name: Any) -> "GraphVariant":
        """The variant called ``name``; ``ValueError`` naming the choices otherwise."""
        try:
            return cls(name)
        except ValueError:
            raise ValueError(f"unknown --graph-variant {name!r}; choose from "
                             f"{', '.join(cls.names())}") from None

    @classmethod
    def names(cls) -> List[str]:
        """Every variant name, in declaration order (argparse ``choices``)."""
        return [v.value for v in cls]

    @property
    def builder(self) -> Optional[str]:
        """``"semantic"``, ``"multilevel"`` or ``None`` (no graph)."""
        if self is GraphVariant.NONE:
            return None
        return "multilevel" if self is GraphVariant.MULTILEVEL else "semantic"

    @property
    def build_options(self) -> Dict[str, Any]:
        """Keyword switches of the variant's builder (a fresh dict; empty without a graph)."""
        return dict(_SEMANTIC_OPTIONS.get(self, {}))

    @property
    def uses_graph(self) -> bool:
        """Whether the variant has a graph at all."""
        return self.builder is not None

    @property
    def text_only(self) -> bool:
        """Whether a model of this variant reads no node features (``paths``, ``none``)."""
        return self in (GraphVariant.PATHS, GraphVariant.NONE)


#: Li et al. Table 7: ``--graph-variant`` -> options of ``semantic.build_document_graph``
#: (``paths`` uses the full graph).
_SEMANTIC_OPTIONS: Dict[GraphVariant, Dict[str, Any]] = {
    GraphVariant.FULL: {},
    GraphVariant.SENTENCE: {"sentence_graph": True},
    GraphVariant.COREF: {"role_edges": False},
    GraphVariant.HOMOGENEOUS: {"homogeneous": True},
    GraphVariant.PATHS: {},
}
#: Zhang & Tan Table 3: ``--multilevel-ablation`` -> options of ``build_multilevel_graph``.
MULTILEVEL_ABLATIONS: Dict[str, Dict[str, Any]] = {
    "none": {},
    "no_topic_nodes": {"topic_nodes": False},
    "no_word_nodes": {"word_nodes": False},
}
#: Li et al. Table 7 ablations by name (the semantic variants that change the graph).
TABLE7_VARIANTS: Tuple[GraphVariant, ...] = (
    GraphVariant.FULL, GraphVariant.SENTENCE, GraphVariant.COREF, GraphVariant.HOMOGENEOUS)

_HELP = {
    "--graph-variant": "full: Li et al.'s semantic graph (concepts, role edges, coreference); "
    "sentence: passage and sentence nodes only; coref: no role edges; homogeneous: one node "
    "and edge type (Li Table 7); multilevel: Zhang & Tan's topic/segment/word graph; paths: "
    "the full semantic graph, which the graph selector reads as linearized paths after each "
    "candidate (Li's Graph Paths baseline); none: no graph (the selector's cross-encoder "
    "ranking baseline)",
    "--graph-parser": "semantic parser of semantic graphs (dep: spaCy, offline default; amr: "
    "precomputed penman graphs from --amr-file, or an amrlib parse model from "
    "--amr-model-dir). Multilevel graphs always use dep.",
    "--graph-coref": "coreference backend of semantic graphs (rule: deterministic resolver, "
    "offline default; coreferee: neural, needs `pip install coreferee` and its English "
    "model; none: no links)",
    "--amr-file": "penman AMR graphs of the sentences (--graph-parser amr)",
    "--amr-model-dir": "folder of an amrlib sentence-to-graph (stog) model used to parse "
    "sentences missing from --amr-file (--graph-parser amr)",
    "--multilevel-ablation": "multilevel: Zhang & Tan Table 3 graph ablation: none (the full "
    "graph), no_topic_nodes ('w/o topic nodes'), no_word_nodes ('w/o word nodes': segments "
    "only, so the selector's word-node loss has no targets)",
}


#: GraphConfig field -> the opt key of its option
OPTION_NAMES: Dict[str, str] = {
    "variant": "graph_variant", "parser": "graph_parser", "coref": "graph_coref",
    "amr_file": "amr_file", "amr_model_dir": "amr_model_dir",
    "multilevel_ablation": "multilevel_ablation",
}


@dataclass(frozen=True)
class GraphConfig:
    """
    One graph configuration: the variant and its backends (validated on creation:
    ``ValueError`` naming the offending option). Equal configs give equal graphs and
    equal store keys.
    """

    variant: GraphVariant = GraphVariant.FULL
    parser: str = "dep"
    coref: str = "rule"
    amr_file: Optional[str] = None
    amr_model_dir: Optional[str] = None
    multilevel_ablation: str = "none"

    def __post_init__(self) -> None:
        object.__setattr__(self, "variant", GraphVariant.parse(self.variant))
        object.__setattr__(self, "multilevel_ablation", self.multilevel_ablation or "none")
        if self.parser not in GRAPH_PARSERS:
            raise ValueError(f"unknown graph parser {self.parser!r}; choose one of {GRAPH_PARSERS}")
        if self.coref not in GRAPH_COREFS:
            raise ValueError(f"unknown coreference backend {self.coref!r}; choose one of "
                             f"{GRAPH_COREFS}")
        if self.multilevel_ablation not in MULTILEVEL_ABLATIONS:
            raise ValueError(f"unknown --multilevel-ablation {self.multilevel_ablation!r}; "
                             f"choose from {', '.join(MULTILEVEL_ABLATIONS)}")
        multilevel = self.variant is GraphVariant.MULTILEVEL
        if self.multilevel_ablation != "none" and not multilevel:
            raise ValueError(f"--multilevel-ablation {self.multilevel_ablation} applies to "
                             f"--graph-variant multilevel only (got {self.variant.value!r})")
        if multilevel and (self.parser != "dep" or self.coref != "rule"):
            raise ValueError("multilevel graphs are built with the dep parser and no "
                             "coreference backend choice (--graph-parser dep --graph-coref rule)")
        if self.parser == "amr" and not (self.amr_file or self.amr_model_dir):
            raise ValueError("--graph-parser amr needs --amr-file (precomputed penman graphs) "
                             "or --amr-model-dir (an installed amrlib stog model)")

    # ------------------------------------------------------------------ derived
    @property
    def builder(self) -> Optional[str]:
        """``"semantic"``, ``"multilevel"`` or ``None`` (the variant has no graph)."""
        return self.variant.builder

    @property
    def uses_graph(self) -> bool:
        return self.variant.uses_graph

    def build_options(self) -> Dict[str, Any]:
        """Keyword options of the builder (``--multilevel-ablation`` included)."""
        if self.builder == "multilevel":
            return dict(MULTILEVEL_ABLATIONS[self.multilevel_ablation])
        return self.variant.build_options

    def to_dict(self) -> Dict[str, Any]:
        """JSON-safe fields (inverse: ``GraphConfig(**d)``)."""
        out = asdict(self)
        out["variant"] = self.variant.value
        return out

    def describe(self) -> str:
        """The variant, with its multilevel ablation when set (one word for logs)."""
        if self.multilevel_ablation != "none":
            return f"{self.variant.value} ({self.multilevel_ablation})"
        return self.variant.value

    # ------------------------------------------------------------------ options
    @classmethod
    def from_opt(cls, opt: Mapping[str, Any]) -> "GraphConfig":
        """The config of the graph options in ``opt``; an absent (or ``None``) option takes
        the field's default, so the defaults live only in the dataclass."""
        given = {field: opt.get(option) for field, option in OPTION_NAMES.items()}
        return cls(**{field: value for field, value in given.items() if value is not None})

    @staticmethod
    def add_args(parser: Any, title: str = "docgraph graphs") -> None:
        """
        The one graph argument group, on an argparse (or ParlAI) parser. Options the parser
        already has are skipped: a teacher and an agent of one command both ask for them.
        """
        options: Tuple[Tuple[str, Dict[str, Any]], ...] = (
            ("--graph-variant", dict(type=str, choices=GraphVariant.names(), default="full")),
            ("--graph-parser", dict(choices=GRAPH_PARSERS, default="dep")),
            ("--graph-coref", dict(choices=GRAPH_COREFS, default="rule")),
            ("--amr-file", dict(default=None)),
            ("--amr-model-dir", dict(default=None)),
            ("--multilevel-ablation", dict(type=str, choices=list(MULTILEVEL_ABLATIONS),
                                           default="none")),
        )
        have = getattr(parser, "_option_string_actions", {})
        todo = [(option, kwargs) for option, kwargs in options if option not in have]
        if not todo:
            return
        group = parser.add_argument_group(title)
        for option, kwargs in todo:
            group.add_argument(option, help=_HELP[option], **kwargs)

    def command_args(self) -> List[str]:
        """The command-line options that reproduce this config (non-defaults only)."""
        default = GraphConfig()
        args: List[str] = []
        for option, field in (
            ("--graph-variant", "variant"), ("--graph-parser", "parser"),
            ("--graph-coref", "coref"), ("--amr-file", "amr_file"),
            ("--amr-model-dir", "amr_model_dir"), ("--multilevel-ablation", "multilevel_ablation"),
        ):
            value = getattr(self, field)
            if value != getattr(default, field):
                args += [option, str(value)]
        return args

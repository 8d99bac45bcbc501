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

from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from parlai_docgraph.graphs.builders import MULTILEVEL_ABLATIONS, builder_spec

GRAPH_PARSERS: Tuple[str, ...] = ("dep", "amr")
GRAPH_COREFS: Tuple[str, ...] = ("rule", "coreferee", "none")
#: ``--graph-coref-merge``: the ``coref_merge`` modes of ``semantic.build_document_graph``,
#: and ``unlinked`` (mode ``none`` without its ``coref`` edges: ``coref_edges=False``)
COREF_MERGES: Tuple[str, ...] = ("all", "passage", "none", "unlinked")


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
    def spec(self) -> "VariantSpec":
        """The variant's row of :data:`VARIANT_SPECS`."""
        return VARIANT_SPECS[self]

    @property
    def builder(self) -> Optional[str]:
        """The registered graph builder (:mod:`.builders`), ``None`` without a graph."""
        return self.spec.builder

    @property
    def build_options(self) -> Dict[str, Any]:
        """Keyword switches of the variant's builder (a fresh dict; empty without a graph)."""
        return dict(self.spec.build_options)

    @property
    def uses_graph(self) -> bool:
        """Whether the variant has a graph at all."""
        return self.builder is not None

    @property
    def text_only(self) -> bool:
        """Whether a model of this variant reads no node features (``paths``, ``none``)."""
        return self.spec.text_only


@dataclass(frozen=True)
class VariantSpec:
    """
    What a ``--graph-variant`` is made of: the graph ``builder`` (a name registered in
    :mod:`.builders`, ``None`` without a graph) and its ``build_options``; the ``selector``
    family that scores it (registered in ``models/selector/build.py``); whether that model
    reads node features (``text_only``: no); whether its graphs have concept nodes for the
    concept head (``concepts``) and keep their node and edge types (``typed``: no, one type
    for all, as Li et al.'s homogeneous ablation); and which paper's node text encoding
    ``--node-text-encoding auto`` means (``own_text`` or ``in_sentence``).
    """

    builder: Optional[str]
    selector: str = "dialog_aware"
    build_options: Mapping[str, Any] = field(default_factory=dict)
    text_only: bool = False
    node_text: str = "in_sentence"
    concepts: bool = True
    typed: bool = True


#: The variants, one row each: Li et al. Table 7 (builder options of
#: ``semantic.build_document_graph``; ``paths`` reads the full graph as text), Zhang & Tan's
#: multi-level graph, and no graph. A new variant is a member of :class:`GraphVariant` and
#: its row here.
VARIANT_SPECS: Dict[GraphVariant, VariantSpec] = {
    GraphVariant.FULL: VariantSpec("semantic"),
    GraphVariant.SENTENCE: VariantSpec("semantic", build_options={"sentence_graph": True},
                                       concepts=False),
    GraphVariant.COREF: VariantSpec("semantic", build_options={"role_edges": False}),
    GraphVariant.HOMOGENEOUS: VariantSpec("semantic", build_options={"homogeneous": True},
                                          typed=False),
    GraphVariant.MULTILEVEL: VariantSpec("multilevel", selector="multilevel",
                                         node_text="own_text"),
    GraphVariant.PATHS: VariantSpec("semantic", text_only=True),
    GraphVariant.NONE: VariantSpec(None, text_only=True, concepts=False),
}
#: Li et al. Table 7 ablations by name (the semantic variants that change the graph).
TABLE7_VARIANTS: Tuple[GraphVariant, ...] = (
    GraphVariant.FULL, GraphVariant.SENTENCE, GraphVariant.COREF, GraphVariant.HOMOGENEOUS)

def _option(option: str, default: Any, help: str, choices: Optional[Sequence[str]] = None) -> Any:
    """A :class:`GraphConfig` field and its command-line option: the one place that names
    the option, its default, choices and help (read by :meth:`GraphConfig.add_args`,
    :meth:`~GraphConfig.from_opt` and :meth:`~GraphConfig.command_args`)."""
    return field(default=default, metadata={"option": option, "choices": choices, "help": help})


@dataclass(frozen=True)
class GraphConfig:
    """
    One graph configuration: the variant and its backends (validated on creation:
    ``ValueError`` naming the offending option). Equal configs give equal graphs and
    equal store keys. Each field is also a command-line option (:func:`_option`).
    """

    variant: GraphVariant = _option(
        "--graph-variant", GraphVariant.FULL, choices=GraphVariant.names(),
        help="full: Li et al.'s semantic graph (concepts, role edges, coreference); "
        "sentence: passage and sentence nodes only; coref: no role edges; homogeneous: one node "
        "and edge type (Li Table 7); multilevel: Zhang & Tan's topic/segment/word graph; paths: "
        "the full semantic graph, which the graph selector reads as linearized paths after each "
        "candidate (Li's Graph Paths baseline); none: no graph (the selector's cross-encoder "
        "ranking baseline)")
    parser: str = _option(
        "--graph-parser", "dep", choices=GRAPH_PARSERS,
        help="semantic parser of semantic graphs (dep: spaCy, offline default; amr: "
        "precomputed penman graphs from --amr-file, or an amrlib parse model from "
        "--amr-model-dir). Multilevel graphs always use dep.")
    coref: str = _option(
        "--graph-coref", "rule", choices=GRAPH_COREFS,
        help="coreference backend of semantic graphs (rule: deterministic resolver, "
        "offline default; coreferee: neural, needs `pip install coreferee` and its English "
        "model; none: no links)")
    coref_merge: str = _option(
        "--graph-coref-merge", "all", choices=COREF_MERGES,
        help="semantic graphs: how a coreference cluster becomes concept nodes: all = one "
        "node per cluster (Li et al.); passage = one node per cluster and passage, the parts "
        "linked by coref edges; none = one node per mention, linked by coref edges; "
        "unlinked = one node per mention, no coref edges (coreference found, then ignored)")
    amr_file: Optional[str] = _option(
        "--amr-file", None, help="penman AMR graphs of the sentences (--graph-parser amr)")
    amr_model_dir: Optional[str] = _option(
        "--amr-model-dir", None,
        help="folder of an amrlib sentence-to-graph (stog) model used to parse "
        "sentences missing from --amr-file (--graph-parser amr)")
    multilevel_ablation: str = _option(
        "--multilevel-ablation", "none", choices=list(MULTILEVEL_ABLATIONS),
        help="multilevel: Zhang & Tan Table 3 graph ablation: none (the full "
        "graph), no_topic_nodes ('w/o topic nodes'), no_word_nodes ('w/o word nodes': segments "
        "only, so the selector's word-node loss has no targets)")

    def __post_init__(self) -> None:
        object.__setattr__(self, "variant", GraphVariant.parse(self.variant))
        object.__setattr__(self, "multilevel_ablation", self.multilevel_ablation or "none")
        if self.parser not in GRAPH_PARSERS:
            raise ValueError(f"unknown graph parser {self.parser!r}; choose one of {GRAPH_PARSERS}")
        if self.coref not in GRAPH_COREFS:
            raise ValueError(f"unknown coreference backend {self.coref!r}; choose one of "
                             f"{GRAPH_COREFS}")
        if self.coref_merge not in COREF_MERGES:
            raise ValueError(f"unknown --graph-coref-merge {self.coref_merge!r}; choose from "
                             f"{', '.join(COREF_MERGES)}")
        if self.multilevel_ablation not in MULTILEVEL_ABLATIONS:
            raise ValueError(f"unknown --multilevel-ablation {self.multilevel_ablation!r}; "
                             f"choose from {', '.join(MULTILEVEL_ABLATIONS)}")
        multilevel = self.variant is GraphVariant.MULTILEVEL
        if self.multilevel_ablation != "none" and not multilevel:
            raise ValueError(f"--multilevel-ablation {self.multilevel_ablation} applies to "
                             f"--graph-variant multilevel only (got {self.variant.value!r})")
        if multilevel and (self.parser != "dep" or self.coref != "rule"
                           or self.coref_merge != "all"):
            raise ValueError("multilevel graphs are built with the dep parser and no "
                             "coreference backend choice (--graph-parser dep --graph-coref rule "
                             "--graph-coref-merge all)")
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
        """Keyword options of the builder, as its :class:`~.builders.BuilderSpec` reads them
        from this config (``--coref-merge``, ``--multilevel-ablation``); empty without a
        graph."""
        if self.builder is None:
            return {}
        return builder_spec(self.builder).build_options(self)

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
    @staticmethod
    def options() -> List[Tuple[str, str, Dict[str, Any]]]:
        """``(field, --option, metadata)`` of every field, in declaration order."""
        return [(f.name, f.metadata["option"], dict(f.metadata)) for f in fields(GraphConfig)]

    @classmethod
    def from_opt(cls, opt: Mapping[str, Any]) -> "GraphConfig":
        """The config of the graph options in ``opt``; an absent (or ``None``) option takes
        the field's default, so the defaults live only in the field table."""
        given = {name: opt.get(option_key(option)) for name, option, _ in cls.options()}
        return cls(**{name: value for name, value in given.items() if value is not None})

    @staticmethod
    def add_args(parser: Any, title: str = "docgraph graphs") -> None:
        """
        The one graph argument group, on an argparse (or ParlAI) parser. Options the parser
        already has are skipped: a teacher and an agent of one command both ask for them.
        """
        defaults = GraphConfig()
        have = getattr(parser, "_option_string_actions", {})
        todo = [(name, option, meta) for name, option, meta in GraphConfig.options()
                if option not in have]
        if not todo:
            return
        group = parser.add_argument_group(title)
        for name, option, meta in todo:
            default = getattr(defaults, name)
            kwargs: Dict[str, Any] = {"default": str(default) if isinstance(default, Enum)
                                      else default, "help": meta["help"]}
            if meta["choices"] is not None:
                kwargs["choices"] = list(meta["choices"])
            group.add_argument(option, type=str, **kwargs)

    def command_args(self) -> List[str]:
        """The command-line options that reproduce this config (non-defaults only)."""
        default = GraphConfig()
        args: List[str] = []
        for name, option, _ in self.options():
            value = getattr(self, name)
            if value != getattr(default, name):
                args += [option, str(value)]
        return args


def option_key(option: str) -> str:
    """The opt key of a command-line option (``--graph-variant`` -> ``graph_variant``)."""
    return option.lstrip("-").replace("-", "_")


"""
Graph builders by name: how :class:`~.factory.GraphFactory` builds, extends and keys the
graphs of one builder (``GraphVariant.builder``: ``"semantic"`` or ``"multilevel"``).

A builder is a :class:`BuilderSpec` registered under its name with :func:`register_builder`.
A new builder is one module that defines its spec and registers it, plus the variant that
names it; the factory, the store key and the selector's graph lookup need no change. The
two built-in specs import their builders only when they build, so naming a builder loads
no parser.

No ParlAI imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from parlai_docgraph.graphs.schema import DocumentGraph

Items = Sequence[Tuple[str, Sequence[str]]]

#: Zhang & Tan Table 3: ``--multilevel-ablation`` -> options of ``build_multilevel_graph``.
MULTILEVEL_ABLATIONS: Dict[str, Dict[str, Any]] = {
    "none": {},
    "no_topic_nodes": {"topic_nodes": False},
    "no_word_nodes": {"word_nodes": False},
}


class BuilderSpec:
    """
    One graph builder. ``backends`` are what it needs loaded once per process (a parser, a
    coreference resolver); ``descriptions`` name them for logs and keys; ``options`` are
    the keyword options that enter the store key (:meth:`build` builds with them); ``key_backends`` is the backend part of
    a key (it may depend on the sentences, as an AMR file's coverage does).
    """

    name = ""
    #: whether :meth:`extend` can append passages to a stored graph
    extendable = False
    #: whether it parses sentences with the ``--graph-parser`` backend, which the graph
    #: store's sentence parse cache (:mod:`.parse_cache`) can serve
    reads_parses = False
    #: whether its graphs carry their own no-knowledge node (``meta["no_passage_node"]``);
    #: otherwise the selector appends one after the last node
    own_no_passage_node = False
    #: the :func:`~parlai_docgraph.models.selector.common.graph_index` entry whose nodes the
    #: selector's concept head scores
    concept_nodes = "concept_node"

    def build_options(self, config: Any) -> Dict[str, Any]:
        """The builder's keyword options for ``config`` (a :class:`~.config.GraphConfig`):
        its variant's ``build_options`` and the options the config adds."""
        return config.variant.build_options

    def backends(self, config: Any, parse_cache: Optional[str], parse_memo: int) -> Tuple[Any, ...]:
        return ()

    def descriptions(self, backends: Tuple[Any, ...]) -> List[str]:
        raise NotImplementedError

    def options(self, config: Any) -> Dict[str, Any]:
        return self.build_options(config)

    def key_backends(self, backends: Tuple[Any, ...], items: Items) -> List[str]:
        return self.descriptions(backends)

    def build(self, passages: Any, backends: Tuple[Any, ...], config: Any) -> DocumentGraph:
        raise NotImplementedError

    def extend(self, graph: DocumentGraph, new_passages: Any,
               backends: Tuple[Any, ...]) -> DocumentGraph:
        raise ValueError(f"cannot extend a {self.name} graph; build it whole")


class SemanticBuilder(BuilderSpec):
    """Li et al.'s semantic graph (:func:`~.semantic.build_document_graph`): a parser
    (``--graph-parser``, optionally behind the parse cache) and a coreference backend."""

    name = "semantic"
    extendable = True
    reads_parses = True

    def build_options(self, config: Any) -> Dict[str, Any]:
        """The variant's switches and ``--coref-merge`` (``unlinked``: no merge, no edges)."""
        options = config.variant.build_options
        if config.coref_merge == "unlinked":
            options.update(coref_merge="none", coref_edges=False)
        elif config.coref_merge != "all":
            options["coref_merge"] = config.coref_merge
        return options

    def backends(self, config: Any, parse_cache: Optional[str], parse_memo: int) -> Tuple[Any, ...]:
        from parlai_docgraph.graphs.coref import get_coref
        from parlai_docgraph.graphs.parsers import get_parser

        kwargs: Dict[str, Any] = {}
        if config.parser == "amr":
            kwargs = {"amr_file": config.amr_file, "model_dir": config.amr_model_dir}
        elif parse_memo:
            kwargs = {"memo_size": parse_memo}
        parser = get_parser(config.parser, **kwargs)
        if parse_cache:
            from parlai_docgraph.graphs.parse_cache import CachedParser, ParseCache

            parser = CachedParser(parser, ParseCache.for_store(parse_cache))
        return parser, get_coref(config.coref)

    def descriptions(self, backends: Tuple[Any, ...]) -> List[str]:
        parser, coref = backends
        return [parser.describe(), coref.describe()]

    def key_backends(self, backends: Tuple[Any, ...], items: Items) -> List[str]:
        parser, coref = backends
        sentences = [s for _, sents in items for s in sents]
        return [parser.cache_token(sentences), coref.describe()]

    def build(self, passages: Any, backends: Tuple[Any, ...], config: Any) -> DocumentGraph:
        from parlai_docgraph.graphs.semantic import build_document_graph

        parser, coref = backends
        return build_document_graph(passages, parser, coref, **self.options(config))

    def extend(self, graph: DocumentGraph, new_passages: Any,
               backends: Tuple[Any, ...]) -> DocumentGraph:
        from parlai_docgraph.graphs.semantic import extend_document_graph

        parser, coref = backends
        return extend_document_graph(graph, new_passages, parser, coref)


class MultilevelBuilder(BuilderSpec):
    """Zhang & Tan's topic / segment / word graph (:func:`~.multilevel.build_multilevel_graph`),
    always on the dependency parser and the rule resolver, which it loads itself."""

    name = "multilevel"
    own_no_passage_node = True
    concept_nodes = "word_node"

    def build_options(self, config: Any) -> Dict[str, Any]:
        """Zhang & Tan Table 3's ``--multilevel-ablation``."""
        return dict(MULTILEVEL_ABLATIONS[config.multilevel_ablation])

    def descriptions(self, backends: Tuple[Any, ...]) -> List[str]:
        from parlai_docgraph.graphs.coref import RuleCoref
        from parlai_docgraph.graphs.parsers.dep import DepParser

        return [DepParser(None).describe(), RuleCoref.version]

    def options(self, config: Any) -> Dict[str, Any]:
        from parlai_docgraph.graphs.multilevel import DROP_POS

        return dict(self.build_options(config), drop_pos=list(DROP_POS))

    def key_backends(self, backends: Tuple[Any, ...], items: Items) -> List[str]:
        from parlai_docgraph.graphs.multilevel import BUILDER_VERSION

        return self.descriptions(backends) + [f"multilevel-v{BUILDER_VERSION}"]

    def build(self, passages: Any, backends: Tuple[Any, ...], config: Any) -> DocumentGraph:
        from parlai_docgraph.graphs.multilevel import build_multilevel_graph

        return build_multilevel_graph(passages, **self.build_options(config))


class BuilderRegistry:
    """Builder specs by name (:func:`register_builder`, :func:`builder_spec`)."""

    def __init__(self, specs: Sequence[BuilderSpec] = ()) -> None:
        self._specs: Dict[str, BuilderSpec] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: BuilderSpec) -> BuilderSpec:
        if not spec.name:
            raise ValueError(f"{type(spec).__name__} has no name")
        if spec.name in self._specs and type(self._specs[spec.name]) is not type(spec):
            raise ValueError(f"a graph builder named {spec.name!r} is already registered "
                             f"({type(self._specs[spec.name]).__name__})")
        self._specs[spec.name] = spec
        return spec

    def get(self, name: str) -> BuilderSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise ValueError(f"no graph builder named {name!r}; registered: "
                             f"{', '.join(sorted(self._specs))}") from None

    def names(self) -> List[str]:
        return sorted(self._specs)


#: The process's builders, as ParlAI keeps its agent and teacher registries.
BUILDERS = BuilderRegistry([SemanticBuilder(), MultilevelBuilder()])


def register_builder(spec: BuilderSpec) -> BuilderSpec:
    """Register ``spec`` under ``spec.name`` (returns it, so a module can keep a handle)."""
    return BUILDERS.register(spec)


def builder_spec(name: str) -> BuilderSpec:
    """The spec registered as ``name``; ``ValueError`` naming the registered ones otherwise."""
    return BUILDERS.get(name)

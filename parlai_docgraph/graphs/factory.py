"""
:class:`GraphFactory`: the one place that builds graphs and computes their store keys.

A factory holds one :class:`~.config.GraphConfig` and its lazily loaded backends (parser
and coreference, once per process). ``parlai-docgraph build_graphs`` / ``show_graph``, the
teachers' ``--attach-graphs``, the graph selector's
:class:`~parlai_docgraph.models.selector.provider.GraphProvider` and the Ray engine all build
through it and look graphs up with :meth:`~.store.GraphStore.get_or_build`, so a graph one
of them stored is the graph the others find: the selector trains on the graphs
``build_graphs`` precomputed, it never builds them a second time.
"""

from __future__ import annotations

import hashlib
from typing import Any, Dict, List, Optional, Sequence, Tuple

from parlai_docgraph.graphs.config import GraphConfig
from parlai_docgraph.graphs.schema import SCHEMA_VERSION, DocumentGraph
from parlai_docgraph.graphs.store import canonical_json


def graph_key(
    passages: Sequence[Tuple[str, Sequence[str]]],
    builder: str,
    options: Dict[str, Any],
    backends: Sequence[Optional[str]],
) -> str:
    """SHA-256 hex key of a graph's inputs: schema version, builder, build options, backend
    descriptions and passages (canonical JSON), the key of its :class:`~.store.GraphStore` entry."""
    payload = {
        "schema_version": SCHEMA_VERSION, "builder": builder, "options": options,
        "backends": list(backends), "passages": [[t, list(s)] for t, s in passages],
    }
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


class GraphFactory:
    """
    Key, build and extend function of one graph configuration.

    ``parse_cache``: a graph store root whose sentence parse cache (:mod:`.parse_cache`)
    the parser of semantic graphs reads and fills; ``parse_memo``: sentences whose parses
    the ``dep`` parser keeps in memory (helps :meth:`extend` of stored graphs). Neither is
    part of any key: the graphs are the same with or without them. ``built`` and
    ``extended`` count the graphs this factory made (a test can assert that a run found
    every graph in the store).
    """

    def __init__(self, config: GraphConfig, parse_cache: Optional[str] = None,
                 parse_memo: int = 0) -> None:
        if not config.uses_graph:
            raise ValueError(f"--graph-variant {config.variant.value} has no graph to build")
        self.config = config
        self.parse_cache = None if parse_cache is None else str(parse_cache)
        self.parse_memo = parse_memo
        self._backends: Optional[Tuple[Any, Any]] = None
        self.built = 0
        self.extended = 0

    # ------------------------------------------------------------------ identity
    def state(self) -> Dict[str, Any]:
        """JSON-safe constructor arguments (for worker processes; :meth:`from_state`)."""
        return {"config": self.config.to_dict(), "parse_cache": self.parse_cache,
                "parse_memo": self.parse_memo}

    @classmethod
    def from_state(cls, state: Dict[str, Any]) -> "GraphFactory":
        """The factory of :meth:`state`'s output (backends not loaded yet)."""
        return cls(GraphConfig(**state["config"]), state.get("parse_cache"),
                   int(state.get("parse_memo") or 0))

    @property
    def builder(self) -> str:
        """``"semantic"`` or ``"multilevel"``."""
        return str(self.config.builder)

    def backends(self) -> Tuple[Any, Any]:
        """``(parser, coref)`` of semantic graphs, created on first call (their pipelines
        load on first use: :meth:`load`); ``(None, None)`` for multilevel graphs."""
        if self._backends is None:
            if self.builder != "semantic":
                self._backends = (None, None)
                return self._backends
            from parlai_docgraph.graphs.coref import get_coref
            from parlai_docgraph.graphs.parsers import get_parser

            config = self.config
            kwargs: Dict[str, Any] = {}
            if config.parser == "amr":
                kwargs = {"amr_file": config.amr_file, "model_dir": config.amr_model_dir}
            elif self.parse_memo:
                kwargs = {"memo_size": self.parse_memo}
            parser = get_parser(config.parser, **kwargs)
            if self.parse_cache:
                from parlai_docgraph.graphs.parse_cache import CachedParser, ParseCache

                parser = CachedParser(parser, ParseCache.for_store(self.parse_cache))
            self._backends = (parser, get_coref(config.coref))
        return self._backends

    def descriptions(self) -> List[str]:
        """Parser and coreference descriptions (loads the parser pipeline)."""
        parser, coref = self.backends()
        if self.builder == "semantic":
            return [parser.describe(), coref.describe()]
        from parlai_docgraph.graphs.coref import RuleCoref
        from parlai_docgraph.graphs.parsers.dep import DepParser

        return [DepParser(None).describe(), RuleCoref.version]

    def load(self) -> "GraphFactory":
        """Create the backends and load their pipelines now (a worker's start-up; a
        backend that cannot load raises here)."""
        self.descriptions()
        return self

    def describe(self) -> str:
        """One line naming the builder, variant and backends."""
        return (f"{self.builder} graph, --graph-variant {self.config.describe()}, backends "
                f"{', '.join(self.descriptions())}")

    def options(self) -> Dict[str, Any]:
        """The builder keyword options of this config, as they enter the key."""
        options = self.config.build_options()
        if self.builder == "multilevel":
            from parlai_docgraph.graphs.multilevel import DROP_POS

            options["drop_pos"] = list(DROP_POS)
        return options

    # ------------------------------------------------------------------ graphs
    def key(self, passages: Any) -> str:
        """The store key of ``passages``' graph; ``ValueError`` for malformed passages."""
        from parlai_docgraph.graphs.semantic import check_passages

        items = check_passages(passages)
        return graph_key(items, self.builder, self.options(), self._key_backends(items))

    def _key_backends(self, items: Sequence[Tuple[str, Sequence[str]]]) -> List[str]:
        """The backend part of a key: parser token (AMR: of these sentences) and coref."""
        if self.builder == "semantic":
            parser, coref = self.backends()
            sentences = [s for _, sents in items for s in sents]
            return [parser.cache_token(sentences), coref.describe()]
        from parlai_docgraph.graphs.multilevel import BUILDER_VERSION

        return self.descriptions() + [f"multilevel-v{BUILDER_VERSION}"]

    def build(self, passages: Any) -> DocumentGraph:
        """Build the graph of ``passages``."""
        self.built += 1
        if self.builder == "semantic":
            from parlai_docgraph.graphs.semantic import build_document_graph

            parser, coref = self.backends()
            return build_document_graph(passages, parser, coref, **self.options())
        from parlai_docgraph.graphs.multilevel import build_multilevel_graph

        return build_multilevel_graph(passages, **self.config.build_options())

    def extend(self, graph: DocumentGraph, new_passages: Any) -> DocumentGraph:
        """``graph`` with ``new_passages`` appended (:func:`~.semantic.extend_document_graph`;
        semantic graphs only, ``ValueError`` otherwise)."""
        if self.builder != "semantic":
            raise ValueError(f"cannot extend a {self.builder} graph; build it whole")
        from parlai_docgraph.graphs.semantic import extend_document_graph

        self.extended += 1
        parser, coref = self.backends()
        return extend_document_graph(graph, new_passages, parser, coref)

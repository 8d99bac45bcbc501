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

from parlai_docgraph.graphs.builders import BuilderSpec, builder_spec
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
        self._backends: Optional[Tuple[Any, ...]] = None
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
        """The builder's registered name (:mod:`.builders`): ``"semantic"``, ``"multilevel"``."""
        return str(self.config.builder)

    @property
    def spec(self) -> BuilderSpec:
        """The registered :class:`~.builders.BuilderSpec` of :attr:`builder`."""
        return builder_spec(self.builder)

    def backends(self) -> Tuple[Any, ...]:
        """The builder's backends (semantic graphs: ``(parser, coref)``, behind the parse
        cache when one is set), created on first call; their pipelines load on first use
        (:meth:`load`)."""
        if self._backends is None:
            self._backends = self.spec.backends(self.config, self.parse_cache, self.parse_memo)
        return self._backends

    def descriptions(self) -> List[str]:
        """The backends' descriptions (loads the parser pipeline)."""
        return self.spec.descriptions(self.backends())

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
        return self.spec.options(self.config)

    # ------------------------------------------------------------------ graphs
    def key(self, passages: Any) -> str:
        """The store key of ``passages``' graph; ``ValueError`` for malformed passages."""
        from parlai_docgraph.graphs.semantic import check_passages

        items = check_passages(passages)
        return graph_key(items, self.builder, self.options(),
                         self.spec.key_backends(self.backends(), items))

    def build(self, passages: Any) -> DocumentGraph:
        """Build the graph of ``passages``."""
        self.built += 1
        return self.spec.build(passages, self.backends(), self.config)

    def extend(self, graph: DocumentGraph, new_passages: Any) -> DocumentGraph:
        """``graph`` with ``new_passages`` appended (semantic graphs:
        :func:`~.semantic.extend_document_graph`); ``ValueError`` for a builder that cannot
        extend."""
        if not self.spec.extendable:
            raise ValueError(f"cannot extend a {self.builder} graph; build it whole")
        self.extended += 1
        return self.spec.extend(graph, new_passages, self.backends())

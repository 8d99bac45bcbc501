"""
Documents -> graphs (no ParlAI imports here).

- :mod:`.schema`: :class:`DocumentGraph`, typed nodes/edges, versioned vocabularies.
- :mod:`.parsers`: semantic parser backends (``dep`` spaCy default; ``amr`` penman graphs or an amrlib model).
- :mod:`.coref`: coreference backends (rule-based default); :mod:`.neural_coref`: the
  coreferee adapter (``coref="coreferee"``, when installed).
- :mod:`.semantic`: Li et al.'s document semantic graph, :func:`build_document_graph`
  (``extend_document_graph`` appends later-retrieved passages).
- :mod:`.multilevel`: Zhang & Tan's multi-level graph, :func:`build_multilevel_graph`.
- :mod:`.store`: :class:`~.store.GraphStore`, the content-hash keyed, versioned graph store
  (atomic, resumable, sharded).
- :mod:`.config`: the graph options (:class:`GraphVariant`, :class:`GraphConfig`, one
  argument group); :mod:`.factory`: :class:`~.factory.GraphFactory`, the one place that
  builds a config's graphs and computes their store keys (used by the CLI, the teachers'
  ``--attach-graphs`` and the graph selector).
- :mod:`.embed`: initial node vectors from a frozen encoder; :mod:`.embed_cache`: their
  versioned on-disk cache.
- :mod:`.render`: self-contained HTML page of a graph.

Heavy dependencies (spaCy, torch) are imported lazily, on first use.
"""

from parlai_docgraph.graphs.schema import (
    CONCEPT_KINDS,
    EDGE_TYPES,
    NODE_TYPES,
    ROLE_EDGE_TYPES,
    SCHEMA_VERSION,
    DocumentGraph,
    Edge,
    Node,
)
from parlai_docgraph.graphs.multilevel import build_multilevel_graph
from parlai_docgraph.graphs.config import GraphConfig, GraphVariant
from parlai_docgraph.graphs.semantic import build_document_graph, extend_document_graph

__all__ = [
    "CONCEPT_KINDS", "EDGE_TYPES", "NODE_TYPES", "ROLE_EDGE_TYPES",
    "SCHEMA_VERSION", "DocumentGraph", "Edge", "GraphConfig", "GraphVariant", "Node",
    "build_document_graph", "build_multilevel_graph", "extend_document_graph",
]

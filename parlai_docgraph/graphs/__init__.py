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

The names below are imported on first use (:mod:`parlai_docgraph.lazy`): importing one
module of the package (``knowledge_lines``, ``corpus``) loads neither the builders nor
spaCy; heavy dependencies (spaCy, torch) are imported when first needed.
"""

from parlai_docgraph.lazy import lazy_exports

_EXPORTS = {
    **{name: "schema" for name in ("CONCEPT_KINDS", "EDGE_TYPES", "NODE_TYPES",
                                   "ROLE_EDGE_TYPES", "SCHEMA_VERSION", "DocumentGraph",
                                   "Edge", "Node")},
    "GraphConfig": "config", "GraphVariant": "config",
    "build_document_graph": "semantic", "extend_document_graph": "semantic",
    "build_multilevel_graph": "multilevel",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

"""
Li et al. (2.1) document semantic graph: passages, sentences and concepts.

:func:`build_document_graph` turns ``[(title, [sentence, ...]), ...]`` into a
:class:`~.schema.DocumentGraph` with

- one ``passage`` node per passage (text = title) and one ``sentence`` node per sentence
  (``sentence`` = global index over all passages, in order);
- ``concept`` nodes of kind ``entity`` for every predicate argument (and possessor or
  appositive) the parser finds, grounded to a span of its sentence; the mentions of one
  coreference cluster are merged into one node named by the longest mention (ties: more
  capitalised words, then the earliest), whose ``mentions`` keeps every merged
  ``(sentence, start, end)`` while ``sentence``/``span`` point at the canonical one;
- ``concept`` nodes of kind ``predicate`` for each predicate with arguments (the AMR
  predicate concept the role edges start from; never merged);
- edges ``passage_sentence`` (passage -> each of its sentences), ``next_sentence`` (sentence
  -> the next one of the same passage, narrative order; passages are separate documents),
  ``sentence_concept`` (sentence -> every concept with a mention in it), role edges
  predicate -> argument labelled ``ARG0``.. / ``obl`` and argument -> possessor ``poss``, and
  ``coref`` edges (each other part of a split cluster -> the part holding the canonical
  mention) when a cluster is not fully merged (``coref_merge`` other than ``"all"``).

Ablations of Li Table 7 (their switches by name:
:attr:`~.config.GraphVariant.build_options`):

- sentence graph (``sentence_graph=True``): passage and sentence nodes with their structure
  edges only; no parser, no coreference, no concepts.
- coreference graph (``role_edges=False``): the full graph without the AMR role edges;
  concepts, their sentence edges and coreference merges/edges stay.
- homogeneous graph (``homogeneous=True``): every edge gets the single type ``edge``
  (duplicates collapse) and ``meta["homogeneous"]`` makes ``to_tensors`` give every node type
  id 0; node ``type`` fields stay so sentence and concept selection targets are known.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple, Union

from parlai_docgraph.graphs.assembly import SemanticAssembly, start_run
from parlai_docgraph.graphs.coref import get_coref
from parlai_docgraph.graphs.parsers import Parser, get_parser
from parlai_docgraph.graphs.schema import DocumentGraph

Passages = Sequence[Tuple[str, Sequence[str]]]

COREF_MERGE_MODES = ("all", "passage", "none")


def check_passages(passages: Any) -> List[Tuple[str, List[str]]]:
    """Validate ``passages``; ``ValueError`` naming the offending position otherwise."""
    if isinstance(passages, (str, bytes, dict)) or not isinstance(passages, (list, tuple)):
        raise ValueError(
            f"passages must be a list of (title, [sentences]), got {type(passages).__name__}"
        )
    out = []
    for p, item in enumerate(passages):
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise ValueError(f"passages[{p}] must be a (title, [sentences]) pair, got {item!r:.80}")
        title, sentences = item
        if not isinstance(title, str):
            raise ValueError(f"passages[{p}] title must be str, got {type(title).__name__}")
        if isinstance(sentences, (str, bytes)) or not isinstance(sentences, (list, tuple)):
            raise ValueError(
                f"passages[{p}] sentences must be a list of str, got {type(sentences).__name__}"
            )
        for s, sent in enumerate(sentences):
            if not isinstance(sent, str):
                raise ValueError(
                    f"passages[{p}] sentence {s} must be str, got {type(sent).__name__}"
                )
        out.append((title, list(sentences)))
    return out


def build_document_graph(
    passages: Passages,
    parser: Union[str, Parser] = "dep",
    coref: Union[str, Any] = "rule",
    *,
    sentence_graph: bool = False,
    role_edges: bool = True,
    coref_edges: bool = True,
    coref_merge: str = "all",
    homogeneous: bool = False,
) -> DocumentGraph:
    """
    Build Li et al.'s document semantic graph of ``passages`` (see the module docstring).

    ``parser``/``coref``: a registered backend name or an instance (reuse one across calls
    to share its loaded pipeline). ``coref_merge``: ``"all"`` merges a cluster into one node
    (the paper), ``"passage"`` merges within each passage and links the parts with ``coref``
    edges, ``"none"`` keeps one node per mention linked by ``coref`` edges.
    """
    items = check_passages(passages)
    if coref_merge not in COREF_MERGE_MODES:
        raise ValueError(f"coref_merge must be one of {COREF_MERGE_MODES}, got {coref_merge!r}")
    options = {
        "sentence_graph": sentence_graph, "role_edges": role_edges, "coref_edges": coref_edges,
        "coref_merge": coref_merge, "homogeneous": homogeneous,
    }
    if sentence_graph:
        return _assembled(items, None, None, options)
    backend = get_parser(parser) if isinstance(parser, str) else parser
    resolver = get_coref(coref) if isinstance(coref, str) else coref
    return _assembled(items, backend, resolver, options)


def _assembled(items: List[Tuple[str, List[str]]], parser: Any, resolver: Any,
               options: Dict[str, Any]) -> DocumentGraph:
    """The graph of ``items`` made by a :class:`~.assembly.SemanticAssembly` (the one
    assembly), which the graph keeps (not serialised) so :func:`extend_document_graph` can
    go on from it when it is incremental (the ``coref_merge="all"`` graph over an
    incremental coreference run)."""
    describe = (None, None) if parser is None else (parser.describe(), resolver.describe())
    run = None if resolver is None else start_run(resolver)
    assembly = SemanticAssembly(parser, run, options, describe)
    graph = assembly.add(items)
    if options["coref_merge"] == "all" and getattr(run, "incremental", True):
        graph.assembly = assembly  # extend_document_graph goes on from it
    return graph


def graph_passages(graph: DocumentGraph) -> List[Tuple[str, List[str]]]:
    """The ``(title, [sentences])`` list a graph was built from (from its nodes)."""
    passages: List[Tuple[str, List[str]]] = []
    for node in graph.nodes:
        if node.type == "passage":
            passages.append((node.text, []))
        elif node.type == "sentence":
            passages[node.passage][1].append(node.text)
    return passages


def extend_document_graph(
    graph: DocumentGraph,
    new_passages: Passages,
    parser: Union[str, Parser] = "dep",
    coref: Union[str, Any] = "rule",
) -> DocumentGraph:
    """
    The graph of ``graph``'s passages followed by ``new_passages`` (passages retrieved at a
    later turn), with ``graph``'s build options, at the cost of the new passages only.

    When ``graph`` was made in this process by :func:`build_document_graph` or by an earlier
    extension (the paper's ``coref_merge="all"`` graph, its ablations, a coreference backend
    with an incremental run such as ``rule`` or ``none``), only the new sentences are parsed
    and resolved (against all earlier mentions) and new nodes are appended; the assembly
    moves to the returned graph (``graph`` itself is unchanged; extending ``graph`` a second
    time rebuilds it first). Otherwise (a graph loaded from a store, other merge modes,
    ``coreferee``) ``graph``'s passages are built again first (pass a memoising parser, e.g.
    ``DepParser(memo_size=...)`` or a :class:`~.parse_cache.CachedParser`, to skip
    re-parsing).

    Result: equal to ``build_document_graph`` of all passages up to node ids (compare with
    :func:`~.assembly.canonical_form`), with one approximation: an apposition in a new
    passage never merges two entities of earlier passages (``meta["extend"]["kept_apart"]``
    counts them). ``ValueError`` when ``graph`` was not built by this module or
    ``parser``/``coref`` differ from its backends.
    """
    if graph.meta.get("builder") != "semantic":
        raise ValueError(f"cannot extend a graph built by {graph.meta.get('builder')!r}")
    new = check_passages(new_passages)
    options = dict(graph.meta.get("options", {}))
    if not options.get("sentence_graph"):
        backend = get_parser(parser) if isinstance(parser, str) else parser
        resolver = get_coref(coref) if isinstance(coref, str) else coref
        for what, have, want in (
            ("parser", backend.describe(), graph.meta.get("parser")),
            ("coref", resolver.describe(), graph.meta.get("coref")),
        ):
            if have != want:
                raise ValueError(f"graph was built with {what} {want!r}, extending with {have!r}")
        parser, coref = backend, resolver
    assembly = getattr(graph, "assembly", None)
    if assembly is None:
        base = build_document_graph(graph_passages(graph), parser, coref, **options)
        assembly = getattr(base, "assembly", None)
        if assembly is None:  # not incremental: one build of all passages
            return build_document_graph(graph_passages(graph) + new, parser, coref, **options)
    if assembly.parser is not None:
        assembly.parser = parser
    extended = assembly.add(new)
    graph.assembly = None
    extended.assembly = assembly
    return extended

"""
The one assembly of Li et al.'s document semantic graph: every graph of
:func:`~.semantic.build_document_graph` (its ablations and coreference merge modes) is made
here, incrementally for the paper's ``coref_merge="all"`` graph over an incremental
coreference run, in one batch otherwise (:class:`ClusterRun` adapts a backend that resolves
whole documents, coreferee).

:class:`SemanticAssembly` adds passages batch by batch: nodes and edges of the new
passages, their mentions resolved by an incremental coreference run
(:meth:`~.coref.RuleCoref.start`) against every earlier mention, and in place updates of the
few earlier concept nodes that new mentions join (``mentions`` grows; the canonical name,
span and sentence follow the longest mention). Nothing earlier is revisited, so one batch
costs its own sentences: parsing them, resolving their mentions (indexed lookups of earlier
mentions) and O(1) work per new node and edge, plus one shallow copy of the node and edge
lists so the graph of the previous batch stays unchanged.

A single batch gives exactly ``build_document_graph``'s graph (same node ids, edge order and
metadata). Over several batches the graph equals a rebuild up to node ids (new nodes are
appended: a rebuild numbers passages and sentences before every concept), except that an
apposition in a new passage never merges two entities of earlier passages into one (a
retroactive merge would renumber nodes); ``meta["extend"]["kept_apart"]`` counts those.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from parlai_docgraph.graphs.parsers.base import ParsedSentence
from parlai_docgraph.graphs.schema import SCHEMA_VERSION, DocumentGraph, GraphBuilder, MentionRef, Node


def _canonical_key(ref: MentionRef, text: str) -> Tuple[int, int, int, int]:
    """Longest mention first; ties go to the one with more capitalised words, then the earliest."""
    return (len(text), sum(w[:1].isupper() for w in text.split()), -ref[0], -ref[1])


class ClusterRun:
    """
    :class:`~.coref.RuleCorefRun`'s interface over a backend that resolves a whole document at once
    (``resolve`` only: coreferee): one batch, its clusters from ``resolve``, every other
    mention alone. It is not incremental: a second :meth:`add` raises ``ValueError`` (an
    extension of such a graph is built whole again).
    """

    kept_apart = 0
    incremental = False

    def __init__(self, resolver: Any) -> None:
        self.resolver = resolver
        self.first: Dict[Any, MentionRef] = {}
        self.sentences = 0
        self._clusters: List[Tuple[MentionRef, ...]] = []
        self._cluster_of: Dict[MentionRef, int] = {}

    def add(self, parsed: Sequence[ParsedSentence], keep_earlier_apart: bool = False) -> None:
        """Resolve ``parsed``, the whole document (the first and only batch)."""
        if self.sentences:
            raise ValueError(f"{self.resolver.describe()} resolves whole documents: "
                             "build the graph of all passages instead of extending it")
        self._clusters = list(self.resolver.resolve(parsed))
        for c, refs in enumerate(self._clusters):
            for ref in refs:
                self._cluster_of[ref] = c
        for s, ps in enumerate(parsed):
            for m in ps.mentions():
                ref = (s, m.start, m.end)
                key = self.cluster_of(ref)
                self.first[key] = min(self.first.get(key, ref), ref)
        self.sentences = len(parsed)

    def cluster_of(self, ref: MentionRef) -> Any:
        """The index of ``ref``'s cluster, or ``ref`` itself for a mention in none."""
        return self._cluster_of.get(ref, ref)

    def clusters(self) -> List[Tuple[MentionRef, ...]]:
        """The backend's clusters, in its order."""
        return list(self._clusters)


def start_run(resolver: Any) -> Any:
    """An incremental run of ``resolver`` (``resolver.start()``), or a one-batch
    :class:`ClusterRun` for a backend without one."""
    return resolver.start() if hasattr(resolver, "start") else ClusterRun(resolver)


class SemanticAssembly:
    """
    The growing graph of passages added so far (see the module docstring). ``parser`` and
    ``run`` (a coreference run: incremental, or a one-batch :class:`ClusterRun`; ``None``
    for the sentence graph) are used for every batch; ``options`` are
    ``build_document_graph``'s. ``coref_merge`` other than ``"all"`` (one batch only): a
    cluster's mentions merge within each passage (``"passage"``) or not at all (``"none"``),
    the parts linked by ``coref`` edges to the part of the canonical mention
    (``coref_edges``).
    """

    def __init__(self, parser: Any, run: Any, options: Dict[str, Any],
                 describe: Tuple[Optional[str], Optional[str]] = (None, None)) -> None:
        self.parser, self.run, self.options = parser, run, dict(options)
        self.b = GraphBuilder()
        self.collapsed: Optional[GraphBuilder] = GraphBuilder() if options.get("homogeneous") else None
        self.passages = 0
        self.sentence_node: List[int] = []
        self.passage_of: List[int] = []
        self.node_of_ref: Dict[MentionRef, int] = {}
        #: entity node id -> (canonical key, canonical ref, its text)
        self.canon: Dict[int, Tuple[Tuple[int, int, int, int], MentionRef, str]] = {}
        self.meta: Dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "builder": "semantic",
            "parser": describe[0], "coref": describe[1], "options": dict(options),
            "homogeneous": bool(options.get("homogeneous")), "num_passages": 0,
            "num_sentences": 0,
        }
        self.batches = 0

    # ---------------------------------------------------------------- batches
    def add(self, passages: Sequence[Tuple[str, Sequence[str]]]) -> DocumentGraph:
        """Append ``passages`` (checked ``(title, [sentences])``); the graph so far."""
        b = self.b
        first_sentence = len(self.sentence_node)
        sentences: List[str] = []
        for title, sents in passages:
            p = self.passages
            pid = b.node(type="passage", text=title, passage=p)
            prev: Optional[int] = None
            for sent in sents:
                sid = b.node(type="sentence", text=sent, passage=p,
                             sentence=len(self.sentence_node))
                sentences.append(sent)
                self.sentence_node.append(sid)
                self.passage_of.append(p)
                self._edge(pid, sid, "passage_sentence")
                if prev is not None:
                    self._edge(prev, sid, "next_sentence")
                prev = sid
            self.passages += 1
        if self.run is not None:
            parsed = self.parser.parse(sentences)
            self.run.add(parsed, keep_earlier_apart=self.batches > 0)
            self._concepts(parsed, first_sentence)
        self.batches += 1
        self.meta.update(num_passages=self.passages, num_sentences=len(self.sentence_node))
        if self.batches > 1:
            self.meta["extend"] = {"batches": self.batches,
                                   "kept_apart": getattr(self.run, "kept_apart", 0)}
        edges = self.collapsed.edges if self.collapsed is not None else b.edges
        return DocumentGraph(nodes=list(b.nodes), edges=list(edges), meta=dict(self.meta))

    def _edge(self, src: int, dst: int, edge_type: str) -> None:
        before = len(self.b.edges)
        self.b.edge(src, dst, edge_type)
        if self.collapsed is not None and len(self.b.edges) > before:
            self.collapsed.edge(src, dst, "edge")

    def _concepts(self, parsed: Sequence[ParsedSentence], base: int) -> None:
        """Entity and predicate nodes of the new sentences (numbered from ``base``): the
        mentions grouped into new entity nodes or joined to earlier ones, then each
        sentence's concept edges, predicates and role edges."""
        text: Dict[MentionRef, str] = {}
        in_sentence: Dict[int, List[MentionRef]] = {}
        for g, ps in enumerate(parsed, base):
            for m in ps.mentions():
                text[(g, m.start, m.end)] = m.text
                in_sentence.setdefault(g, []).append((g, m.start, m.end))
        groups, joined = self._groups(text, base)
        for refs in groups.values():
            self._entity_node(refs, text)
        options = self.options
        if options.get("coref_merge", "all") != "all" and options.get("coref_edges", True):
            self._coref_edges(text)
        for nid, refs in joined.items():
            self._join(nid, refs, text)
        for g, ps in enumerate(parsed, base):
            self._sentence_concepts(g, ps, in_sentence.get(g, ()))

    def _groups(self, text: Dict[MentionRef, str], base: int
                ) -> Tuple[Dict[Any, List[MentionRef]], Dict[int, List[MentionRef]]]:
        """``(groups, joined)``: the new mentions of each new entity node (by
        ``coref_merge``: a cluster, a cluster within a passage, or one mention), and the
        new mentions joining each earlier node (a cluster that began in an earlier batch)."""
        run, merge = self.run, self.options.get("coref_merge", "all")
        groups: Dict[Any, List[MentionRef]] = {}
        joined: Dict[int, List[MentionRef]] = {}
        for ref in sorted(text):
            cluster = run.cluster_of(ref)
            if merge == "none":  # one node per mention
                groups[ref] = [ref]
            elif merge == "passage":  # a cluster's mentions merged within each passage
                groups.setdefault((cluster, self.passage_of[ref[0]]), []).append(ref)
            elif run.first[cluster][0] < base:
                joined.setdefault(self.node_of_ref[run.first[cluster]], []).append(ref)
            else:
                groups.setdefault(cluster, []).append(ref)
        return groups, joined

    def _entity_node(self, refs: List[MentionRef], text: Dict[MentionRef, str]) -> None:
        """A new entity node for the mentions ``refs``, named by the canonical one."""
        canon = max(refs, key=lambda r: _canonical_key(r, text[r]))
        nid = self.b.node(
            type="concept", text=text[canon], passage=self.passage_of[canon[0]],
            sentence=canon[0], span=(canon[1], canon[2]), mentions=tuple(refs),
            kind="entity",
        )
        self.canon[nid] = (_canonical_key(canon, text[canon]), canon, text[canon])
        for ref in refs:
            self.node_of_ref[ref] = nid

    def _coref_edges(self, text: Dict[MentionRef, str]) -> None:
        """``coref`` edges from each part of a split cluster to the canonical mention's."""
        for refs in self.run.clusters():
            refs = [r for r in refs if r in text]
            if refs:
                canon = self.node_of_ref[max(refs, key=lambda r: _canonical_key(r, text[r]))]
                for ref in refs:
                    self._edge(self.node_of_ref[ref], canon, "coref")

    def _join(self, nid: int, refs: List[MentionRef], text: Dict[MentionRef, str]) -> None:
        """Earlier node ``nid`` updated in place with its new mentions ``refs`` (the
        canonical name, span and sentence follow the longest mention)."""
        best = max([self.canon[nid]] + [(_canonical_key(r, text[r]), r, text[r]) for r in refs])
        self.canon[nid] = best
        _, canon, name = best
        old = self.b.nodes[nid]
        self.b.nodes[nid] = Node(
            id=nid, type="concept", text=name, passage=self.passage_of[canon[0]],
            sentence=canon[0], span=(canon[1], canon[2]), mentions=old.mentions + tuple(refs),
            kind="entity",
        )
        for ref in refs:
            self.node_of_ref[ref] = nid

    def _sentence_concepts(self, g: int, ps: ParsedSentence, refs: Sequence[MentionRef]) -> None:
        """Sentence ``g``'s edges to its entity nodes (``refs``), its predicate nodes and,
        unless ``role_edges`` is off, the role edges of its predicates and relations."""
        b, role_edges = self.b, self.options.get("role_edges", True)
        sid = self.sentence_node[g]
        for ref in sorted(refs):
            self._edge(sid, self.node_of_ref[ref], "sentence_concept")
        for pred in ps.predicates:
            pid = b.node(
                type="concept", text=pred.text, passage=self.passage_of[g], sentence=g,
                span=(pred.start, pred.end), mentions=((g, pred.start, pred.end),),
                kind="predicate",
            )
            self._edge(sid, pid, "sentence_concept")
            if role_edges:
                for arg in pred.arguments:
                    self._edge(pid, self.node_of_ref[(g, *arg.mention.key)], arg.role)
        if role_edges:
            for rel in ps.relations:
                self._edge(self.node_of_ref[(g, *rel.src.key)],
                           self.node_of_ref[(g, *rel.dst.key)], rel.role)


def canonical_form(graph: DocumentGraph) -> Tuple[Any, Any]:
    """
    The graph without node ids: the sorted node records and the sorted edges between them,
    for comparing an extended graph with a rebuild (equal up to node numbering).
    """

    def record(n: Node) -> Tuple[Any, ...]:
        return (n.type, n.text, n.passage, n.sentence, n.span, tuple(sorted(n.mentions)), n.kind)

    rec = [record(n) for n in graph.nodes]
    return sorted(rec, key=repr), sorted(((rec[e.src], rec[e.dst], e.type) for e in graph.edges),
                                         key=repr)


__all__ = ["SemanticAssembly", "canonical_form"]

"""
The document graph data structure shared by every graph builder.

A :class:`DocumentGraph` is a list of typed :class:`Node` objects (ids ``0..N-1``, equal to
their position), a list of typed directed :class:`Edge` objects and a json-safe ``meta``
dict recording which backends built it. Node and edge type vocabularies are fixed module
constants, versioned by :data:`SCHEMA_VERSION`: a type id (the position in the vocabulary)
means the same thing in every graph of one schema version, so ablations are switches on
the builder rather than forks of the schema.

Node fields:

- ``type``: one of :data:`NODE_TYPES`.
- ``text``: passage title, sentence text, or the concept's canonical surface text.
- ``passage``: index of the passage the node belongs to (for a merged concept, the passage
  of its canonical mention).
- ``sentence``: global sentence index (counted over all passages in order), ``None`` for
  passage and topic nodes.
- ``span``: ``(start, end)`` character offsets inside sentence ``sentence`` with
  ``sentence_text[start:end] == text``; only for concept and word nodes.
- ``mentions``: every ``(sentence, start, end)`` mention merged into the node, canonical one
  included (a concept merged by coreference keeps all its mentions here, while
  ``sentence``/``span``/``text`` hold the canonical = longest mention).
- ``kind``: for concept nodes one of :data:`CONCEPT_KINDS` (``entity`` for predicate
  arguments, ``predicate`` for the predicate a role edge starts from), else ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

SCHEMA_VERSION = 1

NODE_TYPES: Tuple[str, ...] = ("passage", "sentence", "concept", "topic", "word")

#: Role labels of concept-concept edges (AMR core roles, then non-core analogues).
ROLE_EDGE_TYPES: Tuple[str, ...] = (
    "ARG0", "ARG1", "ARG2", "ARG3", "ARG4", "ARG5", "mod", "poss", "compound", "obl",
)

#: Document-structure edges of Li et al. (2.1).
STRUCTURE_EDGE_TYPES: Tuple[str, ...] = (
    "passage_sentence", "sentence_concept", "next_sentence",
)

#: Reserved for the multi-level graph of Zhang & Tan (3.2), so adding it needs no new version.
MULTILEVEL_EDGE_TYPES: Tuple[str, ...] = (
    "topic_sentence", "sentence_word", "word_word", "prep_bridge", "self_loop",
)

#: ``edge`` is the single type of the homogeneous ablation graph.
EDGE_TYPES: Tuple[str, ...] = (
    STRUCTURE_EDGE_TYPES + ROLE_EDGE_TYPES + ("coref",) + MULTILEVEL_EDGE_TYPES + ("edge",)
)

CONCEPT_KINDS: Tuple[str, ...] = ("entity", "predicate")

NODE_TYPE_ID: Dict[str, int] = {name: i for i, name in enumerate(NODE_TYPES)}
EDGE_TYPE_ID: Dict[str, int] = {name: i for i, name in enumerate(EDGE_TYPES)}

Span = Tuple[int, int]
MentionRef = Tuple[int, int, int]


@dataclass(frozen=True)
class Node:
    """One graph node; see the module docstring for the meaning of each field."""

    id: int
    type: str
    text: str
    passage: int
    sentence: Optional[int] = None
    span: Optional[Span] = None
    mentions: Tuple[MentionRef, ...] = ()
    kind: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        """Json-safe dict (tuples become lists)."""
        return {
            "id": self.id, "type": self.type, "text": self.text, "passage": self.passage,
            "sentence": self.sentence,
            "span": None if self.span is None else list(self.span),
            "mentions": [list(m) for m in self.mentions],
            "kind": self.kind,
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Node":
        """Inverse of :meth:`to_dict`."""
        span = data.get("span")
        return cls(
            id=int(data["id"]), type=str(data["type"]), text=str(data["text"]),
            passage=int(data["passage"]), sentence=data.get("sentence"),
            span=None if span is None else (int(span[0]), int(span[1])),
            mentions=tuple((int(s), int(a), int(b)) for s, a, b in data.get("mentions", ())),
            kind=data.get("kind"),
        )


@dataclass(frozen=True)
class Edge:
    """A directed typed edge ``src -> dst`` between node ids."""

    src: int
    dst: int
    type: str

    def to_dict(self) -> Dict[str, Any]:
        """Json-safe dict."""
        return {"src": self.src, "dst": self.dst, "type": self.type}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Edge":
        """Inverse of :meth:`to_dict`."""
        return cls(src=int(data["src"]), dst=int(data["dst"]), type=str(data["type"]))


@dataclass
class DocumentGraph:
    """
    Typed nodes and edges built from a list of passages, plus build metadata.

    ``meta`` always carries ``schema_version``; builders add the parser / coreference
    backends and the options used (json-safe values only).
    """

    nodes: List[Node] = field(default_factory=list)
    edges: List[Edge] = field(default_factory=list)
    meta: Dict[str, Any] = field(default_factory=lambda: {"schema_version": SCHEMA_VERSION})

    def __getstate__(self) -> Dict[str, Any]:
        # the in-process extension state (``assembly``, see graphs.assembly) never travels
        return {k: v for k, v in self.__dict__.items() if k != "assembly"}

    # ---------------------------------------------------------------- queries
    def nodes_of_type(self, node_type: str) -> List[Node]:
        """All nodes of ``node_type``, in id order."""
        return [n for n in self.nodes if n.type == node_type]

    def edges_of_type(self, edge_type: str) -> List[Edge]:
        """All edges of ``edge_type``, in insertion order."""
        return [e for e in self.edges if e.type == edge_type]

    def sentence_texts(self) -> Dict[int, str]:
        """Global sentence index -> sentence text, from the sentence nodes."""
        return {n.sentence: n.text for n in self.nodes if n.type == "sentence"}

    # ---------------------------------------------------------------- checks
    def validate(self) -> None:
        """
        Raise ``ValueError`` naming the first offending node/edge when the graph breaks the
        contract: unknown types, ids not ``0..N-1``, dangling edges, spans outside their
        sentence or not matching the node text.
        """
        sentences = self.sentence_texts()
        for i, node in enumerate(self.nodes):
            where = f"node {i}"
            if node.id != i:
                raise ValueError(f"{where}: id {node.id} != position {i}")
            if node.type not in NODE_TYPE_ID:
                raise ValueError(f"{where}: unknown node type {node.type!r}")
            if node.kind is not None and node.kind not in CONCEPT_KINDS:
                raise ValueError(f"{where}: unknown concept kind {node.kind!r}")
            refs = list(node.mentions)
            if node.span is not None:
                refs.append((node.sentence, node.span[0], node.span[1]))
            for sent, start, end in refs:
                if sent not in sentences:
                    raise ValueError(f"{where}: span refers to missing sentence {sent}")
                if not 0 <= start <= end <= len(sentences[sent]):
                    raise ValueError(f"{where}: span {(start, end)} outside sentence {sent}")
            if node.span is not None and sentences[node.sentence][slice(*node.span)] != node.text:
                raise ValueError(f"{where}: span text differs from node text {node.text!r}")
        for j, edge in enumerate(self.edges):
            if edge.type not in EDGE_TYPE_ID:
                raise ValueError(f"edge {j}: unknown edge type {edge.type!r}")
            if not (0 <= edge.src < len(self.nodes) and 0 <= edge.dst < len(self.nodes)):
                raise ValueError(f"edge {j}: {edge.src}->{edge.dst} leaves the graph")

    # ---------------------------------------------------------------- serialisation
    def to_dict(self) -> Dict[str, Any]:
        """Json-safe dict; ``DocumentGraph.from_dict(g.to_dict()) == g`` exactly."""
        return {
            "schema_version": SCHEMA_VERSION,
            "nodes": [n.to_dict() for n in self.nodes],
            "edges": [e.to_dict() for e in self.edges],
            "meta": self.meta,
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "DocumentGraph":
        """Rebuild a graph from :meth:`to_dict` output; refuses other schema versions."""
        if not isinstance(data, dict):
            raise ValueError(f"expected a dict, got {type(data).__name__}")
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ValueError(f"graph schema version {version!r}, this code reads {SCHEMA_VERSION}")
        graph = cls(
            nodes=[Node.from_dict(n) for n in data["nodes"]],
            edges=[Edge.from_dict(e) for e in data["edges"]],
            meta=dict(data.get("meta", {})),
        )
        graph.validate()
        return graph

    # ---------------------------------------------------------------- tensors
    def to_tensors(self) -> Dict[str, Any]:
        """
        ``edge_index`` (LongTensor 2 x E), ``node_type`` (N), ``edge_type`` (E) and
        ``num_nodes``, with ids from :data:`NODE_TYPE_ID` / :data:`EDGE_TYPE_ID`.

        In a homogeneous graph (``meta["homogeneous"]``) every node gets type id 0 (its
        ``type`` field still tells sentence from concept, for selection targets).
        """
        import torch

        homogeneous = bool(self.meta.get("homogeneous"))
        edge_index = torch.tensor(
            [[e.src for e in self.edges], [e.dst for e in self.edges]], dtype=torch.long
        ).reshape(2, len(self.edges))
        node_type = torch.tensor(
            [0 if homogeneous else NODE_TYPE_ID[n.type] for n in self.nodes], dtype=torch.long
        )
        edge_type = torch.tensor([EDGE_TYPE_ID[e.type] for e in self.edges], dtype=torch.long)
        return {
            "edge_index": edge_index, "node_type": node_type, "edge_type": edge_type,
            "num_nodes": len(self.nodes),
        }

    def to_pyg(self) -> Any:
        """The tensors of :meth:`to_tensors` as a ``torch_geometric.data.Data``."""
        from torch_geometric.data import Data

        return Data(**self.to_tensors())


class GraphBuilder:
    """Accumulates nodes (ids in creation order) and de-duplicated typed edges."""

    def __init__(self) -> None:
        self.nodes: List[Node] = []
        self.edges: List[Edge] = []
        self._seen: set = set()

    def node(self, **fields: Any) -> int:
        """Add a :class:`Node` (``id`` assigned) and return its id."""
        self.nodes.append(Node(id=len(self.nodes), **fields))
        return len(self.nodes) - 1

    def edge(self, src: int, dst: int, edge_type: str) -> None:
        """Add ``src -> dst`` once; loops are dropped unless the type is ``self_loop``."""
        key = (src, dst, edge_type)
        if (src != dst or edge_type == "self_loop") and key not in self._seen:
            self._seen.add(key)
            self.edges.append(Edge(src, dst, edge_type))


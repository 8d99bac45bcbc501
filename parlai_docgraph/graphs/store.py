"""
:class:`GraphStore`: the content-hash keyed, versioned on-disk store of document graphs.

An entry's key (:func:`~.factory.graph_key`) is the SHA-256 of a canonical JSON of
everything that determines the graph: schema version, builder name, build options, backend
descriptions (parser and coreference versions) and the passages. Entries live at ``<root>/graphs-v<N>/<key[:2]>/<key>.json`` (``N``
the schema version) and hold the key, the schema version, a SHA-256 checksum of the graph
JSON and the graph.

- Writes are atomic (temporary file in the same folder, ``fsync``, ``os.replace``): a killed
  build leaves either a whole entry or none, so re-running resumes by skipping stored keys
  (stray ``*.tmp`` files are ignored and removed by :meth:`GraphStore.clean`).
- A corrupt or stale entry (unreadable JSON, checksum or key mismatch, other schema
  version, graph failing validation) is deleted and reported as missing, so it is rebuilt,
  never loaded (:func:`~parlai_docgraph.atomic.read_verified`, the policy every on-disk
  cache of the package shares).
- What to build and under which key is not the store's business:
  :meth:`GraphStore.get_or_build` takes a :class:`~.factory.GraphFactory` (the one builder
  dispatch), so every caller computes the same keys.
- Shards: :func:`in_shard` splits keys into ``n`` disjoint sets by hash, so separate machines
  can build shards into separate stores; :meth:`GraphStore.merge_from` copies verified
  entries of another store into this one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import (
    TYPE_CHECKING, Any, Iterator, NamedTuple, Optional, Sequence, Tuple, Union,
)

from parlai_docgraph.atomic import read_verified, write_text_atomic
from parlai_docgraph.graphs.schema import SCHEMA_VERSION, DocumentGraph

if TYPE_CHECKING:
    from parlai_docgraph.graphs.factory import GraphFactory


class StoredGraph(NamedTuple):
    """What :meth:`GraphStore.get_or_build` found: the key, the graph (``None``: missing
    and not built) and whether it was built now."""

    key: str
    graph: Optional[DocumentGraph]
    built: bool


def canonical_json(obj: Any) -> str:
    """Sorted-key, compact JSON: equal values give equal text (keys and checksums)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def default_store_root(datapath: Union[str, Path]) -> Path:
    """
    The one place a datapath keeps its graph store: ``<datapath>/docgraph_cache/graphs``.

    ``parlai-docgraph build_graphs`` writes there and the agents read there, so graphs
    built ahead of time are the ones training uses.
    """
    return Path(datapath) / "docgraph_cache" / "graphs"


def resolve_store_root(path: str) -> Path:
    """
    A ``--merge-from`` argument as a store root: a datapath (holding
    ``docgraph_cache/graphs``), a store root (holding ``graphs-v<N>``), or a ``graphs-v<N>``
    folder itself. ``ValueError`` when none of these exists.
    """
    p = Path(path)
    if (p / "docgraph_cache" / "graphs").is_dir():
        return p / "docgraph_cache" / "graphs"
    if p.is_dir() and any(c.name.startswith("graphs-v") for c in p.iterdir()):
        return p
    if p.is_dir() and p.name.startswith("graphs-v"):
        return p.parent
    raise ValueError(f"--merge-from {path}: no graph store there (expected a datapath with "
                     "docgraph_cache/graphs, a store root or a graphs-v<N> folder)")


def in_shard(key: str, shard: Tuple[int, int]) -> bool:
    """Whether ``key`` belongs to shard ``i`` of ``n`` (``shard == (i, n)``, 0 <= i < n)."""
    index, count = shard
    if not 0 <= index < count:
        raise ValueError(f"shard {index}/{count}: need 0 <= i < n")
    return int(key[:16], 16) % count == index


class GraphStore:
    """A folder of graph entries keyed by :func:`~.factory.graph_key`."""

    def __init__(self, root: Union[str, Path]) -> None:
        self.root = Path(root) / f"graphs-v{SCHEMA_VERSION}"

    def path(self, key: str) -> Path:
        """Where the entry of ``key`` lives."""
        return self.root / key[:2] / f"{key}.json"

    def keys(self) -> Iterator[str]:
        """Keys of the stored entries (not verified)."""
        for path in sorted(self.root.glob("*/*.json")):
            yield path.stem

    def __contains__(self, key: str) -> bool:
        return self.path(key).is_file()

    def save(self, key: str, graph: DocumentGraph) -> Path:
        """Write the entry of ``key`` atomically; return its path."""
        body = canonical_json(graph.to_dict())
        entry = {
            "key": key, "schema_version": SCHEMA_VERSION,
            "checksum": hashlib.sha256(body.encode("utf-8")).hexdigest(), "graph": body,
        }
        return write_text_atomic(self.path(key), canonical_json(entry))

    def load(self, key: str) -> Optional[DocumentGraph]:
        """
        The stored graph, or ``None`` when absent, corrupt or stale (then deleted: the
        store's corruption policy, :func:`~parlai_docgraph.atomic.read_verified`).
        """

        def check(text: str) -> DocumentGraph:
            entry = json.loads(text)
            body = entry["graph"]
            if entry["key"] != key or entry["schema_version"] != SCHEMA_VERSION:
                raise ValueError("stale entry")
            if hashlib.sha256(body.encode("utf-8")).hexdigest() != entry["checksum"]:
                raise ValueError("checksum mismatch")
            return DocumentGraph.from_dict(json.loads(body))

        return read_verified(self.path(key), check)

    def clean(self) -> int:
        """Remove temporary files left by killed writers; return how many."""
        stray = list(self.root.glob("*/.*.tmp"))
        for path in stray:
            path.unlink(missing_ok=True)
        return len(stray)

    def merge_from(self, other: "GraphStore") -> int:
        """Copy the valid entries of ``other`` missing here; return how many were copied."""
        copied = 0
        for key in other.keys():
            if key not in self:
                graph = other.load(key)
                if graph is not None:
                    self.save(key, graph)
                    copied += 1
        return copied

    def get_or_build(
        self, passages: Sequence[Tuple[str, Sequence[str]]], factory: "GraphFactory",
        build: bool = True, key: Optional[str] = None,
    ) -> StoredGraph:
        """
        The graph of ``passages`` under ``factory``'s configuration: loaded from the store,
        or (``build``) built by ``factory`` and stored when missing, corrupt or stale.
        With ``build=False`` a missing graph comes back as ``graph=None``. ``key``: the
        pool's ``factory.key(passages)`` when the caller has it already.
        """
        key = factory.key(passages) if key is None else key
        graph = self.load(key)
        if graph is not None or not build:
            return StoredGraph(key, graph, False)
        graph = factory.build(passages)
        self.save(key, graph)
        return StoredGraph(key, graph, True)

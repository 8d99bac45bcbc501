"""
Content-hash keyed, versioned on-disk store of document graphs.

An entry's key is the SHA-256 of a canonical JSON of everything that determines the graph:
schema version, builder name, build options, backend descriptions (parser and coreference
versions) and the passages. Entries live at ``<root>/graphs-v<N>/<key[:2]>/<key>.json`` (``N``
the schema version) and hold the key, the schema version, a SHA-256 checksum of the graph
JSON and the graph.

- Writes are atomic (temporary file in the same folder, ``fsync``, ``os.replace``): a killed
  build leaves either a whole entry or none, so re-running resumes by skipping stored keys
  (stray ``*.tmp`` files are ignored and removed by :meth:`GraphStore.clean`).
- A corrupt or stale entry (unreadable JSON, checksum or key mismatch, other schema
  version, graph failing validation) is deleted and reported as missing, so it is rebuilt,
  never loaded.
- Shards: :func:`in_shard` splits keys into ``n`` disjoint sets by hash, so separate machines
  can build shards into separate stores; :meth:`GraphStore.merge_from` copies verified
  entries of another store into this one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from parlai_docgraph.atomic import write_text_atomic
from parlai_docgraph.graphs.schema import SCHEMA_VERSION, DocumentGraph


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def graph_key(
    passages: Sequence[Tuple[str, Sequence[str]]],
    builder: str,
    options: Dict[str, Any],
    backends: Sequence[Optional[str]],
) -> str:
    """SHA-256 hex key of a graph's inputs (see the module docstring)."""
    payload = {
        "schema_version": SCHEMA_VERSION, "builder": builder, "options": options,
        "backends": list(backends), "passages": [[t, list(s)] for t, s in passages],
    }
    return hashlib.sha256(_canonical(payload).encode("utf-8")).hexdigest()


def default_store_root(datapath: Union[str, Path]) -> Path:
    """
    The one place a datapath keeps its graph store: ``<datapath>/docgraph_cache/graphs``.

    ``parlai-docgraph build_graphs`` writes there and the agents read there, so graphs
    built ahead of time are the ones training uses.
    """
    return Path(datapath) / "docgraph_cache" / "graphs"


def key_backends(builder: str, items: Sequence[Tuple[str, Sequence[str]]], parser: Any = None,
                 coref: Any = None, model: Optional[str] = None) -> List[str]:
    """
    The backend part of a store key, shared by :meth:`GraphStore.get_or_build` and
    ``parlai-docgraph build_graphs`` so both compute the same keys.
    """
    if builder == "semantic":
        sentences = [s for _, sents in items for s in sents]
        return [parser.cache_token(sentences), coref.describe()]
    from parlai_docgraph.graphs.coref import RuleCoref
    from parlai_docgraph.graphs.multilevel import BUILDER_VERSION
    from parlai_docgraph.graphs.parsers.dep import DepParser

    return [DepParser(model).describe(), RuleCoref.version, f"multilevel-v{BUILDER_VERSION}"]


def in_shard(key: str, shard: Tuple[int, int]) -> bool:
    """Whether ``key`` belongs to shard ``i`` of ``n`` (``shard == (i, n)``, 0 <= i < n)."""
    index, count = shard
    if not 0 <= index < count:
        raise ValueError(f"shard {index}/{count}: need 0 <= i < n")
    return int(key[:16], 16) % count == index


class GraphStore:
    """A folder of graph entries keyed by :func:`graph_key`."""

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
        body = _canonical(graph.to_dict())
        entry = {
            "key": key, "schema_version": SCHEMA_VERSION,
            "checksum": hashlib.sha256(body.encode("utf-8")).hexdigest(), "graph": body,
        }
        return write_text_atomic(self.path(key), _canonical(entry))

    def load(self, key: str) -> Optional[DocumentGraph]:
        """The stored graph, or ``None`` when absent, corrupt or stale (then deleted)."""
        path = self.path(key)
        if not path.is_file():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            body = entry["graph"]
            if entry["key"] != key or entry["schema_version"] != SCHEMA_VERSION:
                raise ValueError("stale entry")
            if hashlib.sha256(body.encode("utf-8")).hexdigest() != entry["checksum"]:
                raise ValueError("checksum mismatch")
            return DocumentGraph.from_dict(json.loads(body))
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
            path.unlink(missing_ok=True)
            return None

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
        self, passages: Sequence[Tuple[str, Sequence[str]]], builder: str = "semantic",
        **options: Any,
    ) -> DocumentGraph:
        """
        The graph of ``passages`` from the store, built and stored when missing, corrupt or
        stale. ``builder``: ``semantic`` (options of ``build_document_graph``, ``parser`` and
        ``coref`` as names or instances) or ``multilevel`` (of ``build_multilevel_graph``).
        """
        from parlai_docgraph.graphs.coref import get_coref
        from parlai_docgraph.graphs.multilevel import DROP_POS, build_multilevel_graph
        from parlai_docgraph.graphs.parsers import get_parser
        from parlai_docgraph.graphs.semantic import build_document_graph, check_passages

        items = check_passages(passages)
        if builder == "semantic":
            parser = options.pop("parser", "dep")
            coref = options.pop("coref", "rule")
            parser = get_parser(parser) if isinstance(parser, str) else parser
            coref = get_coref(coref) if isinstance(coref, str) else coref
            key = graph_key(items, builder, options, key_backends(builder, items, parser, coref))
            graph = self.load(key)
            if graph is None:
                graph = build_document_graph(items, parser, coref, **options)
        elif builder == "multilevel":
            keyed = {**options, "drop_pos": list(options.get("drop_pos", DROP_POS))}
            key = graph_key(items, builder, keyed, key_backends(builder, items, model=options.get("model")))
            graph = self.load(key)
            if graph is None:
                graph = build_multilevel_graph(items, **options)
        else:
            raise ValueError(f"unknown graph builder {builder!r}; choose semantic or multilevel")
        if key not in self:
            self.save(key, graph)
        return graph

"""
Sentence-level parse cache: parse each distinct sentence once per graph store.

Knowledge pools repeat the same passages across turns and dialogues (every turn of a WoW
dialogue carries the chosen topic's passage again), so parsing pool by pool costs a
dataset's *turns*. :class:`CachedParser` wraps any :class:`~.parsers.base.Parser` and keeps
its :class:`~.parsers.base.ParsedSentence` s in a :class:`ParseCache`, so the cost of
precomputing a dataset grows with its *distinct* sentences.

- Key: SHA-256 of ``(PARSE_FORMAT_VERSION, parser.cache_token([sentence]), sentence)``:
  the parser name and pipeline version (``dep:en_core_web_sm-3.8.0``), plus for AMR the
  digest of the sentence's graph, so a new spaCy model or an edited AMR file never reads
  an old parse.
- Storage: one SQLite file ``<store root>/parses-v<N>.sqlite`` next to the
  ``graphs-v<N>`` folder of a :class:`~.store.GraphStore` (the standard library's sqlite3:
  transactions make every write atomic, WAL mode lets several build processes read and
  write it at once). Values are JSON of the parse (no pickle); an unreadable row is a miss
  and is parsed and written again (:func:`~parlai_docgraph.atomic.verified`, the policy
  the graph store and the embedding cache share).
- A sentence's parse depends only on its text (every backend parses sentences one by one),
  so a graph built through the cache equals the graph built without it (tested), and
  graph store keys and metadata do not change (:meth:`CachedParser.describe` and
  :meth:`CachedParser.cache_token` are the wrapped parser's).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from parlai_docgraph.atomic import verified
from parlai_docgraph.graphs.parsers.base import Argument, Mention, ParsedSentence, Parser, Predicate, Relation

#: bump when the JSON layout of a parse changes (part of the file name and of every key)
PARSE_FORMAT_VERSION = 1
_CHUNK = 500  # SQLite variables per query (the default limit is 32,766 on 3.32+)


def parse_to_dict(parsed: ParsedSentence) -> Dict[str, Any]:
    """A JSON-safe dict of ``parsed`` (inverse: :func:`parse_from_dict`)."""

    def mention(m: Mention) -> List[Any]:
        return [m.start, m.end, m.text, m.head, m.head_lemma, m.pos, m.ent, m.number, m.gender,
                list(m.name), list(m.modifiers), m.determiner, m.possessive, m.head_start]

    return {
        "text": parsed.text,
        "predicates": [[p.start, p.end, p.text, p.lemma,
                        [[a.role, mention(a.mention)] for a in p.arguments]]
                       for p in parsed.predicates],
        "relations": [[r.role, mention(r.src), mention(r.dst)] for r in parsed.relations],
        "appositions": [[mention(h), mention(a)] for h, a in parsed.appositions],
    }


def parse_from_dict(data: Dict[str, Any]) -> ParsedSentence:
    """The :class:`ParsedSentence` of :func:`parse_to_dict`'s output."""

    def mention(v: List[Any]) -> Mention:
        (start, end, text, head, lemma, pos, ent, number, gender, name, modifiers, det,
         possessive, head_start) = v
        return Mention(start, end, text, head, lemma, pos, ent, number, gender, tuple(name),
                       tuple(modifiers), det, bool(possessive), head_start)

    return ParsedSentence(
        text=data["text"],
        predicates=[Predicate(s, e, t, lemma, tuple(Argument(r, mention(m)) for r, m in args))
                    for s, e, t, lemma, args in data["predicates"]],
        relations=[Relation(r, mention(a), mention(b)) for r, a, b in data["relations"]],
        appositions=[(mention(h), mention(a)) for h, a in data["appositions"]],
    )


def parse_key(token: str, sentence: str) -> str:
    """The cache key of ``sentence`` parsed by a backend whose ``cache_token`` is ``token``."""
    payload = json.dumps([PARSE_FORMAT_VERSION, token, sentence], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ParseCache:
    """
    Key -> parse JSON in one SQLite file (see the module docstring). The connection opens
    lazily in the process that uses it, so an instance can be sent to worker processes.
    """

    def __init__(self, path: Union[str, Path]) -> None:
        self.path = Path(path)
        self._conn: Optional[sqlite3.Connection] = None

    @classmethod
    def for_store(cls, store_root: Union[str, Path]) -> "ParseCache":
        """The parse cache of the graph store rooted at ``store_root``."""
        return cls(Path(store_root) / f"parses-v{PARSE_FORMAT_VERSION}.sqlite")

    def __getstate__(self) -> Dict[str, Any]:
        return {"path": self.path, "_conn": None}

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), timeout=120.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE IF NOT EXISTS parses (key TEXT PRIMARY KEY, body TEXT NOT NULL)")
            conn.commit()
            self._conn = conn
        return self._conn

    def close(self) -> None:
        """Close the connection (reopened on next use)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __len__(self) -> int:
        if not self.path.exists():
            return 0
        return int(self.conn.execute("SELECT COUNT(*) FROM parses").fetchone()[0])

    def get_many(self, keys: Iterable[str]) -> Dict[str, ParsedSentence]:
        """The readable cached parses among ``keys`` (missing or unreadable ones left out)."""
        keys = list(dict.fromkeys(keys))
        found: Dict[str, ParsedSentence] = {}
        for i in range(0, len(keys), _CHUNK):
            chunk = keys[i:i + _CHUNK]
            rows = self.conn.execute(
                f"SELECT key, body FROM parses WHERE key IN ({','.join('?' * len(chunk))})",
                chunk).fetchall()
            for key, body in rows:
                # a damaged row is a miss (atomic.verified, the caches' one policy),
                # overwritten by put_many
                parsed = verified(body, lambda text: parse_from_dict(json.loads(text)))
                if parsed is not None:
                    found[key] = parsed
        return found

    def put_many(self, items: Dict[str, ParsedSentence]) -> None:
        """Store ``key -> parse`` in one transaction (all or nothing)."""
        if not items:
            return
        rows = [(k, json.dumps(parse_to_dict(p), ensure_ascii=False, separators=(",", ":")))
                for k, p in items.items()]
        with self.conn:
            self.conn.executemany("INSERT OR REPLACE INTO parses (key, body) VALUES (?, ?)", rows)


class CachedParser(Parser):
    """
    ``parser`` with its parses kept in ``cache``: :meth:`parse` runs ``parser`` only on the
    distinct sentences the cache lacks. ``hits`` / ``misses`` count distinct non-blank
    sentences read from the cache / parsed (per call, summed over calls).
    """

    def __init__(self, parser: Parser, cache: ParseCache) -> None:
        self.parser = parser
        self.cache = cache
        self.name = parser.name
        self.hits = 0
        self.misses = 0

    def describe(self) -> Optional[str]:
        """The wrapped parser's description (graph metadata does not see the cache)."""
        return self.parser.describe()

    def cache_token(self, sentences: Sequence[str]) -> str:
        """The wrapped parser's store-key part (graph keys do not see the cache)."""
        return self.parser.cache_token(sentences)

    def parse(self, sentences: Sequence[str]) -> List[ParsedSentence]:
        """One parse per sentence, in order, from the cache or the wrapped parser."""
        texts = list(sentences)
        distinct = list(dict.fromkeys(t for t in texts if t.strip()))
        keys = {t: parse_key(self.parser.cache_token([t]), t) for t in distinct}
        found = self.cache.get_many(keys.values())
        todo = [t for t in distinct if keys[t] not in found]
        self.hits += len(distinct) - len(todo)
        self.misses += len(todo)
        if todo:
            fresh = dict(zip(todo, self.parser.parse(todo)))
            self.cache.put_many({keys[t]: p for t, p in fresh.items()})
            found.update((keys[t], p) for t, p in fresh.items())
        return [found[keys[t]] if t.strip() else ParsedSentence(text=t) for t in texts]

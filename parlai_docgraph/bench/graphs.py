"""
Graph-building speed figures (the ``graphs`` benchmark), as one json-safe dict of named numbers.

:func:`graph_benchmark` measures, on the caller's knowledge pools (one ``[(title,
[sentences])]`` per dialogue):

- ``graph_build_vs_spacy`` (headline, goal >= 1.0): seconds of a bare ``nlp.pipe`` over
  every sentence of every pool divided by seconds to build every pool's semantic graph as
  ``parlai-docgraph build_graphs`` does (:class:`~parlai_docgraph.graphs.factory.GraphFactory`
  with the store's sentence parse cache, empty at the start of each repetition: each
  distinct sentence is parsed once, blank ones never); the median of at least five
  alternated repetitions (:mod:`.spread`), its min and max in ``graph_build_vs_spacy_spread``;
- ``graph_build_vs_spacy_no_parse_cache``: the same without the parse cache (each pool
  parsed on its own, its repeated sentences once), with its spread;
- ``build_parts_s``: what one cached build is made of, in seconds: ``spacy`` (the pipeline
  over the distinct sentences, pool by pool as the build meets them), ``roles`` (dependency
  parses to predicate-argument structures), ``parse_cache`` (SQLite reads and writes),
  ``coref_and_assembly`` (the rest of the build: coreference, nodes, edges); beside
  ``spacy_bare`` (the baseline) and ``distinct_sentences``;
- ``graphs_per_s``, ``spacy_pools_per_s``, ``sentences_per_s``, ``multilevel_graphs_per_s``;
- ``cache_load_ms_per_graph``: mean time to load one verified graph from a
  :class:`~.store.GraphStore`;
- ``build_s_by_sentences``: build time of one document of 10 .. 2,000 sentences (pool
  sentences cycled, each made distinct by a numbered suffix so none is parsed only once),
  to show how build time grows with length.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

Pool = Sequence[Tuple[str, Sequence[str]]]
LENGTHS: Tuple[int, ...] = (10, 100, 500, 1000, 2000)
QUICK_LENGTHS: Tuple[int, ...] = (10, 50)


def _best(run: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return max(min(times), 1e-9)


def graph_benchmark(
    pools: Sequence[Pool], quick: bool = False, repeats: int = 3, reps: Optional[int] = None,
    threads: Optional[int] = None,
) -> Dict[str, Any]:
    """Measure the figures of the module docstring on ``pools`` (``reps``: repetitions of the
    ratios, at least :data:`~.spread.MIN_REPS`; ``threads``: for every side, default
    :func:`~.spread.default_threads`)."""
    from parlai_docgraph.bench.spread import (
        MIN_REPS, alternated, default_threads, pinned_threads, ratio_spread,
    )
    from parlai_docgraph.graphs.config import GraphConfig, GraphVariant
    from parlai_docgraph.graphs.factory import GraphFactory
    from parlai_docgraph.graphs.store import GraphStore

    if not pools:
        raise ValueError("graph_benchmark needs at least one knowledge pool")
    repeats = 1 if quick else repeats
    reps = max(MIN_REPS, reps or (MIN_REPS if quick else 7))
    threads = threads or default_threads()
    semantic = GraphFactory(GraphConfig()).load()  # graphs are built only by a factory
    multilevel = GraphFactory(GraphConfig(variant=GraphVariant.MULTILEVEL)).load()
    parser = semantic.backends()[0]
    nlp = parser.nlp
    texts: List[List[str]] = [[s for _, sents in pool for s in sents] for pool in pools]
    size = parser.batch_size

    def cached_build() -> None:
        with tempfile.TemporaryDirectory() as root:  # build_graphs' first run: cache empty
            factory = GraphFactory(GraphConfig(), parse_cache=root)
            for pool in pools:
                factory.build(pool)

    with pinned_threads(threads):
        list(nlp.pipe(texts[0][:32]))
        cached_build()  # warm-up (allocator, SQLite)
        times = alternated({
            "spacy": lambda: [list(nlp.pipe(t, batch_size=size)) for t in texts],
            "build": cached_build,
            "build_no_parse_cache": lambda: [semantic.build(p) for p in pools],
        }, reps)
        ratio = ratio_spread(times["spacy"], times["build"])
        uncached = ratio_spread(times["spacy"], times["build_no_parse_cache"])
        bare, build = statistics.median(times["spacy"]), statistics.median(times["build"])
        parts = build_parts(pools, parser, build, bare, 1 if quick else 3)
        multi = _best(lambda: [multilevel.build(p) for p in pools], repeats)
        with tempfile.TemporaryDirectory() as root:
            store = GraphStore(root)
            factory = GraphFactory(GraphConfig())  # its dep parser shares the loaded pipeline
            for pool in pools:
                store.get_or_build(pool, factory)
            keys = list(store.keys())
            load = _best(lambda: [store.load(k) for k in keys], repeats)
        flat = [s for t in texts for s in t if s.strip()] or ["The keeper lit the lamp."]
        by_length = {}
        for n in QUICK_LENGTHS if quick else LENGTHS:
            doc = [("document", [f"{flat[i % len(flat)]} ({i})" for i in range(n)])]
            by_length[str(n)] = round(_best(lambda: semantic.build(doc), 1), 4)
    count = len(pools)
    return {
        "graph_build_vs_spacy": ratio["median"],
        "graph_build_vs_spacy_spread": ratio,
        "graph_build_vs_spacy_no_parse_cache": uncached["median"],
        "graph_build_vs_spacy_no_parse_cache_spread": uncached,
        "build_parts_s": parts,
        "graphs_per_s": round(count / build, 3),
        "graphs_per_s_no_parse_cache": round(
            count / statistics.median(times["build_no_parse_cache"]), 3),
        "spacy_pools_per_s": round(count / bare, 3),
        "sentences_per_s": round(sum(map(len, texts)) / build, 1),
        "multilevel_graphs_per_s": round(count / multi, 3),
        "cache_load_ms_per_graph": round(1000 * load / max(len(keys), 1), 3),
        "build_s_by_sentences": by_length,
        "pools": count,
        "sentences": sum(map(len, texts)),
        "parser": parser.describe(),
        "threads": threads,
        "quick": quick,
    }


def build_parts(pools: Sequence[Pool], parser: Any, build_s: float, bare_s: float,
                repeats: int = 3) -> Dict[str, Any]:
    """
    ``build_s`` (a cached build of ``pools``) split into its parts (module docstring), each
    timed on its own (median of ``repeats``): the spaCy pipeline and the role mapping over
    the sentences a cold parse cache meets pool by pool (each distinct non-blank sentence
    once), the cache's reads and writes of those parses into a fresh SQLite file, and a
    build whose parses all come from memory (coreference and graph assembly);
    ``unaccounted``: ``build_s`` less the four (timing noise; it can be negative).
    """
    from parlai_docgraph.graphs.config import GraphConfig
    from parlai_docgraph.graphs.factory import GraphFactory
    from parlai_docgraph.graphs.parse_cache import ParseCache, parse_key

    seen: set = set()
    batches: List[List[str]] = []
    for pool in pools:
        todo = [s for s in dict.fromkeys(s for _, sents in pool for s in sents)
                if s.strip() and s not in seen]
        seen.update(todo)
        batches.append(todo)
    nlp, size = parser.nlp, parser.batch_size
    token = parser.cache_token(["x"])
    parsed = [parser.parse(todo) for todo in batches]

    def cache_io() -> None:
        with tempfile.TemporaryDirectory() as root:
            cache = ParseCache.for_store(root)
            for pool, todo, parses in zip(pools, batches, parsed):
                cache.get_many(parse_key(token, s) for _, sents in pool for s in sents
                               if s.strip())
                cache.put_many({parse_key(token, s): p for s, p in zip(todo, parses)})
            cache.close()

    memo = GraphFactory(GraphConfig(), parse_memo=len(seen) + 1)
    for pool in pools:  # fills the parse memo: the timed builds parse nothing
        memo.build(pool)
    times = {name: [] for name in ("spacy", "parse", "parse_cache", "coref_and_assembly")}
    for _ in range(repeats):
        for name, run in (
                ("spacy", lambda: [list(nlp.pipe(t, batch_size=size)) for t in batches]),
                ("parse", lambda: [parser.parse(t) for t in batches]),
                ("parse_cache", cache_io),
                ("coref_and_assembly", lambda: [memo.build(p) for p in pools])):
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    part = {name: statistics.median(t) for name, t in times.items()}
    roles = max(part.pop("parse") - part["spacy"], 0.0)
    out = {"spacy": part["spacy"], "roles": roles, "parse_cache": part["parse_cache"],
           "coref_and_assembly": part["coref_and_assembly"]}
    out["unaccounted"] = build_s - sum(out.values())
    out = {name: round(v, 4) for name, v in out.items()}
    out.update(build=round(build_s, 4), spacy_bare=round(bare_s, 4), distinct_sentences=len(seen))
    return out

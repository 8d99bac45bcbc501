"""
Graph-building speed figures (the ``graphs`` benchmark), as one json-safe dict of named numbers.

:func:`graph_benchmark` measures, on the caller's knowledge pools (one ``[(title,
[sentences])]`` per dialogue):

- ``graph_build_vs_spacy``: semantic graphs/s divided by dialogues/s of a bare ``nlp.pipe``
  over the same sentences in the same run (best of ``repeats`` each, after a warm-up);
- ``graphs_per_s``, ``spacy_pools_per_s``, ``sentences_per_s``, ``multilevel_graphs_per_s``;
- ``cache_load_ms_per_graph``: mean time to load one verified graph from a
  :class:`~.store.GraphStore`;
- ``build_s_by_sentences``: build time of one document of 10 .. 2,000 sentences (pool
  sentences cycled, each made distinct by a numbered suffix so none is parsed only once),
  to show how build time grows with length.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any, Callable, Dict, List, Sequence, Tuple

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
    pools: Sequence[Pool], quick: bool = False, repeats: int = 3
) -> Dict[str, Any]:
    """Measure the figures of the module docstring on ``pools``."""
    from parlai_docgraph.graphs.config import GraphConfig, GraphVariant
    from parlai_docgraph.graphs.factory import GraphFactory
    from parlai_docgraph.graphs.store import GraphStore

    if not pools:
        raise ValueError("graph_benchmark needs at least one knowledge pool")
    repeats = 1 if quick else repeats
    semantic = GraphFactory(GraphConfig()).load()  # graphs are built only by a factory
    multilevel = GraphFactory(GraphConfig(variant=GraphVariant.MULTILEVEL)).load()
    parser = semantic.backends()[0]
    nlp = parser.nlp
    texts: List[List[str]] = [[s for _, sents in pool for s in sents] for pool in pools]
    list(nlp.pipe(texts[0][:32]))
    size = parser.batch_size
    bare = _best(lambda: [list(nlp.pipe(t, batch_size=size)) for t in texts], repeats)
    build = _best(lambda: [semantic.build(p) for p in pools], repeats)
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
        "graph_build_vs_spacy": round(bare / build, 3),
        "graphs_per_s": round(count / build, 3),
        "spacy_pools_per_s": round(count / bare, 3),
        "sentences_per_s": round(sum(map(len, texts)) / build, 1),
        "multilevel_graphs_per_s": round(count / multi, 3),
        "cache_load_ms_per_graph": round(1000 * load / max(len(keys), 1), 3),
        "build_s_by_sentences": by_length,
        "pools": count,
        "sentences": sum(map(len, texts)),
        "parser": parser.describe(),
        "quick": quick,
    }

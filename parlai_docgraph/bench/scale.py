"""
``parlai-docgraph bench --only scale``: what parsing once and incremental extension save.
Single process, dep parser + rule coreference, every ratio from the same run.

``parse_cache`` (per dataset: ``real_wow``, the first 5 dialogues of WoW ``train.json`` from
``../shared/data/real`` or ``$PARLAI_DOCGRAPH_REAL_DATA`` read by ``docgraph:wow`` (skipped
when absent); ``synthetic_wow``,
``docgraph:synthetic`` valid): the distinct knowledge pools ``build_graphs`` builds,
``sentences`` (summed over pools) and ``distinct_sentences``, their ratio
``distinct_ratio``; ``build_s_without`` (every pool built with a plain parser) and
``build_s_with`` (the same through a cold :class:`~parlai_docgraph.graphs.parse_cache.CachedParser`),
``speedup`` = without / with; ``build_s_warm`` (cache already filled: a rebuild with other
graph options). ``full_wow_projection``: the real sample's per-pool figures scaled to all
WoW wizard turns (train + valid + test, both splits): projected hours without and with the
cache (distinct sentences x measured ms per parsed sentence + all sentences x measured ms of
assembly per sentence). The sample's 5 dialogues only share passages within a dialogue, so
the distinct ratio of full WoW (passages shared across dialogues too) is lower and the
projection *with* the cache is an upper bound.

``extend`` (``extend_document_graph`` by one passage of 5 fresh sentences at 10, 100, 1,000
existing passages; quick: 10, 100): ``extend_ms`` median over 5 extensions of the
incremental path, ``rebuild_extend_ms`` of a graph without its assembly (as a store loads
it: rebuilt from its passages with a memoising parser, so only the new sentences are
parsed, coreference and assembly re-run over everything); ``extend_growth`` /
``rebuild_growth``: largest over smallest size (goal <= 1.5 for ``extend_growth``).
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from parlai_docgraph.bench.cli import register_benchmark
from parlai_docgraph.jsonio import iter_json_array

Pool = List[Tuple[str, List[str]]]
#: ``$PARLAI_DOCGRAPH_REAL_DATA`` (a ``data/real`` folder) or ``../shared/data/real``
REAL_DATA = Path(os.environ.get("PARLAI_DOCGRAPH_REAL_DATA") or
                 Path(__file__).resolve().parents[2].parent / "shared" / "data" / "real")
REAL_WOW = REAL_DATA / "wizard_of_wikipedia" / "original_examples.json"
#: WoW turns of train, valid and test (seen and unseen): datasets.md 1.1
FULL_WOW_TURNS = 166_787 + 8_909 + 8_715 + 8_806 + 8_782


def task_pools(task: str, datatype: str, datapath: str, *args: str) -> Tuple[List[Pool], int]:
    """The distinct knowledge pools of ``task`` (as ``build_graphs`` collects them) and
    the number of examples read."""
    from parlai.core.params import ParlaiParser

    from parlai_docgraph.scripts.build_graphs import iterate_examples, parse_datatypes

    opt = ParlaiParser(True, False).parse_args(["-t", task, "--datapath", datapath, *args])
    pools: Dict[str, Pool] = {}
    examples = 0
    for dt in parse_datatypes(datatype):
        for _, msg in iterate_examples(opt, dt):
            examples += 1
            if msg.get("knowledge_passages") is not None:
                pools.setdefault(repr(msg["knowledge_passages"]),
                                 [(t, list(s)) for t, s in msg["knowledge_passages"]])
    return list(pools.values()), examples


def parse_cache_figures(pools: Sequence[Pool]) -> Dict[str, Any]:
    """Build ``pools`` without and with a cold parse cache, then with a warm one (each
    through a :class:`~parlai_docgraph.graphs.factory.GraphFactory`, as ``build_graphs``)."""
    from parlai_docgraph.graphs.config import GraphConfig, GraphVariant
    from parlai_docgraph.graphs.factory import GraphFactory

    sentences = [s for pool in pools for _, sents in pool for s in sents if s.strip()]
    plain = GraphFactory(GraphConfig())
    list(plain.backends()[0].nlp.pipe(sentences[:16]))  # warm-up
    start = time.perf_counter()
    for pool in pools:
        plain.build(pool)
    without = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as root:
        cold = GraphFactory(GraphConfig(), parse_cache=root)
        start = time.perf_counter()
        for pool in pools:
            cold.build(pool)
        with_cache = time.perf_counter() - start
        # the filled cache read by a build with other graph options (no role edges)
        warm = GraphFactory(GraphConfig(variant=GraphVariant.COREF), parse_cache=root)
        start = time.perf_counter()
        for pool in pools:
            warm.build(pool)
        warm_s = time.perf_counter() - start
        for factory in (cold, warm):
            factory.backends()[0].cache.close()
    distinct = len(set(sentences))
    return {
        "pools": len(pools), "sentences": len(sentences), "distinct_sentences": distinct,
        "distinct_ratio": round(distinct / max(len(sentences), 1), 4),
        "build_s_without": round(without, 3), "build_s_with": round(with_cache, 3),
        "speedup": round(without / max(with_cache, 1e-9), 2),
        "build_s_warm": round(warm_s, 3),
    }


def full_wow_projection(figures: Dict[str, Any], examples: int, turns: int) -> Dict[str, Any]:
    """Scale the real sample's figures to all of WoW (see the module docstring)."""
    pools_full = FULL_WOW_TURNS * examples / turns
    sentences_full = pools_full * figures["sentences"] / figures["pools"]
    ms_sentence = 1000 * figures["build_s_without"] / figures["sentences"]
    # warm build: assembly + coreference + cache reads, no parsing
    ms_assembly = 1000 * figures["build_s_warm"] / figures["sentences"]
    ms_parse = max(ms_sentence - ms_assembly, 0.0)
    hours_without = sentences_full * ms_sentence / 3.6e6
    hours_with = (sentences_full * figures["distinct_ratio"] * ms_parse
                  + sentences_full * ms_assembly) / 3.6e6
    return {
        "pools": round(pools_full), "sentences": round(sentences_full),
        "distinct_sentences_at_most": round(sentences_full * figures["distinct_ratio"]),
        "ms_per_sentence_without": round(ms_sentence, 3), "ms_parse_per_sentence": round(ms_parse, 3),
        "ms_assembly_per_sentence": round(ms_assembly, 3),
        "hours_without": round(hours_without, 2), "hours_with_at_most": round(hours_with, 2),
    }


def _fresh_passages(flat: Sequence[str], count: int, start: int, size: int = 5) -> Pool:
    """``count`` passages of ``size`` sentences, numbered so that none repeats."""
    out: Pool = []
    for p in range(start, start + count):
        out.append((f"Passage {p}", [f"{flat[(p * size + i) % len(flat)]} ({p}.{i})"
                                     for i in range(size)]))
    return out


def extend_figures(pools: Sequence[Pool], sizes: Sequence[int], repeats: int = 5) -> Dict[str, Any]:
    """Median ms of extending an N-passage graph by one passage, incremental vs rebuild."""
    from parlai_docgraph.graphs.config import GraphConfig
    from parlai_docgraph.graphs.factory import GraphFactory
    from parlai_docgraph.graphs.schema import DocumentGraph

    flat = [s for pool in pools for _, sents in pool for s in sents if s.strip()]
    factory = GraphFactory(GraphConfig(), parse_memo=10 ** 6)
    incremental: Dict[str, float] = {}
    rebuild: Dict[str, float] = {}
    for j, n in enumerate(sizes):
        graph = factory.build(_fresh_passages(flat, n, 0))
        times, old = [], []
        for r in range(repeats):  # new passages never parsed before: parsing is part of the cost
            fresh = 10 ** 5 + 1000 * j + 2 * r
            new = _fresh_passages(flat, 1, fresh)
            start = time.perf_counter()
            graph = factory.extend(graph, new)
            times.append(time.perf_counter() - start)
            # the rebuild: a graph without its assembly (as loaded from a store) is rebuilt
            # from its passages
            loaded = DocumentGraph(nodes=graph.nodes, edges=graph.edges, meta=graph.meta)
            other = _fresh_passages(flat, 1, fresh + 1)
            start = time.perf_counter()
            factory.extend(loaded, other)
            old.append(time.perf_counter() - start)
        incremental[str(n)] = round(1000 * statistics.median(times), 2)
        rebuild[str(n)] = round(1000 * statistics.median(old), 2)
    lo, hi = str(min(sizes)), str(max(sizes))
    return {
        "extend_ms": incremental, "rebuild_extend_ms": rebuild,
        "extend_growth": round(incremental[hi] / incremental[lo], 2),
        "rebuild_growth": round(rebuild[hi] / rebuild[lo], 2),
    }


def scale_benchmark(quick: bool = False, real: Optional[Path] = REAL_WOW) -> Dict[str, Any]:
    """The figures of the module docstring."""
    out: Dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as datapath:
        if real is not None and Path(real).is_file():
            folder = Path(datapath) / "wizard_of_wikipedia"
            folder.mkdir()
            shutil.copy(real, folder / "train.json")
            (folder / ".built").write_text("built\n1.0")
            pools, examples = task_pools("docgraph:wow", "train", datapath)
            turns = sum(len(d["dialog"]) for _, _, d in iter_json_array(str(real)))
            out["real_wow"] = parse_cache_figures(pools)
            out["full_wow_projection"] = full_wow_projection(out["real_wow"], examples, turns)
        synthetic, _ = task_pools("docgraph:synthetic", "valid", datapath)
        out["synthetic_wow"] = parse_cache_figures(synthetic[:20] if quick else synthetic)
        sample, _ = task_pools("docgraph:sample", "train,valid,test", datapath)
    out["extend"] = extend_figures(sample, (10, 100) if quick else (10, 100, 1000),
                                   2 if quick else 5)
    return out


@register_benchmark("scale")
def _scale(quick: bool = False) -> Dict[str, Any]:
    return scale_benchmark(quick)

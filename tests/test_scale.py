"""
Scale: the sentence parse cache gives the same graphs and parses each distinct
sentence once; incremental ``extend_document_graph`` equals a rebuild.
"""

from __future__ import annotations

import sqlite3

import pytest

from conftest import knowledge_pools, real_file, run_cli, teacher_acts
from parlai_docgraph.graphs import build_document_graph, extend_document_graph
from parlai_docgraph.graphs.parse_cache import CachedParser, ParseCache
from parlai_docgraph.graphs.parsers import get_parser


@pytest.fixture(scope="module")
def dep():
    parser = get_parser("dep")
    parser.nlp
    return parser


@pytest.fixture(scope="module")
def sample_pools(tmp_path_factory):
    """Distinct knowledge pools of docgraph:sample valid (15 pools, shared passages)."""
    acts = teacher_acts("docgraph:sample", tmp_path_factory.mktemp("acts"), "valid")
    pools = {}
    for msg in acts:
        pools.setdefault(repr(msg["knowledge_passages"]),
                         [(t, list(s)) for t, s in msg["knowledge_passages"]])
    return list(pools.values())


class _Counting:
    """A parser wrapper that counts sentences handed to the real parser."""

    def __init__(self, inner, fail: bool = False):
        self.inner, self.fail, self.sentences = inner, fail, []
        self.name = inner.name

    def describe(self):
        return self.inner.describe()

    def cache_token(self, sentences):
        return self.inner.cache_token(sentences)

    def parse(self, sentences):
        if self.fail:
            raise AssertionError(f"parsed {len(sentences)} sentences with a warm cache")
        self.sentences += list(sentences)
        return self.inner.parse(sentences)


def test_parse_cache_same_graphs_and_each_distinct_sentence_parsed_once(
        dep, sample_pools, tmp_path):
    plain = [build_document_graph(p, parser=dep).to_dict() for p in sample_pools]
    counting = _Counting(dep)
    cached = CachedParser(counting, ParseCache.for_store(tmp_path))
    assert [build_document_graph(p, parser=cached).to_dict() for p in sample_pools] == plain
    total = [s for pool in sample_pools for _, sents in pool for s in sents if s.strip()]
    assert len(counting.sentences) == len(set(counting.sentences)) == len(set(total))
    assert len(set(total)) < len(total)  # the pools share passages: parsing once saves work
    assert cached.misses == len(set(total)) and cached.hits > 0
    # a fresh process (new parser, same store): everything comes from the cache
    warm = CachedParser(_Counting(dep, fail=True), ParseCache.for_store(tmp_path))
    assert [build_document_graph(p, parser=warm).to_dict() for p in sample_pools] == plain
    assert warm.misses == 0 and warm.hits == cached.hits + cached.misses


def test_parse_cache_damaged_row_is_parsed_again(dep, tmp_path):
    cache = ParseCache.for_store(tmp_path)
    pool = [("Bach", ["Johann Sebastian Bach was a composer.", "He lived in Leipzig."])]
    expected = build_document_graph(pool, parser=dep)
    assert build_document_graph(pool, parser=CachedParser(dep, cache)) == expected
    cache.close()
    with sqlite3.connect(cache.path) as conn:
        conn.execute("UPDATE parses SET body = '{\"text\": ' WHERE rowid = 1")
    again = CachedParser(dep, ParseCache.for_store(tmp_path))
    assert build_document_graph(pool, parser=again) == expected
    assert (again.hits, again.misses) == (1, 1)


def test_parse_cache_keys_follow_the_parser_version(dep, tmp_path):
    """Another pipeline version never reads this one's parses."""

    class Renamed(_Counting):
        def cache_token(self, sentences):
            return "dep:en_other-9.9"

    pool = [("Lamp", ["The keeper lit the lamp."])]
    build_document_graph(pool, parser=CachedParser(dep, ParseCache.for_store(tmp_path)))
    other = CachedParser(Renamed(dep), ParseCache.for_store(tmp_path))
    build_document_graph(pool, parser=other)
    assert (other.hits, other.misses) == (0, 1)


# ---------------------------------------------------------------- incremental extension
class _NoStart:
    """The rule resolver without an incremental run: build_document_graph's one-go path."""

    def __init__(self):
        from parlai_docgraph.graphs.coref import RuleCoref

        self.inner = RuleCoref()

    def describe(self):
        return self.inner.describe()

    def resolve(self, parsed):
        return self.inner.resolve(parsed)


@pytest.mark.parametrize("ablation", ["full", "coref", "homogeneous"])
def test_assembly_equals_the_one_go_builder(dep, sample_pools, ablation):
    """The incremental assembly, in one batch, gives the one-go builder's graph exactly
    (same node ids, edge order and metadata)."""
    from parlai_docgraph.graphs.config import GraphVariant

    options = GraphVariant(ablation).build_options
    for pool in sample_pools[:6]:
        fast = build_document_graph(pool, parser=dep, **options)
        assert fast.assembly is not None
        assert fast.to_dict() == build_document_graph(
            pool, parser=dep, coref=_NoStart(), **options).to_dict()


def _sweep(pools, parser, options, coref="rule"):
    """Extend passage by passage; compare every step with a rebuild. Returns (steps
    compared, steps where an approximation was used)."""
    from parlai_docgraph.graphs.assembly import canonical_form

    compared = approximated = 0
    for pool in pools:
        graph = build_document_graph(pool[:1], parser=parser, coref=coref, **options)
        for k in range(1, len(pool)):
            before = graph.to_dict()
            extended = extend_document_graph(graph, pool[k:k + 1], parser=parser, coref=coref)
            assert graph.to_dict() == before  # the extended graph is a new object
            extended.validate()
            graph = extended
            if graph.meta["extend"]["kept_apart"]:
                approximated += 1
                continue
            rebuilt = build_document_graph(pool[:k + 1], parser=parser, coref=coref, **options)
            assert canonical_form(graph) == canonical_form(rebuilt), (pool[0][0], k)
            compared += 1
    return compared, approximated


def test_extend_passage_by_passage_equals_rebuild_on_sample(dep, sample_pools):
    from parlai_docgraph.graphs.config import TABLE7_VARIANTS
    from parlai_docgraph.graphs.parsers.dep import DepParser

    memo = DepParser(memo_size=5000)
    long = list({t: (t, s) for pool in sample_pools for t, s in pool}.values())
    assert len(long) >= 12  # one long document: mentions of many passages corefer
    for variant in TABLE7_VARIANTS:
        compared, approximated = _sweep(sample_pools + [long], memo, variant.build_options)
        assert compared >= 30 and approximated <= compared // 20, variant
    compared, _ = _sweep([long], memo, {}, coref="none")
    assert compared >= 10


def test_extend_equals_rebuild_on_synthetic_biographies(dep, tmp_path):
    """docgraph:synthetic: appositions and pronoun chains in every passage, and a long
    document of 40 biographies whose names recur (clusters spanning many passages)."""
    from parlai_docgraph.graphs.parsers.dep import DepParser

    acts = teacher_acts("docgraph:synthetic", tmp_path, "valid")
    pools = list({repr(a["knowledge_passages"]): [(t, list(s)) for t, s in a["knowledge_passages"]]
                  for a in acts}.values())
    long = [p for pool in pools[:10] for p in pool]
    compared, approximated = _sweep(pools[:8] + [long], DepParser(memo_size=5000), {})
    assert compared >= 50 and approximated <= compared // 20


def test_extend_passage_by_passage_equals_rebuild_on_real_wow(dep):
    from parlai_docgraph.graphs.parsers.dep import DepParser

    pools = [pool[:15] for pool in knowledge_pools(
        real_file("wizard_of_wikipedia", "original_examples.json"))]  # a rebuild per step: quadratic
    compared, approximated = _sweep(pools, DepParser(memo_size=5000), {})
    assert compared >= 60 and approximated <= compared // 20


def test_extend_parses_and_resolves_only_the_new_passage(dep, sample_pools):
    """The cost of an extension: the new sentences are the only ones parsed, and
    coreference sees only their mentions (nothing earlier is resolved again)."""
    from parlai_docgraph.graphs.coref import RuleCoref

    pool = [p for pools in sample_pools for p in pools][:30]
    counting = _Counting(dep)

    class Rules(RuleCoref):
        seen = 0

        def _antecedent(self, s, m, *args):
            Rules.seen += 1
            return super()._antecedent(s, m, *args)

    rules = Rules()
    graph = build_document_graph(pool[:20], parser=counting, coref=rules)
    for k in range(20, 30):
        counting.sentences, Rules.seen = [], 0
        graph = extend_document_graph(graph, [pool[k]], parser=counting, coref=rules)
        assert counting.sentences == list(pool[k][1])
        mentions = sum(len(ps.mentions()) for ps in dep.parse(pool[k][1]))
        assert Rules.seen == mentions


# ---------------------------------------------------------------- plain corpora
def test_build_graphs_from_a_plain_corpus_reports_bad_rows(tmp_path):
    """A folder of .md/.txt and a JSONL of {title, text}: one graph per document, a passage
    per paragraph (Markdown headings title theirs); a malformed row is reported with its
    file and line and the other documents are still built."""
    from parlai_docgraph.graphs.config import GraphConfig
    from parlai_docgraph.graphs.corpus import read_corpus
    from parlai_docgraph.graphs.factory import GraphFactory
    from parlai_docgraph.graphs.store import default_store_root as store_root
    from parlai_docgraph.scripts.build_graphs import BuildGraphs
    from parlai_docgraph.graphs.store import GraphStore

    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "lamp.md").write_text(
        "The keeper lit the lamp. It burned all night.\n\n# Tower\nSmeaton built the tower.\n"
        "He used granite.\n", encoding="utf-8")
    (docs / "sub" / "bees.txt").write_text("Bees make honey. They live in hives.\n")
    (docs / "notes.csv").write_text("ignored")
    pools = {where: pool for where, pool, _ in read_corpus(docs)}
    assert pools[str(docs / "lamp.md")] == [
        ("lamp", ["The keeper lit the lamp.", "It burned all night."]),
        ("lamp / Tower", ["Smeaton built the tower.", "He used granite."])]
    assert pools[str(docs / "sub" / "bees.txt")] == [("bees", ["Bees make honey.", "They live in hives."])]
    report = BuildGraphs.main("--corpus", str(docs), "--datapath", str(tmp_path / "dp"),
                              "--progress", "false")
    assert (report["examples"], report["built"], report["failed"]) == (2, 2, 0)
    store = GraphStore(store_root(str(tmp_path / "dp")))
    key = GraphFactory(GraphConfig()).key(pools[str(docs / "lamp.md")])
    assert store.load(key).meta["num_passages"] == 2
    rows = tmp_path / "docs.jsonl"
    rows.write_text('{"title": "Lamp", "text": "The keeper lit the lamp."}\n'
                    '{"title": "Broken", "text": \n'
                    '{"title": "Bees", "text": "Bees make honey."}\n', encoding="utf-8")
    report = BuildGraphs.main("--corpus", str(rows), "--datapath", str(tmp_path / "dp2"),
                              "--progress", "false")
    assert (report["examples"], report["built"], report["failed"]) == (3, 2, 1)
    [(reason, where)] = report["failures"].items()
    assert where == [f"{rows}:2"] and "malformed row" in reason
    with pytest.raises(ValueError, match="folder of .txt/.md"):
        BuildGraphs.main("--corpus", str(docs / "notes.csv"), "--datapath", str(tmp_path / "dp3"))


def test_readme_corpus_command_runs_as_written(tmp_path):
    """README "Scale": ``parlai-docgraph build_graphs --corpus my_docs/ --datapath data``,
    run as written in a folder holding ``my_docs/``; the graph it stores is the one built
    from the document as ``--documents`` reads it (one reader for both)."""
    from parlai_docgraph.graphs.corpus import read_document
    from parlai_docgraph.graphs.store import GraphStore
    from parlai_docgraph.graphs.config import GraphConfig
    from parlai_docgraph.graphs.factory import GraphFactory
    from parlai_docgraph.graphs.store import default_store_root as store_root

    docs = tmp_path / "my_docs"
    docs.mkdir()
    (docs / "keeper.md").write_text(
        "Lighthouse notes\n\n# Duties\n- Trim the wick.\n- Wind the clock\n\nThe keeper logs "
        "the weather. He writes it down at dawn.\n", encoding="utf-8")
    out = run_cli(["parlai-docgraph", "build_graphs", "--corpus", "my_docs/", "--datapath", "data"],
                  cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    pool = read_document(str(docs / "keeper.md"))
    # a section's passages are titled by the document's title line and the section
    assert pool == [("Lighthouse notes / Duties", ["Trim the wick.", "Wind the clock"]),
                    ("Lighthouse notes / Duties",
                     ["The keeper logs the weather.", "He writes it down at dawn."])]
    store = GraphStore(store_root(str(tmp_path / "data")))
    assert store.load(GraphFactory(GraphConfig()).key(pool)).meta["num_sentences"] == 4

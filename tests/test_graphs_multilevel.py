"""
Zhang & Tan's multi-level document graph (topic / segment / word nodes).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Dict, List, Set

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from parlai_docgraph.graphs import DocumentGraph
from parlai_docgraph.graphs.coref import RuleCoref
from parlai_docgraph.graphs.multilevel import NO_PASSAGE, build_multilevel_graph
from parlai_docgraph.graphs.parsers.dep import load_pipeline

BERLIN = ("Irving Berlin", [
    "Irving Berlin was an American composer and lyricist.",
    "He also was an owner of the Music Box Theatre on Broadway.",
])


@pytest.fixture(scope="module", autouse=True)
def nlp():
    """Load the spaCy pipeline once for the module."""
    return load_pipeline()


def words(graph: DocumentGraph) -> Dict[str, List[str]]:
    """Word node text -> the texts of all its merged occurrences."""
    sentences = graph.sentence_texts()
    return {
        n.text: [sentences[s][a:b] for s, a, b in n.mentions]
        for n in graph.nodes if n.type == "word"
    }


def links(graph: DocumentGraph, kind: str) -> Set[tuple]:
    return {(graph.nodes[e.src].text, graph.nodes[e.dst].text) for e in graph.edges_of_type(kind)}


def check(graph: DocumentGraph) -> None:
    graph.validate()
    sentences = graph.sentence_texts()
    for node in graph.nodes:
        assert node.type in ("topic", "sentence", "word")
        if node.type == "word":
            assert node.mentions and (node.sentence, *node.span) in node.mentions
            for s, a, b in node.mentions:
                assert 0 <= a < b <= len(sentences[s])
    assert DocumentGraph.from_dict(json.loads(json.dumps(graph.to_dict()))) == graph


def test_paper_example_steps():
    graph = build_multilevel_graph([BERLIN])
    check(graph)
    w = words(graph)
    # step 1 + 4: the pronoun joins its referent; same content merges ("was" twice)
    assert w["Irving Berlin"] == ["Irving Berlin", "He"]
    assert w["was"] == ["was", "was"]
    # step 2: adjacent same-POS tokens form one unit; punctuation and determiners dropped
    assert "Music Box Theatre" in w and "." not in w and "an" not in w
    # step 3: conjunction sharing, preposition bridging, conjunctions/prepositions deleted
    dep = links(graph, "word_word")
    assert {("was", "composer"), ("was", "lyricist")} <= dep
    assert ("owner", "Music Box Theatre") in links(graph, "prep_bridge")
    assert not {"and", "of", "on"} & set(w)
    # step 4: topic -> segments, segment -> words, adjacent segments, self loops
    assert links(graph, "topic_sentence") >= {("Irving Berlin", s) for s in BERLIN[1]}
    assert links(graph, "next_sentence") == {tuple(BERLIN[1])}
    assert ("He also was an owner of the Music Box Theatre on Broadway.", "Irving Berlin") in (
        links(graph, "sentence_word")
    )
    loops = graph.edges_of_type("self_loop")
    assert sorted(e.src for e in loops) == [n.id for n in graph.nodes]
    assert all(e.src == e.dst for e in loops)
    no_passage = graph.nodes[graph.meta["no_passage_node"]]
    assert no_passage.type == "sentence" and no_passage.text == NO_PASSAGE
    assert graph.meta["builder"] == "multilevel" and graph.meta["coref"] == RuleCoref.version


def test_conjuncts_share_preposition_bridges():
    """Zhang & Tan step 3: conjoined words share *all* edges, the preposition bridges too
    (they used to get copies of dependency edges only)."""
    graph = build_multilevel_graph([("T", ["Berlin was the owner of a theatre and a studio.",
                                           "Berlin was an owner and founder of the Music Box "
                                           "Theatre."])])
    bridges = links(graph, "prep_bridge")
    assert {("owner", "theatre"), ("owner", "studio")} <= bridges
    assert {("owner", "Music Box Theatre"), ("founder", "Music Box Theatre")} <= bridges


def test_switches_and_per_document_merging():
    graph = build_multilevel_graph(
        [BERLIN, ("Broadway", ["Broadway was busy."])],
        coref=False, no_passage=False, self_loops=False,
    )
    check(graph)
    assert not graph.edges_of_type("self_loop") and graph.meta["no_passage_node"] is None
    w = words(graph)
    assert w["He"] == ["He"]
    counts = Counter(n.text for n in graph.nodes if n.type == "word")
    assert counts["Broadway"] == 2 and counts["was"] == 2  # merged per document only
    assert [n.text for n in graph.nodes if n.type == "topic"] == ["Irving Berlin", "Broadway"]
    keep_det = build_multilevel_graph([BERLIN], drop_pos=("PUNCT", "SPACE"))
    assert "an" in words(keep_det)
    types = graph.to_tensors()["node_type"].tolist()
    assert set(types) == {1, 3, 4}


@pytest.mark.parametrize(
    "passages",
    [[], [("Empty", [])], [("blank", ["", "  "])],
     [("Ünï", ["東京は首都です。", "<b>It</b> &amp; [[x|y]] — 😀"])]],
)
def test_bad_input(passages):
    graph = build_multilevel_graph(passages)
    check(graph)
    assert len(graph.nodes_of_type("topic")) == len(passages) + 1
    with pytest.raises(ValueError, match="got str"):
        build_multilevel_graph("text")


VOCAB = "Irving Berlin he it they was a composer and lyricist of on the Broadway , .".split()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(
    st.text(max_size=6),
    st.lists(st.lists(st.sampled_from(VOCAB), max_size=10).map(" ".join) | st.text(max_size=12),
             max_size=3),
), max_size=3))
@example([("", ["Irving Irving he , of"])])  # a conjunct that is a deleted preposition
def test_property_word_spans_and_edges(passages):
    graph = build_multilevel_graph(passages)
    check(graph)
    ids = range(len(graph.nodes))
    assert all(e.src in ids and e.dst in ids for e in graph.edges)


def test_table3_ablations_remove_topic_or_word_nodes():
    """Zhang & Tan Table 3: 'w/o topic nodes' and 'w/o word nodes' keep the segment nodes
    (the selection targets) and remove the other level with its edges."""
    full = build_multilevel_graph([BERLIN])
    no_topic = build_multilevel_graph([BERLIN], topic_nodes=False)
    no_word = build_multilevel_graph([BERLIN], word_nodes=False)

    def types(g):
        return {n.type for n in g.nodes}, {e.type for e in g.edges}

    segments = [n.text for n in full.nodes if n.type == "sentence"]
    for g in (no_topic, no_word):
        assert [n.text for n in g.nodes if n.type == "sentence"] == segments
    nodes, edges = types(no_topic)
    assert "topic" not in nodes and "topic_sentence" not in edges and "word" in nodes
    assert {e for e in types(full)[1] if e != "topic_sentence"} == edges
    nodes, edges = types(no_word)
    assert nodes == {"topic", "sentence"}
    assert not edges & {"sentence_word", "word_word", "prep_bridge"}
    assert no_word.meta["options"]["word_nodes"] is False

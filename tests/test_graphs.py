"""
Document graphs: schema, dep parser roles, rule-based coreference,
Li et al.'s document semantic graph and its Table 7 ablations, bad input, real WoW pools.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import List, Tuple

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parlai_docgraph.graphs.config import TABLE7_VARIANTS, GraphVariant
from parlai_docgraph.graphs import (
    EDGE_TYPES,
    NODE_TYPES,
    ROLE_EDGE_TYPES,
    SCHEMA_VERSION,
    DocumentGraph,
    Edge,
    Node,
    build_document_graph,
)
from parlai_docgraph.graphs.coref import RuleCoref, get_coref
from parlai_docgraph.graphs.parsers import get_parser
from parlai_docgraph.graphs.parsers.amr import AMRParser
from parlai_docgraph.graphs.parsers.dep import load_pipeline
from parlai_docgraph.graphs.schema import EDGE_TYPE_ID, NODE_TYPE_ID

from conftest import knowledge_pools

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tasks" / "docgraph" / "sample_data" / "wizard_of_wikipedia" / "train.json"
GRAPHS = ROOT / "parlai_docgraph" / "graphs"
STRUCTURE = {"passage_sentence", "next_sentence"}
HYPO = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def dep():
    """One spaCy-backed parser for the whole module (the pipeline loads once)."""
    parser = get_parser("dep")
    parser.nlp
    return parser


def concept_with(graph: DocumentGraph, text: str) -> Node:
    """The entity concept whose canonical text is ``text``."""
    found = [n for n in graph.nodes if n.kind == "entity" and n.text == text]
    assert len(found) == 1, [n.text for n in graph.nodes if n.kind == "entity"]
    return found[0]


def mention_texts(graph: DocumentGraph, node: Node) -> List[str]:
    sentences = graph.sentence_texts()
    return [sentences[s][a:b] for s, a, b in node.mentions]


def role_edges(graph: DocumentGraph) -> List[Tuple[str, str, str]]:
    """(predicate text, role, argument canonical text) triples."""
    return [
        (graph.nodes[e.src].text, e.type, graph.nodes[e.dst].text)
        for e in graph.edges if e.type in ROLE_EDGE_TYPES
    ]


def check_graph(graph: DocumentGraph) -> None:
    """Contract checks beyond ``validate``: mentions inside sentences, structure edges."""
    graph.validate()
    sentences = graph.sentence_texts()
    for node in graph.nodes:
        if node.type == "concept":
            assert node.span is not None and node.mentions
            assert (node.sentence, *node.span) in node.mentions
            for s, a, b in node.mentions:
                assert 0 <= a < b <= len(sentences[s])
                assert sentences[s][a:b].strip() == sentences[s][a:b]
    ids = range(len(graph.nodes))
    for edge in graph.edges:
        assert edge.src in ids and edge.dst in ids and edge.type in EDGE_TYPES


# ------------------------------------------------------------------------ schema
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def random_graphs(draw) -> DocumentGraph:
    """Valid graphs with arbitrary unicode text, spans, mentions, edges and meta."""
    nodes: List[Node] = []
    sentences: List[Tuple[str, int]] = []
    for p in range(draw(st.integers(0, 3))):
        nodes.append(Node(len(nodes), "passage", draw(st.text(max_size=10)), p))
        for _ in range(draw(st.integers(0, 3))):
            text = draw(st.text(max_size=20))
            nodes.append(Node(len(nodes), "sentence", text, p, len(sentences)))
            sentences.append((text, p))
    if sentences:
        for _ in range(draw(st.integers(0, 5))):
            refs = []
            for _ in range(draw(st.integers(1, 3))):
                g = draw(st.integers(0, len(sentences) - 1))
                a = draw(st.integers(0, len(sentences[g][0])))
                refs.append((g, a, draw(st.integers(a, len(sentences[g][0])))))
            g, a, b = refs[0]
            node_type = draw(st.sampled_from(["concept", "word"]))
            kind = None
            if node_type == "concept":
                kind = draw(st.sampled_from(["entity", "predicate"]))
            nodes.append(Node(
                len(nodes), node_type, sentences[g][0][a:b], sentences[g][1], g, (a, b),
                tuple(refs), kind,
            ))
        if draw(st.booleans()):
            nodes.append(Node(len(nodes), "topic", draw(st.text(max_size=5)), 0))
    edges = []
    if nodes:
        ids = st.integers(0, len(nodes) - 1)
        for _ in range(draw(st.integers(0, 8))):
            edges.append(Edge(draw(ids), draw(ids), draw(st.sampled_from(EDGE_TYPES))))
    meta = draw(st.dictionaries(st.text(max_size=5), json_values, max_size=4))
    meta["schema_version"] = SCHEMA_VERSION
    graph = DocumentGraph(nodes=nodes, edges=edges, meta=meta)
    graph.validate()
    return graph


@settings(max_examples=150, deadline=None)
@given(random_graphs())
def test_schema_json_round_trip_is_exact(graph):
    text = json.dumps(graph.to_dict(), ensure_ascii=True)
    again = DocumentGraph.from_dict(json.loads(text))
    assert again == graph
    assert json.dumps(again.to_dict(), ensure_ascii=True) == text


@settings(max_examples=50, deadline=None)
@given(random_graphs())
def test_tensors_match_nodes_and_edges(graph):
    from torch_geometric.data import Data

    t = graph.to_tensors()
    assert t["edge_index"].dtype == torch.long and t["edge_index"].shape == (2, len(graph.edges))
    assert t["node_type"].tolist() == [NODE_TYPE_ID[n.type] for n in graph.nodes]
    assert t["edge_type"].tolist() == [EDGE_TYPE_ID[e.type] for e in graph.edges]
    assert t["edge_index"].t().tolist() == [[e.src, e.dst] for e in graph.edges]
    data = graph.to_pyg()
    assert isinstance(data, Data) and data.num_nodes == len(graph.nodes)
    assert data.validate(raise_on_error=True)


def test_vocabularies_are_fixed_and_versioned():
    assert SCHEMA_VERSION == 1
    assert NODE_TYPES == ("passage", "sentence", "concept", "topic", "word")
    assert len(set(EDGE_TYPES)) == len(EDGE_TYPES)
    assert EDGE_TYPES[:3] == ("passage_sentence", "sentence_concept", "next_sentence")


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(schema_version=0), "schema version"),
        (lambda d: d["edges"].append({"src": 0, "dst": 99, "type": "coref"}), "leaves the graph"),
        (lambda d: d["edges"].append({"src": 0, "dst": 1, "type": "likes"}), "unknown edge type"),
        (lambda d: d["nodes"][2].update(text="lamp"), "span text differs"),
        (lambda d: d["nodes"][2].update(span=[0, 999]), "outside sentence"),
        (lambda d: d["nodes"][1].update(id=7), "id 7"),
    ],
)
def test_from_dict_rejects_broken_graphs(mutate, message):
    graph = DocumentGraph(
        nodes=[
            Node(0, "passage", "T", 0), Node(1, "sentence", "The keeper lit it.", 0, 0),
            Node(2, "concept", "keeper", 0, 0, (4, 10), ((0, 4, 10),), "entity"),
        ],
        edges=[Edge(0, 1, "passage_sentence"), Edge(1, 2, "sentence_concept")],
    )
    data = json.loads(json.dumps(graph.to_dict()))
    assert DocumentGraph.from_dict(data) == graph
    mutate(data)
    with pytest.raises(ValueError, match=message):
        DocumentGraph.from_dict(data)


# ------------------------------------------------------------------------ parser
def test_parser_registry_and_loader():
    assert load_pipeline() is load_pipeline()
    with pytest.raises(RuntimeError, match="precomputed AMR graphs.*--amr-file.*amrlib parse"):
        get_parser("amr")
    with pytest.raises(ValueError, match="unknown graph parser"):
        get_parser("ucca")
    with pytest.raises(ValueError, match="unknown coreference backend"):
        get_coref("neural")


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("The keeper lit the lamp.", {("lit", "ARG0", "keeper"), ("lit", "ARG1", "lamp")}),
        ("The lamp was lit by the keeper.", {("lit", "ARG1", "lamp"), ("lit", "ARG0", "keeper")}),
        ("He gave the boy a book.", {("gave", "ARG0", "He"), ("gave", "ARG2", "boy"),
                                     ("gave", "ARG1", "book")}),
        ("Bach was a composer.", {("was", "ARG0", "Bach"), ("was", "ARG1", "composer")}),
    ],
)
def test_dep_parser_assigns_core_roles(dep, sentence, expected):
    parsed = dep.parse([sentence])[0]
    got = {(p.text, a.role, a.mention.text) for p in parsed.predicates for a in p.arguments}
    assert expected <= got
    for m in parsed.mentions():
        assert sentence[m.start:m.end] == m.text


AMR = """
# ::snt The keeper lit the lamp.
(l / light-01 :ARG0 (k / keeper) :ARG1 (l2 / lamp))

# ::snt Johann Sebastian Bach was a German composer.
(p / person
   :name (n / name :op1 "Johann" :op2 "Sebastian" :op3 "Bach")
   :ARG0-of (c / compose-01)
   :mod (c2 / country :name (n2 / name :op1 "Germany")))

# ::snt Bach wrote the Mass in B minor.
(w / write-01
   :ARG0 (p / person :name (n / name :op1 "Bach"))
   :ARG1 (m / mass :mod (m2 / minor :mod (b / b))))

# ::snt He died in Leipzig in 1750.
(d / die-01
   :ARG1 (h / he)
   :location (c / city :name (n / name :op1 "Leipzig"))
   :time (d2 / date-entity :year 1750))

# ::snt The museum restored its organ.
(r / restore-01 :ARG0 (m / museum) :ARG1 (o / organ :poss m))
"""


def test_amr_parser_on_precomputed_penman_graphs(dep, tmp_path):
    path = tmp_path / "graphs.amr"
    path.write_text(AMR, encoding="utf-8")
    amr = get_parser("amr", amr_file=str(path))
    assert get_parser("amr", amr_graphs=[AMR]).graphs == amr.graphs
    parsed = amr.parse(["The keeper lit the lamp.", "", "The museum restored its organ."])
    got = {(p.text, a.role, a.mention.text) for p in parsed[0].predicates for a in p.arguments}
    assert got == {("lit", "ARG0", "keeper"), ("lit", "ARG1", "lamp")}
    assert parsed[1].predicates == []
    assert [(r.role, r.src.text, r.dst.text) for r in parsed[2].relations] == [
        ("poss", "its organ", "museum")
    ]
    graph = build_document_graph([BACH], parser=amr)
    check_graph(graph)
    assert graph.meta["parser"] == "amr:precomputed+rbw"
    assert mention_texts(graph, concept_with(graph, "Johann Sebastian Bach")) == [
        "Johann Sebastian Bach", "Bach", "He"
    ]
    roles = set(role_edges(graph))
    bach = "Johann Sebastian Bach"
    assert {("composer", "ARG0", bach), ("died", "ARG1", bach), ("wrote", "ARG0", bach)} <= roles
    with pytest.raises(ValueError, match="no AMR graph for sentence 1: 'Unparsed"):
        amr.parse(["The keeper lit the lamp.", "Unparsed sentence."])
    with pytest.raises(ValueError, match="without '# ::snt'"):
        get_parser("amr", amr_graphs=["(l / light-01)"])
    with pytest.raises(ValueError, match="AMR file not found"):
        get_parser("amr", amr_file=str(tmp_path / "missing.amr"))


# ------------------------------------------------------------------------ coreference
BACH = ("Johann Sebastian Bach", [
    "Johann Sebastian Bach was a German composer.",
    "Bach wrote the Mass in B minor.",
    "He died in Leipzig in 1750.",
])
TOWER = ("Smeaton's Tower", [
    "Smeaton's Tower was built on the Eddystone Rocks.",
    "Engineers moved the tower to Plymouth Hoe.",
    "It is a memorial now.",
])


def test_coref_merges_name_short_name_and_pronoun(dep):
    graph = build_document_graph([BACH], parser=dep)
    node = concept_with(graph, "Johann Sebastian Bach")
    assert mention_texts(graph, node) == ["Johann Sebastian Bach", "Bach", "He"]
    assert [s for s, _, _ in node.mentions] == [0, 1, 2]
    assert sum(1 for e in graph.edges if e.dst == node.id and e.type == "sentence_concept") == 3


def test_coref_merges_definite_description_and_it(dep):
    graph = build_document_graph([TOWER], parser=dep)
    node = concept_with(graph, "Smeaton's Tower")
    assert mention_texts(graph, node) == ["Smeaton's Tower", "tower", "It"]


def test_coref_crosses_passages(dep):
    graph = build_document_graph(
        [BACH, ("Leipzig", ["Leipzig is a city in Saxony.", "Bach worked there."])], parser=dep
    )
    node = concept_with(graph, "Johann Sebastian Bach")
    assert {graph.nodes[0].passage, 1} == {n.passage for n in graph.nodes if n.type == "passage"}
    assert [s for s, _, _ in node.mentions] == [0, 1, 2, 4]


@pytest.mark.parametrize(
    "sentences, together, apart",
    [
        (["The king built the tower.", "It was tall.", "He died."],
         [("king", "He"), ("tower", "It")], [("king", "It"), ("tower", "He")]),
        (["The keepers lit the lamp.", "It was bright.", "They slept."],
         [("keepers", "They"), ("lamp", "It")], [("keepers", "It"), ("lamp", "They")]),
        (["The queen met the king.", "He smiled.", "She left."],
         [("queen", "She"), ("king", "He")], [("queen", "He"), ("king", "She")]),
    ],
)
def test_pronouns_do_not_merge_across_gender_or_number(dep, sentences, together, apart):
    graph = build_document_graph([("t", sentences)], parser=dep)
    clusters = [set(mention_texts(graph, n)) for n in graph.nodes if n.kind == "entity"]
    for a, b in together:
        assert any({a, b} <= c for c in clusters), clusters
    for a, b in apart:
        assert not any({a, b} <= c for c in clusters), clusters


def test_coref_apposition_and_exact_repeats(dep):
    graph = build_document_graph([("t", [
        "The tower was designed by the civil engineer John Smeaton.",
        "Smeaton used granite.", "He cut the blocks.",
        "Science fiction is a genre.", "Critics love science fiction.",
        "A ship sank.", "A ship arrived.",
    ])], parser=dep)
    clusters = [mention_texts(graph, n) for n in graph.nodes if n.kind == "entity"]
    assert ["civil engineer", "John Smeaton", "Smeaton", "He"] in clusters
    assert ["Science fiction", "science fiction"] in clusters
    assert clusters.count(["ship"]) == 2


def test_coref_first_names_possessors_and_pronominal_topics(dep):
    """A bare first name joins the full name; "Greta's son Erik ... He" is the son, not the
    possessor; "her mother ... As a child she" is the "her" the sentence is about."""
    graph = build_document_graph([("t", [
        "The bakery was opened by Greta Hansen in 1952.",
        "She sold only rye bread.",
        "Greta's son Erik took over in 1978.",
        "He added cakes.",
        "Ada Lindqvist was born on a farm.",
        "Her father grew potatoes and her mother kept bees.",
        "As a child she pressed flowers.",
        "She studied botany.",
    ])], parser=dep)
    clusters = [mention_texts(graph, n) for n in graph.nodes if n.kind == "entity"]
    greta = next(c for c in clusters if "Greta Hansen" in c)
    son = next(c for c in clusters if "Erik" in c)
    ada = next(c for c in clusters if "Ada Lindqvist" in c)
    assert greta == ["Greta Hansen", "She", "Greta"]
    assert son[-1] == "He" and "Greta" not in son
    assert ada == ["Ada Lindqvist", "Her", "her", "she", "She"]
    assert not any("mother" in m for m in ada) and ["child"] in clusters


def test_coref_clusters_are_deterministic(dep):
    parsed = dep.parse(BACH[1] + TOWER[1])
    assert RuleCoref().resolve(parsed) == RuleCoref().resolve(parsed)
    assert get_coref("none").resolve(parsed) == []


# ------------------------------------------------------------------------ ablations
def test_ablation_switches_change_exactly_their_types(dep):
    passages = [BACH, TOWER]
    full = build_document_graph(passages, parser=dep)
    check_graph(full)
    kinds = {e.type for e in full.edges}
    assert {"passage_sentence", "next_sentence", "sentence_concept", "ARG0", "ARG1"} <= kinds
    assert "coref" not in kinds  # every cluster fully merged

    sent = build_document_graph(passages, parser=dep, **GraphVariant.SENTENCE.build_options)
    assert {n.type for n in sent.nodes} == {"passage", "sentence"}
    assert {e.type for e in sent.edges} == STRUCTURE
    assert sent.nodes == [n for n in full.nodes if n.type in ("passage", "sentence")]
    assert sent.edges == [e for e in full.edges if e.type in STRUCTURE]
    assert sent.meta["parser"] is None and sent.meta["coref"] is None

    coref = build_document_graph(passages, parser=dep, **GraphVariant.COREF.build_options)
    assert coref.nodes == full.nodes
    assert coref.edges == [e for e in full.edges if e.type not in ROLE_EDGE_TYPES]

    homog = build_document_graph(passages, parser=dep, **GraphVariant.HOMOGENEOUS.build_options)
    assert homog.nodes == full.nodes
    assert {e.type for e in homog.edges} == {"edge"}
    assert [(e.src, e.dst) for e in homog.edges] == list(
        dict.fromkeys((e.src, e.dst) for e in full.edges)
    )
    assert set(homog.to_tensors()["node_type"].tolist()) == {0}
    assert len(set(full.to_tensors()["node_type"].tolist())) == 3


def test_unmerged_clusters_get_coref_edges(dep):
    full = build_document_graph([BACH], parser=dep)
    split = build_document_graph([BACH], parser=dep, coref_merge="none")
    check_graph(split)
    bach = [
        n for n in split.nodes if n.kind == "entity" and ("Bach" in n.text or n.text == "He")
    ]
    assert sorted(n.text for n in bach) == ["Bach", "He", "Johann Sebastian Bach"]
    canon = next(n.id for n in bach if n.text == "Johann Sebastian Bach")
    coref = {(e.src, e.dst) for e in split.edges if e.type == "coref"}
    assert coref == {(n.id, canon) for n in bach if n.id != canon}
    assert len(split.nodes) == len(full.nodes) + 2
    none = build_document_graph([BACH], parser=dep, coref_merge="none", coref_edges=False)
    assert not none.edges_of_type("coref")
    # the same graph through the user option --graph-coref-merge unlinked
    from parlai_docgraph.graphs.config import GraphConfig
    from parlai_docgraph.graphs.factory import GraphFactory

    unlinked = GraphFactory(GraphConfig(variant="coref", coref_merge="unlinked")).build([BACH])
    assert not unlinked.edges_of_type("coref")
    assert sorted(n.text for n in unlinked.nodes if n.kind == "entity" and (
        "Bach" in n.text or n.text == "He")) == ["Bach", "He", "Johann Sebastian Bach"]
    per_passage = build_document_graph(
        [BACH, ("B", ["Bach was born in Eisenach."])], parser=dep, coref_merge="passage"
    )
    coref = per_passage.edges_of_type("coref")
    assert len(coref) == 1 and per_passage.nodes[coref[0].dst].text == "Johann Sebastian Bach"


def test_extend_equals_full_rebuild_and_parses_only_new_sentences(dep):
    """Equal up to node ids (extension appends nodes; see graphs.assembly)."""
    from parlai_docgraph.graphs import extend_document_graph
    from parlai_docgraph.graphs.assembly import canonical_form
    from parlai_docgraph.graphs.parsers.dep import DepParser

    leipzig = ("Leipzig", ["Bach moved to Leipzig in 1723.", "He died there in 1750."])
    memo = DepParser(memo_size=1000)
    for options in (v.build_options for v in TABLE7_VARIANTS):
        full = build_document_graph([BACH, TOWER, leipzig], parser=dep, **options)
        first = build_document_graph([BACH, TOWER], parser=memo, **options)
        before = memo.parsed_sentences
        extended = extend_document_graph(first, [leipzig], parser=memo)
        assert canonical_form(extended) == canonical_form(full)
        extended.validate()
        assert memo.parsed_sentences - before == (0 if options else 2)
        loaded = DocumentGraph.from_dict(json.loads(json.dumps(first.to_dict())))
        assert canonical_form(extend_document_graph(loaded, [leipzig], parser=dep)) == canonical_form(full)
    bach = concept_with(extended, "Johann Sebastian Bach")
    # new mentions join an old cluster
    assert [s for s, _, _ in bach.mentions] == [0, 1, 2, 6, 7]
    assert mention_texts(extended, bach)[-2:] == ["Bach", "He"]
    with pytest.raises(ValueError, match="built with coref"):
        extend_document_graph(first, [leipzig], parser=dep, coref="none")
    with pytest.raises(ValueError, match=r"passages\[0\] title"):
        extend_document_graph(first, [(1, ["x"])], parser=dep)


# ------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "passages",
    [
        [],
        [("Empty passage", [])],
        [("Empty sentences", ["", "   ", "\n"])],
        [("Ünïcödé", ["Der Komponist Dvořák schrieb die Symphonie „Aus der Neuen Welt“.",
                      "東京は日本の首都です。", "😀 He wrote it 🎻."])],
        [("<b>markup</b>", ["<p>The keeper &amp; his wife lit [[lamp|the lamp]].</p>",
                            "{{cite web|url=http://x.org}} ==History== '''It''' burned.",
                            "\x00\t|||  -- ;;"])],
        [("long", ["The keeper lit the lamp and " * 60 + "the lamp burned."])],
    ],
)
def test_bad_input_does_not_crash(dep, passages):
    graph = build_document_graph(passages, parser=dep)
    check_graph(graph)
    assert len(graph.nodes_of_type("passage")) == len(passages)
    assert len(graph.nodes_of_type("sentence")) == sum(len(s) for _, s in passages)


@pytest.mark.parametrize(
    "passages, where",
    [
        ("The keeper lit the lamp.", "got str"),
        ({"t": ["s"]}, "got dict"),
        ([("t", "one sentence")], r"passages\[0\] sentences"),
        ([("t", ["ok"]), ("u", ["fine", 3])], r"passages\[1\] sentence 1 must be str"),
        ([(None, ["s"])], r"passages\[0\] title"),
        ([("t",)], r"passages\[0\] must be"),
    ],
)
def test_wrong_input_types_raise_clear_value_errors(dep, passages, where):
    with pytest.raises(ValueError, match=where):
        build_document_graph(passages, parser=dep)
    with pytest.raises(ValueError, match="coref_merge"):
        build_document_graph([BACH], parser=dep, coref_merge="some")


def test_two_thousand_sentence_document(dep):
    templates = [
        "The keeper {i} lit the lamp.", "He cleaned the tower {i}.", "It burned all night.",
        "Ships passed the rocks.", "They saw its light.",
    ]
    sentences = [templates[i % 5].format(i=i) for i in range(2000)]
    graph = build_document_graph([("Lighthouse", sentences)], parser=dep)
    check_graph(graph)
    assert len(graph.nodes_of_type("sentence")) == 2000
    assert len(graph.edges_of_type("next_sentence")) == 1999
    assert any(len(n.mentions) > 1 for n in graph.nodes if n.kind == "entity")


WORDS = (
    "the keeper lamp tower Bach he she it they its his their lit built was moved gave a "
    "Smeaton 's and of on in by rocks king queen engineer , . who which Plymouth Hoe"
).split()


@st.composite
def passage_sets(draw, real: List[str]) -> List[Tuple[str, List[str]]]:
    sentence = st.one_of(
        st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join),
        st.sampled_from(real),
        st.text(max_size=15),
    )
    return draw(st.lists(
        st.tuples(st.text(max_size=8), st.lists(sentence, max_size=3)), max_size=3
    ))


REAL = [s for pool in knowledge_pools()[:3] for _, sents in pool for s in sents]


@HYPO
@given(data=st.data())
def test_property_spans_inside_sentences_and_edges_connect(dep, data):
    passages = data.draw(passage_sets(REAL))
    graph = build_document_graph(passages, parser=dep)
    check_graph(graph)
    nested = [s for _, sents in passages for s in sents]
    assert [n.text for n in graph.nodes_of_type("sentence")] == nested
    again = DocumentGraph.from_dict(json.loads(json.dumps(graph.to_dict())))
    assert again == graph


# ------------------------------------------------------------------------ real sample
def test_real_sample_pools_have_coreference_merges(dep):
    pools = knowledge_pools()[:3]
    for pool in pools:
        graph = build_document_graph(pool, parser=dep)
        check_graph(graph)
        assert graph.meta["parser"].startswith("dep:") and graph.meta["coref"] == RuleCoref.version
        merged = [n for n in graph.nodes if n.kind == "entity" and len(n.mentions) > 1]
        assert len(merged) >= 5
        texts = {n.text: mention_texts(graph, n) for n in merged}
        pronouns = re.compile(r"^(he|she|it|its|his|her|they|their|them)$", re.I)
        named = [
            name for name, ms in texts.items()
            if name[:1].isupper() and any(pronouns.match(t) for t in ms)
        ]
        assert named, texts
    graph = build_document_graph(pools[0], parser=dep)
    winstanley = concept_with(graph, "Henry Winstanley")
    assert mention_texts(graph, winstanley)[:2] == ["Henry Winstanley", "Winstanley"]
    passages = {graph.nodes_of_type("sentence")[s].passage for s, _, _ in
                concept_with(graph, "Smeaton's Tower").mentions}
    assert len(passages) > 1


def test_real_wow_every_dialogue_links_a_named_person_to_later_pronouns(dep):
    """
    On the real WoW sample (../shared/data/real), every dialogue's knowledge (topic passage
    and all retrieved passages) builds a graph where a concept merges a person's name (a
    proper-noun mention spaCy labels PERSON) with he/she/his/her mentions after it.
    """
    from conftest import real_file

    pools = knowledge_pools(real_file("wizard_of_wikipedia", "original_examples.json"))
    assert len(pools) == 5
    gendered = {"he", "him", "his", "she", "her", "hers"}
    for pool in pools:
        sentences = [s for _, sents in pool for s in sents]
        mention = {(g, m.start, m.end): m for g, ps in enumerate(dep.parse(sentences))
                   for m in ps.mentions()}
        graph = build_document_graph(pool, parser=dep)
        check_graph(graph)
        linked = {}
        for node in graph.nodes:
            if node.kind != "entity":
                continue
            refs = sorted(node.mentions)
            names = [r for r in refs if mention[r].pos == "PROPN" and mention[r].ent == "PERSON"]
            later = [r for r in refs if names and r > names[0] and mention[r].pos == "PRON"
                     and mention[r].text.lower() in gendered]
            if later:
                linked[mention[names[0]].text] = [mention[r].text for r in later]
                # each pronoun was resolved to a mention of the cluster within the window
                window = RuleCoref().pronoun_window
                for pronoun in later:
                    assert any(r < pronoun and pronoun[0] - r[0] <= window for r in refs)
        assert linked, f"no person linked to a later pronoun in the pool of {pool[0][0]!r}"


def test_graphs_package_has_no_parlai_imports():
    pattern = re.compile(r"^\s*(from|import)\s+parlai(\.|\s|$)", re.M)
    for path in GRAPHS.rglob("*.py"):
        assert not pattern.search(path.read_text()), path


def test_amr_store_key_follows_the_amr_graphs_used(tmp_path):
    """
    Editing the AMR graph of a pool's sentence changes that pool's store key (no stale
    graph is loaded); editing another sentence's graph does not.
    """
    from parlai_docgraph.graphs.config import GraphConfig
    from parlai_docgraph.graphs.factory import GraphFactory

    pool = [("Lamp", ["The keeper lit the lamp."])]
    edited_lamp = AMR.replace(":ARG1 (l2 / lamp)", ":ARG1 (l2 / candle)")
    edited_other = AMR.replace("(o / organ :poss m)", "(o / piano :poss m)")

    def key(text):
        path = tmp_path / f"{abs(hash(text))}.amr"
        path.write_text(text, encoding="utf-8")
        return GraphFactory(GraphConfig(parser="amr", amr_file=str(path))).key(pool)

    assert key(AMR) != key(edited_lamp)
    assert key(AMR) == key(edited_other)


def test_amr_stog_graphs_are_memoised_and_bounded(dep, tmp_path, monkeypatch):
    """Sentences the AMR file lacks are parsed by the stog model once each, in one batch per
    call, into a bounded memo; a call with more sentences than the memo holds still aligns
    every one of them."""
    (tmp_path / "amrlib_meta.json").write_text('{"model_type": "fake", "version": "0"}')
    graphs = {block.split("\n", 1)[0][len("# ::snt "):]: block for block in
              (b.strip() for b in AMR.split("\n\n")) if block}
    batches = []

    class Stog:
        def parse_sents(self, texts, add_metadata=True):
            batches.append(list(texts))
            return [graphs[t] for t in texts]

    monkeypatch.setattr(AMRParser, "PARSED_MEMO", 2)
    amr = AMRParser(amr_graphs=[graphs["The museum restored its organ."]], model_dir=tmp_path)
    monkeypatch.setattr(amr, "stog", lambda: Stog())
    three = ["The keeper lit the lamp.", "Bach wrote the Mass in B minor.",
             "He died in Leipzig in 1750.", "The museum restored its organ."]
    parsed = amr.parse(three)
    assert batches == [sorted(three[:3])]  # the file's sentence is not parsed
    assert {a.role for p in parsed[0].predicates for a in p.arguments} == {"ARG0", "ARG1"}
    assert len(amr.parsed) == 2
    first, *recent = batches[0]  # parsed in this order
    amr.parse(recent)  # the two most recent are remembered
    assert len(batches) == 1
    amr.parse([first])  # the first was dropped: parsed again
    assert batches[1:] == [[first]]

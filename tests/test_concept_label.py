"""
``top_concepts`` shows concepts: noun phrases and names, never predicates, pronouns or
quantifier fragments such as ``no room``.
"""

from __future__ import annotations

import pytest

from parlai_docgraph.graphs import build_document_graph
from parlai_docgraph.graphs.concept_label import concept_label

QUARTET = [("The Aurora Quartet", [
    "The Aurora Quartet was founded in Oslo in 1998 by four students.",
    "Their first album was recorded in an old church.",
    "There was no room for an audience, so they played to empty pews.",
    "The quartet tours Japan every spring.",
])]


@pytest.mark.parametrize("text,kind,label", [
    ("no room", "entity", "room"),
    ("their first album", "entity", "first album"),
    ("Their first album", None, "first album"),
    ("an old church", "entity", "old church"),
    ('"Abbey Road",', "entity", "Abbey Road"),
    ("it", "entity", None),
    ("they", "entity", None),
    ("one", "entity", None),
    ("recorded", "predicate", None),
    ("Oslo", "entity", "Oslo"),
])
def test_concept_label(text, kind, label):
    assert concept_label(text, kind) == label


def test_labels_of_a_parsed_document_are_noun_phrases():
    """Every concept of the real spaCy graph of the quartet document gets a label that is not
    a predicate, does not start with a quantifier and names something."""
    graph = build_document_graph(QUARTET, "dep", "rule")
    concepts = graph.nodes_of_type("concept")
    labels = {concept_label(n.text, n.kind) for n in concepts} - {None}
    predicates = {n.text for n in concepts if n.kind == "predicate"}
    assert predicates and not labels & predicates
    assert {"room", "first album", "old church", "Oslo"} <= labels, labels
    assert not any(lab.split()[0].lower() in ("no", "their", "an", "the") for lab in labels)

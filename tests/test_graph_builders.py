"""The builder registry (graphs/builders.py): the factory reaches builders only through it."""

from __future__ import annotations

from typing import Any, List, Tuple

import pytest

from parlai_docgraph.graphs.builders import BUILDERS, BuilderRegistry, BuilderSpec, builder_spec
from parlai_docgraph.graphs.config import GraphConfig
from parlai_docgraph.graphs.factory import GraphFactory
from parlai_docgraph.graphs.schema import DocumentGraph, GraphBuilder

PASSAGES = [("Lighthouse", ["The lighthouse stands on a rock.", "It was built in 1881."])]


def test_the_built_in_builders_are_registered():
    assert BUILDERS.names() == ["multilevel", "semantic"]
    assert builder_spec("semantic").extendable and not builder_spec("multilevel").extendable
    with pytest.raises(ValueError, match="no graph builder named 'tree'.*multilevel, semantic"):
        builder_spec("tree")


def test_a_name_is_registered_once():
    class Other(BuilderSpec):
        name = "semantic"

    registry = BuilderRegistry([builder_spec("semantic")])
    with pytest.raises(ValueError, match="already registered"):
        registry.register(Other())
    with pytest.raises(ValueError, match="has no name"):
        registry.register(BuilderSpec())


class _Counting(BuilderSpec):
    """A builder that records the factory's calls: one sentence node per sentence."""

    name = "semantic"

    def __init__(self) -> None:
        self.calls: List[str] = []

    def descriptions(self, backends: Tuple[Any, ...]) -> List[str]:
        self.calls.append("descriptions")
        return ["counting-v1"]

    def options(self, config: Any) -> dict:
        return {"counting": True}

    def build(self, passages: Any, backends: Tuple[Any, ...], config: Any):
        self.calls.append("build")
        b = GraphBuilder()
        for p, (title, sents) in enumerate(passages):
            for s in sents:
                b.node(type="sentence", text=s, passage=p)
        return DocumentGraph(nodes=b.nodes, edges=b.edges)


def test_the_factory_builds_and_keys_through_the_registered_spec(monkeypatch):
    spec = _Counting()
    monkeypatch.setitem(BUILDERS._specs, "semantic", spec)
    factory = GraphFactory(GraphConfig())
    graph = factory.build(PASSAGES)
    assert len(graph.nodes) == 2 and spec.calls == ["build"]
    key = factory.key(PASSAGES)
    assert spec.calls == ["build", "descriptions"]
    assert factory.options() == {"counting": True} and len(key) == 64
    assert key == GraphFactory(GraphConfig()).key(PASSAGES)
    with pytest.raises(ValueError, match="cannot extend a semantic graph"):
        factory.extend(graph, PASSAGES)


def test_builder_options_and_layout_come_from_the_spec(monkeypatch):
    """What differs between builders is read from the spec, not from its name: the config's
    builder options, the selector's node layout (which nodes the concept head scores,
    whether the graph carries its no-knowledge node) and the parse cache."""
    class Options(_Counting):
        def build_options(self, config: Any) -> dict:
            return {"from_spec": config.coref_merge}

    monkeypatch.setitem(BUILDERS._specs, "semantic", Options())
    assert GraphConfig(coref_merge="none").build_options() == {"from_spec": "none"}
    assert GraphConfig(variant="none").build_options() == {}
    semantic, multilevel = BuilderSpec, builder_spec("multilevel")
    assert (semantic.concept_nodes, semantic.own_no_passage_node) == ("concept_node", False)
    assert (multilevel.concept_nodes, multilevel.own_no_passage_node) == ("word_node", True)
    assert not multilevel.reads_parses and not BuilderSpec.reads_parses
    monkeypatch.undo()
    assert builder_spec("semantic").reads_parses
    assert GraphConfig(variant="multilevel", multilevel_ablation="no_word_nodes").build_options() \
        == {"word_nodes": False}
    assert GraphConfig(coref_merge="unlinked").build_options() == {
        "coref_merge": "none", "coref_edges": False}

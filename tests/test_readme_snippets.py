"""Commands and snippets of the documentation (README and ``docs/``, ``tests/doc_sources.py``),
taken as written."""

from __future__ import annotations

import re
import shlex
from typing import List

from doc_sources import doc_text


def _blocks(language: str) -> List[str]:
    return re.findall(rf"```{language}\n(.*?)```", doc_text(), re.S)


def test_graph_snippet_with_extend_document_graph_runs_as_written():
    """The "Document graphs" snippet: build, round trip, extend by one passage."""
    [snippet] = [b for b in _blocks("python") if "extend_document_graph(g," in b]
    scope: dict = {}
    exec(compile(snippet, "docs", "exec"), scope)  # noqa: S102 (our own documentation)
    graph = scope["g"]
    graph.validate()
    assert [n.text for n in graph.nodes_of_type("passage")] == ["Eddystone Lighthouse", "Smeaton"]
    # the one-passage graph as PyG data; its typed edges
    assert 0 < scope["data"].num_nodes < len(scope["rebuilt"].nodes)
    assert scope["links"] and {e.type for e in scope["links"]} == {"sentence_concept"}


def test_graph_store_snippet_runs_as_written(tmp_path, monkeypatch):
    """The one way to get a graph: GraphConfig -> GraphFactory -> GraphStore.get_or_build;
    the second run of the snippet finds the graph the first one stored."""
    [snippet] = [b for b in _blocks("python") if "store.get_or_build(" in b]
    monkeypatch.chdir(tmp_path)
    for built in (True, False):
        scope: dict = {}
        exec(compile(snippet, "docs", "exec"), scope)  # noqa: S102 (our own documentation)
        assert scope["found"].built is built
        assert scope["found"].graph.nodes_of_type("concept")  # the coref graph keeps concepts
    assert (tmp_path / "data" / "docgraph_cache" / "graphs").is_dir()


def test_default_options_ablate_command_parses_as_written():
    """The "At the default options" command resolves through the ablate script's own parser
    (its expedition full/none rows are trained by tests/test_expedition.py; all seven rows
    take about 45 minutes on 2 cores, too long for a test)."""
    from parlai_docgraph.scripts.ablate import Ablate, parse_variants

    [block] = [b for b in _blocks("bash") if "--expedition-eval-dialogues 30 --out-dir abl" in b]
    lines = block.replace("\\\n", " ").splitlines()
    [command] = [line for line in lines if line.startswith("parlai-docgraph ablate")]
    args = shlex.split(command)[2:]
    opt = Ablate.setup_args().parse_args(args)
    assert opt["task"] == "docgraph:expedition" and opt["steps"] == 40 and opt["seed"] == 0
    assert parse_variants(opt["variants"]) == [
        "full", "sentence", "coref", "homogeneous", "multilevel", "paths", "none"]
    # only the run length and the evaluation size are set: every model option is a default
    assert opt["node_relevance"] is True and opt["graph_learningrate"] == 2e-3
    assert set(opt["override"]) <= {"task", "label_type", "variants", "steps", "seed",
                                    "expedition_eval_dialogues", "out_dir", "datapath"}


def test_knowledge_graph_snippet_runs_as_written():
    """The DialogGSR page's knowledge-graph library snippet: neighbours, linked turns and the
    triples of a retrieved path, each consistent with the graph it built."""
    [snippet] = [b for b in _blocks("python") if "linker.link_turns(" in b]
    scope: dict = {}
    exec(compile(snippet, "docs", "exec"), scope)  # noqa: S102 (our own documentation)
    kg = scope["kg"]
    assert {(r, e) for r, e, forward in kg.neighbors("Brad Pitt") if not forward} == {
        ("starred_actors", "Se7en"), ("starred_actors", "Fight Club")}
    assert scope["mentioned"] == ["Se7en", "Brad Pitt"]
    assert scope["triples"] and all(kg.has_triple(*t) for t in scope["triples"])

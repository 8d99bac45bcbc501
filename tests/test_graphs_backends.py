"""
Optional graph backends: the neural coreference adapter (coreferee) and the amrlib parse
model of the AMR parser. Neither library's model can be installed or downloaded here, so
the tests cover the errors that say what to install, and the coreferee chain -> cluster
mapping on chains given in coreferee's documented output format.
"""

from __future__ import annotations

import json
import sys
from typing import List, Sequence

import pytest

from parlai_docgraph.graphs import build_document_graph
from parlai_docgraph.graphs.coref import get_coref
from parlai_docgraph.graphs.neural_coref import (
    CorefBackendUnavailable, chains_to_clusters, join_sentences,
)
from parlai_docgraph.graphs.parsers import get_parser
from parlai_docgraph.graphs.parsers.amr import AMRModelError
from parlai_docgraph.graphs.config import GraphConfig
from parlai_docgraph.graphs.factory import GraphFactory

SENTENCES = [
    "Johann Sebastian Bach was a German composer.",
    "He wrote the Mass in B minor in Leipzig.",
    "Peter and Mary admired it.",
]


@pytest.fixture(scope="module")
def dep():
    return get_parser("dep")


# ------------------------------------------------------------------ coreferee: missing
def test_coreferee_missing_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "coreferee", None)  # import fails as when not installed
    for make in (lambda: get_coref("coreferee"),
                 lambda: GraphFactory(GraphConfig(coref="coreferee")).load()):
        with pytest.raises(CorefBackendUnavailable) as err:
            make()
        message = str(err.value)
        assert "pip install coreferee" in message
        assert "python -m coreferee install en" in message
        assert "en_core_web_sm" in message and "--graph-coref rule" in message
    with pytest.raises(ValueError, match="unknown coreference backend"):
        GraphConfig(coref="fastcoref")


# ------------------------------------------------------------ coreferee: chain mapping
class StandInMention:
    """
    Stand-in for a ``coreferee.data_model.Mention``: the only attribute the adapter reads is
    the documented ``token_indexes`` (root token indexes of the mention in the Doc; several
    for a coordination). It models the library's output format; it does not replace the
    library (whose English model cannot be installed offline).
    """

    def __init__(self, token_indexes: Sequence[int]) -> None:
        self.token_indexes = list(token_indexes)


class StandInChain(list):
    """Stand-in for a ``coreferee.data_model.Chain``: an iterable of mentions."""


def token_index(doc, word: str, occurrence: int = 0) -> int:
    hits = [t.i for t in doc if t.text == word]
    return hits[occurrence]


@pytest.fixture(scope="module")
def joined(dep):
    """The joined text as coreferee would read it, tokenised by the same spaCy pipeline."""
    text, starts = join_sentences(SENTENCES)
    doc = dep.nlp(text)
    spans = [(t.idx, t.idx + len(t.text)) for t in doc]
    return doc, spans, starts, dep.parse(SENTENCES)


def ref_text(ref) -> str:
    s, start, end = ref
    return SENTENCES[s][start:end]


def test_chains_map_to_parser_mention_clusters(joined):
    doc, spans, starts, parsed = joined
    chains: List[StandInChain] = [
        StandInChain([StandInMention([token_index(doc, "Bach")]),
                      StandInMention([token_index(doc, "He")])]),
        StandInChain([StandInMention([token_index(doc, "Mass")]),
                      StandInMention([token_index(doc, "it")]),
                      # a coordination never maps to one of its conjuncts
                      StandInMention([token_index(doc, "Peter"), token_index(doc, "Mary")]),
                      # a verb is no parser mention: counted, not merged
                      StandInMention([token_index(doc, "wrote")])]),
        StandInChain([StandInMention([token_index(doc, "Leipzig")])]),
    ]
    clusters, stats = chains_to_clusters(chains, spans, starts, parsed)
    assert [[ref_text(r) for r in c] for c in clusters] == [
        ["Johann Sebastian Bach", "He"], ["Mass", "it"],
    ]
    assert stats == {"chains": 3, "mentions": 7, "mapped": 5, "unmapped": 2,
                     "singleton_chains": 1}
    for cluster in clusters:
        assert cluster == tuple(sorted(cluster))
        for s, start, end in cluster:
            assert 0 <= start < end <= len(SENTENCES[s])


def test_chains_sharing_a_mention_are_united(joined):
    doc, spans, starts, parsed = joined
    he, bach = token_index(doc, "He"), token_index(doc, "Bach")
    composer = token_index(doc, "composer")
    chains = [StandInChain([StandInMention([bach]), StandInMention([composer])]),
              StandInChain([StandInMention([composer]), StandInMention([he])])]
    clusters, _ = chains_to_clusters(chains, spans, starts, parsed)
    assert len(clusters) == 1
    assert [ref_text(r) for r in clusters[0]] == ["Johann Sebastian Bach", "German composer", "He"]


class StandInCoreferee:
    """A backend with CorefereeCoref's interface whose Doc chains are given (see above)."""

    name = "coreferee"

    def __init__(self, doc, chains) -> None:
        self.doc, self.chains = doc, chains

    def describe(self) -> str:
        return "coreferee-stand-in"

    def resolve(self, parsed):
        text, starts = join_sentences([p.text for p in parsed])
        assert text == self.doc.text
        spans = [(t.idx, t.idx + len(t.text)) for t in self.doc]
        return chains_to_clusters(self.chains, spans, starts, parsed)[0]


def test_mapped_clusters_merge_graph_concepts(joined, dep):
    doc = joined[0]
    chains = [StandInChain([StandInMention([token_index(doc, "Bach")]),
                            StandInMention([token_index(doc, "He")])])]
    graph = build_document_graph([("Bach", SENTENCES)], dep, StandInCoreferee(doc, chains))
    assert graph.meta["coref"] == "coreferee-stand-in"
    bach = [n for n in graph.nodes if n.kind == "entity" and n.text == "Johann Sebastian Bach"]
    assert len(bach) == 1 and [m[0] for m in bach[0].mentions] == [0, 1]
    assert not [n for n in graph.nodes if n.kind == "entity" and n.text == "He"]


# ------------------------------------------------------------------ amrlib stog model
def test_amr_model_dir_errors_name_where_the_model_goes(tmp_path):
    missing = tmp_path / "model_stog"
    with pytest.raises(AMRModelError) as err:
        get_parser("amr", model_dir=str(missing))
    message = str(err.value)
    assert str(missing) in message and "no such folder" in message
    assert "amrlib_meta.json" in message and "amrlib-models" in message
    assert "--amr-file" in message and "offline" in message
    missing.mkdir()
    with pytest.raises(AMRModelError, match="no amrlib model there.*--amr-file"):
        get_parser("amr", model_dir=str(missing))
    with pytest.raises(AMRModelError, match="no amrlib model there"):
        GraphFactory(GraphConfig(parser="amr", amr_model_dir=str(missing))).load()


def test_amr_model_that_amrlib_cannot_load_is_a_clear_error(tmp_path, dep):
    model = tmp_path / "broken_stog"
    model.mkdir()
    (model / "amrlib_meta.json").write_text(json.dumps({
        "model_type": "stog", "version": "0.0.1", "inference_module": ".parse_xfm.inference",
        "inference_class": "Inference", "model_fn": "missing.bin",
    }))
    parser = get_parser("amr", model_dir=str(model))
    assert parser.describe() == "amr:precomputed+stog-stog-0.0.1+rbw"
    # keys do not depend on whether the model has run yet
    token = parser.cache_token(SENTENCES)
    with pytest.raises(AMRModelError, match="amrlib could not load the model.*--amr-file"):
        parser.parse(SENTENCES[:1])
    assert parser.cache_token(SENTENCES) == token


def test_build_graphs_cli_reports_missing_backends(tmp_path, monkeypatch):
    from parlai_docgraph.scripts.build_graphs import BuildGraphs

    args = ["-t", "docgraph:sample", "-dt", "valid", "--datapath", str(tmp_path),
            "--progress", "false"]
    monkeypatch.setitem(sys.modules, "coreferee", None)
    with pytest.raises(CorefBackendUnavailable, match="pip install coreferee"):
        BuildGraphs.main(*args, "--graph-coref", "coreferee")
    with pytest.raises(AMRModelError, match="no such folder.*--amr-file"):
        BuildGraphs.main(*args, "--graph-parser", "amr", "--amr-model-dir",
                         str(tmp_path / "nowhere"))

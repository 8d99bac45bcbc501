"""
Teachers attach document graphs (``--attach-graphs none|store|build``): store hits, the
error on a store miss, on-the-fly builds written to the store, and attached graphs equal to
what ``parlai-docgraph build_graphs`` stored.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import teacher_acts
from parlai_docgraph.graphs import DocumentGraph
from parlai_docgraph.graphs.store import GraphStore, default_store_root
from parlai_docgraph.graphs.config import GraphConfig
from parlai_docgraph.graphs.factory import GraphFactory
from parlai_docgraph.scripts.build_graphs import BuildGraphs

TASK = "docgraph:sample"


def acts_and_teacher(datapath: Path, *args: str):
    """Every valid message of the sample task and the teacher that sent them."""
    from parlai.core.params import ParlaiParser
    from parlai.core.teachers import create_task_agent_from_taskname

    opt = ParlaiParser(True, False).parse_args(
        ["-t", TASK, "--datapath", str(datapath), "-dt", "valid", *args])
    teacher = create_task_agent_from_taskname(opt)[0]
    return [teacher.act() for _ in range(teacher.num_examples())], teacher


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A datapath whose store holds what build_graphs writes for the sample's valid pools."""
    datapath = tmp_path_factory.mktemp("built")
    report = BuildGraphs.main("-t", TASK, "-dt", "valid", "--datapath", str(datapath),
                              "--progress", "false")
    assert report["built"] == report["pools"] > 0 and report["failed"] == 0
    return datapath


def test_default_attaches_nothing(datapath):
    acts = teacher_acts(TASK, datapath, "valid")
    assert acts and not any("knowledge_graph" in a for a in acts)
    assert not default_store_root(datapath).exists()


def test_store_hit_round_trips_to_the_build_graphs_graph(built):
    acts, teacher = acts_and_teacher(built, "--attach-graphs", "store")
    store = GraphStore(default_store_root(built))
    factory = GraphFactory(GraphConfig())
    assert all("knowledge_graph" in a for a in acts)
    for act in acts:
        key = act["knowledge_graph_key"]
        assert key == factory.key(act["knowledge_passages"])
        graph = DocumentGraph.from_dict(act["knowledge_graph"])
        assert graph == store.load(key)  # the entry build_graphs wrote
        nested = [s for _, sents in act["knowledge_passages"] for s in sents]
        assert [n.text for n in graph.nodes_of_type("sentence")] == nested
    counts = teacher.graph_attacher.counts
    distinct = len({a["knowledge_graph_key"] for a in acts})
    assert counts == {"memo": len(acts) - distinct, "store": distinct, "built": 0}


def test_store_miss_names_the_build_command(datapath):
    with pytest.raises(LookupError) as err:
        teacher_acts(TASK, datapath, "valid", "--attach-graphs", "store")
    message = str(err.value)
    assert f"parlai-docgraph build_graphs -t {TASK} -dt valid --datapath {datapath}" in message
    assert "--attach-graphs build" in message and str(default_store_root(datapath)) in message


def test_store_miss_command_carries_the_graph_options(datapath):
    with pytest.raises(LookupError, match="build_graphs .* --graph-variant sentence"):
        teacher_acts(TASK, datapath, "valid", "--attach-graphs", "store",
                     "--graph-variant", "sentence")


def test_build_writes_the_store_once_per_pool(datapath, monkeypatch):
    calls = []
    original = GraphFactory.build

    def counting(self, passages):
        calls.append(self.key(passages))
        return original(self, passages)

    monkeypatch.setattr(GraphFactory, "build", counting)
    acts, teacher = acts_and_teacher(datapath, "--attach-graphs", "build")
    keys = {a["knowledge_graph_key"] for a in acts}
    assert sorted(calls) == sorted(keys)  # each pool built once (memo), none twice
    store = GraphStore(default_store_root(datapath))
    assert set(store.keys()) == keys
    for act in acts:
        assert DocumentGraph.from_dict(act["knowledge_graph"]) == store.load(
            act["knowledge_graph_key"])
    # a second teacher finds everything in the store: nothing is built again
    again, teacher = acts_and_teacher(datapath, "--attach-graphs", "store")
    assert len(calls) == len(keys) and teacher.graph_attacher.counts["built"] == 0
    assert [a["knowledge_graph"] for a in again] == [a["knowledge_graph"] for a in acts]


def test_graph_options_select_the_graph(datapath):
    acts, _ = acts_and_teacher(datapath, "--attach-graphs", "build", "--graph-variant",
                               "sentence")
    graph = DocumentGraph.from_dict(acts[0]["knowledge_graph"])
    assert graph.meta["options"]["sentence_graph"] is True
    assert not graph.nodes_of_type("concept")
    assert acts[0]["knowledge_graph_key"] != GraphFactory(GraphConfig()).key(
        acts[0]["knowledge_passages"])
    with pytest.raises(ValueError, match="--graph-parser amr needs --amr-file"):
        acts_and_teacher(datapath, "--attach-graphs", "build", "--graph-parser", "amr")


def test_corrupt_entry_is_not_attached(built, tmp_path):
    import shutil

    datapath = tmp_path / "copy"
    shutil.copytree(built, datapath)
    store = GraphStore(default_store_root(datapath))
    key = next(iter(store.keys()))
    store.path(key).write_text("{broken", encoding="utf-8")
    acts, teacher = acts_and_teacher(datapath, "--attach-graphs", "build")
    assert teacher.graph_attacher.counts["built"] == 1
    assert store.load(key) is not None


def test_holle_teacher_has_the_option():
    from parlai_docgraph.tasks.docgraph.graphs import GraphAttachMixin
    from parlai_docgraph.tasks.docgraph.holle import HolleTeacher
    from parlai_docgraph.tasks.docgraph.wow import SampleTeacher, WowTeacher

    for cls in (HolleTeacher, WowTeacher, SampleTeacher):
        assert issubclass(cls, GraphAttachMixin)


def test_streaming_teacher_attaches_the_same_graphs(built):
    acts = teacher_acts(TASK, built, "valid:stream", "--attach-graphs", "store")
    ordered = teacher_acts(TASK, built, "valid", "--attach-graphs", "store")
    assert [a["knowledge_graph_key"] for a in acts] == [a["knowledge_graph_key"] for a in ordered]

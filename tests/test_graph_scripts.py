"""
The graph scripts: ``build_graphs`` (store contents, resume after a kill, corrupt entries,
shards + merge, workers), ``show_graph`` (HTML, headless Chromium) and ``bench`` plumbing.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict

import pytest

from conftest import BIN, offline_env, teacher_acts
from parlai_docgraph.graphs.store import GraphStore
from parlai_docgraph.graphs.config import GraphConfig
from parlai_docgraph.graphs.factory import GraphFactory
from parlai_docgraph.graphs.render import COLOURS
from parlai_docgraph.bench import cli as bench
from parlai_docgraph.graphs.store import default_store_root as store_root
from parlai_docgraph.scripts.build_graphs import BuildGraphs, parse_datatypes, parse_shard
from parlai_docgraph.scripts.show_graph import MODEL_FILE_UNSUPPORTED, ShowGraph

TASK = ["-t", "docgraph:sample", "-dt", "valid"]
CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists()
                                        else None)


def build(datapath: Path, *args: str) -> dict:
    return BuildGraphs.main(*TASK, "--datapath", str(datapath), "--progress", "false", *args)


def entries(datapath: Path) -> Dict[str, bytes]:
    """Relative path -> bytes of every graph entry of a datapath's graph store (the
    sentence parse cache next to the graphs is left out: it is not a graph)."""
    root = store_root(str(datapath))
    files = sorted(p for p in root.glob("graphs-v*/**/*") if p.is_file())
    return {str(p.relative_to(root)): p.read_bytes() for p in files}


@pytest.fixture(scope="module")
def full(tmp_path_factory) -> Path:
    """A datapath holding the full semantic build of docgraph:sample valid."""
    datapath = tmp_path_factory.mktemp("full")
    report = build(datapath)
    assert report["examples"] == 19 and report["pools"] == 15
    assert (report["built"], report["cached"], report["failed"], report["rebuilt"]) == (15, 0, 0, 0)
    assert report["docs_per_s"] > 0
    return datapath


@pytest.fixture(scope="module")
def pools(tmp_path_factory) -> list:
    acts = teacher_acts("docgraph:sample", tmp_path_factory.mktemp("acts"), "valid")
    return acts


def test_second_run_builds_nothing_and_keys_match_get_or_build(full, pools):
    report = build(full)
    assert (report["built"], report["cached"], report["failed"]) == (0, 15, 0)
    store = GraphStore(store_root(str(full)))
    assert len(list(store.keys())) == 15
    factory = GraphFactory(GraphConfig())
    before = entries(full)
    for msg in pools[:3]:  # the library's own lookup finds what the script stored
        assert not store.get_or_build(msg["knowledge_passages"], factory).built
    assert entries(full) == before and factory.built == 0


def test_killed_and_damaged_store_is_completed(full, tmp_path):
    datapath = tmp_path / "dp"
    shutil.copytree(full, datapath)
    store = GraphStore(store_root(str(datapath)))
    keys = sorted(store.keys())
    for key in keys[:4]:  # never written: the run was killed before them
        store.path(key).unlink()
    corrupt, stale = store.path(keys[4]), store.path(keys[5])
    corrupt.write_text(corrupt.read_text()[:100], encoding="utf-8")  # torn write
    entry = json.loads(stale.read_text())
    stale.write_text(json.dumps({**entry, "schema_version": 0}), encoding="utf-8")
    (corrupt.parent / f".{keys[4][:8]}-x.tmp").write_text("partial")  # killed writer's temp
    report = build(datapath)
    assert (report["built"], report["rebuilt"], report["cached"]) == (6, 2, 9)
    assert report["stray_tmp"] == 1 and report["failed"] == 0
    assert entries(datapath) == entries(full)


def test_really_killed_build_resumes(tmp_path):
    """SIGKILL a stock-CLI build once some entries are written; a re-run completes the rest."""
    datapath, err = tmp_path / "dp", tmp_path / "stderr.txt"
    proc = subprocess.Popen(
        [str(BIN / "parlai-docgraph"), "build_graphs", "-t", "docgraph:sample", "-dt", "train",
         "--datapath", str(datapath)],
        cwd=tmp_path, env=offline_env(), stdout=subprocess.DEVNULL, stderr=err.open("w"),
    )
    try:
        deadline = time.monotonic() + 60
        root = store_root(str(datapath))
        while len(list(root.glob("graphs-v*/*/*.json"))) < 5 and proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.kill()
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, err.read_text()[-2000:]
    store = GraphStore(store_root(str(datapath)))
    done = len(list(store.keys()))
    assert 5 <= done < 62
    assert "doc/s" in err.read_text()  # the CLI's tqdm progress shows the rate
    report = BuildGraphs.main("-t", "docgraph:sample", "-dt", "train", "--datapath",
                              str(datapath), "--progress", "false")
    assert (report["pools"], report["cached"], report["built"]) == (62, done, 62 - done)
    assert report["failed"] == 0 and report["docs_per_s"] > 0
    assert not list(store.root.glob("*/.*.tmp"))
    assert len(list(store.keys())) == 62
    assert all(store.load(key) is not None for key in store.keys())


def test_shards_then_merge_equal_a_full_build(full, tmp_path):
    a, b, merged = tmp_path / "a", tmp_path / "b", tmp_path / "merged"
    ra, rb = build(a, "--shard", "0/2"), build(b, "--shard", "1/2")
    assert ra["in_shard"] + rb["in_shard"] == 15 and ra["in_shard"] and rb["in_shard"]
    assert ra["built"] == ra["in_shard"] and rb["built"] == rb["in_shard"]
    assert not set(entries(a)) & set(entries(b))
    report = BuildGraphs.main(
        "--merge-from", str(a), str(b / "docgraph_cache" / "graphs"), "--datapath", str(merged)
    )
    assert report["merged"] == 15
    assert entries(merged) == entries(full)
    again = build(merged, "--merge-from", str(a))  # merge + build: nothing left to do
    assert (again["merged"], again["built"], again["cached"]) == (0, 0, 15)


def test_parse_cache_gives_the_same_store_and_is_reused(full, tmp_path):
    """--parse-cache false builds byte-identical graphs; a second task run over a store
    whose parse cache is warm parses nothing new."""
    plain = build(tmp_path / "plain", "--parse-cache", "false")
    assert "parses_after" not in plain and entries(tmp_path / "plain") == entries(full)
    first = build(tmp_path / "cached")
    assert first["parses_before"] == 0 and first["parses_after"] > 0
    shutil.rmtree(GraphStore(store_root(str(tmp_path / "cached"))).root)
    again = build(tmp_path / "cached")
    assert again["built"] == 15 and again["parses_after"] == again["parses_before"]
    assert entries(tmp_path / "cached") == entries(full)


def test_two_workers_equal_one(full, tmp_path):
    report = build(tmp_path, "--workers", "2")
    assert (report["built"], report["failed"]) == (15, 0)
    assert entries(tmp_path) == entries(full)


def test_multilevel_variant_and_reported_failures(tmp_path, pools):
    report = build(tmp_path, "--graph-variant", "multilevel")
    assert report["built"] == 15
    store = GraphStore(store_root(str(tmp_path)))
    before = entries(tmp_path)
    found = store.get_or_build(pools[0]["knowledge_passages"],
                               GraphFactory(GraphConfig("multilevel")))
    assert not found.built and entries(tmp_path) == before
    with pytest.raises(ValueError, match="none has no graph"):
        build(tmp_path, "--graph-variant", "none")
    amr = tmp_path / "one.amr"
    amr.write_text("# ::snt The keeper lit the lamp.\n(l / light-01 :ARG0 (k / keeper))\n")
    failed = build(tmp_path / "amr", "--graph-parser", "amr", "--amr-file", str(amr))
    assert (failed["built"], failed["failed"]) == (0, 15)
    reasons = failed["failures"]
    assert all(r.startswith("ValueError: no AMR graph for sentence 0: ") for r in reasons)
    assert sorted(w for where in reasons.values() for w in where)[0] == "valid#0"
    assert not list(GraphStore(store_root(str(tmp_path / "amr"))).keys())


def test_bad_arguments(tmp_path):
    assert parse_shard("1/3") == (1, 3) and parse_shard(None) is None
    for bad in ("3/3", "1", "a/b"):
        with pytest.raises(ValueError, match="--shard"):
            parse_shard(bad)
    assert parse_datatypes("train,valid:stream") == ["train:ordered", "valid:stream"]
    with pytest.raises(ValueError, match="datatype"):
        parse_datatypes("dev")
    with pytest.raises(ValueError, match="-t TASK"):
        BuildGraphs.main("--datapath", str(tmp_path))
    with pytest.raises(ValueError, match="no graph store"):
        BuildGraphs.main("--merge-from", str(tmp_path / "nowhere"), "--datapath", str(tmp_path))
    with pytest.raises(ValueError, match="no knowledge_passages"):
        BuildGraphs.main("-t", "docgraph:sample_kg", "-dt", "valid", "--datapath", str(tmp_path))


def show(full: Path, out: Path, *args: str) -> dict:
    return ShowGraph.main(*TASK, "--datapath", str(full), "--out", str(out), *args)


def test_show_graph_writes_self_contained_page(full, pools, tmp_path, capsys):
    number = next(i for i, m in enumerate(pools) if m["checked_sentence_index"] > 0)
    msg = pools[number]
    report = show(full, tmp_path / "g.html", "--example", str(number))
    assert report["cached"]  # from the store build_graphs filled
    page = (tmp_path / "g.html").read_text(encoding="utf-8")
    assert report["gold_sentence"] == msg["checked_sentence"]
    assert f"gold sentence {msg['checked_sentence_index']}: " \
        f"{html.escape(msg['checked_sentence'])}" in page
    gold = re.findall(r'<g class="node gold" data-id="(\d+)" data-type="(\w+)"', page)
    assert [int(i) for i, _ in gold] == report["gold"]
    assert gold[0][1] == "sentence" and {t for _, t in gold[1:]} == {"concept"}
    for kind in ("sentence", "entity", "predicate", "passage"):
        assert f'fill="{COLOURS[kind]}"' in page
    assert not re.search(r"\s(src|href)\s*=|<link|@import|url\(", page)
    no_gold = next(i for i, m in enumerate(pools) if m["checked_sentence_index"] < 0)
    report = show(full, tmp_path / "n.html", "--example", str(no_gold),
                  "--graph-variant", "multilevel")
    assert report["gold"] == [] and not report["cached"]
    assert "no gold sentence" in (tmp_path / "n.html").read_text(encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        show(full, tmp_path / "m.html", "--model-file", str(tmp_path / "model"))
    assert exit_info.value.code == 2 and MODEL_FILE_UNSUPPORTED in capsys.readouterr().err
    assert not (tmp_path / "m.html").exists()
    with pytest.raises(ValueError, match="out of range: docgraph:sample valid has 19"):
        show(full, tmp_path / "x.html", "--example", "19")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_show_graph_renders_in_headless_chromium(full, tmp_path):
    from PIL import Image

    page = tmp_path / "g.html"
    show(full, page, "--example", "3")
    png = tmp_path / "g.png"
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={png}",
         "--window-size=1200,900", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0 and png.is_file(), proc.stderr[-2000:]
    assert png.stat().st_size > 20_000
    image = Image.open(png).convert("RGB")
    assert image.size == (1200, 900)
    colours = image.getcolors(maxcolors=1 << 20)
    assert len(colours) > 50  # not blank

    def near(hex_colour: str) -> int:
        want = tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
        return sum(n for n, c in colours if max(abs(a - b) for a, b in zip(c, want)) < 12)

    # nodes are drawn: sentence and entity fills, and the red gold outline
    assert near(COLOURS["sentence"]) > 200 and near(COLOURS["entity"]) > 200
    assert near("#d62728") > 50


def test_bench_runs_registered_benchmarks(tmp_path, monkeypatch, capsys):
    assert "graphs" in bench.BENCHMARKS
    monkeypatch.setitem(bench.BENCHMARKS, "toy", lambda quick: {
        "graph_build_vs_spacy": 0.5, "build_s_by_sentences": {"10": 0.1, "100": 2.0},
        "quick": quick})
    out = tmp_path / "b" / "bench.json"
    results = bench.Bench.main("--quick", "--only", "toy", "--out", str(out))
    assert json.loads(out.read_text()) == results
    assert results["toy"]["quick"] is True and results["meta"]["quick"] is True
    text = capsys.readouterr().out
    assert "goal >= 1.0: NOT met" in text and "2.00x" in text
    load = results["meta"]["load_average"]  # how busy the machine was
    assert set(load) == {"before", "after"} and results["meta"]["threads"] >= 1
    with pytest.raises(ValueError, match="unknown benchmark"):
        bench.run_benchmarks(["nope"])


def test_selector_reads_the_graphs_build_graphs_wrote(full, pools, tmp_path, monkeypatch):
    """
    The agent's graph provider loads every pre-built graph: same root, same keys.
    """
    import parlai_docgraph.graphs.semantic as semantic
    from parlai_docgraph.models.selector.provider import GraphProvider
    from parlai_docgraph.graphs.store import default_store_root

    datapath = tmp_path / "dp"
    shutil.copytree(full, datapath)
    before = entries(datapath)

    def no_build(*args, **kwargs):
        raise AssertionError("a graph was rebuilt instead of loaded from the store")

    monkeypatch.setattr(semantic, "build_document_graph", no_build)
    provider = GraphProvider(GraphConfig(), None, None, str(default_store_root(datapath)))
    for act in pools:
        passages = [(t, list(s)) for t, s in act["knowledge_passages"]]
        graph = provider.build(passages)
        assert graph.nodes
    assert entries(datapath) == before  # nothing new had to be built or written

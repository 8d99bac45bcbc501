"""
``build_graphs --engine ray`` on a real local Ray cluster started here on the loopback
address: a head and a second node process (1 CPU each), stopped by their process ids.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import BIN, offline_env
from parlai_docgraph.graphs.store import GraphStore
from parlai_docgraph.graphs.store import default_store_root as store_root
from parlai_docgraph.scripts.build_graphs import BuildGraphs

ray = pytest.importorskip("ray")
TASK = ["-t", "docgraph:sample", "-dt", "valid", "--progress", "false"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _graph_files(datapath: Path) -> dict:
    root = GraphStore(store_root(str(datapath))).root
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.json"))}


@pytest.fixture(scope="module")
def cluster():
    """``127.0.0.1:PORT`` of a head + one worker node, each ``ray start --block`` (stopping
    that process stops its node)."""
    port = _free_port()
    temp = Path(tempfile.mkdtemp(prefix="rayt", dir="/tmp"))  # short: socket path limits
    env = offline_env({"RAY_USAGE_STATS_ENABLED": "0", "OMP_NUM_THREADS": "1"})
    common = ["--num-cpus", "1", "--node-ip-address", "127.0.0.1", "--block"]
    procs = [subprocess.Popen(
        [str(BIN / "ray"), "start", "--head", "--port", str(port), "--include-dashboard",
         "false", "--disable-usage-stats", "--temp-dir", str(temp), *common],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            probe = subprocess.run([str(BIN / "ray"), "status", "--address", address], env=env,
                                   capture_output=True, text=True)
            if probe.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        procs.append(subprocess.Popen(
            [str(BIN / "ray"), "start", "--address", address, *common],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 _node_ip_address="127.0.0.1")
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            assert time.monotonic() < deadline, "the second Ray node did not join"
            time.sleep(0.5)
        yield address
    finally:
        ray.shutdown()
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(temp, ignore_errors=True)


def test_ray_store_is_byte_identical_and_resumes(cluster, tmp_path):
    single = tmp_path / "single"
    BuildGraphs.main(*TASK, "--datapath", str(single), "--parse-cache", "false")
    distributed = tmp_path / "ray"
    report = BuildGraphs.main(*TASK, "--datapath", str(distributed), "--engine", "ray",
                              "--address", cluster)
    assert (report["built"], report["failed"], report["retried"]) == (15, 0, 0)
    assert _graph_files(distributed) == _graph_files(single)
    assert len(ray.nodes()) == 2
    # a killed run left some entries out: the next run builds exactly those
    store = GraphStore(store_root(str(distributed)))
    for key in sorted(store.keys())[:5]:
        store.path(key).unlink()
    again = BuildGraphs.main(*TASK, "--datapath", str(distributed), "--engine", "ray",
                             "--address", cluster)
    assert (again["built"], again["cached"], again["failed"]) == (5, 10, 0)
    assert _graph_files(distributed) == _graph_files(single)


def test_ray_failed_task_is_retried_then_reported(cluster, tmp_path):
    """A task whose backend cannot load fails as a whole: retried, then every pool of it is
    reported with the reason (none silently missing)."""
    from parlai_docgraph.graphs.ray_engine import build_with_ray

    from parlai_docgraph.graphs.config import GraphConfig
    from parlai_docgraph.graphs.factory import GraphFactory

    state = GraphFactory(GraphConfig(parser="amr", amr_file=str(tmp_path / "missing.penman"))).state()
    saved = []
    jobs = {"a": [("T", ["One sentence."])], "b": [("U", ["Another one."])]}
    results, retried = build_with_ray(jobs, state, lambda k, g: saved.append(k),
                                      address=cluster, chunk_size=1, retries=1, progress=False)
    assert retried == 2 and not saved
    assert set(results) == {"a", "b"}
    assert all(r.startswith("task failed 2 times") for r in results.values())


def test_engine_ray_without_ray_says_what_to_install(monkeypatch):
    import builtins

    from parlai_docgraph.graphs.ray_engine import RAY_MISSING, build_with_ray

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(RuntimeError, match=r"parlai-docgraph\[ray\]"):
        build_with_ray({"k": []}, {}, lambda k, g: None)
    assert "pip install" in RAY_MISSING

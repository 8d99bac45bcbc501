"""
``make gpu-check`` (``parlai_docgraph/bench/gpu_check.py``) in its CPU mode: the same steps on
the CPU with the tiny models, so the script a GPU machine runs first is known to run; and it
refuses to pass CPU figures off as a GPU check.
"""

from __future__ import annotations

import json

import pytest

from parlai_docgraph.bench import gpu_check


@pytest.mark.slow
def test_cpu_dry_run_writes_every_figure(tmp_path):
    out = tmp_path / "gpu_check.json"
    gpu_check.main(["--device", "cpu", "--quick", "--steps", "1", "--out", str(out),
                    "--datapath", str(tmp_path / "data")])
    data = json.loads(out.read_text())
    assert data["ran_on_gpu"] is False and data["device"] == "cpu"
    for part in ("selector", "responder"):
        assert data[part]["fp32"]["examples_per_s"] > 0
        assert data[part]["parity"]["same_texts"] is True  # CPU against CPU
    assert data["responder"]["fp32"]["tokens_per_s"] > 0
    assert data["responder"]["parity"]["ppl_cpu"] == data["responder"]["parity"]["ppl_device"]
    assert data["selector"]["parity"]["max_score_diff"] == 0.0


def test_refuses_without_a_gpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit, match="no CUDA device"):
        gpu_check.main([])

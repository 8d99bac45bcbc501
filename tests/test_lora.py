"""
LoRA (peft) and bf16 for the responder and DialogGSR: only adapters and
the rows of new tokens learn, bf16 weights with float32 adapters, a clear error where the
device has no bf16, and checkpoints that reload through eval_model / interactive with a
weights-only load.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import torch

from conftest import BIN, offline_env, run_cli
from modern_lm import make_tiny_lm

from parlai_docgraph.kg.linearize import Linearizer
from parlai_docgraph.models import adapters
from parlai_docgraph.models.adapters import LoraSettings, apply_lora, is_adapted
from parlai_docgraph.models.gsr.model import load_lm, load_gsr_tokenizer as load_tokenizer
from parlai_docgraph.models.gsr.build import build_gsr_model


@pytest.fixture(scope="module")
def lm_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("lms")
    return {f: make_tiny_lm(f, root / f) for f in ("llama", "qwen")}


def _gsr(source: str, lora: LoraSettings, dtype=None):
    lin = Linearizer(slot_tokens=2)
    tok = load_tokenizer(source, None, lin.special_tokens())
    model = build_gsr_model(load_lm(source, seed=0, dtype=dtype), tok, lin.special_tokens())
    model.lm = apply_lora(model.lm, lora, model.special_ids)
    return model, tok


def _effective_tables(model) -> dict:
    """The input embedding rows and (untied) output rows as the wrapped model computes them."""
    lm = model.lm
    emb = lm.get_input_embeddings()
    vocab = torch.arange(emb.token_adapter.base_layer.num_embeddings if hasattr(emb, "token_adapter") else emb.num_embeddings)
    with torch.no_grad():
        out = {"input": emb(vocab).float()}
        head = lm.get_output_embeddings()
        if head is not None and not getattr(lm.config, "tie_word_embeddings", True):
            hidden = out["input"].shape[1]
            out["output"] = head(torch.eye(hidden, dtype=next(head.parameters()).dtype)).float().T  # [V, hidden]
    return out


@pytest.mark.parametrize("family", ["llama", "qwen", "t5"])
def test_only_adapters_and_new_token_rows_learn(lm_dirs, family):
    source = "tiny" if family == "t5" else str(lm_dirs[family])
    model, tok = _gsr(source, LoraSettings(r=4, alpha=8, dropout=0.0))
    assert is_adapted(model.lm)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(any(m in n for m in adapters.ADAPTER_MARKERS) for n in trainable)
    assert any("lora_A" in n for n in trainable) and any(adapters.TOKEN_MARKER in n for n in trainable)
    frozen = {k: v.clone() for k, v in model.state_dict().items() if not any(m in k for m in adapters.ADAPTER_MARKERS)}
    tables = _effective_tables(model)
    if family == "llama":  # untied output embedding: its new rows train too
        assert "output" in tables
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-2, weight_decay=0.0)
    src = [tok("dialogue: who directed Iron Man ?", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]]
    tgt = [tok("[Head] Iron Man [Int1_1] [Int1_2] directed_by [Int2_1] [Int2_2] Jon Favreau [Tail]",
               add_special_tokens=False)["input_ids"] + [tok.eos_token_id]]
    for _ in range(3):
        loss, _, mask, _ = model.token_losses(src, tgt)
        opt.zero_grad()
        (loss.sum() / mask.sum()).backward()
        assert all(p.grad is None for n, p in model.named_parameters() if n not in trainable)
        opt.step()
    for k, v in model.state_dict().items():  # every base weight, embeddings included, unchanged
        if k in frozen:
            assert torch.equal(v, frozen[k]), k
    after = _effective_tables(model)
    for name, before in tables.items():
        moved = set((after[name] != before).any(dim=1).nonzero().flatten().tolist())
        assert moved and moved <= set(model.special_ids), (name, sorted(moved)[:10])
    # KG-reconstruction pretraining: the new-token rows alone, then the adapters again
    model.train_only_rows()
    assert {n for n, p in model.named_parameters() if p.requires_grad} == {n for n in trainable if adapters.TOKEN_MARKER in n}
    model.release_rows()
    assert {n for n, p in model.named_parameters() if p.requires_grad} == trainable


def test_bf16_weights_float32_adapters_and_a_clear_error_without_bf16(lm_dirs, monkeypatch):
    model, tok = _gsr(str(lm_dirs["qwen"]), LoraSettings(r=4, alpha=8, dropout=0.1), dtype=torch.bfloat16)
    dtypes = {n: p.dtype for n, p in model.named_parameters()}
    assert {d for n, d in dtypes.items() if not any(m in n for m in adapters.ADAPTER_MARKERS)} == {torch.bfloat16}
    assert {d for n, d in dtypes.items() if any(m in n for m in adapters.ADAPTER_MARKERS)} == {torch.float32}
    ids = [tok("hello there", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]]
    loss, _, mask, _ = model.token_losses(ids, ids)
    (loss.sum() / mask.sum()).backward()
    assert torch.isfinite(loss).all()
    adapters.check_bf16(torch.device("cpu"))  # CPUs compute in bf16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a, **k: "Tesla V100")
    with pytest.raises(adapters.AdapterUnavailable, match="V100 has no bfloat16"):
        adapters.check_bf16(torch.device("cuda"))


def test_bad_target_modules_are_named():
    from parlai_docgraph.models.gsr.model import load_seq2seq

    with pytest.raises(adapters.AdapterUnavailable, match="--lora-target-modules"):
        apply_lora(load_seq2seq("tiny"), LoraSettings(r=2, target_modules=["no_such_layer"]))
    assert adapters.parse_targets(" q_proj, v_proj ") == ["q_proj", "v_proj"]
    assert adapters.parse_targets("default") is None and adapters.parse_targets("") is None


def _report(text: str) -> dict:
    reports = re.findall(r"^\{.*\}$", text, flags=re.M)
    assert reports, text[-3000:]
    return json.loads(reports[-1])


def _weights_only(mf: Path) -> dict:
    return torch.load(str(mf), map_location="cpu", weights_only=True)["model"]


def test_responder_lora_bf16_checkpoint_reloads_in_eval_and_interactive(tmp_path, datapath):
    mf = tmp_path / "resp"
    common = ["-t", "docgraph:sample", "--datapath", str(datapath)]
    out = run_cli(["parlai", "train_model", "-m", "docgraph/gpt2_responder", "--responder-model", "tiny", *common,
                   "-mf", str(mf), "-bs", "4", "--max-train-steps", "3", "-lr", "1e-2", "-vstep", "100",
                   "--validation-max-exs", "4", "--short-final-eval", "true",
                   "--lora-r", "4", "--lora-alpha", "8", "--bf16", "true"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    state = _weights_only(mf)
    lora = [k for k in state if "lora_A" in k]
    assert lora and all(state[k].dtype == torch.float32 for k in lora)
    assert any(v.dtype == torch.bfloat16 for k, v in state.items() if "lora" not in k)
    assert any(v.abs().sum() > 0 for k, v in state.items() if "lora_B" in k)  # the adapters trained
    out = run_cli(["parlai", "eval_model", "-mf", str(mf), *common, "-dt", "valid", "-bs", "4", "-ne", "8"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "needs full unpickling" not in out.stderr
    assert _report(out.stdout + "\n" + out.stderr)["exs"] == 8
    chat = subprocess.run([str(BIN / "parlai"), "interactive", "-mf", str(mf), "--datapath", str(datapath)],
                          input="hello , do you like lighthouses ?\n[EXIT]\n", text=True, capture_output=True,
                          cwd=str(tmp_path), env=offline_env(), timeout=300)
    assert chat.returncode == 0, chat.stderr[-3000:]
    assert "[GPT2Responder]:" in chat.stdout or "Responder" in chat.stdout, chat.stdout[-2000:]


def test_gsr_lora_checkpoint_reloads_and_paths_stay_valid(lm_dirs, tmp_path, datapath):
    mf = tmp_path / "gsr"
    common = ["-t", "docgraph:sample_kg", "--datapath", str(datapath)]
    out = run_cli(["parlai", "train_model", "-m", "docgraph/gsr", "--gsr-model", str(lm_dirs["llama"]), *common,
                   "-mf", str(mf), "-bs", "8", "--max-train-steps", "4", "--gsr-pretrain-steps", "1",
                   "-vstep", "100", "--validation-max-exs", "4", "--short-final-eval", "true",
                   "--lora-r", "4", "--lora-target-modules", "q_proj,k_proj,v_proj,o_proj", "--bf16", "true"],
                  cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    state = _weights_only(mf)
    assert any("k_proj.lora_A" in k for k in state) and any(adapters.TOKEN_MARKER in k for k in state)
    out = run_cli(["parlai", "eval_model", "-mf", str(mf), *common, "-dt", "valid", "-bs", "4", "-ne", "8",
                   "--gsr-retrieval-steps", "1"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    report = _report(out.stdout + "\n" + out.stderr)
    assert report["path_valid"] == 1.0 and "gen_loss" in report

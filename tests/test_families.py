"""
Every real model family the recipes name, as a tiny random model with a
tokenizer of its kind (``tests/families.py``): the family-specific traps, each asserted.

* RoBERTa numbers positions from ``pad + 1``: ``max_position_embeddings`` counts two rows
  no token can use, so inputs are cut at ``max_position_embeddings - 2``;
* RoBERTa has one token type: no type ids reach it; BERT's pair has types 0 / 1;
* the selector's sentence vector is the first token: ``[CLS]`` / ``<s>``, and a tokenizer
  that adds neither is refused;
* a decoder-only LM never sees more positions than it has: the responder's prompt and
  reply fit ``n_positions``; decoder-only DialogGSR caps prompt + ``max_new_tokens``;
* T5's decoder starts from ``<pad>`` (``decoder_start_token_id``), never a label.

Stock ``train_model`` / ``eval_model`` runs of every family are in
``tests/test_families_cli.py``.
"""

from __future__ import annotations

import pytest
import torch

from families import make_family, make_tokenizer

from parlai_docgraph.graphs.embed import encode_texts, encoder_limit, mean_pooled

LONG = " ".join(["the band played a long concert in the old city hall"] * 30)


def _encoder(directory):
    from parlai_docgraph.models.encoders import load_encoder

    return load_encoder(str(directory))


# ----------------------------------------------------------------- tokenizers of each kind
def test_tokenizers_have_their_familys_special_tokens(family_dirs):
    from transformers import AutoTokenizer

    tok = {f: AutoTokenizer.from_pretrained(str(d)) for f, d in family_dirs.items()}
    rob = tok["roberta"]("a b", "c")
    assert rob.input_ids[0] == tok["roberta"].bos_token_id == tok["roberta"].cls_token_id == 0
    assert tok["roberta"].pad_token_id == 1 and "token_type_ids" not in rob
    assert rob.input_ids.count(tok["roberta"].eos_token_id) == 3  # <s> A </s></s> B </s>
    bert = tok["bert"]("a b", "c")
    assert bert.input_ids[0] == tok["bert"].cls_token_id and set(bert.token_type_ids) == {0, 1}
    assert tok["gpt2"].pad_token is None and tok["gpt2"].eos_token == "<|endoftext|>"
    t5 = tok["t5"]("hello there")
    assert t5.input_ids[-1] == tok["t5"].eos_token_id == 1 and tok["t5"].pad_token_id == 0
    assert tok["t5"].convert_ids_to_tokens(t5.input_ids[0]).startswith("\u2581")  # Unigram, ▁
    assert tok["llama"]("hi").input_ids[0] == tok["llama"].bos_token_id and tok["llama"].pad_token is None
    assert tok["qwen"].pad_token_id == tok["qwen"].eos_token_id
    assert "<|im_start|>assistant" in tok["qwen"].apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)


# ----------------------------------------------------------------- RoBERTa / BERT encoders
def test_roberta_inputs_stop_two_short_of_its_position_table(tmp_path):
    """Positions pad+1 .. pad+T must exist: T <= max_position_embeddings - 2 (512 of 514)."""
    directory = make_family("roberta", tmp_path / "rob", positions=32)
    encoder, tok = _encoder(directory)
    tok.model_max_length = int(1e30)  # a tokenizer saved without its limit: the config decides
    assert encoder.config.max_position_embeddings == 34
    assert encoder_limit(encoder, tok, None) == 32
    assert encoder_limit(encoder, tok, 256) == 32  # --pair-truncate is capped too
    states = encode_texts([LONG], encoder, tok)  # an IndexError past the table
    assert len(states[LONG][0]) == 32
    assert mean_pooled([LONG, "short"], encoder, tok).shape == (2, 64)
    bert, btok = _encoder(make_family("bert", tmp_path / "bert", positions=32))
    btok.model_max_length = int(1e30)
    assert encoder_limit(bert, btok, None) == 32  # BERT numbers from 0: no offset


@pytest.mark.parametrize("family", ("roberta", "bert"))
def test_selector_inputs_begin_with_cls_and_carry_the_right_token_types(family_dirs, family):
    from parlai_docgraph.models.selector.collate import collate_examples

    encoder, tok = _encoder(family_dirs[family])
    fields = collate_examples(None, [[]], [["first sentence .", "second one ."]], [0],
                              ["hello , how are you ?"], tok, 64)
    ids = fields["cand_input_ids"]
    first = tok.cls_token_id if family == "bert" else tok.bos_token_id
    assert (ids[:, 0] == first).all()
    assert tok.convert_ids_to_tokens(int(ids[0, 0])) == ("[CLS]" if family == "bert" else "<s>")
    types = fields.get("cand_token_type_ids")
    if family == "roberta":
        assert types is None  # one type only: type 1 would index past its table
    else:
        assert types is not None and int(types.max()) == 1
    states = encode_texts(["a sentence node ."], encoder, tok)
    assert encoder(input_ids=ids[:, :4]).last_hidden_state.shape[-1] == states[
        "a sentence node ."][0].shape[-1]


def test_encoder_whose_tokenizer_adds_no_cls_is_refused(tmp_path):
    """GPT-2's tokenizer adds no <s>/[CLS]: its first token is a word, not a summary."""
    from transformers import GPT2Config, GPT2Model

    tok = make_tokenizer("gpt2")
    tok.save_pretrained(str(tmp_path))
    GPT2Model(GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=1, n_head=2)).save_pretrained(
        str(tmp_path))
    with pytest.raises(RuntimeError, match=r"\[CLS\]/<s>"):
        _encoder(tmp_path)


# ----------------------------------------------------------------- decoder-only position limits
def test_gpt2_responder_prompt_and_reply_fit_n_positions(tmp_path):
    from parlai_docgraph.models.decoding import generation_config
    from parlai_docgraph.models.responder.model import Responder, load_causal_lm

    directory = make_family("gpt2", tmp_path / "g", positions=48, weights=False)
    lm = load_causal_lm(str(directory)).eval()
    with pytest.raises(ValueError, match="max_length"):
        Responder(lm, eos_id=0, max_length=64)  # more than the 48 positions
    with pytest.raises(ValueError, match="truncation"):  # a prompt alone could fill them
        Responder(lm, eos_id=0, knowledge_truncate=30, context_truncate=30, max_length=48)
    resp = Responder(lm, eos_id=0, knowledge_truncate=20, context_truncate=20, max_length=48)
    prompts = [resp.build_prompt(list(range(5, 60)), list(range(5, 60))), [7, 0, 8, 0]]
    for method in ("greedy", "beam"):
        config = generation_config({"inference": method, "beam_size": 2, "beam_min_length": 100})
        out = resp.generate(prompts, config)
        for prompt, hyps in zip(prompts, out):
            assert len(prompt) + len(hyps[0].tokens) <= 48
    assert len(prompts[0]) + len(out[0][0].tokens) == 48  # min_length forced the whole budget
    loss, _, mask, _ = resp.token_losses(prompts, [list(range(5, 100))] * 2)
    assert int(mask[0].sum()) == 48 - len(prompts[0]) and torch.isfinite(loss).all()


@pytest.mark.parametrize("family", ("gpt2", "llama"))
def test_causal_gsr_caps_prompt_plus_new_tokens(tmp_path, family):
    """The decoder-only DialogGSR capped neither: GPT-2 ran off its table (IndexError)."""
    from parlai_docgraph.kg.linearize import Linearizer
    from parlai_docgraph.models.gsr.model import load_lm, load_gsr_tokenizer as load_tokenizer
    from parlai_docgraph.models.gsr.build import build_gsr_model

    directory = make_family(family, tmp_path / family, positions=40, weights=False)
    lin = Linearizer(slot_tokens=2)
    tok = load_tokenizer(str(directory), None, lin.special_tokens())
    model = build_gsr_model(load_lm(str(directory)), tok, lin.special_tokens()).eval()
    assert model.max_positions == 40
    seen = []
    model.lm.register_forward_pre_hook(
        lambda m, a, kw: seen.append(int(kw["attention_mask"].shape[1])), with_kwargs=True)
    body = tok("the band played a long concert", add_special_tokens=False)["input_ids"]
    sources = [(body * 8)[:35] + [tok.eos_token_id], body[:5] + [tok.eos_token_id]]
    out = model.generate_text(sources, num_beams=2, max_new_tokens=64, min_new_tokens=64)
    assert out and max(seen) <= 40
    seen.clear()
    paths = model.generate_paths(sources, None, num_beams=2, num_return=2, max_new_tokens=64)
    assert len(paths) == 2 and max(seen) <= 40
    seen.clear()
    loss, labels, notnull, _ = model.token_losses(sources, [body * 10, body[:3]])
    assert max(seen) <= 40 and torch.isfinite(loss).all()
    assert int(notnull[0].sum()) >= 20  # the target keeps at least half the window
    assert int(notnull[1].sum()) == 3  # a short pair is untouched


# ----------------------------------------------------------------- T5's decoder start
def test_t5_decoder_starts_from_pad_and_it_is_never_a_label(tmp_path, family_dirs):
    from parlai_docgraph.kg.linearize import Linearizer
    from parlai_docgraph.models.gsr.model import load_lm, load_gsr_tokenizer as load_tokenizer
    from parlai_docgraph.models.gsr.build import build_gsr_model

    lin = Linearizer(slot_tokens=2)
    # a T5 config saved without decoder_start_token_id (T5 uses <pad>) still trains/decodes
    directory = make_family("t5", tmp_path / "t5", weights=False, decoder_start_token_id=None)
    for source in (family_dirs["t5"], directory):
        tok = load_tokenizer(str(source), None, lin.special_tokens())
        model = build_gsr_model(load_lm(str(source)), tok, lin.special_tokens()).eval()
        assert model.lm.config.decoder_start_token_id == tok.pad_token_id == 0
        assert model.lm.generation_config.decoder_start_token_id == 0
        src = [tok("hello there", add_special_tokens=False).input_ids + [tok.eos_token_id]]
        tgt = [tok("a reply", add_special_tokens=False).input_ids + [tok.eos_token_id]]
        seen = []
        model.lm.register_forward_pre_hook(
            lambda m, a, kw: seen.append(kw.get("decoder_input_ids")), with_kwargs=True)
        with torch.no_grad():
            _, labels, notnull, _ = model.token_losses(src, tgt)
        assert labels[0][notnull[0]].tolist() == tgt[0]  # the start token is not a label
        shifted = model.lm._shift_right(labels)
        assert shifted[0, 0].item() == 0 and shifted[0, 1:len(tgt[0])].tolist() == tgt[0][:-1]
        ids, mask = model.encode(src)
        seq = model.lm.generate(input_ids=ids, attention_mask=mask, max_new_tokens=3,
                                do_sample=False).tolist()[0]
        assert seq[0] == 0  # decoding starts from <pad>; GSRModel.start_len skips it

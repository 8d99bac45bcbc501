"""
:mod:`parlai_docgraph.models.kv_cache`: the in-place cache gives ``generate`` the outputs of
its own cache (tiny random T5, Llama, GPT-2 and Qwen2; beam and greedy; left padding), and its
layer reorders and grows as ``transformers``' ``DynamicLayer`` does.
"""

from __future__ import annotations

import pytest
import torch
import transformers as tf
from transformers import DynamicLayer

from parlai_docgraph.models.kv_cache import GrowingCache, GrowingLayer, decoding_cache

SMALL = dict(vocab_size=300)


def _family(name: str):
    torch.manual_seed(0)
    if name == "t5":
        return tf.T5ForConditionalGeneration(tf.T5Config(
            d_model=64, d_ff=128, num_layers=2, num_heads=4, d_kv=16, decoder_start_token_id=0,
            **SMALL))
    if name == "gpt2":
        return tf.GPT2LMHeadModel(tf.GPT2Config(n_embd=64, n_layer=2, n_head=4, bos_token_id=0,
                                                eos_token_id=2, **SMALL))
    config = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, **SMALL)
    if name == "llama":
        return tf.LlamaForCausalLM(tf.LlamaConfig(**config))
    return tf.Qwen2ForCausalLM(tf.Qwen2Config(**config))


@pytest.mark.parametrize("family", ["t5", "llama", "gpt2", "qwen2"])
@pytest.mark.parametrize("beams", [5, 1])
def test_generate_outputs_equal_the_stock_cache(family, beams):
    model = _family(family).eval()
    ids = torch.randint(3, 300, (3, 12), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[0, :4] = 0
    kwargs = dict(input_ids=ids, attention_mask=mask, max_new_tokens=24, num_beams=beams,
                  num_return_sequences=beams, do_sample=False, early_stopping=False,
                  output_scores=True, return_dict_in_generate=True, pad_token_id=1,
                  eos_token_id=2)
    stock = model.generate(**kwargs)
    cache = decoding_cache(model)
    grown = model.generate(**kwargs, past_key_values=cache)
    assert torch.equal(stock.sequences, grown.sequences)
    assert all(torch.equal(a, b) for a, b in zip(stock.scores, grown.scores))
    layers = (cache.self_attention_cache if family == "t5" else cache).layers
    assert layers and all(type(layer) is GrowingLayer for layer in layers)


def _filled(rows: int = 6, length: int = 5):
    torch.manual_seed(0)
    mine, stock = GrowingLayer(), DynamicLayer()
    for step in range(length):
        k, v = torch.randn(rows, 2, 1 if step else 3, 4), torch.randn(rows, 2, 1 if step else 3, 4)
        a, b = mine.update(k, v), stock.update(k, v)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    return mine, stock


def test_reorder_equals_index_select_and_copies_only_moved_rows(monkeypatch):
    mine, stock = _filled()
    beam_idx = torch.tensor([0, 0, 2, 1, 4, 4])
    copied = []
    real = torch.Tensor.index_select
    monkeypatch.setattr(torch.Tensor, "index_select",
                        lambda self, dim, idx: copied.append(idx.numel()) or real(self, dim, idx))
    mine.reorder_cache(beam_idx)
    monkeypatch.undo()
    stock.reorder_cache(beam_idx)
    assert torch.equal(mine.keys, stock.keys) and torch.equal(mine.values, stock.values)
    assert copied == [3, 3]  # rows 1, 3 and 5 change; the other three stay where they are
    buffer = mine._key_buffer
    mine.reorder_cache(torch.arange(6))  # the identity copies nothing and keeps the buffer
    assert mine._key_buffer is buffer and torch.equal(mine.keys, stock.keys)


def test_select_rows_keeps_the_buffer_and_equals_the_stock_selection():
    """``select_rows``: fewer or repeated rows, in the buffer while they fit (then the
    next update appends to those rows only), a copy where they do not."""
    mine, stock = _filled()
    buffer = mine._key_buffer
    for source in (torch.tensor([4, 1, 1]), torch.tensor([0, 2, 2, 1, 0])):
        mine.select_rows(source)
        stock.batch_select_indices(source)
        assert torch.equal(mine.keys, stock.keys) and torch.equal(mine.values, stock.values)
        assert mine._key_buffer is buffer
        new = torch.randn(len(source), 2, 1, 4)
        mine.update(new, new)
        stock.update(new, new)
        assert torch.equal(mine.keys, stock.keys) and mine._key_buffer is buffer
    wide = torch.arange(7) % 5  # more rows than the buffer holds
    mine.select_rows(wide)
    stock.batch_select_indices(wide)
    assert torch.equal(mine.keys, stock.keys) and torch.equal(mine.values, stock.values)


def test_grows_in_place_and_rebuffers_a_replaced_cache():
    mine, stock = _filled(length=3)
    buffer = mine._key_buffer
    assert buffer.shape[-2] >= 64 and mine.keys.data_ptr() == buffer.data_ptr()
    mine.update(torch.ones(6, 2, 1, 4), torch.ones(6, 2, 1, 4))
    assert mine._key_buffer is buffer  # written in place, no new buffer
    stock.update(torch.ones(6, 2, 1, 4), torch.ones(6, 2, 1, 4))
    for layer in (mine, stock):  # generate's prompt cache repeats each example per beam
        layer.batch_repeat_interleave(2)
        layer.update(torch.zeros(12, 2, 1, 4), torch.zeros(12, 2, 1, 4))
    assert mine._key_buffer is not buffer and torch.equal(mine.keys, stock.keys)
    for layer in (mine, stock):
        layer.crop(-2)
        layer.update(torch.full((12, 2, 1, 4), 3.0), torch.full((12, 2, 1, 4), 3.0))
    assert torch.equal(mine.keys, stock.keys) and torch.equal(mine.values, stock.values)


def test_growing_cache_keeps_sliding_window_layers():
    config = tf.Qwen2Config(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, use_sliding_window=True,
                            sliding_window=8, max_window_layers=1, layer_types=[
                                "full_attention", "sliding_attention"], **SMALL)
    layers = GrowingCache(config).layers
    assert type(layers[0]) is GrowingLayer and type(layers[1]) is not GrowingLayer


def test_encoder_decoder_cache_leaves_the_cross_attention_rows():
    cache = decoding_cache(_family("t5"))
    torch.manual_seed(0)
    cross = torch.randn(4, 2, 7, 4)
    cache.cross_attention_cache.update(cross, cross.clone(), 0)
    cache.self_attention_cache.update(torch.randn(4, 2, 1, 4), torch.randn(4, 2, 1, 4), 0)
    before = cache.self_attention_cache.layers[0].keys.clone()
    cache.reorder_cache(torch.tensor([1, 1, 3, 2]))
    assert torch.equal(cache.cross_attention_cache.layers[0].keys, cross)
    assert torch.equal(cache.self_attention_cache.layers[0].keys, before[[1, 1, 3, 2]])

"""
Initial node embeddings with a tiny randomly initialised encoder (no download).
"""

from __future__ import annotations

import pytest
import torch

from parlai_docgraph.graphs import build_document_graph, build_multilevel_graph
from parlai_docgraph.graphs.embed import embed_graph, encode_texts

PASSAGES = [
    ("Bach", ["Johann Sebastian Bach was a composer .", "Bach wrote music .", "He died ."]),
    ("Tower", ["The keeper lit the lamp .", ""]),
]


@pytest.fixture(scope="module")
def encoder_and_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    words = sorted({w for t, sents in PASSAGES for s in [t, *sents] for w in s.split()})
    vocab = {w: i for i, w in enumerate(["[PAD]", "[CLS]", "[SEP]", "[UNK]", *words])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        unk_token="[UNK]", model_max_length=64,
    )
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64,
    )
    return BertModel(config).eval(), tokenizer


def alone(encoder, tokenizer, text):
    """Unbatched hidden states and offsets of one text."""
    enc = tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
    offsets = enc.pop("offset_mapping")[0].tolist()
    with torch.no_grad():
        hidden = encoder(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
    return hidden.last_hidden_state[0], offsets


def test_node_vectors_follow_the_paper(encoder_and_tokenizer):
    encoder, tokenizer = encoder_and_tokenizer
    graph = build_document_graph(PASSAGES)
    out = embed_graph(graph, encoder, tokenizer, batch_size=2)
    assert out.vectors.shape == (len(graph.nodes), 16) and out.fallback == []
    sentences = graph.sentence_texts()
    for node in graph.nodes:
        if node.type in ("sentence", "passage"):
            expected = alone(encoder, tokenizer, node.text)[0][0]
        else:
            rows = []
            for s, a, b in node.mentions:
                hidden, offsets = alone(encoder, tokenizer, sentences[s])
                rows += [hidden[t] for t, (x, y) in enumerate(offsets) if y > x and x < b and y > a]
            expected = torch.stack(rows).mean(0)
        assert torch.allclose(out.vectors[node.id], expected, atol=1e-5), node
    bach = next(n for n in graph.nodes if n.text == "Johann Sebastian Bach")
    assert len(bach.mentions) == 3  # the merged concept averages all its mentions


def test_truncation_falls_back_and_reports(encoder_and_tokenizer):
    encoder, tokenizer = encoder_and_tokenizer
    text = "Bach wrote music and " * 20 + "the keeper lit the lamp ."
    graph = build_document_graph([("Long", [text])])
    out = embed_graph(graph, encoder, tokenizer, max_length=8)
    late = [n.id for n in graph.nodes if n.kind == "entity" and n.span[0] > 40]
    assert late and {i for i, _ in out.fallback} >= set(late)
    sentence = graph.nodes_of_type("sentence")[0]
    for i in late:
        assert torch.equal(out.vectors[i], out.vectors[sentence.id])
    assert torch.isfinite(out.vectors).all()


def test_multilevel_graph_and_slow_tokenizer(encoder_and_tokenizer):
    encoder, tokenizer = encoder_and_tokenizer
    graph = build_multilevel_graph(PASSAGES)
    out = embed_graph(graph, encoder, tokenizer)
    assert out.vectors.shape[0] == len(graph.nodes) and torch.isfinite(out.vectors).all()
    states = encode_texts(["a", "a", ""], encoder, tokenizer)
    assert set(states) == {"a", ""}
    with pytest.raises(ValueError, match="fast tokenizer"):
        encode_texts(["a"], encoder, object())


def test_own_text_nodes_are_their_texts_mean_pooled(encoder_and_tokenizer):
    """Zhang & Tan Eq. 1: a topic or word node is Pooling(f_LM(x_k)) of its own text x_k,
    mean-pooled; segment (sentence) nodes keep their sentence's encoding."""
    encoder, tokenizer = encoder_and_tokenizer
    graph = build_multilevel_graph(PASSAGES)
    own = embed_graph(graph, encoder, tokenizer, own_text=("topic", "word"))
    ctx = embed_graph(graph, encoder, tokenizer)
    kinds = set()
    for node in graph.nodes:
        if node.type in ("topic", "word"):
            kinds.add(node.type)
            expected = alone(encoder, tokenizer, node.text)[0].mean(0)
            assert torch.allclose(own.vectors[node.id], expected, atol=1e-5), node
            assert torch.allclose(own.mean_vectors[node.id], expected, atol=1e-5), node
        else:
            assert torch.equal(own.vectors[node.id], ctx.vectors[node.id]), node
    assert kinds == {"topic", "word"}
    # a word in a sentence is not its text alone: the two encodings differ
    word = next(n for n in graph.nodes if n.type == "word")
    assert not torch.allclose(own.vectors[word.id], ctx.vectors[word.id], atol=1e-4)
    with pytest.raises(ValueError, match="sentence"):
        embed_graph(graph, encoder, tokenizer, own_text=("sentence",))


def test_node_text_encoding_option_follows_the_variant():
    """--node-text-encoding auto: Zhang & Tan's own-text encoding for multilevel, Li's
    in-sentence mentions otherwise; models saved before the option keep in_sentence."""
    from parlai_docgraph.models.encoders import OWN_TEXT_TYPES, own_text_types

    assert own_text_types({"node_text_encoding": "auto", "graph_variant": "multilevel"}) == OWN_TEXT_TYPES
    assert own_text_types({"node_text_encoding": "auto", "graph_variant": "full"}) == ()
    assert own_text_types({"node_text_encoding": "own_text", "graph_variant": "full"}) == OWN_TEXT_TYPES
    assert own_text_types({"node_text_encoding": "in_sentence", "graph_variant": "multilevel"}) == ()
    assert own_text_types({"graph_variant": "multilevel"}) == ()


# ------------------------------------------------------------------ on-disk cache
def test_disk_cache_second_call_does_not_run_the_encoder(encoder_and_tokenizer, tmp_path,
                                                         monkeypatch):
    from parlai_docgraph.graphs.embed_cache import EmbeddingCache

    encoder, tokenizer = encoder_and_tokenizer
    graph = build_document_graph(PASSAGES)
    plain = embed_graph(graph, encoder, tokenizer)
    first = embed_graph(graph, encoder, tokenizer, cache=tmp_path)
    assert torch.allclose(first.vectors, plain.vectors, atol=1e-6)
    files = sorted(tmp_path.rglob("*.json"))
    distinct = set(graph.sentence_texts().values()) | {n.text for n in graph.nodes_of_type("passage")}
    assert len(files) == len(distinct) and all(f.parent.parent.parent.name == "embed-v1" for f in files)

    def no_encoder(*args, **kwargs):
        raise AssertionError("the encoder ran although every text is cached")

    monkeypatch.setattr(encoder, "forward", no_encoder)
    second = embed_graph(graph, encoder, tokenizer, cache=tmp_path)  # fresh memo: from disk
    assert torch.equal(second.vectors, first.vectors) and second.fallback == first.fallback
    # another truncation limit is another cache: the encoder would have to run
    with pytest.raises(AssertionError, match="encoder ran"):
        embed_graph(graph, encoder, tokenizer, cache=tmp_path, max_length=8)
    cache = EmbeddingCache(tmp_path, "some|other|encoder")
    assert all(cache.load(t) is None for t in distinct)


def test_disk_cache_recomputes_a_corrupt_entry(encoder_and_tokenizer, tmp_path, monkeypatch):
    from parlai_docgraph.graphs.embed_cache import EmbeddingCache, describe_encoder

    encoder, tokenizer = encoder_and_tokenizer
    texts = ["Bach wrote music .", "The keeper lit the lamp .", "He died ."]
    cache = EmbeddingCache(tmp_path, describe_encoder(encoder, tokenizer, 64))
    before = encode_texts(texts, encoder, tokenizer, cache=cache)
    damaged, truncated = cache.path(texts[0]), cache.path(texts[1])
    entry = damaged.read_text()
    damaged.write_text(entry.replace('"data":"', '"data":"AAAA'))  # checksum no longer matches
    truncated.write_text(truncated.read_text()[:50])  # a torn write
    seen = []
    original = encoder.forward

    def counting(*args, **kwargs):
        seen.append(int(kwargs["input_ids"].shape[0]))
        return original(*args, **kwargs)

    monkeypatch.setattr(encoder, "forward", counting)
    fresh = EmbeddingCache(tmp_path, cache.encoder)
    after = encode_texts(texts, encoder, tokenizer, cache=fresh)
    assert seen == [2] and fresh.counts["corrupt"] == 2 and fresh.counts["disk"] == 1
    for text in texts:
        assert torch.allclose(after[text][0], before[text][0], atol=1e-6)
        assert after[text][1] == before[text][1]
    assert EmbeddingCache(tmp_path, cache.encoder).load(texts[0]) is not None  # rewritten


def test_selector_graph_provider_uses_the_disk_cache(encoder_and_tokenizer, tmp_path,
                                                     monkeypatch):
    """``--embed-cache``: a second provider (a later run) loads node states from disk."""
    from parlai_docgraph.models.selector.provider import GraphProvider
    from parlai_docgraph.graphs.config import GraphConfig

    encoder, tokenizer = encoder_and_tokenizer
    first = GraphProvider(GraphConfig(), encoder, tokenizer, embed_cache=str(tmp_path))
    want = first.get(PASSAGES).x
    assert first.embed_cache.counts["saved"] > 0

    def no_encoder(*args, **kwargs):
        raise AssertionError("the encoder ran although every state was cached")

    monkeypatch.setattr(encoder, "forward", no_encoder)
    second = GraphProvider(GraphConfig(), encoder, tokenizer, embed_cache=str(tmp_path))
    got = second.get(PASSAGES).x
    assert torch.equal(got, want)
    assert second.embed_cache.counts["disk"] > 0


def test_mean_pooling_for_encoders_trained_with_it(encoder_and_tokenizer, tmp_path):
    """``pooling="mean"``: sentence and passage nodes are the mean of their unpadded tokens
    (batched as unbatched); concepts do not change. ``encoder_pooling`` reads a
    sentence-transformers folder's Pooling config (the installed MiniLM: mean)."""
    import json

    from parlai_docgraph.models.encoders import resolve_encoder
    from parlai_docgraph.graphs.embed import encoder_pooling

    encoder, tokenizer = encoder_and_tokenizer
    graph = build_document_graph(PASSAGES)
    cls = embed_graph(graph, encoder, tokenizer, batch_size=2)
    mean = embed_graph(graph, encoder, tokenizer, batch_size=2, pooling="mean")
    for node in graph.nodes:
        if node.type in ("sentence", "passage") and node.text:
            expected = alone(encoder, tokenizer, node.text)[0].mean(0)
            torch.testing.assert_close(mean.vectors[node.id], expected, atol=1e-5, rtol=1e-4)
            assert not torch.allclose(mean.vectors[node.id], cls.vectors[node.id])
        elif node.type == "concept":
            torch.testing.assert_close(mean.vectors[node.id], cls.vectors[node.id])
    with pytest.raises(ValueError, match="pooling"):
        embed_graph(graph, encoder, tokenizer, pooling="max")
    assert encoder_pooling(resolve_encoder("minilm-l6")) == "mean"
    assert encoder_pooling(str(tmp_path)) == "cls" and encoder_pooling(None) == "cls"
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(
        {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    assert encoder_pooling(str(tmp_path)) == "cls"

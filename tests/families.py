"""
Small random models of every real family the paper recipes name, built in the test (no
download): RoBERTa and BERT (selector encoders, ``--encoder-model``), GPT-2 (responder,
``--responder-model``), T5 (DialogGSR, ``--gsr-model``) and Llama / Qwen (any causal LM,
for the responder and DialogGSR).

Each tokenizer is trained with ``tokenizers`` on the bundled sample text (WoW-style
dialogues and the OpenDialKG triples, well under a second) and has the special tokens and
post-processing of its family:

* ``roberta`` -- byte-level BPE, ``<s>``=0 ``<pad>``=1 ``</s>``=2 ``<unk>``=3 ``<mask>``=4,
  ``<s> A </s></s> B </s>``, no token type ids; positions offset by ``pad + 1`` (so
  ``max_position_embeddings`` = usable length + 2);
* ``bert`` -- lower-cased WordPiece, ``[PAD]``=0 ``[UNK]`` ``[CLS]`` ``[SEP]`` ``[MASK]``,
  ``[CLS] A [SEP] B [SEP]`` with token types 0/1;
* ``gpt2`` -- byte-level BPE, ``<|endoftext|>`` as BOS/EOS, no pad token, learned absolute
  positions (``n_positions`` is a hard limit);
* ``t5`` -- Unigram with SentencePiece ``▁`` word boundaries, ``<pad>``=0 ``</s>``=1
  ``<unk>``=2, ``<extra_id_*>`` sentinels, ``A </s>``; the decoder starts from ``<pad>``;
* ``llama`` -- Metaspace BPE, ``<s>``/``</s>``, no pad, untied output embedding, GQA;
* ``qwen`` -- byte-level BPE, ``<|endoftext|>`` as EOS and pad, ChatML template, tied
  embedding.

:func:`make_family` saves config, tokenizer and seeded random weights as a local Hugging
Face directory (what ``save_pretrained`` of a hub model gives); ``tests/conftest.py``'s
``family_dirs`` fixture builds each once per session.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List

FAMILIES = ("roberta", "bert", "gpt2", "t5", "llama", "qwen")
ENCODERS = ("roberta", "bert")
CAUSAL = ("gpt2", "llama", "qwen")
#: usable positions of the tiny models (RoBERTa's config adds its offset of 2)
POSITIONS = 512

QWEN_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TINY = dict(hidden=64, layers=2, heads=4, ffn=128)
TOKENIZER_CLASS = dict(roberta="RobertaTokenizer", bert="BertTokenizer", gpt2="GPT2Tokenizer",
                       t5="T5Tokenizer", llama="LlamaTokenizer", qwen="Qwen2Tokenizer")


def corpus() -> List[str]:
    """The bundled WoW-style sample's strings and the OpenDialKG sample triples."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "tools" / "make_tiny_gpt2.py"
    spec = importlib.util.spec_from_file_location("make_tiny_gpt2", path)  # not installed
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    sample_text = tool.corpus
    from parlai_docgraph.tasks.docgraph.build import SAMPLE_DATAPATH

    triples = Path(SAMPLE_DATAPATH) / "opendialkg" / "opendialkg_triples.txt"
    return sample_text() + triples.read_text(encoding="utf-8").replace("\t", " ").splitlines()


def _train(tok, special: List[str], vocab_size: int, kind: str = "bpe", **kw) -> None:
    from tokenizers import trainers

    if kind == "wordpiece":
        trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=special,
                                            show_progress=False)
    elif kind == "unigram":
        trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=special,
                                          unk_token="<unk>", show_progress=False)
    else:
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special,
                                      show_progress=False, **kw)
    tok.train_from_iterator(corpus(), trainer)


def make_tokenizer(family: str, vocab_size: int = 1000):
    """A ``PreTrainedTokenizerFast`` of ``family``'s kind, trained on the bundled text."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    byte_alphabet = dict(initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    if family in ("roberta", "gpt2", "qwen"):
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        special = {"roberta": ["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
                   "gpt2": ["<|endoftext|>"],
                   "qwen": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]}[family]
        _train(tok, special, vocab_size, **byte_alphabet)
        if family == "roberta":
            tok.post_processor = processors.RobertaProcessing(
                ("</s>", 2), ("<s>", 0), trim_offsets=True, add_prefix_space=False)
            kw = dict(bos_token="<s>", eos_token="</s>", sep_token="</s>", cls_token="<s>",
                      unk_token="<unk>", pad_token="<pad>", mask_token="<mask>",
                      model_input_names=["input_ids", "attention_mask"])
        elif family == "gpt2":
            tok.post_processor = processors.ByteLevel(trim_offsets=False)
            kw = dict(bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                      unk_token="<|endoftext|>", model_input_names=["input_ids", "attention_mask"])
        else:
            kw = dict(eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                      additional_special_tokens=["<|im_start|>", "<|im_end|>"],
                      model_input_names=["input_ids", "attention_mask"])
    elif family == "bert":
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        _train(tok, ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], vocab_size, kind="wordpiece")
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
        kw = dict(cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", unk_token="[UNK]",
                  mask_token="[MASK]")
    elif family == "t5":
        tok = Tokenizer(models.Unigram())
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        sentinels = [f"<extra_id_{i}>" for i in range(10)]
        _train(tok, ["<pad>", "</s>", "<unk>"] + sentinels, vocab_size, kind="unigram")
        tok.post_processor = processors.TemplateProcessing(
            single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", 1)])
        kw = dict(eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
                  additional_special_tokens=sentinels,
                  model_input_names=["input_ids", "attention_mask"])
    elif family == "llama":
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        _train(tok, ["<unk>", "<s>", "</s>"], vocab_size)
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
        kw = dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                  model_input_names=["input_ids", "attention_mask"])
    else:
        raise ValueError(f"unknown family {family!r}; known: {FAMILIES}")
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=POSITIONS, **kw)
    if family == "qwen":
        fast.chat_template = QWEN_TEMPLATE
    return fast


def make_config(family: str, tokenizer, positions: int = POSITIONS, **overrides):
    """A tiny ``family`` config (64 dims, 2 layers) sized to ``tokenizer``."""
    import transformers as tf

    h, n, heads, ffn = TINY["hidden"], TINY["layers"], TINY["heads"], TINY["ffn"]
    vocab = len(tokenizer)
    if family in ENCODERS:
        cls = tf.RobertaConfig if family == "roberta" else tf.BertConfig
        kw = dict(vocab_size=vocab, hidden_size=h, num_hidden_layers=n, num_attention_heads=heads,
                  intermediate_size=ffn, pad_token_id=tokenizer.pad_token_id)
        if family == "roberta":  # positions start at pad + 1: the table is 2 longer
            kw.update(max_position_embeddings=positions + tokenizer.pad_token_id + 1,
                      type_vocab_size=1, bos_token_id=tokenizer.bos_token_id,
                      eos_token_id=tokenizer.eos_token_id)
        else:
            kw.update(max_position_embeddings=positions, type_vocab_size=2)
        config = cls(**kw)
    elif family == "gpt2":
        config = tf.GPT2Config(vocab_size=vocab, n_embd=h, n_layer=n, n_head=heads,
                               n_positions=positions, bos_token_id=tokenizer.bos_token_id,
                               eos_token_id=tokenizer.eos_token_id)
    elif family == "t5":
        config = tf.T5Config(vocab_size=vocab, d_model=h, d_kv=h // heads, d_ff=ffn, num_layers=n,
                             num_decoder_layers=n, num_heads=heads, feed_forward_proj="relu",
                             pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                             decoder_start_token_id=tokenizer.pad_token_id)
    elif family in ("llama", "qwen"):
        kw = dict(vocab_size=vocab, hidden_size=h, intermediate_size=ffn, num_hidden_layers=n,
                  num_attention_heads=heads, num_key_value_heads=heads // 2,
                  max_position_embeddings=positions, eos_token_id=tokenizer.eos_token_id,
                  pad_token_id=tokenizer.pad_token_id)
        if family == "llama":
            config = tf.LlamaConfig(bos_token_id=tokenizer.bos_token_id, tie_word_embeddings=False, **kw)
        else:
            config = tf.Qwen2Config(tie_word_embeddings=True, **kw)
    else:
        raise ValueError(f"unknown family {family!r}; known: {FAMILIES}")
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


def model_class(family: str):
    """The ``Auto*`` class a family's checkpoint is loaded with."""
    import transformers as tf

    if family in ENCODERS:
        return tf.AutoModel
    return tf.AutoModelForSeq2SeqLM if family == "t5" else tf.AutoModelForCausalLM


def make_family(
    family: str, directory: Path, *, positions: int = POSITIONS, weights: bool = True,
    vocab_size: int = 1000, seed: int = 0, **config_overrides,
) -> Path:
    """Write tokenizer, config and (``weights``) seeded random weights of a tiny ``family``."""
    import torch

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = make_tokenizer(family, vocab_size)
    tokenizer.save_pretrained(str(directory))
    # AutoTokenizer then builds the family's own class, as for a hub checkpoint
    settings = directory / "tokenizer_config.json"
    saved = json.loads(settings.read_text(encoding="utf-8"))
    saved["tokenizer_class"] = TOKENIZER_CLASS[family]
    settings.write_text(json.dumps(saved, indent=2), encoding="utf-8")
    config = make_config(family, tokenizer, positions, **config_overrides)
    if weights:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = model_class(family).from_config(config)
        model.save_pretrained(str(directory))
    else:
        config.save_pretrained(str(directory))
    return directory


def make_tiny_lm(family: str, directory: Path, vocab_size: int = 1500,
                 positions: int = 1024) -> Path:
    """Config + tokenizer (no weights) of a tiny ``llama`` or ``qwen`` LM."""
    if family not in ("llama", "qwen"):
        raise ValueError(family)
    return make_family(family, directory, positions=positions, weights=False,
                       vocab_size=vocab_size)


def tiny_responder(source: str):
    """``(Responder, tokenizer)`` of ``source`` ('tiny': the bundled GPT-2, or a
    :func:`make_tiny_lm` directory), seeded random weights, in eval mode."""
    from parlai_docgraph.models.responder.model import (
        Responder, load_causal_lm, load_responder_tokenizer,
    )

    tok = load_responder_tokenizer(source)
    # a tokenizer without a pad token (GPT-2): EOS stands in (Responder's default)
    return Responder(load_causal_lm(source, seed=0).eval(), tok.eos_token_id,
                     tok.pad_token_id), tok


def make_all(root: Path, families=FAMILIES) -> Dict[str, Path]:
    """``{family: directory}`` under ``root``."""
    return {f: make_family(f, Path(root) / f) for f in families}


__all__ = ["FAMILIES", "ENCODERS", "CAUSAL", "POSITIONS", "corpus", "make_tokenizer",
           "make_config", "make_family", "make_tiny_lm", "tiny_responder", "make_all"]

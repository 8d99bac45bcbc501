"""
Tiny random decoder-only LMs of today's families, built in the test (no download):
Llama-style (SentencePiece-like Metaspace BPE, ``<s>``/``</s>``, no pad token, untied
output embedding, grouped-query attention) and Qwen-style (byte-level BPE,
``<|endoftext|>`` as EOS and pad, ``<|im_start|>``/``<|im_end|>`` chat template, tied
embedding). Tokenizers are trained with ``tokenizers`` on the bundled WoW sample and
KG triples (the same text the tiny GPT-2 asset uses, plus entity names).
"""

from __future__ import annotations

from pathlib import Path
from typing import List

QWEN_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _corpus() -> List[str]:
    from parlai_docgraph.assets.make_tiny_gpt2 import corpus
    from parlai_docgraph.tasks.docgraph.build import SAMPLE_DATAPATH

    triples = Path(SAMPLE_DATAPATH) / "opendialkg" / "opendialkg_triples.txt"
    return corpus() + triples.read_text(encoding="utf-8").replace("\t", " ").splitlines()


def make_tiny_lm(family: str, directory: Path, vocab_size: int = 1500) -> Path:
    """Write config + tokenizer of a tiny random ``family`` ('llama' or 'qwen') LM; no weights."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, PreTrainedTokenizerFast, Qwen2Config

    directory.mkdir(parents=True, exist_ok=True)
    if family == "llama":
        special = ["<unk>", "<s>", "</s>"]
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        kw = dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    elif family == "qwen":
        special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        kw = dict(eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                  additional_special_tokens=["<|im_start|>", "<|im_end|>"])
    else:
        raise ValueError(family)
    alphabet = pre_tokenizers.ByteLevel.alphabet() if family == "qwen" else []
    tok.train_from_iterator(_corpus(), trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=special, initial_alphabet=alphabet, show_progress=False))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, **kw)
    if family == "qwen":
        fast.chat_template = QWEN_TEMPLATE
    fast.save_pretrained(str(directory))
    common = dict(vocab_size=len(fast), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                  eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id)
    if family == "llama":
        config = LlamaConfig(bos_token_id=fast.bos_token_id, tie_word_embeddings=False, **common)
    else:
        config = Qwen2Config(tie_word_embeddings=True, **common)
    config.save_pretrained(str(directory))
    return directory

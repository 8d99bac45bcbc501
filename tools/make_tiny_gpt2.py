"""
Regenerate ``parlai_docgraph/assets/tiny_gpt2/``: the offline default of
``-m docgraph/gpt2_responder --responder-model tiny``.

* ``tokenizer.json`` - a byte-level BPE (GPT-2 style) trained with ``tokenizers`` on the
  text of the bundled Wizard of Wikipedia sample's training split only
  (``tasks/docgraph/sample_data/wizard_of_wikipedia/train.json``: topics, personas,
  passages, dialogue turns, checked sentences, candidate responses), so no valid/test
  text shapes the vocabulary; byte-level BPE still encodes any unseen text.
* ``tokenizer_config.json`` / ``special_tokens_map.json`` - so
  ``PreTrainedTokenizerFast.from_pretrained(dir)`` / ``AutoTokenizer`` load it.
* ``config.json`` - a small ``GPT2Config`` (2 layers, 2 heads, 128 dims, 512 positions).
  Config only: no weights are shipped; the agent initialises them (seeded) at train time.

Usage::

    python tools/make_tiny_gpt2.py          # (re)write the files
    python tools/make_tiny_gpt2.py --check  # exit 1 if they differ

Output is deterministic for a given ``tokenizers`` version (training is single-pass BPE
over a fixed, ordered corpus).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Iterator, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/ is no package
from regen_assets import regen_main, stale_files  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ASSETS = os.path.join(ROOT, "parlai_docgraph", "assets")
OUT = os.path.join(ASSETS, "tiny_gpt2")


def _sample_dir() -> str:
    # The installed package's own copy of the sample (tasks/ is installed as
    # parlai_docgraph.tasks), so this works from a wheel as well as from the repo.
    from parlai_docgraph.tasks.docgraph.build import SAMPLE_DATAPATH

    return os.path.join(SAMPLE_DATAPATH, "wizard_of_wikipedia")


SAMPLE = _sample_dir()

EOS = "<|endoftext|>"
PAD = "<pad>"
VOCAB_SIZE = 3000
MODEL_MAX_LENGTH = 512
FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")


def _strings(node, skip=("speaker",)) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item, skip)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in skip:
                continue
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                yield key  # {title: [sentences]} passages: the title is text too
            yield from _strings(value, skip)


def corpus(sample_dir: str = SAMPLE) -> List[str]:
    """
    Every distinct text string of the bundled sample, in a fixed order.
    """
    names = ["train.json"]
    seen, lines = set(), []
    for name in names:
        with open(os.path.join(sample_dir, name), encoding="utf-8") as f:
            data = json.load(f)
        for text in _strings(data):
            text = text.strip()
            if text and text not in seen:
                seen.add(text)
                lines.append(text)
    return lines


def build(out_dir: str, sample_dir: str = SAMPLE) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=[EOS, PAD],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(sample_dir), trainer=trainer)
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"), pretty=False)

    special = {"bos_token": EOS, "eos_token": EOS, "unk_token": EOS, "pad_token": PAD}
    tok_config = dict(
        tokenizer_class="PreTrainedTokenizerFast",
        model_max_length=MODEL_MAX_LENGTH,
        padding_side="left",
        clean_up_tokenization_spaces=False,
        add_prefix_space=False,
        **special,
    )
    config = {
        "model_type": "gpt2",
        "architectures": ["GPT2LMHeadModel"],
        "vocab_size": tok.get_vocab_size(),
        "n_positions": MODEL_MAX_LENGTH,
        "n_embd": 128,
        "n_layer": 2,
        "n_head": 2,
        "n_inner": None,
        "activation_function": "gelu_new",
        "resid_pdrop": 0.1,
        "embd_pdrop": 0.1,
        "attn_pdrop": 0.1,
        "layer_norm_epsilon": 1e-5,
        "initializer_range": 0.02,
        "bos_token_id": tok.token_to_id(EOS),
        "eos_token_id": tok.token_to_id(EOS),
        "pad_token_id": tok.token_to_id(PAD),
        "tie_word_embeddings": True,
    }
    for name, obj in (
        ("tokenizer_config.json", tok_config),
        ("special_tokens_map.json", special),
        ("config.json", config),
    ):
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, sort_keys=True)
            f.write("\n")


def check(out_dir: str = OUT) -> List[str]:
    """Names of the shipped files that a fresh build does not reproduce byte for byte."""
    return stale_files(build, FILES, out_dir)


def main(argv=None) -> int:
    return regen_main("tiny_gpt2", __doc__.splitlines()[1], build, FILES, OUT, argv)


if __name__ == "__main__":
    sys.exit(main())

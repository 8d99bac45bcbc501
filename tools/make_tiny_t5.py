"""
Regenerate ``parlai_docgraph/assets/tiny_t5/``: the offline default of
``-m docgraph/gsr --gsr-model tiny``.

* ``tokenizer.json`` - a BPE tokenizer with SentencePiece-style ``\u2581`` word
  boundaries (``Metaspace``; a Unigram model would match T5 more closely, but its trainer
  is not deterministic run to run, and ``--check`` needs byte-identical output) trained with ``tokenizers`` on the bundled OpenDialKG-format sample
  (``tasks/docgraph/sample_data/opendialkg/``): the dialogue turns of the *train* split
  and every entity and relation name of the sample KG (the KG is shared by all splits).
  Ids 0/1/2 are ``<pad>`` / ``</s>`` / ``<unk>`` as in T5; then the sentinels
  ``<extra_id_0..9>`` (the mask of KG-reconstruction pretraining, Eq. 8) and the
  structural tokens of Eq. 2 for one and two tokens per slot (``--slot-tokens 1|2``),
  all added as special tokens so they are never split.
* ``tokenizer_config.json`` / ``special_tokens_map.json`` - so ``AutoTokenizer`` loads it.
* ``config.json`` - a tiny ``T5Config`` (2+2 layers, 64 dims, ~0.3M parameters).
  Config only: no weights are shipped; the agent initialises them from a seed.

Usage::

    python tools/make_tiny_t5.py          # (re)write the files
    python tools/make_tiny_t5.py --check  # exit 1 if they differ

Output is deterministic for a given ``tokenizers`` version (fixed, ordered corpus).
"""

from __future__ import annotations

import json
import os
import sys
from typing import List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/ is no package
from regen_assets import regen_main, stale_files  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ASSETS = os.path.join(ROOT, "parlai_docgraph", "assets")
OUT = os.path.join(ASSETS, "tiny_t5")

PAD, EOS, UNK = "<pad>", "</s>", "<unk>"
NUM_SENTINELS = 10
VOCAB_SIZE = 1200
MODEL_MAX_LENGTH = 512
FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")


def structural_tokens() -> List[str]:
    """Eq. 2 tokens for ``--slot-tokens`` 1 and 2 (2 hops), without duplicates."""
    from parlai_docgraph.kg.linearize import Linearizer

    out: List[str] = []
    for n in (1, 2):
        for tok in Linearizer(slot_tokens=n, max_hops=2).special_tokens():
            if tok not in out:
                out.append(tok)
    return out


def corpus() -> List[str]:
    """Train-split dialogue text and all KG names of the bundled sample, in a fixed order."""
    from parlai_docgraph.tasks.docgraph.build import SAMPLE_DATAPATH
    from parlai_docgraph.tasks.docgraph.readers.opendialkg import read_opendialkg
    from parlai_docgraph.tasks.docgraph.readers.opendialkg_split import split_rows

    folder = os.path.join(SAMPLE_DATAPATH, "opendialkg")
    data = read_opendialkg(os.path.join(folder, "opendialkg.csv"))
    train = set(split_rows(data.num_rows)[0]["train"])
    seen, lines = set(), []

    def add(text: str) -> None:
        text = text.strip()
        if text and text not in seen:
            seen.add(text)
            lines.append(text)

    for d in data.dialogues:
        if d.index in train:
            for turn in d.turns:
                add(turn.text)
    with open(os.path.join(folder, "opendialkg_triples.txt"), encoding="utf-8") as f:
        for line in f:
            for part in line.rstrip("\n").split("\t"):
                add(part.lstrip("~"))
    return lines


def build(out_dir: str) -> None:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token=UNK))
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    sentinels = [f"<extra_id_{i}>" for i in range(NUM_SENTINELS)]
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=[PAD, EOS, UNK],
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    tok.add_special_tokens(sentinels + structural_tokens())
    eos_id = tok.token_to_id(EOS)
    tok.post_processor = processors.TemplateProcessing(
        single=f"$A {EOS}", pair=f"$A {EOS} $B {EOS}", special_tokens=[(EOS, eos_id)]
    )
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"), pretty=False)

    special = {
        "eos_token": EOS,
        "unk_token": UNK,
        "pad_token": PAD,
        "additional_special_tokens": sentinels + structural_tokens(),
    }
    tok_config = dict(
        tokenizer_class="PreTrainedTokenizerFast",
        model_max_length=MODEL_MAX_LENGTH,
        padding_side="right",
        clean_up_tokenization_spaces=False,
        **special,
    )
    config = {
        "model_type": "t5",
        "architectures": ["T5ForConditionalGeneration"],
        "vocab_size": tok.get_vocab_size(),
        "d_model": 64,
        "d_kv": 32,
        "d_ff": 128,
        "num_layers": 2,
        "num_decoder_layers": 2,
        "num_heads": 2,
        "relative_attention_num_buckets": 16,
        "relative_attention_max_distance": 64,
        "dropout_rate": 0.1,
        "layer_norm_epsilon": 1e-6,
        "initializer_factor": 1.0,
        "feed_forward_proj": "relu",
        "is_encoder_decoder": True,
        "tie_word_embeddings": True,
        "pad_token_id": tok.token_to_id(PAD),
        "eos_token_id": eos_id,
        "decoder_start_token_id": tok.token_to_id(PAD),
    }
    for name, obj in (
        ("tokenizer_config.json", tok_config),
        ("special_tokens_map.json", special),
        ("config.json", config),
    ):
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, sort_keys=True, ensure_ascii=False)
            f.write("\n")


def check(out_dir: str = OUT) -> List[str]:
    """Names of the shipped files that a fresh build does not reproduce byte for byte."""
    return stale_files(build, FILES, out_dir)


def main(argv=None) -> int:
    return regen_main("tiny_t5", __doc__.splitlines()[1], build, FILES, OUT, argv)


if __name__ == "__main__":
    sys.exit(main())

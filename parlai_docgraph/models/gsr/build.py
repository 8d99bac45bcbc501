"""
The DialogGSR model over a loaded LM, whichever its family: :class:`~.model.GSRModel` for
an encoder-decoder, :class:`~.causal.CausalGSRModel` for a decoder-only LM.

It sits above both modules (``causal`` subclasses ``model``'s class), so neither
imports the other back.
"""

from __future__ import annotations

from typing import Sequence

from torch import nn

from parlai_docgraph.models.gsr.model import MASK_TOKEN, GSRModel, is_causal, set_decoder_start
from parlai_docgraph.models.gsr.causal import CausalGSRModel


def build_gsr_model(lm: nn.Module, tokenizer, structural: Sequence[str]) -> GSRModel:
    """
    :class:`GSRModel` (seq2seq) or :class:`~.causal.CausalGSRModel` (decoder-only)
    over ``lm``, its embedding resized to ``tokenizer``. The rows KG-reconstruction
    pretraining trains are the structural tokens, and for a causal LM also the mask
    token (T5's ``<extra_id_0>`` is pretrained; a causal LM gets it new).
    """
    if lm.get_input_embeddings().num_embeddings < len(tokenizer):
        lm.resize_token_embeddings(len(tokenizer))
    causal = is_causal(lm.config)
    if not causal:
        set_decoder_start(lm, tokenizer)
    special = tokenizer.convert_tokens_to_ids(list(structural) + ([MASK_TOKEN] if causal else []))
    if causal:
        return CausalGSRModel(lm, tokenizer.pad_token_id, tokenizer.eos_token_id, special)
    return GSRModel(lm, tokenizer.pad_token_id, tokenizer.eos_token_id, special)

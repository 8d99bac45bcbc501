"""
ParlAI options for LoRA and bf16, shared by ``-m docgraph/gpt2_responder`` (and so
``-m docgraph``) and ``-m docgraph/gsr``; the model side is
:mod:`parlai_docgraph.models.adapters`.

A checkpoint trained with ``--lora-r > 0`` stores the peft-wrapped state (frozen base
weights, adapters, new-token rows) and its ``.opt`` records the LoRA options, so
``eval_model`` / ``interactive`` with ``-mf`` rebuild the same wrapper before loading
(weights only: :class:`~.base.WeightsOnlyLoadMixin`).
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch import nn

from parlai.core.opt import Opt
from parlai.core.params import ParlaiParser
from parlai.utils import logging

from parlai_docgraph.models.adapters import (
    LoraSettings, apply_lora, check_bf16, parse_targets, trainable_summary,
)


def add_adapter_args(parser: ParlaiParser) -> None:
    """Register ``--lora-r``, ``--lora-alpha``, ``--lora-dropout``, ``--lora-target-modules``, ``--bf16``."""
    g = parser.add_argument_group("docgraph LoRA and bf16")
    g.add_argument("--lora-r", type=int, default=0,
                   help="LoRA rank r (0: off, full fine-tuning); the LM's weights freeze and only "
                   "the rank-r adapters and the rows of tokens added to its vocabulary train")
    g.add_argument("--lora-alpha", type=float, default=16.0,
                   help="LoRA scaling alpha: the update is (alpha / r) B A x")
    g.add_argument("--lora-dropout", type=float, default=0.05, help="dropout on the LoRA input")
    g.add_argument("--lora-target-modules", type=str, default="default",
                   help="comma-separated module names that get adapters (e.g. q_proj,k_proj,v_proj,o_proj); "
                   "'default': peft's choice for the model family (q_proj,v_proj for Llama/Qwen/"
                   "Mistral, c_attn for GPT-2, q,v for T5)")
    g.add_argument("--bf16", type="bool", default=False,
                   help="keep the LM's weights in bfloat16 (half the memory; LoRA adapters stay "
                   "float32); works on CPU; refused on a GPU without bf16 (before Ampere)")


def lora_settings(opt: Opt) -> LoraSettings:
    """The LoRA options of ``opt``, validated."""
    s = LoraSettings(
        r=int(opt["lora_r"]), alpha=float(opt["lora_alpha"]),
        dropout=float(opt["lora_dropout"]), target_modules=parse_targets(opt["lora_target_modules"]),
    )
    if s.r < 0 or not 0.0 <= s.dropout < 1.0:
        raise ValueError(f"--lora-r must be >= 0 and --lora-dropout in [0, 1): got {s.r}, {s.dropout}")
    return s


def lm_dtype(opt: Opt) -> Optional[torch.dtype]:
    """``torch.bfloat16`` under ``--bf16`` (after checking the device), else None (as saved)."""
    if not opt["bf16"]:
        return None
    on_gpu = not opt["no_cuda"] and torch.cuda.is_available()
    check_bf16(torch.device("cuda") if on_gpu else torch.device("cpu"))
    return torch.bfloat16


def adapt_lm(lm: nn.Module, opt: Opt, new_token_ids: Sequence[int] = ()) -> nn.Module:
    """``lm`` cast to bf16 under ``--bf16`` and wrapped with LoRA under ``--lora-r``."""
    dtype = lm_dtype(opt)
    if dtype is not None and next(lm.parameters()).dtype != dtype:
        lm = lm.to(dtype)
    settings = lora_settings(opt)
    if settings.enabled:
        lm = apply_lora(lm, settings, new_token_ids)
        logging.info(f"LoRA r={settings.r} alpha={settings.alpha} on "
                     f"{sorted(lm.peft_config['default'].target_modules)}: {trainable_summary(lm)}")
    return lm

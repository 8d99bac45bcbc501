"""
LoRA (``peft``) and bf16 for the LMs of the responder and DialogGSR.
Torch, transformers and peft only; the ParlAI options live in
:mod:`parlai_docgraph.agents.lm_adapters`.

LoRA (Hu et al. 2022) replaces a frozen weight ``W`` of each target module by

.. math::

    W x + \\frac{\\alpha}{r} B A x, \\qquad A \\in \\mathbb R^{r \\times d_{in}},\\;
    B \\in \\mathbb R^{d_{out} \\times r},\\; B_0 = 0,

with dropout ``p`` on the input of ``A``; only ``A`` and ``B`` train. Target modules
default to peft's per-family table (``q_proj``/``v_proj`` for Llama, Qwen, Mistral;
``c_attn`` for GPT-2; ``q``/``v`` for T5). Tokens the model adds to its vocabulary (the
structural tokens of DialogGSR) must still learn their embedding: their rows train
through peft's ``trainable_token_indices`` (an ``r``-free delta on just those rows), on
the input embedding and, when it is untied (Llama), on the output embedding too. Every
other row and weight stays frozen.

bf16: the base weights are stored in ``bfloat16``; peft keeps the adapters and token
deltas in float32 (``autocast_adapter_dtype``), so the updates themselves are not rounded
to bf16. CPUs compute in bf16 as well (slower than float32 on most, but half the memory);
a CUDA device without bf16 (before Ampere) is refused with a clear error.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence

import torch
from torch import nn

#: parameter-name markers of what LoRA mode trains
ADAPTER_MARKERS = ("lora_", "trainable_tokens_delta")
TOKEN_MARKER = "trainable_tokens_delta"


class AdapterUnavailable(RuntimeError):
    """LoRA or bf16 was asked for but cannot be used here (no peft, no bf16 on the device)."""


@dataclass
class LoraSettings:
    """``--lora-r`` (0: off), ``--lora-alpha``, ``--lora-dropout``, ``--lora-target-modules``."""

    r: int = 0
    alpha: float = 16.0
    dropout: float = 0.05
    target_modules: Optional[List[str]] = None  # None: peft's default for the family

    @property
    def enabled(self) -> bool:
        return self.r > 0


def parse_targets(text: Optional[str]) -> Optional[List[str]]:
    """``"q_proj,v_proj"`` -> ``["q_proj", "v_proj"]``; empty or ``default`` -> None."""
    names = [t.strip() for t in (text or "").split(",") if t.strip()]
    return None if not names or names == ["default"] else names


def check_bf16(device: torch.device) -> None:
    """Raise :class:`AdapterUnavailable` when ``device`` cannot compute in bf16."""
    if device.type == "cuda" and not torch.cuda.is_bf16_supported():
        name = torch.cuda.get_device_name(device)
        raise AdapterUnavailable(
            f"--bf16: {name} has no bfloat16 support (CUDA compute capability >= 8.0, Ampere or "
            "newer, is needed); drop --bf16 (float32) or run on a bf16-capable GPU or the CPU"
        )


def module_name(model: nn.Module, module: nn.Module) -> str:
    """The attribute name (last dotted component) of ``module`` inside ``model``."""
    for name, m in model.named_modules():
        if m is module:
            return name.rsplit(".", 1)[-1]
    raise ValueError("module not found in model")


def new_token_rows(model: nn.Module, token_ids: Sequence[int]) -> dict:
    """``trainable_token_indices``: the rows of ``token_ids`` in the input embedding and an untied output one."""
    ids = sorted(set(int(i) for i in token_ids))
    emb = model.get_input_embeddings()
    rows = {module_name(model, emb): ids}
    out = model.get_output_embeddings()
    if out is not None and out.weight is not emb.weight:
        rows[module_name(model, out)] = ids
    return rows


def apply_lora(model: nn.Module, settings: LoraSettings, new_token_ids: Sequence[int] = ()) -> nn.Module:
    """
    ``model`` wrapped by peft (``PeftModelForCausalLM`` / ``PeftModelForSeq2SeqLM``): LoRA
    on ``settings.target_modules`` and trainable rows for ``new_token_ids``; everything
    else frozen. ``settings.r == 0`` returns ``model`` unchanged.
    """
    if not settings.enabled:
        return model
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as e:  # pragma: no cover - peft is a runtime dependency
        raise AdapterUnavailable("--lora-r needs peft: pip install peft") from e
    seq2seq = bool(getattr(model.config, "is_encoder_decoder", False))
    config = LoraConfig(
        r=settings.r, lora_alpha=settings.alpha, lora_dropout=settings.dropout,
        target_modules=settings.target_modules,
        trainable_token_indices=new_token_rows(model, new_token_ids) if new_token_ids else None,
        task_type="SEQ_2_SEQ_LM" if seq2seq else "CAUSAL_LM",
    )
    try:
        return get_peft_model(model, config)
    except ValueError as e:
        raise AdapterUnavailable(
            f"LoRA on {type(model).__name__}: {e}; pass --lora-target-modules with names of its "
            "linear layers (e.g. q_proj,v_proj)"
        ) from e


def base_model(model: nn.Module) -> nn.Module:
    """The Hugging Face model under peft's wrapper (``model`` itself when not adapted): the
    one whose ``generate`` runs a search and whose hooks see its forward passes."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def is_adapted(model: nn.Module) -> bool:
    """Whether ``model`` is a peft model."""
    return hasattr(model, "peft_config")


def set_trainable(model: nn.Module, tokens_only: bool = False) -> None:
    """
    Of a peft model, train the adapters and new-token rows (``tokens_only``: the rows
    only, as DialogGSR's KG-reconstruction pretraining wants); freeze the rest.
    """
    markers = (TOKEN_MARKER,) if tokens_only else ADAPTER_MARKERS
    for name, p in model.named_parameters():
        p.requires_grad_(any(m in name for m in markers))


def trainable_summary(model: nn.Module) -> str:
    """``"trainable 12,345 of 1,234,567 parameters (1.00%)"``."""
    total = sum(p.numel() for p in model.parameters())
    train = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return f"trainable {train:,} of {total:,} parameters ({100.0 * train / max(total, 1):.2f}%)"


@contextmanager
def token_rows_merged(model: nn.Module) -> Iterator[None]:
    """
    While inside, a peft model in eval mode has the new tokens' rows written into its
    embedding (and a tied output embedding) instead of swapped in per call; restored
    exactly on exit (peft keeps the original rows), so training goes on unchanged.

    Why: peft's token adapter builds a copy of the whole table with the rows swapped in on
    *every* forward call -- at each decoding step, and twice when the output embedding is
    tied. On SmolLM2-135M (49,172 x 576) that was 0.34 s per call, 27% of a
    Katz-constrained beam search (cProfile, 2 loaded cores). LoRA's own layers stay
    unmerged (merging them in and out would round bf16 weights).
    """
    layers = []
    if is_adapted(model) and not model.training:
        from peft.tuners.trainable_tokens.layer import TrainableTokensLayer

        layers = [m for m in model.modules() if isinstance(m, TrainableTokensLayer) and not m.merged]
    for layer in layers:
        layer.merge()
    try:
        yield
    finally:
        for layer in layers:
            layer.unmerge()


@contextmanager
def lora_merged(model: nn.Module) -> Iterator[None]:
    """
    While inside, a peft model in eval mode computes with each float32 LoRA update merged
    into the weight it adapts (``W + (alpha / r) B A``: one matrix product per layer
    instead of three); the original weights are kept and copied back on exit, so they are
    restored bit for bit (peft's own unmerge subtracts the update again, which rounds).

    Why: in DialogGSR's beam search over SmolLM2-135M (5 beams x 2 examples, one
    token a step) the unmerged adapters of the 60 adapted projections were 7% of an
    evaluation. bf16 weights stay unmerged: rounding the update into them would change
    what the model computes, not only how.
    """
    layers = []
    if is_adapted(model) and not model.training:
        from peft.tuners.lora import LoraLayer

        layers = [m for m in model.modules() if isinstance(m, LoraLayer) and not m.merged
                  and m.get_base_layer().weight.dtype == torch.float32]
    kept = [layer.get_base_layer().weight.detach().clone() for layer in layers]
    for layer in layers:
        layer.merge()
    try:
        yield
    finally:
        for layer, weight in zip(layers, kept):
            layer.unmerge()  # peft's merged state off; then the exact original weight
            with torch.no_grad():
                layer.get_base_layer().weight.copy_(weight)


@contextmanager
def merged_for_inference(model: nn.Module) -> Iterator[None]:
    """:func:`token_rows_merged` and :func:`lora_merged` together (generation and
    evaluation losses of an eval-mode peft model)."""
    with token_rows_merged(model), lora_merged(model):
        yield


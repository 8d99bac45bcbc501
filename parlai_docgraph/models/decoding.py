"""
ParlAI's generation options mapped onto one Hugging Face ``generate`` call (the way
ParlAI's own ``parlai/agents/hugging_face/t5.py`` agent does it), for every generator of the
package (the responder, DialogGSR's response), and the two pieces ``generate`` lacks for a
batch of left-padded prompts of a decoder-only LM:

* :func:`generation_config`: ``--inference greedy | beam | topk | nucleus``,
  ``--beam-size``, ``--topk``, ``--topp``, ``--beam-min-length`` (new tokens: HF's
  ``min_new_tokens``), ``--beam-length-penalty``, ``--beam-block-ngram`` and
  ``--temperature`` as a :class:`transformers.GenerationConfig` (the delayed beam variants
  fall back to ``beam``); a value no model can honour (``factual_nucleus``, a ``--topp``
  outside (0, 1], a ``--beam-min-length`` above the reply's token cap, ...) is refused
  with a ``ValueError`` naming the option;
* :class:`ReplyBudget`: each row stops at its own budget (its prompt and reply share the
  LM's positions, so a longer prompt leaves fewer reply tokens);
* :class:`ReplyNgramBlock`: ``--beam-block-ngram`` within the reply only;
* :func:`positions_below`: rows that are done keep stepping with the batch; their
  positions are clamped so a learned position table (GPT-2) is never overrun.

Torch + transformers only (no ParlAI here).
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Optional, Sequence

import torch
from transformers import GenerationConfig, NoRepeatNGramLogitsProcessor, StoppingCriteria

from parlai_docgraph.models.adapters import base_model
from parlai_docgraph.signed_processor import SignedProcessor

LOG = logging.getLogger(__name__)
#: ``--inference`` values that run as ``beam`` (HF ``generate`` cannot sample a prefix and
#: then beam-search from it in one call; these were never more than ``beam`` here)
DELAYED_BEAM = ("delayedbeam", "delayednucleusbeam")
INFERENCE = ("greedy", "beam", "topk", "nucleus") + DELAYED_BEAM


def generation_config(
    opt: Mapping[str, Any], beam_size: Optional[int] = None, max_new_tokens: Optional[int] = None
) -> GenerationConfig:
    """
    The :class:`~transformers.GenerationConfig` of ParlAI's options ``opt``
    (``beam_size`` / ``max_new_tokens`` default to ``--beam-size`` / none).

    Every field that changes the search is set, so a model's own ``generation_config``
    (an instruction-tuned model's sampling defaults) never fills one in.
    ``--beam-length-penalty`` is HF's ``length_penalty``: beam scores are divided by
    ``len ** lp`` (ParlAI's own search divides by ``((5 + len) / 6) ** lp``; ParlAI's T5
    agent maps the option the same way). ``--temperature`` applies to sampling only.
    """
    inference = opt.get("inference") or "greedy"
    if int(opt.get("beam_context_block_ngram") or 0) > 0:
        raise ValueError("--beam-context-block-ngram is not supported here (it would block the "
                         "knowledge's and the user's words too); the responder's "
                         "--block-earlier-replies N blocks only its own earlier replies")
    if inference not in INFERENCE:
        raise ValueError(f"unsupported --inference {inference} (supported: {', '.join(INFERENCE)})")
    if inference in DELAYED_BEAM:
        LOG.warning(f"--inference {inference} is not supported; using beam")
        inference = "beam"
    beams = max(int(beam_size if beam_size is not None else opt.get("beam_size") or 1), 1)
    block = int(opt.get("beam_block_ngram") or 0)
    min_new = int(opt.get("beam_min_length") or 0)
    if max_new_tokens is not None and min_new > max_new_tokens:
        raise ValueError(f"--beam-min-length {min_new} is more than the {max_new_tokens} new "
                         "tokens a reply may have here (--label-truncate)")
    fields = dict(
        max_new_tokens=max_new_tokens,
        min_new_tokens=min_new,
        no_repeat_ngram_size=max(block, 0),  # read by ReplyNgramBlock, not by generate
        repetition_penalty=1.0,
        do_sample=inference in ("topk", "nucleus"),
        num_beams=beams if inference == "beam" else 1,
        num_return_sequences=beams if inference == "beam" else 1,
    )
    if fields["num_beams"] > 1:  # beam size 1 is greedy search (HF rejects beam flags there)
        fields.update(length_penalty=float(opt.get("beam_length_penalty", 0.65)), early_stopping=True)
    if fields["do_sample"]:
        topp = float(opt.get("topp") if opt.get("topp") is not None else 1.0)
        temperature = float(opt.get("temperature") if opt.get("temperature") is not None else 1.0)
        if not 0.0 < topp <= 1.0 or temperature <= 0.0 or int(opt.get("topk") or 0) < 0:
            raise ValueError(f"--topp must be in (0, 1], --temperature > 0 and --topk >= 0: "
                             f"got {topp}, {temperature}, {opt.get('topk')}")
        fields.update(temperature=temperature, top_p=topp,
                      top_k=int(opt.get("topk") or 0) if inference == "topk" else 0)
    return GenerationConfig(**fields)


class ReplyBudget(StoppingCriteria):
    """
    Row ``i`` is done after ``budgets[i]`` new tokens (columns from ``start`` on); rows
    are examples, each repeated for its beams / returned sequences.
    """

    def __init__(self, budgets: Sequence[int], start: int) -> None:
        self.budgets = torch.as_tensor(list(budgets), dtype=torch.long)
        self.start = start

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        per = input_ids.size(0) // self.budgets.numel()
        budgets = self.budgets.to(input_ids.device).repeat_interleave(per)
        return (input_ids.size(1) - self.start) >= budgets


class ReplyNgramBlock(SignedProcessor):
    """
    ``--beam-block-ngram n``: no n-gram twice within the reply (ParlAI's rule). HF's
    ``no_repeat_ngram_size`` reads the whole sequence of a decoder-only LM: it would
    block the prompt's n-grams too, and the left padding's, so a batched row would
    decode differently from the same row alone.
    """

    def __init__(self, n: int, start: int) -> None:
        super().__init__()
        self.block = NoRepeatNGramLogitsProcessor(n)
        self.start = start

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        return self.block(input_ids[:, self.start :], scores)


@contextmanager
def positions_below(lm: Any, limit: int) -> Iterator[None]:
    """
    While generating, clamp ``position_ids`` at ``limit - 1``. Rows that are done keep
    stepping with the batch (their tokens are dropped) and would otherwise number past
    the table; live rows never reach the clamp (prompt + reply <= limit).
    """
    model = base_model(lm)  # LoRA: the HF model

    def clamp(module: Any, args: Any, kwargs: dict) -> Any:
        if kwargs.get("position_ids") is not None:
            kwargs["position_ids"] = kwargs["position_ids"].clamp(max=limit - 1)
        return args, kwargs

    handle = model.register_forward_pre_hook(clamp, with_kwargs=True)
    try:
        yield
    finally:
        handle.remove()

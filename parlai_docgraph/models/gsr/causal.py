"""
DialogGSR with a decoder-only causal LM (Llama, Qwen, Mistral families) beside the
seq2seq :class:`~parlai_docgraph.models.gsr.model.GSRModel`.

The source ``s`` (the same ids as for T5: ``"retrieve: " z(P_<j) " dialogue: " x </s>``,
EOS separating prompt and output as in the GPT-2 responder) is the prompt and the target
``t`` follows it in one sequence ``[s; t]``. The losses (Eq. 8, 9, 10) are

.. math::

    \\mathcal L = -\\sum_j \\log p_{LM}(t_j \\mid s, t_{<j})

over the target positions only: the prompt and the padding are labelled ``-100``
(training rows are right-padded, so positions need no correction).

Generation left-pads the prompts (every row's new tokens start at the same column
``width``), so :class:`~parlai_docgraph.kg.constrained.GraphConstrainedLogitsProcessor`
reads each beam's prefix from column ``width`` on (``prefix_len = width``) and the trie
constraint is exactly the seq2seq one; ``generate`` derives position ids from the
attention mask, so left padding does not shift positions.

Prompt and output together never exceed the LM's positions (GPT-2's ``n_positions``,
``max_position_embeddings`` of Llama / Qwen; :func:`~.hub.position_limit`): generation
caps ``max_new_tokens`` at ``limit - prompt`` and training caps ``[s; t]``, the source
cut from the left when needed (:func:`~.hub.fit_window`).

With LoRA, generation runs with the new tokens' rows merged into the embedding
(:func:`~parlai_docgraph.models.adapters.token_rows_merged`: peft would otherwise copy the
whole table at every decoding step) and float32 LoRA updates merged into their weights
(:func:`~parlai_docgraph.models.adapters.lora_merged`), both restored exactly after.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from parlai_docgraph.models.adapters import merged_for_inference
from parlai_docgraph.models.gsr.model import LABEL_PAD, GSRModel, right_pad
from parlai_docgraph.models.hub import fit_window, position_limit
from parlai_docgraph.models.responder.model import left_pad


class CausalGSRModel(GSRModel):
    """:class:`GSRModel` over ``AutoModelForCausalLM``: prompt then output in one sequence."""

    def start_len(self, width: int) -> int:
        """New tokens start after the (left-padded) prompt."""
        return width

    @property
    def max_positions(self) -> Optional[int]:
        return position_limit(self.lm.config)

    def fit_prompts(self, sources: Sequence[Sequence[int]], max_new_tokens: int
                    ) -> Tuple[List[List[int]], int]:
        """Sources and a ``max_new_tokens`` with ``prompt width + new tokens <= positions``."""
        fitted = [fit_window(s, max_new_tokens, self.max_positions)[0] for s in sources]
        width = max([len(s) for s in fitted] + [1])
        limit = self.max_positions
        return fitted, max_new_tokens if limit is None else max(min(max_new_tokens, limit - width), 1)

    def generate_paths(self, sources, tries, entity_scores=None, num_beams=5, num_return=5,
                       max_new_tokens=64, alpha=0.8, length_penalty=1.0, lm_norm="allowed"):
        """:meth:`GSRModel.generate_paths` within the LM's positions (:meth:`fit_prompts`)."""
        sources, max_new_tokens = self.fit_prompts(sources, max_new_tokens)
        with merged_for_inference(self.lm):
            return super().generate_paths(sources, tries, entity_scores, num_beams, num_return,
                                          max_new_tokens, alpha, length_penalty, lm_norm)

    def generate_text(self, sources, config=None, num_beams=1, max_new_tokens=64,
                      min_new_tokens=0, length_penalty=1.0):
        """:meth:`GSRModel.generate_text` within the LM's positions (:meth:`fit_prompts`):
        the reply's token cap shrinks to what the longest prompt leaves, and the minimum
        with it."""
        config = self.text_config(config, num_beams, max_new_tokens, min_new_tokens,
                                  length_penalty)
        sources, cap = self.fit_prompts(sources, config.max_new_tokens or max_new_tokens)
        config.update(max_new_tokens=cap, min_new_tokens=min(config.min_new_tokens or 0, cap))
        with merged_for_inference(self.lm):
            return super().generate_text(sources, config)

    def search_rows(self, cache: Any, num_beams: int) -> Any:
        """A beam search computes only the rows of the examples it is not done with
        (:class:`~parlai_docgraph.models.finished_rows.FinishedExamples`; the same paths and
        scores). Greedy search and caches that are no
        :class:`~parlai_docgraph.models.kv_cache.GrowingCache` run every row."""
        from parlai_docgraph.models.adapters import base_model
        from parlai_docgraph.models.finished_rows import FinishedExamples
        from parlai_docgraph.models.kv_cache import GrowingCache

        if num_beams <= 1 or type(cache) is not GrowingCache:
            return super().search_rows(cache, num_beams)
        return FinishedExamples(base_model(self.lm), cache, num_beams)

    def narrowed(self, columns: torch.Tensor, ids: torch.Tensor,
                 beams: int) -> Tuple[Any, Optional[torch.Tensor]]:
        """A search over the compact vocabulary of ``columns``, each prompt's last token,
        padding and EOS (:func:`~.trie_head.compact_vocab`): every score the search
        handles (the logits' copy, ``log_softmax``, the beam sums, ``topk``, the stored
        scores) is as wide as those tokens, a few hundred, not 49,152 (SmolLM2). Its
        inputs are the last prompt token and the tokens it generated, since the other
        prompt tokens are in :meth:`prompt_cache`; without that cache (greedy, one-token
        prompts), or where the output layer cannot be narrowed, the parent's
        full-width head."""
        from parlai_docgraph.models.gsr.trie_head import compact_vocab, narrowable

        special = torch.tensor([self.pad_id, self.eos_id])
        vocab = torch.unique(torch.cat([columns, ids[:, -1].cpu(), special]))
        if beams <= 1 or ids.shape[1] < 2 or narrowable(self.lm, vocab) is None:
            return super().narrowed(columns, ids, beams)
        return compact_vocab(self.lm, vocab), vocab

    def prompt_cache(self, ids: torch.Tensor, mask: torch.Tensor, beams: int) -> Dict[str, Any]:
        """
        ``past_key_values``: the attention cache of every prompt token but the last, computed
        once per example and repeated for its ``beams`` beams (a
        :class:`~parlai_docgraph.models.kv_cache.GrowingCache`). ``generate`` would run the
        prompt through the LM once per beam (it repeats the inputs before the first forward
        pass); on the sample KG's valid split with SmolLM2-135M that repeated prompt was a
        third of path decoding. Positions are those ``generate`` gives left-padded
        prompts (the attention mask's running count); ``generate`` then feeds the last prompt
        token and goes on from this cache.
        """
        if beams <= 1 or ids.shape[1] < 2:
            return self.empty_cache()
        from parlai_docgraph.models.kv_cache import GrowingCache

        cache = GrowingCache(config=self.lm.config)
        positions = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)
        self.lm(input_ids=ids[:, :-1], attention_mask=mask[:, :-1],
                position_ids=positions[:, :-1], past_key_values=cache, use_cache=True,
                logits_to_keep=1)
        cache.batch_repeat_interleave(beams)
        return {"past_key_values": cache}

    def encode(self, sources: Sequence[Sequence[int]]) -> Tuple[torch.Tensor, torch.Tensor]:
        ids, mask = left_pad([list(s) or [self.eos_id] for s in sources], self.pad_id)
        dev = self._device()
        return ids.to(dev), mask.to(dev)

    def token_losses(
        self, sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]]
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """
        ``-log p(t_j | s, t_<j)`` per target position, as :meth:`GSRModel.token_losses`:
        ``(loss [B, T], labels [B, T], notnull [B, T], preds [B, T])`` where ``T`` spans
        the whole shifted sequence and ``labels`` is ``-100`` outside the targets (there
        ``loss`` is 0 and ``preds`` is ``-100``: no logits are computed for those positions).
        """
        dev = self._device()
        fitted = [fit_window(s, len(t), self.max_positions) for s, t in zip(sources, targets)]
        sources = [s for s, _ in fitted]
        targets = [list(t)[:budget] for t, (_, budget) in zip(targets, fitted)]
        full = [list(s) + list(t) for s, t in zip(sources, targets)]
        ids, mask = right_pad(full, self.pad_id)
        labels = torch.full_like(ids, LABEL_PAD)
        for i, (s, t) in enumerate(zip(sources, targets)):
            if t:
                labels[i, len(s) : len(s) + len(t)] = torch.as_tensor(list(t), dtype=torch.long)
        ids, mask, labels = ids.to(dev), mask.to(dev), labels.to(dev)
        labels = labels[:, 1:]  # logits at position k predict token k + 1
        notnull = labels != LABEL_PAD
        # Only the positions that predict a target reach the output layer (``logits_to_keep``
        # as a mask): the prompt is most of a row, and its vocabulary-wide logits were about
        # half of an evaluation's loss seconds (SmolLM2-135M, sample_kg valid, 2 cores).
        keep = torch.cat([notnull, notnull.new_zeros(notnull.shape[0], 1)], dim=1)
        logits = self.lm(input_ids=ids, attention_mask=mask, logits_to_keep=keep).logits.float()
        loss = torch.zeros(labels.shape, dtype=logits.dtype, device=dev)
        loss[notnull] = nn.functional.cross_entropy(logits, labels[notnull], reduction="none")
        preds = torch.full_like(labels, LABEL_PAD)
        preds[notnull] = logits.argmax(-1)
        return loss, labels, notnull, preds

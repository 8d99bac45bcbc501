"""
DialogGSR with a decoder-only causal LM (Llama, Qwen, Mistral families) beside the
seq2seq :class:`~parlai_docgraph.models.gsr.GSRModel`.

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
"""

from __future__ import annotations

from typing import Sequence, Tuple

import torch
from torch import nn

from .gsr import LABEL_PAD, GSRModel, right_pad
from .responder import left_pad


class CausalGSRModel(GSRModel):
    """:class:`GSRModel` over ``AutoModelForCausalLM``: prompt then output in one sequence."""

    def start_len(self, width: int) -> int:
        """New tokens start after the (left-padded) prompt."""
        return width

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
        the whole shifted sequence and ``labels`` is ``-100`` outside the targets.
        """
        dev = self._device()
        full = [list(s) + list(t) for s, t in zip(sources, targets)]
        ids, mask = right_pad(full, self.pad_id)
        labels = torch.full_like(ids, LABEL_PAD)
        for i, (s, t) in enumerate(zip(sources, targets)):
            if t:
                labels[i, len(s) : len(s) + len(t)] = torch.as_tensor(list(t), dtype=torch.long)
        ids, mask, labels = ids.to(dev), mask.to(dev), labels.to(dev)
        logits = self.lm(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
        labels = labels[:, 1:]  # logits at position k predict token k + 1
        loss = nn.functional.cross_entropy(
            logits.transpose(1, 2), labels, ignore_index=LABEL_PAD, reduction="none"
        )
        return loss, labels, labels != LABEL_PAD, logits.argmax(-1)

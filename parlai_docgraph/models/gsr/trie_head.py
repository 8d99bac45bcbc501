r"""
The output layer of a constrained path search, restricted to the tokens its tries hold.

With ``lm_norm="allowed"`` (:mod:`~parlai_docgraph.kg.constrained`) a beam's next-token
score is the LM's distribution renormalised over the beam's allowed continuations,

.. math::

    \log p_{LM}(w) - \log \sum_{w' \in W} p_{LM}(w') = z_w - \log \sum_{w' \in W} e^{z_{w'}},

which reads the logits :math:`z` of the allowed tokens only. Every allowed token of every
step lies in :math:`U`, the tokens of the batch's tries and EOS (what a beam that ended or
left its trie may emit), so :class:`ColumnHead` computes :math:`z_U = W_U h + b_U` and
writes :math:`-\infty` to the other columns: the same scores up to float rounding,
without the vocabulary-wide product. For SmolLM2-135M that product is 28M of the 135M
weights a decoding step multiplies (49,152 rows of 576); a turn's tries hold a few hundred
tokens.

:func:`trie_columns` gives :math:`U`; inside :func:`restricted_head` the model's output layer
computes as a :class:`ColumnHead` -- where that pays: the product it leaves out,
:math:`(|V| - |U|) \cdot d` multiply-adds a row, must be at least :data:`MIN_SAVED_MACS`.
A :class:`ColumnHead` step is three tensor calls (the product, a fill, an indexed write)
where the plain layer is one; on the bundled tiny T5 (1,191 x 64, 5 beams) that was
0.058 ms against 0.017 ms a step, 1.7% of its 2.4 ms step, while on SmolLM2-135M it
leaves out about 28M of a row's 135M multiply-adds.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Optional, Sequence

import numpy as np
import torch
from torch import Tensor, nn

#: the least multiply-adds a row that :func:`restricted_head` must leave out (module doc)
MIN_SAVED_MACS = 1 << 20


class ColumnHead:
    r"""A linear output layer computed on ``columns`` only: ``out[..., columns] = h W_U^T +
    b_U`` and :math:`-\infty` elsewhere (``head``'s weights, detached: for inference)."""

    def __init__(self, head: nn.Linear, columns: Tensor) -> None:
        self.vocab = head.weight.shape[0]
        self.columns = columns.to(head.weight.device)
        self.weight = head.weight.detach()[self.columns]
        self.bias = None if head.bias is None else head.bias.detach()[self.columns]

    def __call__(self, hidden: Tensor) -> Tensor:
        kept = nn.functional.linear(hidden, self.weight, self.bias)
        out = kept.new_full((*hidden.shape[:-1], self.vocab), float("-inf"))
        out[..., self.columns] = kept
        return out


def trie_columns(tries: Sequence[Any], eos_id: int) -> Tensor:
    """The sorted token ids of ``tries`` (:class:`~parlai_docgraph.kg.trie.PathTrie`:
    the tokens into their nodes) and ``eos_id``."""
    tokens = [np.asarray(trie.layout()[0], dtype=np.int64) for trie in tries]
    every = np.unique(np.concatenate([*tokens, np.asarray([eos_id], dtype=np.int64)]))
    return torch.from_numpy(every[every >= 0])


def _linear_of(head: nn.Module) -> Optional[nn.Linear]:
    """The plain ``nn.Linear`` that ``head`` computes: itself, or the base layer of peft's
    token-row wrapper while its rows are merged in (``token_rows_merged``); else None."""
    if type(head) is nn.Linear:
        return head
    adapter = getattr(head, "token_adapter", None)
    base = getattr(adapter, "base_layer", None)
    if getattr(adapter, "merged", False) and type(base) is nn.Linear:
        return base
    return None


@contextmanager
def restricted_head(lm: Any, columns: Tensor) -> Iterator[None]:
    """``lm``'s output layer computes as a :class:`ColumnHead` over ``columns`` inside the
    block (its ``forward`` shadowed on the instance, so peft's wrappers stay in place);
    unchanged where the layer is no plain linear one (:func:`_linear_of`) or where the
    columns left out are fewer than :data:`MIN_SAVED_MACS` multiply-adds a row."""
    head = lm.get_output_embeddings()
    linear = _linear_of(head) if isinstance(head, nn.Module) else None
    if linear is not None:
        vocab, width = linear.weight.shape
        if (vocab - len(columns)) * width < MIN_SAVED_MACS:
            linear = None
    if linear is None:
        yield
        return
    head.forward = ColumnHead(linear, columns)
    try:
        yield
    finally:
        del head.forward

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

The ``-inf`` columns still cost: the search copies the logits, takes their
``log_softmax``, adds the beam scores, runs ``topk`` and keeps a copy for
``sequences_scores`` over the whole vocabulary at every step. A causal model's search
therefore runs over the compact vocabulary :math:`U` itself (:func:`compact_vocab`, via
:meth:`~parlai_docgraph.models.gsr.causal.CausalGSRModel.narrowed`): id :math:`i` is token
:math:`U_i`, the output layer is a :class:`CompactHead` (``[..., |U|]``), the input
embedding looks up :math:`U_i`, the constraint maps its prefixes back to token ids
(``GraphConstrainedLogitsProcessor(vocab=U)``), and the sequences are mapped back at the
end. The scores are those of the restricted search to float rounding, and the paths the
same (tested on tiny GPT-2, Llama and Qwen2 against the full layer). On SmolLM2-135M
(``docgraph:sample_kg`` valid, two path searches of 8 turns, alternated, two repetitions)
this took 7.0-7.9 s a search against 7.0-10.1 s for the full-width restricted search.
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


def narrowable(lm: Any, columns: Tensor) -> Optional[nn.Linear]:
    """The plain linear layer behind ``lm``'s output layer (:func:`_linear_of`) where
    leaving out the other columns saves at least :data:`MIN_SAVED_MACS` multiply-adds a
    row; else None (the layer stays as it is)."""
    head = lm.get_output_embeddings()
    linear = _linear_of(head) if isinstance(head, nn.Module) else None
    if linear is not None:
        vocab, width = linear.weight.shape
        if (vocab - len(columns)) * width < MIN_SAVED_MACS:
            linear = None
    return linear


@contextmanager
def restricted_head(lm: Any, columns: Tensor) -> Iterator[None]:
    """``lm``'s output layer computes as a :class:`ColumnHead` over ``columns`` inside the
    block (its ``forward`` shadowed on the instance, so peft's wrappers stay in place);
    unchanged where :func:`narrowable` says no."""
    linear = narrowable(lm, columns)
    if linear is None:
        yield
        return
    head = lm.get_output_embeddings()
    head.forward = ColumnHead(linear, columns)
    try:
        yield
    finally:
        del head.forward


class CompactHead(ColumnHead):
    r"""The output layer on ``columns`` only, as ``[..., len(columns)]``: column ``i``
    scores token ``columns[i]`` (:math:`z_U = W_U h + b_U`, no other column)."""

    def __call__(self, hidden: Tensor) -> Tensor:
        return nn.functional.linear(hidden, self.weight, self.bias)


@contextmanager
def compact_vocab(lm: Any, columns: Tensor) -> Iterator[None]:
    """Inside the block ``lm`` speaks a vocabulary of ``columns`` (sorted token ids): id
    ``i`` it reads is token ``columns[i]`` (the input embedding looks up ``columns[ids]``)
    and its output layer is a :class:`CompactHead`. Only where :func:`narrowable`
    (``ValueError`` otherwise: the caller checks first)."""
    linear = narrowable(lm, columns)
    if linear is None:
        raise ValueError("compact_vocab: the output layer cannot be narrowed (narrowable)")
    head, embed = lm.get_output_embeddings(), lm.get_input_embeddings()
    lookup = embed.forward
    on = columns.to(linear.weight.device)
    head.forward = CompactHead(linear, columns)
    embed.forward = lambda ids, *args, **kwargs: lookup(on[ids], *args, **kwargs)
    try:
        yield
    finally:
        del head.forward
        del embed.forward


def compact_ids(columns: Tensor, ids: Tensor) -> Tensor:
    """``ids`` as indices into ``columns`` (sorted); an id that is not there becomes 0."""
    at = torch.searchsorted(columns.to(ids.device), ids).clamp_(max=len(columns) - 1)
    return torch.where(columns.to(ids.device)[at] == ids, at, torch.zeros_like(at))

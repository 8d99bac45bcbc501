"""
A batched beam search that stops computing the examples it is done with and the beams
that cannot reach its output.

``transformers``' beam search (``GenerationMixin._beam_search``) keeps every example's
``num_beams`` rows in each forward pass until the last example of the batch is done. An
example is done once no running beam can beat its finished ones: after each step the
search computes, per example, the flag

.. math::

    u_b \\leftarrow u_b \\wedge
        \\frac{s^{run}_{b,1}}{(t - t_0)^{lp}} > \\min_j w_{b,j}

(``_check_early_stop_heuristic``; :math:`s^{run}_{b,1}` the best running beam's summed
log-probability after :math:`t - t_0` new tokens, :math:`w_{b,j}` the length-normalised
score of finished slot :math:`j`, :math:`-10^9` while the slot is empty). Once
:math:`u_b` is false it stays false, and from then on the search adds :math:`-10^9` to
every new finished candidate of example :math:`b`, so none of its later logits can reach
the output (its finished slots all hold more, or it would still be running). Its rows go
on being computed only because the batch steps together.

:class:`FinishedExamples` reads :math:`u` and the running scores after each step and, at
the next forward pass, runs the model only on the rows that can still reach the output:

* the rows of examples with :math:`u_b` true;
* among those, the beams whose running score carries no :data:`PENALTY` (``-1e9``, the
  search's stand-in for :math:`-\infty`: the surplus beams of a turn whose trie allows fewer
  paths than beams, and their continuations). Such a beam's continuations all keep the
  penalty, so they rank below every beam without it, in the running set and among the
  finished ones, whatever its logits; an example left with penalised beams only counts as
  done (its :math:`u_b` is set false, so the search may end sooner).

The row inputs (``input_ids``, ``attention_mask``, ``position_ids``, ...) are indexed, and
the cache holds the rows computed: the beam reorder is applied at the next forward pass,
together with the selection (:meth:`~parlai_docgraph.models.kv_cache.GrowingCache.select_rows`,
in the cache's buffer, copying the rows that move). A row computed again after a step
left out (a beam that now descends from a computed row) takes its parent's cache: the
parents of every beam that can reach the output were computed. The rows left out get
zero logits, which the search then scores as it likes. The search, its scores and its
stopping rule are ``transformers``' own; the returned sequences and scores of the beams
without the penalty are the same (tested on tiny random Llama, Qwen2 and GPT-2 against the
plain search); those with it are dropped by
:meth:`~parlai_docgraph.models.gsr.model.GSRModel.generate_paths` in both.

Measured on ``docgraph:sample_kg`` valid with SmolLM2-135M (beam 5, 8 examples a batch,
2 cores): of the 11,840 rows the path searches stepped, the rows of done examples alone
left 10,390 to compute; leaving out the penalised beams as well, 7,985 (2,405 more rows,
24% of the rows of examples not done). Path decoding, the two versions one after the
other on one host: 84.5 s against 76.9 s.

Decoder-only models only (an encoder-decoder's encoder outputs would need the same
indexing); the hooks are on the Hugging Face model whose ``generate`` runs the search
(under peft: the base model).
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import torch
from torch import nn

#: per-row inputs of a decoder-only forward pass during ``generate``
ROW_INPUTS = ("input_ids", "attention_mask", "position_ids", "token_type_ids", "inputs_embeds")


#: what ``transformers``' beam search adds to a beam that may not go on (a finished or
#: blocked continuation, the surplus first beams): its stand-in for :math:`-\infty`
PENALTY = -1.0e9


class FinishedExamples:
    """
    Context manager: inside it, ``model``'s beam searches over ``cache`` (a fresh
    :class:`~parlai_docgraph.models.kv_cache.GrowingCache` passed as ``past_key_values``,
    rows example-major with ``num_beams`` rows each) compute only the rows that can still
    reach the output: those of examples not done whose running score carries no
    :data:`PENALTY`. ``forward_rows`` counts the rows computed, ``skipped_rows`` those
    left out.
    """

    def __init__(self, model: nn.Module, cache: Any, num_beams: int) -> None:
        self.model = model
        self.cache = cache
        self.beams = int(num_beams)
        self.forward_rows = 0
        self.skipped_rows = 0
        self._live: Optional[torch.Tensor] = None  # [rows] bool: rows to compute next
        self._rows: Optional[torch.Tensor] = None  # the batch rows the cache holds (None: all)
        self._reordered: Optional[torch.Tensor] = None  # a beam reorder not yet applied
        self._full: Optional[int] = None  # the batch's row count while a pass is subset
        self._handles: list = []

    # ------------------------------------------------------------------ hooks
    def _heuristic(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        flags = type(self.model)._check_early_stop_heuristic(*args, **kwargs)
        scores = kwargs.get("running_beam_scores", args[1] if len(args) > 1 else None)
        if scores is None:
            self._live = flags.reshape(-1).repeat_interleave(self.beams)
            return flags
        real = scores > PENALTY / 2
        flags = flags & real.any(dim=1, keepdim=True)  # only penalised beams left: done
        self._live = (flags & real).reshape(-1).clone()
        return flags

    def _before(self, module: nn.Module, args: tuple, kwargs: dict) -> Optional[tuple]:
        ids = kwargs.get("input_ids")
        self._full = None
        if self._live is None or args or ids is None:  # the prefill, or an unknown call
            self.forward_rows += 0 if ids is None else ids.shape[0]
            return None
        full = ids.shape[0]
        rows = torch.nonzero(self._live.to(ids.device)).squeeze(1)
        if self._rows is None and rows.numel() == full:
            self.forward_rows += full
            return None
        held = self._rows if self._rows is not None else torch.arange(full, device=ids.device)
        parents = rows if self._reordered is None else self._reordered.to(ids.device)[rows]
        source = _positions(held, full)[parents]
        rows, source = rows[source >= 0], source[source >= 0]  # (a held parent: always)
        if not rows.numel():  # nothing can reach the output: compute one held row
            rows, source = held[:1], source.new_zeros(1)
        if self._reordered is not None or not torch.equal(held, rows):
            rows, source = _in_place(rows, source)
            self.cache.select_rows(source)
        self._rows, self._reordered = rows, None
        for name in ROW_INPUTS:
            value = kwargs.get(name)
            if isinstance(value, torch.Tensor) and value.shape[0] == full:
                kwargs[name] = value.index_select(0, rows)
        self._full = full
        self.forward_rows += rows.numel()
        self.skipped_rows += full - rows.numel()
        return args, kwargs

    def _after(self, module: nn.Module, args: tuple, kwargs: dict, output: Any) -> Any:
        if self._full is None:
            return None
        logits = output.logits
        full = logits.new_zeros((self._full, *logits.shape[1:]))
        full[self._rows.to(logits.device)] = logits
        output.logits = full
        self._full = None
        return output

    def _reorder(self, beam_idx: torch.LongTensor) -> None:
        """The search's reorder (batch rows): at once while the cache holds every row,
        else kept for the next forward pass, which selects the rows it computes then."""
        if self._rows is None:
            return self._plain_reorder(beam_idx)
        self._reordered = beam_idx

    # ------------------------------------------------------------------ context
    def __enter__(self) -> "FinishedExamples":
        self.model._check_early_stop_heuristic = self._heuristic
        self._plain_reorder = self.cache.reorder_cache
        self.cache.reorder_cache = self._reorder
        self._handles = [
            self.model.register_forward_pre_hook(self._before, with_kwargs=True),
            self.model.register_forward_hook(self._after, with_kwargs=True),
        ]
        return self

    def __exit__(self, *exc: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        del self.model._check_early_stop_heuristic
        del self.cache.reorder_cache


def _in_place(rows: torch.Tensor, source: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """``rows`` and their cache positions ``source`` reordered so that as many rows as can
    keep their position: a row whose source is free and below ``len(rows)`` stays there,
    the others fill the positions left. The cache then copies the rows that move only
    (keeping the batch order, one row dropped near the start would move every row after
    it)."""
    src = source.tolist()
    count = len(src)
    at, taken = [-1] * count, [False] * count
    for i, p in enumerate(src):
        if p < count and not taken[p]:
            at[i], taken[p] = p, True
    free = (j for j in range(count) if not taken[j])
    order = [0] * count
    for i in range(count):
        order[at[i] if at[i] >= 0 else next(free)] = i
    index = torch.tensor(order, device=rows.device)
    return rows[index], source[index]


def _positions(rows: torch.Tensor, full: int) -> torch.Tensor:
    """``[full]``: the index of each batch row within ``rows`` (-1 where absent)."""
    where = torch.full((full,), -1, dtype=torch.long, device=rows.device)
    where[rows] = torch.arange(rows.numel(), device=rows.device)
    return where

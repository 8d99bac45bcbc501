"""
A key/value cache for ``generate`` that grows in place and reorders beams in place.

``transformers``' :class:`~transformers.DynamicLayer` concatenates each step's keys and
values onto a new tensor (``torch.cat``) and, in beam search, copies the whole cache again
to reorder the beams (``index_select``). On CPU that is two fresh allocations of the whole
cache per layer and step. Measured on 2 cores (SmolLM2-135M, ``docgraph:sample_kg`` valid,
8 examples a batch, ``torch.profiler``): ``aten::cat`` was 25-32% of a greedy reply's
seconds and ``cat`` plus ``index_select`` 10-18% of a path search's, most of it the
allocator's page faults (a bare loop of the same ``cat`` calls ran 5-7 times faster once
freed memory stayed mapped).

:class:`GrowingLayer` keeps each layer's keys and values in a buffer with room to spare:

* ``update`` writes the new positions into the buffer and returns views of its filled part
  (the buffer doubles when full, so a search of ``T`` steps reallocates ``O(log T)`` times);
* ``reorder_cache(beam_idx)`` copies only the rows whose source differs (``beam_idx[r] !=
  r``; a constrained path search keeps most beams in place inside an entity's name), and
  nothing when ``beam_idx`` is the identity;
* ``select_rows(source)`` holds the rows ``source`` (fewer, more or repeated, up to the
  buffer's rows) in the same buffer, so a search that computes a changing subset of its
  rows (:mod:`~parlai_docgraph.models.finished_rows`) copies the rows that move only.

The values the model reads are those of :class:`~transformers.DynamicLayer` at every
step, so the outputs are the same (tested against the stock cache: beam and greedy, T5,
Llama, GPT-2 and Qwen2 families). A cache that some other code replaced (``crop``,
``batch_repeat_interleave``, ...) is copied into a new buffer at the next ``update``. For an
encoder-decoder model the cross-attention cache is not reordered at all
(:class:`BeamEncoderDecoderCache`: its rows for one example's beams are equal).
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from transformers import DynamicCache, DynamicLayer, EncoderDecoderCache

#: positions added at the least when a buffer grows
MIN_GROWTH = 64


class GrowingLayer(DynamicLayer):
    """A :class:`~transformers.DynamicLayer` whose keys and values are views of buffers
    that grow geometrically and whose beam reorder moves only the rows that change."""

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        super().lazy_initialization(key_states, value_states)
        self._key_buffer: Optional[torch.Tensor] = None
        self._value_buffer: Optional[torch.Tensor] = None

    def _owns(self, held: torch.Tensor, buffer: Optional[torch.Tensor], new: torch.Tensor,
              length: int) -> bool:
        """Whether ``held`` (the cached part) is the start of ``buffer`` and ``buffer``
        has room for ``length`` positions of tensors shaped like ``new``."""
        if buffer is None or buffer.shape[-2] < length or buffer.dtype != new.dtype:
            return False
        if buffer.shape[0] < new.shape[0] or buffer.shape[1:2] != new.shape[1:2]:
            return False
        if buffer.shape[-1] != new.shape[-1]:
            return False
        if held.numel() == 0:
            return buffer.shape[0] == new.shape[0]
        return (held.data_ptr() == buffer.data_ptr() and held.stride() == buffer.stride()
                and held.shape[:2] == new.shape[:2])

    @staticmethod
    def _grown(held: torch.Tensor, new: torch.Tensor, length: int, first: bool) -> torch.Tensor:
        """A buffer for ``length`` positions (exactly, for a first update such as a
        cross-attention cache; else with as much room again) holding ``held``."""
        room = length if first else max(2 * length, length + MIN_GROWTH)
        rows = max(new.shape[0], held.shape[0] if held.dim() == new.dim() else 0)
        buffer = new.new_empty((rows, new.shape[1], room, new.shape[-1]))
        if held.numel():
            buffer[:, :, : held.shape[-2]].copy_(held)
        return buffer

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Append ``key_states`` / ``value_states`` (``[batch, heads, new, dim]``) along
        the positions and return the whole cached keys and values."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        start = self.keys.shape[-2] if self.keys.numel() else 0
        end = start + key_states.shape[-2]
        first = start == 0
        if not self._owns(self.keys, self._key_buffer, key_states, end):
            self._key_buffer = self._grown(self.keys, key_states, end, first)
        if not self._owns(self.values, self._value_buffer, value_states, end):
            self._value_buffer = self._grown(self.values, value_states, end, first)
        rows = key_states.shape[0]
        self._key_buffer[:rows, :, start:end].copy_(key_states)
        self._value_buffer[:rows, :, start:end].copy_(value_states)
        self.keys = self._key_buffer[:rows, :, :end]
        self.values = self._value_buffer[:rows, :, :end]
        return self.keys, self.values

    def select_rows(self, source: torch.Tensor) -> None:
        """Row ``r`` becomes row ``source[r]`` and the cache holds ``len(source)`` rows,
        at most the buffer's: rows copied only where ``source[r] != r``, in the buffer
        (``batch_select_indices`` would copy every row into a new tensor, which the next
        :meth:`update` copies again into a new buffer)."""
        if not self.is_initialized or not self.keys.numel():
            return
        if self.keys.data_ptr() != self._key_buffer.data_ptr() or source.numel() > self._key_buffer.shape[0]:
            self.batch_select_indices(source)
            return
        moved, origin = moved_rows(source)
        end = self.keys.shape[-2]
        for name, buffer in (("keys", self._key_buffer), ("values", self._value_buffer)):
            filled = buffer[:, :, :end]
            if moved.numel():
                filled.index_copy_(0, moved, filled.index_select(0, origin))
            setattr(self, name, filled[: source.numel()])

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Row ``r`` becomes row ``beam_idx[r]``; only the rows that change are copied."""
        if self.get_seq_length():
            self.move_rows(*moved_rows(beam_idx.to(self.keys.device)))

    def move_rows(self, moved: torch.Tensor, source: torch.Tensor) -> None:
        """Rows ``moved`` become copies of rows ``source`` (:func:`moved_rows`)."""
        if not moved.numel() or not self.get_seq_length():
            return
        for name in ("keys", "values"):
            held = getattr(self, name)
            held.index_copy_(0, moved, held.index_select(0, source))


def moved_rows(beam_idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(moved, source)``: the rows ``r`` with ``beam_idx[r] != r`` and their ``beam_idx``."""
    moved = (beam_idx != torch.arange(beam_idx.numel(), device=beam_idx.device)).nonzero()
    moved = moved.squeeze(1)
    return moved, beam_idx[moved]


class GrowingCache(DynamicCache):
    """:class:`~transformers.DynamicCache` with :class:`GrowingLayer` for its full-attention
    layers (sliding-window layers stay as ``transformers`` makes them)."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config=config)
        if self.layers:
            self.layers = [GrowingLayer() if type(layer) is DynamicLayer else layer
                           for layer in self.layers]
        else:
            self.layer_class_to_replicate = GrowingLayer

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Every layer's :meth:`GrowingLayer.reorder_cache`, the moved rows found once."""
        moved, source = moved_rows(beam_idx)
        for layer in self.layers:
            if type(layer) is not GrowingLayer:
                layer.reorder_cache(beam_idx)
            elif layer.is_initialized:
                layer.move_rows(moved.to(layer.device), source.to(layer.device))

    def select_rows(self, source: torch.Tensor) -> None:
        """Every layer holds the rows ``source`` of its current rows, in that order
        (:meth:`GrowingLayer.select_rows`; other layers: ``batch_select_indices``)."""
        for layer in self.layers:
            if type(layer) is GrowingLayer:
                layer.select_rows(source.to(layer.device))
            elif layer.is_initialized:
                layer.batch_select_indices(source.to(layer.device))


class BeamEncoderDecoderCache(EncoderDecoderCache):
    """:class:`~transformers.EncoderDecoderCache` whose beam reorder leaves the
    cross-attention cache alone: ``generate`` repeats each example's encoder output for its
    beams, and a beam only ever takes over a beam of its own example, so those rows are
    equal and reordering them changes no value."""

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self.self_attention_cache.reorder_cache(beam_idx)


def decoding_cache(model: Any) -> Any:
    """An empty cache for ``model.generate(past_key_values=...)``: a :class:`GrowingCache`,
    or for an encoder-decoder model a :class:`BeamEncoderDecoderCache` of two."""
    config = getattr(model, "config", None)
    if getattr(config, "is_encoder_decoder", False):
        return BeamEncoderDecoderCache(GrowingCache(config), GrowingCache())
    return GrowingCache(config)

"""
Graph-constrained decoding (Park et al., Eq. 3-4) as a ``transformers`` ``LogitsProcessor``.

For every beam with decoded prefix ``pi`` (the ids after the first ``prefix_len``
positions, i.e. after T5's decoder start token) the processor returns

.. math::

    \\tilde s(w) = \\alpha \\log p_{LM}(w \\mid x, \\pi) + (1 - \\alpha) \\log p_{graph}(w \\mid \\pi)

for the continuations ``w`` allowed by the path trie (``C_M``) and ``-inf`` elsewhere.
``alpha = 0.8`` as in the paper. ``log p_LM`` (``lm_norm``):

* ``allowed`` (the paper: "p_vocab is restricted to tokens within the valid set defined by
  the constraint C_M"): the LM's distribution renormalised over the allowed continuations,
  ``log p_LM(w) - log sum_{w' in W} p_LM(w')``, so a step with a single allowed token costs
  nothing and the beam scores compare paths, not how much mass the LM put outside the trie;
* ``vocab``: the full-vocabulary ``log_softmax`` of the incoming scores (which beam search
  already passes as log-probabilities; ``log_softmax`` is idempotent), only masked.

``p_graph`` -- the definition used here. Let ``W`` be the allowed continuations of ``pi``
and, for ``w in W``, ``E(w)`` the entities the token ``w`` spells in the trie (see
:mod:`.trie`; the tokens that end a name -- up to the next slot token or ``[Tail]`` --
count for that name, so "stop at *Iron Man*" competes with "go on to *Iron Man 2*").
Then

* if no ``w in W`` spells an entity (special tokens, relation names, ``</s>``),
  ``p_graph(w) = 1`` for every ``w``: the step is driven purely by ``p_LM`` (the paper:
  Eq. 4 applies "if the next token corresponds to a tokenized entity");
* otherwise ``s(w) = max_{e in E(w)} IS(e, M)`` (Eq. 5-6 Katz scores; ``max`` because
  ``w`` keeps every entity in ``E(w)`` reachable, so the best of them is what the choice
  can still achieve, and it does not reward prefixes merely for being shared by many
  names), floored at ``min_score * max_w s(w)`` so that the graph term re-weights but never
  removes a valid continuation, and ``p_graph(w) = s(w) / sum_{w' in W} s(w')``
  (Eq. 4, normalised over the allowed continuations). Equal scores (or all zero) give a
  uniform ``p_graph``, which leaves the ranking inside the beam to ``p_LM``; a single
  allowed continuation gets ``p_graph = 1``, so a multi-token name is weighted where its
  spelling branches.

``entity_scores[b]`` is ``katz_scores(kg, M_b, beta, k)`` for example ``b`` (restrict it
with ``among=`` to the turn's candidate entities to keep it small).

With ``entity_scores=None`` (or ``alpha = 1``) this is the "hard constraint" ablation.

Safety: a prefix that has left the trie (impossible while this processor constrains every
step) or ended (after ``</s>``) allows ``eos_token_id`` only, with score ``alpha * log
p_LM(eos)``, so no row is ever all ``-inf``.

Fewer candidate paths than beams: ``generate`` still returns ``num_return_sequences``
sequences; the surplus ones repeat valid paths with a sequence score of about ``-1e9``
(beam search's stand-in for ``-inf``). Drop them by ``sequences_scores`` or deduplicate.

Cost per decoding step (callgrind instruction counts on 8 sample turns of the
tiny T5, beam 5: the processor is 2.7% of the free beam search's instructions). On the first step every trie is laid out once: its
tokens, its token-sorted child ranges and the ``(1 - alpha) log p_graph`` of every node
(:func:`graph_log_probs`, all siblings at once: the Katz rows of the turn). At each step
a beam's node is found from its prefix's bytes (memoised: the prefix less its last token
was a beam of the step before, so one binary search among that node's children), and the
output is a few array operations on a ``[beams, K]`` block of allowed ids (``K``: the
most continuations of any beam; a shorter row repeats its first id, which writes the same
value twice): gather ``log p_LM``, renormalise per row, mix, scatter into a ``-inf``
array (for ``allowed`` no vocabulary-wide ``log_softmax``: renormalising over the allowed
ids cancels it). That arithmetic runs in numpy for float32 scores on the CPU (a branching
step of 5 beams: 42-47 µs against 73-99 µs as tensor operations, each of which costs
torch several microseconds on such small blocks) and as tensor operations on any other
device or dtype. A step where every beam has a single continuation (inside a name: most steps)
writes 0 (``log p_LM`` renormalised over one token and ``log p_graph`` of an only child)
without reading the scores. No loop over the vocabulary and none over the allowed ids.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import torch

from parlai_docgraph.kg.trie import PathTrie
from parlai_docgraph.signed_processor import SignedProcessor


class GraphConstrainedLogitsProcessor(SignedProcessor):
    """
    Restrict beams to trie continuations and mix in ``log p_graph`` (Eq. 3-4).

    ``tries[b]`` and ``entity_scores[b]`` belong to batch example ``b``; rows of
    ``input_ids`` are example-major with ``num_beams`` rows per example (as in
    ``generate``).
    """

    def __init__(
        self,
        tries: Sequence[PathTrie],
        eos_token_id: int,
        num_beams: int = 1,
        entity_scores: Optional[Sequence[Mapping[str, float]]] = None,
        alpha: float = 0.8,
        prefix_len: int = 1,
        min_score: float = 1e-6,
        lm_norm: str = "allowed",
        vocab: Optional[torch.Tensor] = None,
    ) -> None:
        if not 0.0 <= alpha <= 1.0:
            raise ValueError("alpha must be in [0, 1]")
        if lm_norm not in LM_NORMS:
            raise ValueError(f"lm_norm {lm_norm!r}: one of {', '.join(LM_NORMS)}")
        self.lm_norm = lm_norm
        if entity_scores is not None and len(entity_scores) != len(tries):
            raise ValueError("one entity score mapping per trie")
        self.tries = list(tries)
        self.entity_scores = entity_scores
        self.eos_token_id = int(eos_token_id)
        self.num_beams = num_beams
        self.alpha = alpha
        self._alpha = torch.tensor(alpha, dtype=torch.float)  # alpha * x as in float32 math
        self.prefix_len = prefix_len
        self.min_score = min_score
        # the token of each score column (sorted), where the search runs over a compact
        # vocabulary (:func:`~parlai_docgraph.models.gsr.trie_head.compact_vocab`): its ids
        # are columns (eos_token_id stays a token id); None: column i is token i
        self.vocab = None if vocab is None else vocab.cpu().numpy().astype(np.int64)
        self._arrays: Optional[_Layout] = None
        # per example: a beam prefix's bytes -> its trie node (None: it left the trie)
        self._nodes: List[Dict[bytes, Optional[int]]] = [{b"": 0} for _ in self.tries]
        super().__init__()

    def _layout(self) -> "_Layout":
        """Per example the child ranges (``child_start``) and tokens as lists and the node
        offset, and the tokens and ``(1 - alpha) log p_graph`` of every node of every trie,
        concatenated, with one last entry ``(eos, 0)``: the continuation of a beam that
        left its trie or ended. Computed on the first step (the tries are complete by
        then)."""
        if self._arrays is None:
            starts, ids, offsets, tokens, weights = [], [], [], [], []
            at = 0
            for example, trie in enumerate(self.tries):
                token, child_start = trie.layout()
                token = token.astype(np.int64)
                ids.append(token.tolist())
                starts.append(child_start.tolist())
                offsets.append(at)
                tokens.append(token)
                weights.append(self._weighted_graph(example, child_start))
                at += len(token)
            tokens.append(np.asarray([self.eos_token_id], dtype=np.int64))
            weights.append(np.zeros(1, dtype=np.float32))
            columns = np.concatenate(tokens)
            if self.vocab is not None:  # the tries' tokens and EOS as score columns
                columns = np.searchsorted(self.vocab, columns)
            self._arrays = (starts, ids, offsets, columns, np.concatenate(weights))
        return self._arrays

    def _weighted_graph(self, example: int, child_start: np.ndarray) -> np.ndarray:
        """``[num_nodes]`` float32 ``(1 - alpha) log p_graph`` of each node of example
        ``example``'s trie as a continuation of its parent (see the module doc)."""
        trie = self.tries[example]
        n = len(child_start) - 1
        if self.entity_scores is None or self.alpha == 1.0:
            logp = np.zeros(n)
        else:
            logp = graph_log_probs(child_start, trie.node_scores(self.entity_scores[example]),
                                   self.min_score)
        # rounded to float32, then times (1 - alpha) in float32, as the tensor expression
        # (1 - alpha) * tensor(log p_graph, float32) does
        return np.float32(1.0 - self.alpha) * logp.astype(np.float32)

    def _node(self, example: int, prefix: np.ndarray, key: bytes, last: int) -> Optional[int]:
        """The trie node of ``prefix`` (int64 ids whose bytes are ``key``, ending with
        ``last``; None: it left the trie). A beam's prefix less its last token was a beam of
        the step before, so its node is memoised and this costs one binary search among
        that node's (token-sorted) children."""
        starts, tokens = self._arrays[0][example], self._arrays[1][example]  # type: ignore[index]
        parent = self._nodes[example].get(key[: -prefix.itemsize], _UNSEEN)
        if parent is _UNSEEN:  # not a beam before (the processor called on any prefix)
            parent = 0
            for token in prefix[:-1].tolist():
                parent = None if parent is None else _child(starts, tokens, parent, token)
        return None if parent is None else _child(starts, tokens, parent, last)

    def _ranges(self, input_ids: torch.LongTensor) -> Tuple[np.ndarray, np.ndarray]:
        """Per row of ``input_ids``: where its allowed continuations begin in the layout's
        concatenated tokens and how many there are (a row that left its trie or ended:
        the one ``(eos, 0)`` entry)."""
        starts, _, offsets, tokens, _ = self._layout()
        n_rows = input_ids.shape[0]
        ids = input_ids if input_ids.device.type == "cpu" else input_ids.cpu()
        prefixes = ids.numpy()[:, self.prefix_len:].astype(np.int64, copy=False)
        if self.vocab is not None:  # the trie is in token ids
            prefixes = self.vocab[prefixes]
        rows = prefixes.tobytes()  # row r: the bytes [r * step, (r + 1) * step)
        step = prefixes.shape[1] * prefixes.itemsize
        last = prefixes[:, -1].tolist() if step else [0] * n_rows
        stop = len(tokens) - 1  # the (eos, 0) entry
        begins, ends = [], []
        for row in range(n_rows):
            example = row // self.num_beams
            memo = self._nodes[example]
            key = rows[row * step:(row + 1) * step]
            node = memo.get(key, _UNSEEN)
            if node is _UNSEEN:
                node = memo[key] = self._node(example, prefixes[row], key, last[row])
            child = starts[example]
            if node is None or child[node] == child[node + 1]:
                begins.append(stop)
                ends.append(stop + 1)
            else:
                begins.append(offsets[example] + child[node])
                ends.append(offsets[example] + child[node + 1])
        first = np.asarray(begins, dtype=np.int64)
        return first, np.asarray(ends, dtype=np.int64) - first

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        n_rows = input_ids.shape[0]
        if n_rows != len(self.tries) * self.num_beams:
            raise ValueError(
                f"{n_rows} rows for {len(self.tries)} tries x {self.num_beams} beams"
            )
        first, size = self._ranges(input_ids)
        width = int(size.max())
        # [rows, width] blocks of indices into the layout; a shorter row repeats its first
        # continuation (``pad``), which writes the same value twice
        index, pad = first[:, None], None
        if width > 1:
            offset = np.arange(width)[None, :]
            pad = offset >= size[:, None]
            index = index + np.where(pad, 0, offset)
        on_cpu = scores.device.type == "cpu" and not scores.requires_grad
        if on_cpu and scores.dtype == torch.float32:
            return torch.from_numpy(self._mixed_numpy(scores.numpy(), index, pad))
        return self._mixed_tensor(scores, index, pad)

    def _mixed_numpy(self, scores: np.ndarray, index: np.ndarray,
                     pad: Optional[np.ndarray]) -> np.ndarray:
        """The processor's output for float32 CPU ``scores``, in numpy: the same values as
        :meth:`_mixed_tensor` to float rounding (the renormaliser's ``exp`` and ``log``:
        4.8e-7 at most over the bench's tiny-T5 searches), in half the time where beams
        branch (module doc)."""
        _, _, _, tokens, weights = self._layout()
        out = np.full(scores.shape, -np.inf, dtype=np.float32)
        if pad is None and self.lm_norm == "allowed":
            # one continuation per beam: 0 (see _mixed_tensor)
            out[np.arange(len(index)), tokens[index[:, 0]]] = 0.0
            return out
        cols = tokens[index]
        rows = np.arange(len(index))[:, None]
        if self.lm_norm == "allowed":
            lm = scores[rows, cols]
            live = lm if pad is None else np.where(pad, np.float32(-np.inf), lm)
            top = live.max(axis=1, keepdims=True)
            lm = lm - (top + np.log(np.exp(live - top).sum(axis=1, keepdims=True)))
        else:
            top = scores.max(axis=1, keepdims=True)
            norm = top + np.log(np.exp(scores - top).sum(axis=1, keepdims=True))
            lm = scores[rows, cols] - norm
        out[rows, cols] = np.float32(self.alpha) * lm + weights[index]
        return out

    def _mixed_tensor(self, scores: torch.Tensor, index: np.ndarray,
                      pad: Optional[np.ndarray]) -> torch.Tensor:
        """The processor's output (module doc) as tensor operations on ``scores``' device."""
        _, _, _, tokens, weights = self._layout()
        device = scores.device
        cols = _on(torch.from_numpy(tokens[index]), device)
        out = torch.full_like(scores, float("-inf"), dtype=torch.float)
        if index.shape[1] == 1 and self.lm_norm == "allowed":
            # one continuation per beam (most steps: inside a name): log p_LM renormalised
            # over one token is 0, and so is log p_graph (module doc), for any finite score
            out.scatter_(1, cols, 0.0)
            return out if out.dtype == scores.dtype else out.to(scores.dtype)
        if self.lm_norm == "allowed":  # renormalised over the distinct ids: the
            # vocabulary's log-normaliser cancels, so the raw allowed scores suffice
            lm = scores.float().gather(1, cols)
            live = lm if pad is None else lm.masked_fill(_on(torch.from_numpy(pad), device),
                                                         float("-inf"))
            lm = lm - torch.logsumexp(live, dim=1, keepdim=True)
        else:
            lm = torch.log_softmax(scores.float(), dim=-1).gather(1, cols)
        # a padded copy writes its row's first value to the row's first column again
        out.scatter_(1, cols, self._alpha * lm + _on(torch.from_numpy(weights[index]), device))
        return out if out.dtype == scores.dtype else out.to(scores.dtype)


def graph_log_probs(child_start: np.ndarray, raw: np.ndarray, min_score: float) -> np.ndarray:
    """
    ``log p_graph`` (module doc) of every node of a trie as a continuation of its parent,
    for all parents at once: ``child_start`` as :meth:`~.trie.PathTrie.layout` gives it,
    ``raw[v]`` the node's score (:meth:`~.trie.PathTrie.node_scores`, NaN: no entity).
    Siblings without entities get their scored siblings' mean; all siblings unscored:
    0 (the step is the LM's); best sibling score <= 0: uniform; else scores floored at
    ``min_score`` times the best and normalised. Sums run left to right as Python's ``sum``
    (padded with exact zeros), so they equal the per-node arithmetic they replace.
    """
    n = len(child_start) - 1
    out = np.zeros(n)
    sizes = np.diff(child_start)[:n]
    # an only child: log 1 = 0 (-log 1 = -0.0 when its score is <= 0)
    only = child_start[np.flatnonzero(sizes == 1)]
    out[only[raw[only] <= 0.0]] = -0.0
    parents = np.flatnonzero(sizes > 1)
    if not len(parents):
        return out
    size = sizes[parents]
    offset = np.arange(int(size.max()))
    valid = offset[None, :] < size[:, None]
    child = np.where(valid, child_start[parents][:, None] + offset[None, :], 0)
    score = np.where(valid, raw[child], np.nan)
    known = ~np.isnan(score)
    count = known.sum(axis=1)
    total = np.add.accumulate(np.where(known, score, 0.0), axis=1)[:, -1]
    fill = total / np.maximum(count, 1)
    vals = np.where(known, score, fill[:, None])
    top = np.where(valid, vals, -np.inf).max(axis=1)
    floored = np.where(valid, np.maximum(vals, (min_score * top)[:, None]), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.log(np.add.accumulate(floored, axis=1)[:, -1])
        mixed = np.log(floored) - z[:, None]
    uniform = -np.log(size.astype(np.float64))
    logp = np.where((count == 0)[:, None], 0.0,
                    np.where((top <= 0.0)[:, None], uniform[:, None], mixed))
    out[child[valid]] = logp[valid]
    return out


_UNSEEN = object()  # a prefix not looked up yet


def _on(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor`` (on the CPU) moved to ``device`` (no call at all on the CPU)."""
    return tensor if device.type == "cpu" else tensor.to(device)


def _child(starts: List[int], tokens: List[int], node: int, token: int) -> Optional[int]:
    """The child of ``node`` reached by ``token`` (children: the token-sorted id range
    ``starts[node] .. starts[node + 1] - 1``), or None."""
    at = bisect_left(tokens, token, starts[node], starts[node + 1])
    return at if at < starts[node + 1] and tokens[at] == token else None

#: per example child ranges, tokens and node offsets; all tries' tokens and graph terms
_Layout = Tuple[List[List[int]], List[List[int]], List[int], np.ndarray, np.ndarray]

#: ``lm_norm`` choices of :class:`GraphConstrainedLogitsProcessor` (``--gsr-lm-norm``)
LM_NORMS = ("allowed", "vocab")

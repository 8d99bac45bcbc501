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

Vectorised per step: the per-beam walks down the trie are Python (one dict lookup per
prefix token); the allowed ids and their graph log-probs are cached per trie node, and
the output is one ``index_put_`` into a ``-inf`` tensor. No loop over the vocabulary.
"""

from __future__ import annotations

import math
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import torch
from transformers import LogitsProcessor

from parlai_docgraph.kg.trie import PathTrie

_Entry = Tuple[List[int], List[float]]


class GraphConstrainedLogitsProcessor(LogitsProcessor):
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
        self.prefix_len = prefix_len
        self.min_score = min_score
        self._cache: Dict[Tuple[int, Optional[int]], _Entry] = {}

    def _graph_logp(self, example: int, trie: PathTrie, children: Mapping[int, int]) -> List[float]:
        """``log p_graph`` of each child token, in ``children`` order (see module doc)."""
        if self.entity_scores is None or self.alpha == 1.0:
            return [0.0] * len(children)
        table = self.entity_scores[example]
        raw: List[Optional[float]] = []
        for node in children.values():
            ents = trie.values(node)
            raw.append(max(table.get(e, 0.0) for e in ents) if ents else None)
        known = [s for s in raw if s is not None]
        if not known:
            return [0.0] * len(children)
        fill = sum(known) / len(known)  # entity-less sibling (not produced by build_path_trie)
        vals = [fill if s is None else s for s in raw]
        top = max(vals)
        if top <= 0.0:
            return [-math.log(len(vals))] * len(vals)
        vals = [max(s, self.min_score * top) for s in vals]
        z = math.log(sum(vals))
        return [math.log(s) - z for s in vals]

    def _entry(self, example: int, prefix: Sequence[int]) -> _Entry:
        trie = self.tries[example]
        node = trie.node(prefix)
        key = (example, node)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        children = trie.children(node) if node is not None else {}
        if children:
            entry: _Entry = (list(children), self._graph_logp(example, trie, children))
        else:
            entry = ([self.eos_token_id], [0.0])
        self._cache[key] = entry
        return entry

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        n_rows = input_ids.shape[0]
        if n_rows != len(self.tries) * self.num_beams:
            raise ValueError(
                f"{n_rows} rows for {len(self.tries)} tries x {self.num_beams} beams"
            )
        logp = torch.log_softmax(scores.float(), dim=-1)
        prefixes = input_ids[:, self.prefix_len:].tolist()
        rows: List[int] = []
        cols: List[int] = []
        graph: List[float] = []
        for row, prefix in enumerate(prefixes):
            ids, g = self._entry(row // self.num_beams, prefix)
            rows.extend([row] * len(ids))
            cols.extend(ids)
            graph.extend(g)
        r = torch.tensor(rows, dtype=torch.long, device=scores.device)
        c = torch.tensor(cols, dtype=torch.long, device=scores.device)
        g_t = torch.tensor(graph, dtype=logp.dtype, device=scores.device)
        lm = logp[r, c]
        if self.lm_norm == "allowed":
            lm = lm - _row_logsumexp(lm, r, n_rows)[r]
        out = torch.full_like(logp, float("-inf"))
        out.index_put_((r, c), self.alpha * lm + (1.0 - self.alpha) * g_t)
        return out.to(scores.dtype)


#: ``lm_norm`` choices of :class:`GraphConstrainedLogitsProcessor` (``--gsr-lm-norm``)
LM_NORMS = ("allowed", "vocab")


def _row_logsumexp(values: torch.Tensor, rows: torch.Tensor, n_rows: int) -> torch.Tensor:
    """``log sum exp`` of ``values`` per row id in ``rows`` (``-inf`` for a row with none)."""
    top = torch.full((n_rows,), float("-inf"), dtype=values.dtype, device=values.device)
    top = top.scatter_reduce(0, rows, values, reduce="amax")
    safe = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    total = torch.zeros_like(top).index_add_(0, rows, (values - safe[rows]).exp())
    return safe + total.log()

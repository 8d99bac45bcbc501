"""
An optional zero-shot similarity prior for the graph selector (``--similarity-prior``).

With weight :math:`\\lambda > 0` every candidate's logit gets a fixed term

.. math::
    \\mathrm{score}'(c_i) = \\mathrm{score}(c_i) + \\lambda \\cos(e(u), e(s_i))

where :math:`e` is the frozen encoder's mean-pooled sentence embedding
(:func:`~parlai_docgraph.graphs.embed.sentence_vectors`), :math:`u` the last turn of the
dialogue and :math:`s_i` the candidate line. The term enters the ranking loss (Eq. 6), so
the trained selector learns a correction of the zero-shot ranking instead of a ranking from
scratch: with few training dialogues (the offline zoo sample model: 92 turns) a selector
starting from the pretrained embedding space generalizes to unseen documents where one
trained from a random score head does not (issue 14, ``parlai-docgraph heldout_eval``).
Off by default (``0``): the papers have no such term.
"""

from __future__ import annotations

from typing import Any, List, Sequence

import torch
from torch import Tensor

from ..graphs.embed import sentence_vectors


def add_prior_args(group: Any) -> None:
    """Register ``--similarity-prior``."""
    group.add_argument(
        "--similarity-prior", type=float, default=0.0,
        help="lambda: add lambda * cosine(last turn, candidate) of the frozen encoder's "
        "mean-pooled sentence embeddings to every candidate's score, in training and "
        "inference (0: off, the papers' model; the offline zoo sample model uses it to "
        "start from MiniLM's zero-shot ranking)")


def last_turn(text: str) -> str:
    """The last non-empty line of a ParlAI ``text`` (the latest utterance)."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


class SimilarityPrior:
    """Cosine similarities of each example's last turn with its candidates (frozen encoder)."""

    def __init__(self, encoder: Any, tokenizer: Any, weight: float) -> None:
        self.encoder, self.tokenizer, self.weight = encoder, tokenizer, weight

    def __call__(self, turns: Sequence[str], candidates: Sequence[Sequence[str]]) -> Tensor:
        """``[C]`` ``weight * cos`` in the flattened candidate order (example by example)."""
        flat: List[str] = [c for cs in candidates for c in cs]
        if not flat:
            return torch.zeros(0)
        cand = sentence_vectors(flat, self.encoder, self.tokenizer)
        turn = sentence_vectors([last_turn(t) for t in turns], self.encoder, self.tokenizer)
        owner = torch.repeat_interleave(torch.arange(len(candidates), device=cand.device),
                                        torch.tensor([len(cs) for cs in candidates],
                                                     device=cand.device))
        return self.weight * (cand * turn[owner]).sum(-1)

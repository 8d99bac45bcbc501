r"""
An optional sentence-embedding similarity term for the graph selector (``--similarity-prior``).

With weight :math:`\lambda > 0` every candidate's logit gets

.. math::
    \mathrm{score}'(c_i) = \mathrm{score}(c_i) + \lambda \cos(e(u), e(s_i))

where :math:`e` is a mean-pooled, unit-length sentence embedding
(:func:`~parlai_docgraph.graphs.embed.mean_pooled`), :math:`u` the last turn of the
dialogue and :math:`s_i` the candidate line. The term enters the ranking loss (Eq. 6).

``--similarity-prior-encoder``: ``shared`` (default) computes :math:`e` with the selector's
own fine-tuned encoder (the one of Eq. 1, at ``--encoder-learningrate``), so the term starts
as the pretrained encoder's zero-shot ranking and is fine-tuned as a bi-encoder alongside the
cross-encoder and the graph; ``frozen`` uses the frozen copy (a fixed prior). With few
training dialogues (the offline zoo model) a selector that starts from the pretrained
embedding space generalizes to unseen documents where one trained from a random score head
does not (``parlai-docgraph heldout_eval``). Off by default (``0``): the papers
have no such term.

``--zero-shot-prior`` :math:`\mu > 0` adds a second term with the frozen, never trained copy
of the encoder, :math:`e_0`, beside a shared (fine-tuned) one:

.. math::
    \mathrm{score}'(c_i) = \mathrm{score}(c_i) + \lambda \cos(e(u), e(s_i))
        + \mu \cos(e_0(u), e_0(s_i))

so the pretrained encoder's zero-shot ranking stays in the score however far fine-tuning
moves :math:`e` (an ensemble of the fine-tuned selector and the zero-shot encoder).

``--own-loss-weight`` :math:`w > 0` trains the model's own scores to rank on their own
beside the sum: with the ranking loss :math:`L(s) = -\log \mathrm{softmax}(s)_{gold}`
(Eq. 6 over the kept candidates),

.. math::
    L = L(\mathrm{score}') + w\, L(\mathrm{score}) \; (+ \beta L_n)

Without it the similarity terms rank the training questions almost alone, the ranking loss
is small from the first steps, and the cross-encoder and graph part learns little: in the
zoo recipe (one epoch, 292 questions) it ranked 0.35 of 124 valid questions by itself,
0.77 with ``w = 1`` (the selector comment of ``zoo/sample.py``).
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import torch
from torch import Tensor

from parlai_docgraph.graphs.embed import FrozenSentenceVectors, mean_pooled
from parlai_docgraph.memo import LRUMemo

ENCODERS = ("shared", "frozen")




def last_turn(text: str) -> str:
    """The last non-empty line of a ParlAI ``text`` (the latest utterance)."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


class SimilarityPrior:
    """
    ``weight * cos(e(last turn), e(candidate))`` for chosen candidates of a batch.

    ``vectors``: the memoised embeddings of a frozen encoder
    (:class:`~parlai_docgraph.graphs.embed.FrozenSentenceVectors`), which the agent shares
    with node relevance; ``None`` for the shared encoder, which trains, so its embeddings
    are computed every call, with gradients. (Embedding every candidate again each step
    made the zoo selector's training loop 132 s instead of 121 s.)
    """

    def __init__(self, encoder: Any, tokenizer: Any, weight: float,
                 vectors: Optional[FrozenSentenceVectors] = None) -> None:
        self.encoder, self.tokenizer, self.weight = encoder, tokenizer, weight
        self.vectors = vectors

    @property
    def memo(self) -> Optional[LRUMemo]:
        """The frozen embeddings' memo (``None`` for the shared encoder)."""
        return None if self.vectors is None else self.vectors.memo

    def embed(self, texts: Sequence[str]) -> Tensor:
        """``[len(texts), dim]`` unit-length embeddings (:func:`mean_pooled`)."""
        if self.vectors is None:
            return mean_pooled(list(texts), self.encoder, self.tokenizer)
        return self.vectors(texts)

    def __call__(self, turns: Sequence[str], candidates: Sequence[Sequence[str]],
                 keep: Tensor) -> Tensor:
        """
        ``[len(keep)]`` terms of the flattened candidates (example by example) at indices
        ``keep``; differentiable when the encoder trains and gradients are on.
        """
        flat: List[str] = [c for cs in candidates for c in cs]
        owner: List[int] = [b for b, cs in enumerate(candidates) for _ in cs]
        idx = keep.tolist()
        if not idx:
            return torch.zeros(0)
        cand = self.embed([flat[i] for i in idx])
        turn = self.embed([last_turn(t) for t in turns])
        rows = torch.tensor([owner[i] for i in idx], device=cand.device)
        return self.weight * (cand * turn[rows]).sum(-1)

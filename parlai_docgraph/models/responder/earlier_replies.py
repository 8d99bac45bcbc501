"""
``--block-earlier-replies n``: a reply repeats no token n-gram of the responder's own earlier
replies in the episode, unless the n-gram is in the knowledge the reply answers from.

Why: a small instruct model (SmolLM2-135M with LoRA) that sees its earlier replies in the
chat history copies them. In a five-turn chat over a garden document, the fifth reply
repeated the third reply's second sentence word for word ("The gate is kept in the green
shed by the gate."), an answer to another question. ParlAI's ``--beam-context-block-ngram``
blocks the n-grams of the whole context, the user's turns included, and this responder's
replies are meant to reuse the user's words and the fact's. Only the responder's own
earlier words are blocked here, and the fact's words stay free, so a question asked twice
over the same fact can still be answered from it.

The block is a ``transformers`` :class:`~transformers.LogitsProcessor`: at each step, a row
whose last ``n - 1`` reply tokens begin a blocked n-gram gets ``-inf`` for the tokens that
would complete it. A reply's token ids are the tokenizer's ids of its text, as it starts a
reply and as it continues one (with a leading space), so an earlier sentence cannot come back
either way.

Torch + transformers only (no ParlAI here).
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Set, Tuple

import torch

from parlai_docgraph.signed_processor import SignedProcessor

#: per example: the first ``n - 1`` tokens of a blocked n-gram -> the tokens completing it
Blocked = Dict[Tuple[int, ...], Set[int]]


def ngrams(ids: Sequence[int], n: int) -> Set[Tuple[int, ...]]:
    """The token n-grams of ``ids``."""
    return {tuple(ids[i : i + n]) for i in range(len(ids) - n + 1)}


def _spellings(tokenizer: Any, text: str) -> List[List[int]]:
    """``text``'s ids as a reply's start and as a continuation (with a leading space)."""
    text = text.strip()
    return [tokenizer(t, add_special_tokens=False)["input_ids"] for t in (text, " " + text)]


def blocked_ngrams(tokenizer: Any, replies: Sequence[str], knowledge: str, n: int) -> Blocked:
    """
    The n-grams of ``replies`` (the responder's earlier replies) that are not n-grams of
    ``knowledge``, as a prefix -> completions table. ``n`` <= 0 or no replies: empty.
    """
    if n <= 0 or not replies:
        return {}
    free: Set[Tuple[int, ...]] = set()
    if knowledge and knowledge.strip():
        for ids in _spellings(tokenizer, knowledge):
            free |= ngrams(ids, n)
    table: Blocked = {}
    for reply in replies:
        if not reply or not reply.strip():
            continue
        for ids in _spellings(tokenizer, reply):
            for gram in ngrams(ids, n) - free:
                table.setdefault(gram[:-1], set()).add(gram[-1])
    return table


class EarlierReplyBlock(SignedProcessor):
    """
    Row ``r`` (example ``r // per``: rows repeat an example per beam or returned sequence)
    may not write token ``t`` after the reply tokens ``p`` (those from column ``start``)
    when ``p[-(n-1):] + (t,)`` is one of its example's blocked n-grams:

        scores[r, t] = -inf  if  t in blocked[r // per][p[-(n-1):]]
    """

    def __init__(self, n: int, blocked: Sequence[Blocked], start: int) -> None:
        if n < 1:
            raise ValueError(f"--block-earlier-replies must be positive here, got {n}")
        super().__init__()
        self.n = n
        self.blocked = list(blocked)
        self.start = start

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        per = input_ids.size(0) // max(len(self.blocked), 1)
        reply = input_ids[:, self.start :]
        if reply.size(1) < self.n - 1:
            return scores
        prefixes = reply[:, reply.size(1) - (self.n - 1) :].tolist()
        for row, prefix in enumerate(prefixes):
            table = self.blocked[row // per] if per else {}
            banned = table.get(tuple(prefix))
            if banned:
                scores[row, list(banned)] = -float("inf")
        return scores

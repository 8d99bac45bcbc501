"""
Holl-E gold spans: which knowledge-pool sentence(s) a span was copied from (see
:func:`match_span`; the conversion is described in :mod:`.holle`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from parlai_docgraph.tasks.docgraph.readers.turns import Passage

#: sources whose sentences follow each other (a span may run over several)
PROSE_SOURCES = ("plot", "review")

#: punctuation, as SKT strips it before comparing
PUNCS_RE = re.compile(r"[^\w\s]")


def normalize(text: str) -> str:
    """
    Lower case, punctuation removed (SKT's ``[^\\w\\s]``), whitespace collapsed.
    """
    return " ".join(PUNCS_RE.sub("", text).lower().split())


def _f1(a: Sequence[str], b: Sequence[str]) -> float:
    sa, sb = set(a), set(b)
    common = len(sa & sb)
    if common == 0:
        return 0.0
    p, r = common / len(sb), common / len(sa)
    return 2 * p * r / (p + r)


def _contains(haystack: str, needle: str) -> bool:
    return f" {needle} " in f" {haystack} "


@dataclass(frozen=True)
class SpanMatch:
    """
    Where a span was found: sentences ``start:end`` of passage ``passage``.
    """

    kind: str  # exact | contained | run | overlap | unmatched
    passage: int = -1
    start: int = -1
    end: int = -1


def match_span(
    span: str,
    response: str,
    passages: Sequence[Passage],
    allow_runs: Sequence[str] = PROSE_SOURCES,
) -> SpanMatch:
    """
    Find the pool sentence(s) a span was copied from.

    Everything is compared after :func:`normalize`; containment is on whole words.
    The first rule that applies wins:

    1. ``exact``: a sentence equal to the span (the first one);
    2. ``contained``: sentences containing the span; with several, the one with the
       best word F1 against the span (the most specific), then against the response,
       then the first;
    3. ``run``: the span runs over adjacent sentences of a prose passage (plot,
       review): the shortest run of sentences whose joined text contains it, the first
       such run;
    4. ``overlap``: the sentence with the best word F1 against the span; when no
       sentence shares a word with the span, against the response (SKT's fallback);
    5. ``unmatched``: no sentence shares a word with either (or there is no sentence).

    An empty span goes straight to rule 4 with the response.
    """
    span_n = normalize(span)
    resp_toks = normalize(response).split()
    flat = [
        (p, s, normalize(sent))
        for p, (_, sents) in enumerate(passages)
        for s, sent in enumerate(sents)
    ]
    if not flat:
        return SpanMatch("unmatched")
    span_toks = span_n.split()
    if span_n:
        for p, s, norm in flat:
            if norm == span_n:
                return SpanMatch("exact", p, s, s + 1)
        hits = [(p, s, norm) for p, s, norm in flat if _contains(norm, span_n)]
        if hits:
            best = max(
                hits,
                key=lambda h: (_f1(span_toks, h[2].split()), _f1(resp_toks, h[2].split())),
            )
            return SpanMatch("contained", best[0], best[1], best[1] + 1)
        run = _shortest_run(span_n, passages, allow_runs)
        if run is not None:
            return SpanMatch("run", *run)
    for toks in (span_toks, resp_toks):
        if not toks:
            continue
        scores = [_f1(toks, norm.split()) for _, _, norm in flat]
        best_score = max(scores)
        if best_score > 0:
            p, s, _ = flat[scores.index(best_score)]
            return SpanMatch("overlap", p, s, s + 1)
    return SpanMatch("unmatched")


def _shortest_run(
    span_n: str, passages: Sequence[Passage], allow_runs: Sequence[str]
) -> Optional[Tuple[int, int, int]]:
    best: Optional[Tuple[int, int, int]] = None
    for p, (title, sents) in enumerate(passages):
        if title not in allow_runs:
            continue
        norms = [normalize(s) for s in sents]
        for start in range(len(norms)):
            joined = norms[start]
            for end in range(start + 2, len(norms) + 1):
                # a run that contains the span has an interior shorter than the span
                interior = " ".join(norms[start + 1 : end - 1])
                if len(interior) >= len(span_n):
                    break
                joined = f"{joined} {norms[end - 1]}"
                if _contains(joined, span_n):
                    if best is None or end - start < best[2] - best[1]:
                        best = (p, start, end)
                    break
    return best

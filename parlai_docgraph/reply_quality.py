"""
How grounded, supported and varied generated replies are (``parlai-docgraph reply_eval``).

Per reply (:func:`score_reply`):

* **knowledge F1**: ParlAI's unigram F1 (``F1Metric``: lower-cased, punctuation and
  articles removed) of the reply against a knowledge sentence (the gold one, and the one
  the selector chose), the knowledge F1 of Dinan et al. / Shuster et al.;
* **unsupported words**: the reply's content words (ParlAI's normalised tokens that are
  not spaCy English stop words, nor the pieces a contraction leaves once its apostrophe is
  gone: "i'm" -> "i m", "don't" -> "don t") whose Snowball stem is in none of the knowledge
  (the selected sentence and its title: the generator reads "title: sentence"), the
  question and the dialogue history; a reply *carries* unsupported words when it has one;
* **answer kept**: where the question's answer span is known (the part of the answer sentence
  that answers it: the "why", the "how much") and the selected sentence holds it, whether
  the reply still does (ParlAI's normalised tokens of the span, in order, inside the
  reply's): a reply that shortens the sentence must not drop the answer;
* **repeated phrase**: a word trigram that occurs twice in the reply;
* **empty** (no word) and **truncated** (stopped by the length cap, not by its end token).

Over replies (:func:`summarise`): the means and shares of those, and distinct-2 (distinct
word bigrams over all bigrams of all replies, Li et al. 2016), the diversity figure of the
knowledge-grounded dialogue papers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Dict, List, Optional, Sequence, Set

from parlai_docgraph.nlp import english_stop_words

PHRASE = 3  # a repeated word trigram is a repeated phrase
#: what normalisation leaves of contractions (the apostrophe becomes a space): not content
CONTRACTION_PIECES = frozenset(
    "m s t d ll re ve don didn doesn isn wasn aren weren won can couldn wouldn shouldn "
    "hasn haven hadn".split())


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    from nltk.stem.snowball import SnowballStemmer

    return SnowballStemmer("english")


def words(text: str) -> List[str]:
    """ParlAI's normalised tokens of ``text`` (the tokens its F1 counts)."""
    from parlai.core.metrics import normalize_answer

    return normalize_answer(text or "").split()


def knowledge_f1(reply: str, knowledge: str) -> float:
    """ParlAI's unigram F1 of ``reply`` against ``knowledge`` (0 without knowledge)."""
    from parlai.core.metrics import F1Metric

    if not words(knowledge):
        return 0.0
    return float(F1Metric.compute(reply, [knowledge]).value())


def content_stems(text: str) -> Set[str]:
    """The Snowball stems of the content words of ``text`` (:func:`words` without stop
    words and contraction pieces)."""
    stem = _stemmer().stem
    stops = english_stop_words() | CONTRACTION_PIECES
    return {stem(w) for w in words(text) if w not in stops}


def _content_words_outside(text: str, known: Set[str]) -> List[str]:
    """The content words of ``text`` whose Snowball stem is not in ``known``, each once, in
    order."""
    stem = _stemmer().stem
    stops = english_stop_words() | CONTRACTION_PIECES
    out: List[str] = []
    for w in words(text):
        if w not in stops and stem(w) not in known and w not in out:
            out.append(w)
    return out


def unsupported_words(reply: str, sources: Sequence[str]) -> List[str]:
    """The reply's content words whose stem none of ``sources`` contains (in reply order)."""
    stem = _stemmer().stem
    return _content_words_outside(reply, {stem(w) for s in sources for w in words(s)})


def dropped_words(reply: str, selected: str, question: str) -> List[str]:
    """
    The content words of the ``selected`` sentence that neither the ``question`` nor the
    ``reply`` holds (by Snowball stem, in sentence order): what a reply that shortened the
    sentence left out of what the question did not already say (the "why", the "how
    much"). The pipeline's ``--reply-keeps-answer`` replies with the sentence itself then.
    """
    return _content_words_outside(selected, content_stems(question) | content_stems(reply))


def keeps_span(reply: str, span: str) -> bool:
    """Whether ``reply`` holds ``span``: its normalised tokens, in order and contiguous."""
    want, have = words(span), words(reply)
    return bool(want) and any(have[i:i + len(want)] == want
                              for i in range(len(have) - len(want) + 1))


def ngrams(tokens: Sequence[str], n: int) -> List[tuple]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def repeats_phrase(reply: str, n: int = PHRASE) -> bool:
    """A word ``n``-gram occurs twice in ``reply``."""
    grams = ngrams(words(reply), n)
    return len(set(grams)) < len(grams)


@dataclass
class ReplyScore:
    """One reply and its figures (see the module docstring)."""

    reply: str
    question: str
    kf1_gold: float
    kf1_selected: float
    unsupported: List[str] = field(default_factory=list)
    repeated: bool = False
    empty: bool = False
    truncated: bool = False
    answer_kept: Optional[bool] = None  # None: no span known, or the selection lacks it


def score_reply(reply: str, question: str, history: Sequence[str], gold: str, selected: str,
                truncated: bool = False, span: str = "") -> ReplyScore:
    """The figures of one reply; ``history``: the dialogue before it and any other text the
    generator read (the knowledge's title); ``truncated``: the generator hit its length cap;
    ``span``: the answer span of the question ("" when unknown)."""
    kept = keeps_span(reply, span) if span and keeps_span(selected, span) else None
    return ReplyScore(
        reply=reply, question=question,
        kf1_gold=knowledge_f1(reply, gold), kf1_selected=knowledge_f1(reply, selected),
        unsupported=unsupported_words(reply, [selected, question, *history]),
        repeated=repeats_phrase(reply), empty=not words(reply), truncated=truncated,
        answer_kept=kept)


def distinct(replies: Sequence[str], n: int = 2) -> float:
    """Distinct-n: distinct word n-grams over all word n-grams of ``replies``."""
    grams = [g for r in replies for g in ngrams(words(r), n)]
    return len(set(grams)) / len(grams) if grams else 0.0


def summarise(scores: Sequence[ReplyScore], worst: int = 5) -> Dict[str, Any]:
    """Means and shares over ``scores``, with the ``worst`` replies by unsupported words."""
    if not scores:
        raise ValueError("no replies to summarise")
    n = len(scores)
    kept = [s.answer_kept for s in scores if s.answer_kept is not None]
    ranked = sorted(scores, key=lambda s: (-len(s.unsupported), s.kf1_selected))
    return {
        "replies": n,
        "kf1_gold": sum(s.kf1_gold for s in scores) / n,
        "kf1_selected": sum(s.kf1_selected for s in scores) / n,
        "unsupported_share": sum(bool(s.unsupported) for s in scores) / n,
        "repeated_share": sum(s.repeated for s in scores) / n,
        "empty_share": sum(s.empty for s in scores) / n,
        "truncated_share": sum(s.truncated for s in scores) / n,
        # over the replies whose selected sentence holds the question's answer span
        "answer_kept_n": len(kept),
        "answer_kept_share": sum(kept) / len(kept) if kept else None,
        "answer_dropped": [asdict(s) for s in scores if s.answer_kept is False],
        "distinct_2": distinct([s.reply for s in scores]),
        "mean_words": sum(len(words(s.reply)) for s in scores) / n,
        "worst": [asdict(s) for s in ranked[:worst] if s.unsupported],
    }

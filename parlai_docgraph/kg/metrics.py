"""
DialogGSR evaluation metrics (no ParlAI imports; the agent records them per example).

Retrieval (Park et al. Table 3, 5; the DialKG Walker definition, Moon et al. 2019):

* :func:`path_at_k` -- ``path@k``: the gold path is among the top ``k`` retrieved paths
  (recall@k of the gold path; a turn whose gold path is not even a candidate counts as a
  miss, so the figure is comparable across candidate generators).
* :func:`path_valid` -- share of generated paths all of whose triples exist in the KG
  (1.0 under the graph constraint by construction; below 1.0 only without it).

Response (Table 1-2):

* :func:`bleu` -- BLEU-1..4 with NLTK (cumulative uniform weights, whitespace tokens as
  they are, smoothing ``method1``; sentence level per example -- use :func:`corpus_bleu`
  for the corpus figure the paper reports). Case counts, as in DialogGSR's evaluator
  (``hyp.split()`` / ``ref.split()``, anchors.md 2.7); ``lowercase=True`` (the agent's
  ``--gsr-bleu-lowercase``) lower-cases both sides first;
* ROUGE-1/2/L -- :func:`parlai_docgraph.text_metrics.rouge` (Google ``rouge-score``);
* unigram F1 -- ParlAI's ``F1Metric`` (recorded by the agent);
* :func:`knowledge_entity_recall` -- share of the gold path's entities that the
  response mentions. This is **not** KQA (Kang et al. 2023, reported by the paper):
  KQA needs a trained extractive QA model that answers knowledge questions from the
  response; this simple string-match recall is a cheap proxy, named for what it is.
"""

from __future__ import annotations

import math
import re
from typing import Dict, List, Optional, Sequence

from parlai_docgraph.kg.store import KnowledgeGraph, Triple

_WS = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s]")


def _norm(text: str) -> str:
    return _WS.sub(" ", _PUNCT.sub(" ", text.lower())).strip()


def path_at_k(retrieved: Sequence[Sequence[Triple]], gold: Sequence[Triple], k: int) -> bool:
    """Whether ``gold`` (KG-oriented triples) equals one of the first ``k`` retrieved paths."""
    want = [tuple(t) for t in gold]
    return bool(want) and any([tuple(t) for t in p] == want for p in retrieved[:k])


def path_valid(kg: KnowledgeGraph, path: Sequence[Triple]) -> bool:
    """Whether ``path`` is non-empty and every triple of it is in ``kg``."""
    return bool(path) and all(kg.has_triple(h, r, t) for h, r, t in path)


def _tokens(text: str, lowercase: bool = False) -> List[str]:
    return (text.lower() if lowercase else text).split()


def bleu(hypothesis: str, references: Sequence[str], max_n: int = 4,
         lowercase: bool = False) -> Dict[str, float]:
    """Sentence BLEU-1..``max_n`` (keys ``bleu-1``...), NLTK with smoothing method1."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    hyp = _tokens(hypothesis, lowercase)
    refs = [_tokens(r, lowercase) for r in references if r is not None]
    smooth = SmoothingFunction().method1
    out: Dict[str, float] = {}
    for n in range(1, max_n + 1):
        if not hyp or not refs:
            out[f"bleu-{n}"] = 0.0
            continue
        weights = tuple([1.0 / n] * n)
        out[f"bleu-{n}"] = float(sentence_bleu(refs, hyp, weights=weights, smoothing_function=smooth))
    return out


#: epsilon of NLTK smoothing ``method1`` in Park et al.'s evaluator (anchors.md 2.7);
#: NLTK's own default is 0.1.
PARK_EPSILON = 1e-12


def bleu_stats(hypothesis: str, references: Sequence[str], max_n: int = 4,
               lowercase: bool = False) -> List[int]:
    """
    Additive sufficient statistics of corpus BLEU for one example:
    ``[hyp_len, closest_ref_len, num_1, den_1, ..., num_max_n, den_max_n]`` with NLTK's
    clipped n-gram counts (``modified_precision``) and ``closest_ref_length``. Summing
    these over a corpus (in any order, across processes) and passing the sum to
    :func:`bleu_from_stats` gives exactly NLTK ``corpus_bleu``.
    """
    from nltk.translate.bleu_score import closest_ref_length, modified_precision

    hyp = _tokens(hypothesis, lowercase)
    refs = [_tokens(r, lowercase) for r in references if r is not None]
    out = [len(hyp), closest_ref_length(refs, len(hyp)) if refs else 0]
    for n in range(1, max_n + 1):
        if not refs:
            out += [0, max(0, len(hyp) - n + 1)]
            continue
        p = modified_precision(refs, hyp, n)
        out += [int(p.numerator), int(p.denominator)]
    return out


def bleu_from_stats(stats: Sequence[float], n: int, epsilon: float = PARK_EPSILON) -> float:
    """
    Corpus BLEU-``n`` from summed :func:`bleu_stats`:
    ``BP * exp(sum_{i<=n} (1/n) log p_i)``, ``p_i = num_i / den_i`` (``(num_i + eps) / den_i``
    when ``num_i = 0``, smoothing method1), ``BP = 1`` if ``c > r`` else ``exp(1 - r / c)``;
    0 when no unigram matches (as NLTK).
    """
    from nltk.translate.bleu_score import brevity_penalty

    hyp_len, ref_len = int(stats[0]), int(stats[1])
    nums = [stats[2 + 2 * i] for i in range(n)]
    dens = [stats[3 + 2 * i] for i in range(n)]
    if not nums or nums[0] == 0:
        return 0.0
    logs = 0.0
    for num, den in zip(nums, dens):
        if den == 0:
            return 0.0
        logs += math.log((num if num else epsilon) / den)
    return float(brevity_penalty(ref_len, hyp_len) * math.exp(logs / n))


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str]], max_n: int = 4,
                epsilon: float = PARK_EPSILON, lowercase: bool = False) -> Dict[str, float]:
    """Corpus BLEU-1..``max_n`` (NLTK ``corpus_bleu``, smoothing method1), as the paper's code."""
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu as nltk_corpus_bleu

    hyps = [_tokens(h, lowercase) for h in hypotheses]
    refs = [[_tokens(r, lowercase) for r in rs] for rs in references]
    smooth = SmoothingFunction(epsilon=epsilon).method1
    return {
        f"bleu-{n}": float(nltk_corpus_bleu(refs, hyps, weights=tuple([1.0 / n] * n), smoothing_function=smooth))
        for n in range(1, max_n + 1)
    }


def path_entities(paths: Sequence[Sequence[Triple]]) -> List[str]:
    """Distinct entities of ``paths`` (heads and tails), in order."""
    seen: Dict[str, None] = {}
    for path in paths:
        for h, _, t in path:
            seen.setdefault(h)
            seen.setdefault(t)
    return list(seen)


def knowledge_entity_recall(response: str, gold_paths: Sequence[Sequence[Triple]]) -> Optional[float]:
    """
    Share of the gold paths' entities mentioned in ``response`` (case- and
    punctuation-insensitive whole-word match); None when there is no gold path.
    Not KQA -- see the module docstring.
    """
    ents = [e for e in path_entities(gold_paths) if _norm(e)]
    if not ents:
        return None
    text = f" {_norm(response)} "
    return sum(f" {_norm(e)} " in text for e in ents) / len(ents)

"""
DialogGSR evaluation metrics (no ParlAI imports; the agent records them per example).

Retrieval (Park et al. Table 3, 5; the DialKG Walker definition, Moon et al. 2019):

* :func:`path_at_k` -- ``path@k``: the gold path is among the top ``k`` retrieved paths
  (recall@k of the gold path; a turn whose gold path is not even a candidate counts as a
  miss, so the figure is comparable across candidate generators).
* :func:`path_valid` -- share of generated paths all of whose triples exist in the KG
  (1.0 under the graph constraint by construction; below 1.0 only without it).

Response (Table 1-2):

* :func:`bleu` -- BLEU-1..4 with NLTK (cumulative uniform weights, whitespace tokens
  after lower-casing, smoothing ``method1``; sentence level per example -- use
  :func:`corpus_bleu` for the corpus figure the paper reports);
* ROUGE-1/2/L -- :func:`parlai_docgraph.text_metrics.rouge` (Google ``rouge-score``);
* unigram F1 -- ParlAI's ``F1Metric`` (recorded by the agent);
* :func:`knowledge_entity_recall` -- share of the gold path's entities that the
  response mentions. This is **not** KQA (Kang et al. 2023, reported by the paper):
  KQA needs a trained extractive QA model that answers knowledge questions from the
  response; this simple string-match recall is a cheap proxy, named for what it is.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence

from .store import KnowledgeGraph, Triple

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


def _tokens(text: str) -> List[str]:
    return text.lower().split()


def bleu(hypothesis: str, references: Sequence[str], max_n: int = 4) -> Dict[str, float]:
    """Sentence BLEU-1..``max_n`` (keys ``bleu-1``...), NLTK with smoothing method1."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    hyp = _tokens(hypothesis)
    refs = [_tokens(r) for r in references if r is not None]
    smooth = SmoothingFunction().method1
    out: Dict[str, float] = {}
    for n in range(1, max_n + 1):
        if not hyp or not refs:
            out[f"bleu-{n}"] = 0.0
            continue
        weights = tuple([1.0 / n] * n)
        out[f"bleu-{n}"] = float(sentence_bleu(refs, hyp, weights=weights, smoothing_function=smooth))
    return out


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[Sequence[str]], max_n: int = 4) -> Dict[str, float]:
    """Corpus BLEU-1..``max_n`` (NLTK ``corpus_bleu``, smoothing method1), as the paper's code."""
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu as nltk_corpus_bleu

    hyps = [_tokens(h) for h in hypotheses]
    refs = [[_tokens(r) for r in rs] for rs in references]
    smooth = SmoothingFunction().method1
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

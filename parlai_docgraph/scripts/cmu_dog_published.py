"""The published CMU_DoG test figures the ``cmu_dog_eval`` result file sets beside its rows."""

from __future__ import annotations

from typing import Any, Dict, List

#: published CMU_DoG test F1 and perplexity, the release's test split (:data:`PUBLISHED_SOURCE`);
#: ``at_most_200m``: the model has at most 200M parameters (KnowledGPT: GPT-2 117M + BERT-base
#: 110M; DialoGPT-medium: 345M; the table states no size for the others, models trained
#: without a pretrained LM of that size)
PUBLISHED: List[Dict[str, Any]] = [
    {"model": "TMN (Dinan et al., ICLR 2019)", "f1": 9.9, "ppl": 75.2, "at_most_200m": True},
    {"model": "ITDD (Li et al., ACL 2019)", "f1": 10.4, "ppl": 26.0, "at_most_200m": True},
    {"model": "DRD (Zhao et al., ICLR 2020)", "f1": 10.7, "ppl": 54.4, "at_most_200m": True},
    {"model": "KnowledGPT (Zhao et al., EMNLP 2020)", "f1": 13.5, "ppl": 20.6,
     "at_most_200m": False},
    {"model": "DialoGPT-medium fine-tuned (Zhao et al., arXiv 2011.09708)", "f1": 13.7,
     "ppl": 15.9, "at_most_200m": False},
]
PUBLISHED_SOURCE = (
    "Varshney, Prabhakar & Ekbal, NAACL 2022 (CNTF), Table 1, CMU_DoG columns, which takes "
    "the baselines' figures from KnowledGPT (Zhao et al., EMNLP 2020) and Zhao et al. (2020, "
    "arXiv 2011.09708); F1: unigram F1 of each generated response against the human one, "
    "averaged over the test responses, after lower-casing, punctuation to spaces and removing "
    "articles (KnowledGPT's metrics.py: the same regular expressions and order as ParlAI's "
    "normalize_answer, so the metric is ParlAI's f1). What differs is the text: the papers "
    "score their own preprocessed copy of the release's test split (its tokenisation and "
    "the turns it keeps were not checked here); these rows score ParlAI's cmu_dog turns, raw "
    "text, consecutive messages of a speaker joined")

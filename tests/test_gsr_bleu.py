"""Corpus BLEU of DialogGSR responses (Park et al.: NLTK corpus_bleu, method1, eps 1e-12)."""

import pytest
from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu

from parlai_docgraph.agents.gsr.evaluation import CorpusBleuMetric
from parlai_docgraph.kg import metrics as kgm

HYPS = [
    "the cat sat on the mat",
    "i like the movie inception a lot",
    "he directed it",
    "",
    "christopher nolan directed inception in 2010 and it stars leonardo dicaprio",
]
REFS = [
    ["the cat is on the mat", "a cat sat on the mat"],
    ["i really like inception"],
    ["christopher nolan directed it"],
    ["nothing here"],
    ["inception was directed by christopher nolan and stars leonardo dicaprio"],
]


def _nltk(n, hyps=HYPS, refs=REFS):
    hyps = [h.split() for h in hyps]
    refs = [[r.split() for r in rs] for rs in refs]
    smooth = SmoothingFunction(epsilon=kgm.PARK_EPSILON).method1
    return corpus_bleu(refs, hyps, weights=tuple([1.0 / n] * n), smoothing_function=smooth)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_metric_sums_to_nltk_corpus_bleu_in_any_split(n):
    stats = [kgm.bleu_stats(h, r) for h, r in zip(HYPS, REFS)]
    want = _nltk(n)
    assert want > 0
    # one batch, two batches merged in another order (as batches / worker processes are)
    whole = sum((CorpusBleuMetric(n, s) for s in stats[1:]), CorpusBleuMetric(n, stats[0]))
    left = CorpusBleuMetric(n, stats[3]) + CorpusBleuMetric(n, stats[4]) + None
    right = CorpusBleuMetric(n, stats[0]) + CorpusBleuMetric(n, stats[1]) + CorpusBleuMetric(n, stats[2])
    assert whole.value() == pytest.approx(want, rel=1e-9)
    assert (left + right).value() == pytest.approx(want, rel=1e-9)
    assert kgm.corpus_bleu(HYPS, REFS)[f"bleu-{n}"] == pytest.approx(want, rel=1e-9)


def test_corpus_bleu_is_not_the_sentence_mean():
    sent = sum(kgm.bleu(h, r)["bleu-4"] for h, r in zip(HYPS, REFS)) / len(HYPS)
    assert abs(kgm.corpus_bleu(HYPS, REFS)["bleu-4"] - sent) > 1e-3
    # a perfect corpus is 1.0; a corpus with no unigram match is 0.0 (as NLTK)
    perfect = [kgm.bleu_stats(r[0], r) for r in REFS[:3]]
    tot = [sum(x) for x in zip(*perfect)]
    assert kgm.bleu_from_stats(tot, 4) == pytest.approx(1.0)
    assert kgm.bleu_from_stats(kgm.bleu_stats("zzz qqq", ["a b"]), 1) == 0.0


def test_case_counts_as_in_the_reference_evaluator():
    """DialogGSR's evaluator splits hypotheses and references as they are: 'Nolan' does not
    match 'nolan'. Lower-casing both sides (--gsr-bleu-lowercase) is the option."""
    hyps = ["Christopher Nolan directed Inception", "The cat sat"]
    refs = [["christopher nolan directed inception"], ["the cat sat"]]
    cased = kgm.corpus_bleu(hyps, refs)
    lowered = kgm.corpus_bleu(hyps, refs, lowercase=True)
    assert cased["bleu-1"] == pytest.approx(_nltk(1, hyps, refs), rel=1e-9)
    assert lowered["bleu-1"] == pytest.approx(1.0) and cased["bleu-1"] < 0.5
    stats = [kgm.bleu_stats(h, r) for h, r in zip(hyps, refs)]
    total = [sum(x) for x in zip(*stats)]
    assert kgm.bleu_from_stats(total, 1) == pytest.approx(cased["bleu-1"], rel=1e-9)
    low = [sum(x) for x in zip(*[kgm.bleu_stats(h, r, lowercase=True) for h, r in zip(hyps, refs)])]
    assert kgm.bleu_from_stats(low, 1) == pytest.approx(1.0)
    assert kgm.bleu(hyps[0], refs[0])["bleu-1"] < kgm.bleu(hyps[0], refs[0], lowercase=True)["bleu-1"]

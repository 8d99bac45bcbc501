"""ROUGE through rouge-score: values, multi-reference maximum, bad input."""

import pytest

from parlai_docgraph.text_metrics import rouge


def test_rouge_exact_and_disjoint():
    same = rouge("the cat sat on the mat", ["the cat sat on the mat"])
    assert same == {"rouge_1": 1.0, "rouge_2": 1.0, "rouge_L": 1.0}
    assert rouge("x y", ["z"]) == {"rouge_1": 0.0, "rouge_2": 0.0, "rouge_L": 0.0}


def test_rouge_partial_overlap_known_values():
    # 5 of 6 unigrams shared each way -> F1 = 5/6; bigrams: "the cat", "on the", "the mat"
    # shared of 5 each -> 3/5; LCS "the cat on the mat" = 5 -> 5/6.
    got = rouge("the cat sat on the mat", ["the cat is on the mat"])
    assert got["rouge_1"] == pytest.approx(5 / 6)
    assert got["rouge_2"] == pytest.approx(3 / 5)
    assert got["rouge_L"] == pytest.approx(5 / 6)


def test_rouge_multi_reference_takes_maximum_per_key():
    one = rouge("the cat sat", ["the cat sat on a mat"])
    two = rouge("the cat sat", ["dogs bark", "the cat sat on a mat"])
    assert one == two
    assert rouge("a", "a")["rouge_1"] == 1.0  # a bare string is one reference


def test_rouge_needs_a_reference():
    with pytest.raises(ValueError, match="reference"):
        rouge("a", [])

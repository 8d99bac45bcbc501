"""ROUGE through rouge-score: values, multi-reference rule (torchmetrics' best, as Li et al.
ran it), bad input."""

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


def test_rouge_multi_reference_reports_one_reference():
    one = rouge("the cat sat", ["the cat sat on a mat"])
    two = rouge("the cat sat", ["dogs bark", "the cat sat on a mat"])
    assert one == two
    assert rouge("a", "a")["rouge_1"] == 1.0  # a bare string is one reference
    # the reference with the best ROUGE-1 gives every figure, even where another reference
    # has a better R-2 / R-L (a per-key maximum would report 1.0 for all three)
    got = rouge("a b c", ["c b a", "a b c d e f g h"])
    assert got["rouge_1"] == 1.0 and got["rouge_2"] == 0.0
    assert got == rouge("a b c", ["c b a"])
    # a tie on ROUGE-1 keeps the first reference
    assert rouge("a b c", ["c b a", "a b c"]) == rouge("a b c", ["c b a"])


#: hypotheses and reference lists where the multi-reference rules disagree, punctuation,
#: case, one and several references
TORCHMETRICS_CASES = [
    ("a b c", ["c b a", "a b c"]),
    ("a b c", ["c b a", "a b c d e f g h"]),
    ("The Cat sat on the mat!", ["the cat is on the mat", "A cat sat.", "mat on the cat sat the"]),
    ("I loved the plot, especially the ending twist.", ["The ending twist was great.",
                                                       "I loved the plot especially",
                                                       "twist ending the especially plot"]),
    ("it won three oscars in 1998", ["It won 3 Oscars.", "in 1998 it won three awards",
                                      "three oscars"]),
    ("nothing in common", ["totally different words here"]),
    ("", ["an empty reply scores zero"]),
]


@pytest.mark.parametrize("hypothesis,references", TORCHMETRICS_CASES)
def test_rouge_matches_torchmetrics_best(hypothesis, references):
    """Li et al. report ROUGE from torchmetrics (footnote 7) with accumulate='best'; the
    pinned torchmetrics (1.5.2, the rule of 0.7-1.5) is the oracle."""
    tm = pytest.importorskip("torchmetrics.functional.text")
    want = tm.rouge_score(hypothesis, [references], accumulate="best",
                          rouge_keys=("rouge1", "rouge2", "rougeL"))
    got = rouge(hypothesis, references)
    for key, name in (("rouge1", "rouge_1"), ("rouge2", "rouge_2"), ("rougeL", "rouge_L")):
        assert got[name] == pytest.approx(float(want[f"{key}_fmeasure"]), abs=1e-6), (name, got)


def test_rouge_needs_a_reference():
    with pytest.raises(ValueError, match="reference"):
        rouge("a", [])

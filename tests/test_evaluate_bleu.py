"""shoulders.evaluate.bleu: corpus BLEU through sacreBLEU, checked against hand-counted n-gram precisions."""
from __future__ import annotations

import math

import pytest

from shoulders.evaluate import bleu

REF = "the cat sat on the mat"


def test_identical_is_100_and_disjoint_is_0():
    assert bleu([REF, "a dog runs in the park"], [REF, "a dog runs in the park"]) == pytest.approx(100.0)
    assert bleu(["red green blue yellow"], ["one two three four"]) == pytest.approx(0.0)


def test_hand_computed_precisions():
    # hypothesis "the cat sat on the red mat" (7 tokens), reference 6 tokens: no brevity penalty.
    # matched 1-grams 6/7 (not "red"); 2-grams 4/6; 3-grams 3/5; 4-grams 2/4 ("the cat sat on", "cat sat on the")
    expected = 100 * (6 / 7 * 4 / 6 * 3 / 5 * 2 / 4) ** 0.25
    assert bleu(["the cat sat on the red mat"], [REF]) == pytest.approx(expected, abs=1e-9)


def test_brevity_penalty():
    # every n-gram of "the cat sat on the" is in the reference, but it is 5 tokens against 6: BP = exp(1 - 6/5)
    assert bleu(["the cat sat on the"], [REF]) == pytest.approx(100 * math.exp(1 - 6 / 5), abs=1e-9)


def test_corpus_level_sums_counts_not_sentence_scores():
    # sentence 1 is exact (6 tokens), sentence 2 the 7-token hypothesis above: counts add up over the corpus
    hyps, refs = [REF, "the cat sat on the red mat"], [REF, REF]
    p = [(6 + 6) / (6 + 7), (5 + 4) / (5 + 6), (4 + 3) / (4 + 5), (3 + 2) / (3 + 4)]
    expected = 100 * math.exp(sum(math.log(x) for x in p) / 4)
    assert bleu(hyps, refs) == pytest.approx(expected, abs=1e-9)


def test_token_lists_are_joined_and_case_matters_unless_lowercase():
    assert bleu([REF.split()], [REF.split()]) == pytest.approx(100.0)
    upper = "The Cat Sat On The Mat"
    assert bleu([upper], [REF]) < 1.0
    assert bleu([upper], [REF], lowercase=True) == pytest.approx(100.0)


def test_13a_splits_punctuation():
    # "mat." and "mat ." are the same tokens for the 13a tokeniser
    assert bleu(["the cat sat on the mat."], ["the cat sat on the mat ."]) == pytest.approx(100.0)


def test_length_mismatch_and_empty_are_errors():
    with pytest.raises(ValueError, match="one reference per hypothesis"):
        bleu(["a b"], ["a b", "c d"])
    with pytest.raises(ValueError, match="at least one"):
        bleu([], [])

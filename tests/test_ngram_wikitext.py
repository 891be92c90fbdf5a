"""n-gram LMs on a slice of WikiText-2 (quick; skipped without the data mirror): the zero problem grows with n,
Kneser-Ney beats add-k and interpolation, and the scored tokens are the stream's tokens."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from shoulders.data import mirror_folder, wikitext2
from shoulders.models import ngram

WT2 = mirror_folder("wikitext-2")  # SHOULDERS_DATA_MIRROR/wikitext-2, or None
pytestmark = pytest.mark.skipif(WT2 is None, reason="no WikiText-2 in the offline mirror: set SHOULDERS_DATA_MIRROR "
                                "to the book's shared/data folder")

TRAIN_LINES, VALID_LINES = 6000, 600  # ~340k / ~35k tokens: the whole file takes ~4 s to count, this ~0.5 s


@pytest.fixture(scope="module")
def data():
    train = wikitext2("train", root=WT2)[:TRAIN_LINES]
    valid = wikitext2("valid", root=WT2)[:VALID_LINES]
    return train, valid, ngram.count_ngrams(train, order=5)


def test_zero_problem_grows_with_n(data):
    train, valid, counts = data
    rates = ngram.oov_and_zero_rates(counts, valid, n_max=5)
    assert list(rates) == [1, 2, 3, 4, 5]
    r = [rates[n] for n in range(1, 6)]
    assert all(0 <= x <= 1 for x in r) and all(a < b for a, b in zip(r, r[1:])), r
    oov = np.mean([w not in counts.vocab for line in valid for w in line])
    assert rates[1] == pytest.approx(oov)  # the slice's vocabulary misses some words; all others are seen
    assert r[-1] > 0.5  # most 5-grams of new text were never seen
    # a brute-force check of the bigram rate
    seen = set()
    for line in train:
        toks = ["<s>"] + line
        seen |= {tuple(toks[j - 1: j + 1]) for j in range(1, len(toks))}
    pairs = [tuple((["<s>"] + line)[j - 1: j + 1]) for line in valid for j in range(1, len(line) + 1)]
    assert rates[2] == pytest.approx(np.mean([p not in seen for p in pairs]))


def test_model_size_grows_with_n(data):
    counts = data[2]
    sizes = [counts.num_ngrams(n) for n in range(1, 6)]
    assert all(a < b for a, b in zip(sizes, sizes[1:])), sizes


def test_kneser_ney_beats_add_k_and_interpolation(data):
    train, valid, counts = data
    ppl = {}
    for n in (1, 2, 3):
        for method in ("add_k", "interpolation", "kn", "mkn"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ngram.DiscountFallbackWarning)
                lm = ngram.NGramLM(counts, n, method)
            if method in ("add_k", "interpolation"):
                lm.tune(valid)  # their best case: tuned on the very data they are scored on
            ppl[method, n] = lm.perplexity(valid)
    for n in (2, 3):
        for kn in ("kn", "mkn"):
            assert ppl[kn, n] < ppl["add_k", n] and ppl[kn, n] < ppl["interpolation", n], ppl
    assert ppl["mkn", 1] > ppl["mkn", 2] > ppl["mkn", 3]
    assert all(np.isfinite(v) and v > 1 for v in ppl.values())


def test_scored_tokens_are_the_stream_tokens(data):
    train, valid, counts = data
    lm = ngram.NGramLM(counts, 5, "mkn")
    lp = lm.token_logprobs(valid)
    assert len(lp) == sum(map(len, valid))  # <s> is never predicted, <eos> always is
    assert np.all(np.isfinite(lp)) and np.all(lp < 0)
    assert lm.perplexity(valid) == pytest.approx(float(np.exp(-lp.mean())))
    assert lm.sample(max_len=20, rng=0)

"""Smoothing: every normalised model sums to 1 in every context, closed-form discounts, hand-checked values,
held-out tuning, sampling, and bad input (clear errors, standard backoff, never NaN)."""
from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest

from shoulders.models import ngram

WORDS = "the a cat dog sat on mat log saw ate big red".split()
NORMALISED = ["mle", "add_k", "interpolation", "absolute", "kn", "mkn", "katz"]
CONTEXTS = [(), ("the",), ("the", "cat"), ("cat", "sat", "on"), ("zebra", "quokka"), ("<s>", "<s>", "<s>"),
            ("<s>", "the"), ("big", "<eos>"), ("sat", "zebra", "the")]


def corpus(seed: int, lines: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(WORDS) for _ in range(rng.randint(0, 9))] + ["<eos>"] for _ in range(lines)]


@pytest.fixture(scope="module")
def counts():
    return ngram.count_ngrams(corpus(0, 200), order=4)


def make(counts, n, method, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ngram.DiscountFallbackWarning)
        return ngram.NGramLM(counts, n=n, smoothing=method, **kw)


@pytest.mark.parametrize("method", NORMALISED)
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_distributions_sum_to_one_and_match_logprob(counts, method, n):
    lm = make(counts, n, method)
    bos = counts.vocab["<s>"]
    for ctx in CONTEXTS:
        p = lm.distribution(ctx)
        assert p.shape == (len(counts.vocab),) and np.all(np.isfinite(p)) and np.all(p >= 0)
        assert abs(p.sum() - 1.0) < 1e-12, (method, n, ctx, p.sum())
        assert p[bos] == 0.0  # <s> is never predicted
        for w in ("the", "cat", "<eos>", "<unk>"):
            assert math.isclose(lm.score(w, ctx), p[counts.vocab[w]], rel_tol=1e-12, abs_tol=1e-300)


@pytest.mark.parametrize("method", NORMALISED)
def test_corpus_scoring_equals_single_queries(counts, method):
    """The vectorised sentence scorer agrees with logprob(word, up to n-1 words before it, from the line's <s>)."""
    lm = make(counts, 3, method)
    lines = corpus(7, 5) + [["zebra", "the", "<eos>"]]
    lp = lm.token_logprobs(lines)
    ref = []
    for line in lines:
        toks = ["<s>"] + line
        ref += [lm.logprob(toks[j], toks[max(0, j - 2): j]) for j in range(1, len(toks))]
    assert len(lp) == sum(map(len, lines))
    np.testing.assert_allclose(lp, ref, rtol=1e-12)
    if method != "mle":
        assert math.isclose(lm.perplexity(lines), math.exp(-np.mean(ref)), rel_tol=1e-12)


def test_mle_and_add_k_by_hand():
    counts = ngram.count_ngrams([["a", "b", "<eos>"], ["a", "c", "<eos>"], ["b", "<eos>"]], order=2)
    mle = ngram.NGramLM(counts, 2, "mle")
    assert mle.score("b", ["a"]) == pytest.approx(0.5) and mle.score("<eos>", ["b"]) == pytest.approx(1.0)
    assert mle.logprob("c", ["b"]) == -math.inf  # the zero problem: -inf, never NaN
    assert mle.score("a", ["<s>"]) == pytest.approx(2 / 3)
    assert mle.score("a", ["zebra"]) == pytest.approx(mle.score("a", ["<unk>"]))
    vp = len(counts.vocab) - 1  # predictable words: all but <s>
    add = ngram.NGramLM(counts, 2, "add_k", k=0.5)
    assert add.score("b", ["a"]) == pytest.approx((1 + 0.5) / (2 + 0.5 * vp))
    assert add.score("a", ["never-seen"]) == pytest.approx(1 / vp)  # <unk> context unseen: uniform
    assert mle.perplexity([["a", "c", "<eos>"]]) == pytest.approx((1 / (2 / 3 * 1 / 2 * 1)) ** (1 / 3))
    assert ngram.NGramLM(counts, 2, "mle").perplexity([["c", "b", "<eos>"]]) == math.inf


def test_kneser_ney_by_hand():
    """Interpolated KN, bigram, D = 0.5, on a corpus small enough to compute on paper."""
    counts = ngram.count_ngrams([["a", "b", "<eos>"], ["a", "b", "<eos>"], ["c", "b", "<eos>"]], order=2)
    lm = ngram.NGramLM(counts, 2, "kn", discount=0.5)
    vp = len(counts.vocab) - 1  # <unk> a b c <eos>
    # continuation unigram: N1+(. w) over bigram types {<s> a, a b, <s> c, c b, b <eos>}: a 1, b 2, c 1, <eos> 1
    continuation = {"a": 1, "b": 2, "c": 1, "<eos>": 1, "<unk>": 0}
    uni = {w: max(c - 0.5, 0) / 5 + 0.5 * 4 / 5 / vp for w, c in continuation.items()}
    assert lm.score("b", ()) == pytest.approx(uni["b"])
    # p(b | a) = (2 - 0.5)/2 + 0.5 * 1/2 * p_uni(b)
    assert lm.score("b", ["a"]) == pytest.approx(1.5 / 2 + 0.25 * uni["b"])
    assert lm.score("a", ["b"]) == pytest.approx(0.5 * 1 / 3 * uni["a"])  # b is followed by <eos> 3 times


def test_sentence_start_is_kenlm_s_convention():
    """A trigram model scores the first word by p(w | <s>) and the second by p(w | <s> w_1): one <s>, and an
    n-gram that starts with <s> keeps its raw count in Kneser-Ney (nothing precedes <s>), as in KenLM's lmplz."""
    counts = ngram.count_ngrams([["a", "b", "<eos>"], ["a", "b", "<eos>"], ["c", "b", "<eos>"]], order=3)
    lm = ngram.NGramLM(counts, 3, "kn", discount=0.5)
    uni = ngram.NGramLM(counts, 1, "kn", discount=0.5)  # order 1 of a trigram model uses continuation counts
    # order 2 after <s>: raw counts c(<s> a) = 2, c(<s> c) = 1 (their continuation counts would be 0)
    p1 = {w: lm.score(w, ()) for w in ("a", "b", "c", "<eos>", "<unk>")}
    p_a = (2 - 0.5) / 3 + 0.5 * 2 / 3 * p1["a"]
    assert lm.score("a", ["<s>"]) == pytest.approx(p_a)
    # order 3 (top) after <s> a: c(<s> a b) = 2, one follower
    p_b_a = lm.score("b", ["a"])  # order 2, continuation counts: N1+(. a b) = 1 (<s>), N1+(. a .) = 1
    assert p_b_a == pytest.approx((1 - 0.5) / 1 + 0.5 * 1 / 1 * p1["b"])
    assert lm.score("b", ["<s>", "a"]) == pytest.approx((2 - 0.5) / 2 + 0.5 * 1 / 2 * p_b_a)
    lp = lm.token_logprobs([["a", "b", "<eos>"]])
    np.testing.assert_allclose(lp, [lm.logprob("a", ["<s>"]), lm.logprob("b", ["<s>", "a"]),
                                    lm.logprob("<eos>", ["a", "b"])], rtol=1e-12)
    assert uni.score("a", ()) != p1["a"]  # a unigram model counts a raw, the trigram's unigram level does not
    add = ngram.NGramLM(counts, 3, "add_k", k=0.5)  # add-k also smooths the sentence start's shorter context
    vp = len(counts.vocab) - 1
    assert add.score("a", ["<s>"]) == pytest.approx((2 + 0.5) / (3 + 0.5 * vp))
    assert add.score("b", ["<s>", "a"]) == pytest.approx((2 + 0.5) / (2 + 0.5 * vp))
    assert add.score("a", ["b"]) == pytest.approx(1 / vp)  # lower orders elsewhere: uniform, as before


def test_mkn_discounts_closed_form(counts):
    lm = make(counts, 4, "mkn")
    for k in range(1, 5):  # adjusted counts: raw at the top order and for n-grams that start with <s>
        a = counts.table(k).counts if k == 4 else np.where(counts.starts_with_bos(k), counts.table(k).counts,
                                                            counts.continuation(k))
        n1, n2, n3, n4 = (int(np.sum(a == r)) for r in (1, 2, 3, 4))
        if min(n1, n2, n3, n4) == 0:
            assert lm.discounts[k - 1] == (0.5, 1.0, 1.5)
            continue
        y = n1 / (n1 + 2 * n2)
        want = (1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2, 3 - 4 * y * n4 / n3)
        if all(0 < d < r for d, r in zip(want, (1, 2, 3))):
            np.testing.assert_allclose(lm.discounts[k - 1], want, rtol=1e-12)
        else:
            assert lm.discounts[k - 1] == (0.5, 1.0, 1.5)
    assert ngram.mkn_discounts(np.array([1] * 10 + [2] * 4 + [3] * 3 + [4] * 2 + [9])) == pytest.approx(
        (1 - 2 * (10 / 18) * 4 / 10, 2 - 3 * (10 / 18) * 3 / 4, 3 - 4 * (10 / 18) * 2 / 3))


def test_mkn_fallback_warns_and_explicit_discounts():
    tiny = ngram.count_ngrams([["a", "b", "<eos>"]], order=2)
    with pytest.warns(ngram.DiscountFallbackWarning):
        ngram.NGramLM(tiny, 2, "mkn")
    lm = ngram.NGramLM(tiny, 2, "mkn", discounts=(0.4, 0.8, 1.2))
    assert lm.discounts == [(0.4, 0.8, 1.2)] * 2
    assert abs(lm.distribution(["a"]).sum() - 1) < 1e-12
    with pytest.raises(ValueError, match="D1"):
        ngram.NGramLM(tiny, 2, "mkn", discounts=(1.5, 1, 1))


def test_katz_discounts_closed_form():
    a = np.array([1] * 20 + [2] * 8 + [3] * 5 + [4] * 3 + [5] * 2 + [6] * 1 + [30])
    n = {r: int(np.sum(a == r)) for r in range(1, 7)}
    common = 6 * n[6] / n[1]
    d = ngram.katz_discounts(a, 5)
    for r in range(1, 6):
        assert d[r] == pytest.approx(((r + 1) * n[r + 1] / (r * n[r]) - common) / (1 - common))


def test_interpolation_em_improves_heldout(counts):
    valid = corpus(3, 60)
    lm = make(counts, 3, "interpolation", lambdas=[0.5, 0.5, 0.5])
    before = lm.perplexity(valid)
    lm.tune(valid)
    after = lm.perplexity(valid)
    assert after < before and all(0 < lam < 1 for lam in lm.params["lambdas"])
    other = make(counts, 3, "interpolation", lambdas=lm.params["lambdas"])
    for lam in ([0.9, 0.3, 0.3], [0.99, 0.7, 0.1]):  # EM's fixed point beats nearby settings
        assert make(counts, 3, "interpolation", lambdas=lam).perplexity(valid) > other.perplexity(valid) - 1e-9


def test_add_k_tuning(counts):
    valid = corpus(4, 60)
    lm = make(counts, 2, "add_k", k=1.0)
    before = lm.perplexity(valid)
    assert lm.tune(valid) is lm and lm.perplexity(valid) <= before
    with pytest.raises(ValueError, match="tune"):
        make(counts, 2, "mkn").tune(valid)


def test_stupid_backoff_is_not_a_probability(counts):
    lm = make(counts, 3, "stupid_backoff")
    assert not lm.normalized
    assert lm.score("cat", ["zebra", "the"]) == pytest.approx(0.4 * lm.score("cat", ["the"]))
    raw = np.array([lm.score(w, ["the", "cat"]) for w in counts.vocab.tokens])
    assert abs(raw.sum() - 1) > 1e-3  # scores do not sum to 1 ...
    assert abs(lm.distribution(["the", "cat"]).sum() - 1) < 1e-12  # ... the distribution is renormalised
    with pytest.raises(ValueError, match="not normalised"):
        lm.perplexity(corpus(5, 3))


def test_sampling(counts):
    lm = make(counts, 3, "mkn")
    a = lm.sample(max_len=15, rng=0)
    assert a == lm.sample(max_len=15, rng=np.random.default_rng(0)) and 1 <= len(a) <= 15
    assert all(w in counts.vocab and w != "<s>" for w in a)
    greedy = lm.sample(["the"], max_len=10, temperature=0)
    assert greedy == lm.sample(["the"], max_len=10, temperature=0)
    assert greedy[0] == lm.top_k(["<s>", "the"], 1)[0][0]
    long = lm.sample(max_len=200, rng=1)
    assert long[-1] == "<eos>" or len(long) == 200
    with pytest.raises(ValueError):
        lm.sample(temperature=-1)


def test_context_handling(counts):
    lm = make(counts, 3, "kn")
    assert lm.logprob("cat", ["a", "b", "the", "big"]) == lm.logprob("cat", ["the", "big"])  # last n-1 words
    assert lm.logprob("cat", "the big") == lm.logprob("cat", ("the", "big"))
    assert lm.logprob("zebra", ["the"]) == lm.logprob("<unk>", ["the"])  # unknown word -> <unk>
    assert np.isfinite(lm.logprob("cat", ["zebra", "quokka"]))  # unseen context: backoff
    with pytest.raises(TypeError):
        lm.logprob(3, ["the"])


@pytest.mark.parametrize("kwargs, err", [
    (dict(n=0), ValueError), (dict(n=5), ValueError), (dict(smoothing="witten_bell"), ValueError),
    (dict(smoothing="add_k", k=0), ValueError), (dict(smoothing="kn", discount=1.5), ValueError),
    (dict(smoothing="kn", discount=[0.5, 0.5]), ValueError), (dict(smoothing="kn", lambdas=[1]), TypeError),
    (dict(smoothing="interpolation", lambdas=[0.5]), ValueError), (dict(smoothing="kn", nltk=True), ValueError),
    (dict(smoothing="stupid_backoff", alpha=0), ValueError),
])
def test_bad_model_arguments(counts, kwargs, err):
    kwargs = {"n": 3, "smoothing": "kn", **kwargs}
    with pytest.raises(err):
        ngram.NGramLM(counts, **kwargs)


def test_bad_inputs_never_nan(counts):
    lm = make(counts, 3, "mkn")
    with pytest.raises(ValueError, match="no tokens"):
        lm.perplexity([[], []])
    with pytest.raises(TypeError):
        lm.perplexity("the cat")
    with pytest.raises(TypeError):
        ngram.NGramLM("counts", 2)
    for method in NORMALISED:
        m = make(counts, 3, method)
        lp = m.token_logprobs([["zebra", "quokka", "the", "<eos>"], ["<eos>"]])
        assert not np.any(np.isnan(lp))
        if method != "mle":
            assert np.all(np.isfinite(lp))
    auto = make(counts, 3, "kn", discount="auto")
    assert all(0 < d < 1 for d in auto.discounts) and abs(auto.distribution(["the"]).sum() - 1) < 1e-12

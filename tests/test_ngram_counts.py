"""n-gram counting by integer hashing equals brute-force counting; vocabulary and bad-input handling."""
from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from shoulders.models import ngram
from shoulders.text import Vocab

WORDS = "the a cat dog sat on mat log saw ate big red".split()


def corpus(seed: int = 0, lines: int = 80) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(WORDS) for _ in range(rng.randint(0, 9))] + ["<eos>"] for _ in range(lines)]


def brute(lines, order, pad=True):
    """Counter per order of the n-grams ending on a real token, each line after one <s> (KenLM's convention)."""
    out = {k: Counter() for k in range(1, order + 1)}
    for line in lines:
        p = 1 if pad else 0
        toks = ["<s>"] * p + list(line)
        for j in range(p, len(toks)):
            for k in range(1, order + 1):
                if j - k + 1 >= 0:
                    out[k][tuple(toks[j - k + 1: j + 1])] += 1
    return out


def table_as_counter(counts, k):
    itos = counts.vocab.tokens
    t = counts.table(k)
    return Counter({tuple(itos[i] for i in w): int(c) for w, c in zip(counts.words(k), t.counts) if c > 0})


@pytest.mark.parametrize("pad", [True, False])
def test_counts_equal_brute_force(pad):
    lines = corpus()
    counts = ngram.count_ngrams(lines, order=4, pad=pad)
    ref = brute(lines, 4, pad)
    for k in range(1, 5):
        assert table_as_counter(counts, k) == ref[k]
        assert counts.num_ngrams(k) == len(ref[k])
    assert counts.num_tokens == sum(map(len, lines))
    assert counts.count(("the", "cat")) == ref[2][("the", "cat")]
    assert counts.count("the") == ref[1][("the",)]
    assert counts.count(("zebra", "cat")) == 0


def test_lower_orders_do_not_depend_on_the_order():
    """One <s> per line: the order-k table is the same whether counted up to order k or order 5."""
    lines = corpus(1)
    big = ngram.count_ngrams(lines, order=5)
    for k in (1, 2, 3):
        assert table_as_counter(big, k) == table_as_counter(ngram.count_ngrams(lines, order=k), k)
        assert table_as_counter(big, k) == brute(lines, k)[k]


def test_one_bos_per_line_and_no_bos_prediction():
    counts = ngram.count_ngrams([["a", "b", "<eos>"], ["b", "<eos>"]], order=4)
    assert counts.count(("<s>", "a")) == 1 and counts.count(("<s>", "a", "b")) == 1
    assert counts.count(("<s>", "a", "b", "<eos>")) == 1 and counts.count(("<s>", "b", "<eos>")) == 1
    assert counts.count(("<s>", "<s>", "a")) == 0 and counts.count(("<s>", "<s>")) == 0  # never two <s>
    assert counts.count("<s>") == 0  # context only, never predicted
    assert counts.num_ngrams(1) == 3 and counts.num_tokens == 5
    assert counts.num_ngrams(4) == 1  # only <s> a b <eos> fits in a line
    itos = counts.vocab.tokens
    for k in range(1, 5):  # starts_with_bos marks exactly the rows whose first word is <s>
        want = [itos[w[0]] == "<s>" for w in counts.words(k)]
        assert counts.starts_with_bos(k).tolist() == want
    unpadded = ngram.count_ngrams([["<s>", "a", "</s>"]], order=2, pad=False)
    assert not unpadded.starts_with_bos(2).any() and not unpadded.starts_with_bos(1).any()


def test_continuation_counts_equal_brute_force():
    lines = corpus(2)
    counts = ngram.count_ngrams(lines, order=3)
    ref = brute(lines, 3)
    for k in (1, 2):
        cont = Counter()
        for g in ref[k + 1]:
            cont[g[1:]] += 1  # N1+(. g): distinct left extensions
        itos = counts.vocab.tokens
        got = {tuple(itos[i] for i in w): int(c) for w, c in zip(counts.words(k), counts.continuation(k)) if c > 0}
        assert got == dict(cont)
    cc = counts.count_of_counts(2, "continuation")
    c2 = np.array(list(Counter(v for v in Counter(g[1:] for g in ref[3]).values()).get(r, 0) for r in (1, 2, 3, 4)))
    assert cc.tolist() == c2.tolist()
    with pytest.raises(ValueError, match="1..2"):
        counts.continuation(3)


def test_vocab_given_and_unknown_tokens():
    v = Vocab.build([["a", "b"]], unk=None)  # no <unk>, no <s>
    counts = ngram.count_ngrams([["a", "b", "zzz", "a"]], order=2, vocab=v)
    assert counts.vocab["a"] == v["a"] and counts.vocab["b"] == v["b"]  # ids kept
    assert "<s>" in counts.vocab and counts.vocab.unk == "<unk>"
    assert counts.count(("<unk>",)) == 1 and counts.count(("b", "<unk>")) == 1
    assert counts.count(("qqq",)) == 1  # an unknown query word is <unk> too
    built = ngram.count_ngrams([["x", "x", "y"]], order=2, min_freq=2)
    assert "y" not in built.vocab and built.count(("<unk>",)) == 1


def test_most_common_and_repr():
    counts = ngram.count_ngrams([["a", "b", "a", "b", "c"]], order=2)
    assert counts.most_common(2, 1) == [(("a", "b"), 2)]
    assert "order=2" in repr(counts)


@pytest.mark.parametrize("bad, err", [
    ([], ValueError), ([[], []], ValueError), ("the cat", TypeError), (["the", "cat"], TypeError),
])
def test_bad_corpus(bad, err):
    with pytest.raises(err):
        ngram.count_ngrams(bad, order=2)


@pytest.mark.parametrize("order", [0, -1, 2.5, True])
def test_bad_order(order):
    with pytest.raises(ValueError, match="order"):
        ngram.count_ngrams([["a"]], order=order)


def test_bad_n_queries():
    counts = ngram.count_ngrams([["a", "b"]], order=2)
    for n in (0, 3):
        with pytest.raises(ValueError, match="n must be"):
            counts.num_ngrams(n)
    with pytest.raises(ValueError, match="min_freq"):
        ngram.count_ngrams([["a"]], order=1, vocab=counts.vocab, min_freq=2)

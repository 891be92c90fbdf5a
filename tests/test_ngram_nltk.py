"""Interpolated Kneser-Ney equals an independent implementation: NLTK's ``KneserNeyInterpolated``.

NLTK (test-only dependency) pads with n-1 <s> and n-1 </s>, ends its recursion at the undiscounted continuation
unigram, counts a lower-order context's followers in the raw counts, uses one discount (0.1 by default) and maps
unknown words to "<UNK>"; ``ngram.nltk_kneser_ney`` reproduces exactly those conventions (see ``NGramLM``).
"""
from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from shoulders.models import ngram

nltk_lm = pytest.importorskip("nltk.lm")
from nltk.lm.preprocessing import padded_everygram_pipeline  # noqa: E402

WORDS = "the a cat dog sat on mat log saw ate big red <unk>".split()


def sentences(seed: int = 0, n: int = 60) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(WORDS) for _ in range(rng.randint(1, 8))] for _ in range(n)]


def nltk_model(sents, order, discount):
    train, vocab = padded_everygram_pipeline(order, sents)
    ref = nltk_lm.KneserNeyInterpolated(order, discount=discount)
    ref.fit(train, vocab)
    return ref


@pytest.mark.parametrize("order, discount", [(2, 0.1), (3, 0.1), (3, 0.75), (4, 0.1), (4, 0.5)])
def test_kneser_ney_equals_nltk(order, discount):
    sents = sentences(order)
    ref = nltk_model(sents, order, discount)
    lm = ngram.nltk_kneser_ney(sents, order=order, discount=discount)
    rng = random.Random(1)
    toks = ["<s>", "</s>", "zebra"] + WORDS  # zebra: unknown to both (NLTK's <UNK>: probability 0)
    contexts = [c for L in range(order) for c in itertools.product(toks, repeat=L)]
    contexts = contexts[:1 + len(toks)] + rng.sample(contexts, min(len(contexts), 120))  # short ones + a sample
    seen = set()  # and the training contexts, so seen contexts at every order are covered
    for s in sents:
        padded = ["<s>"] * (order - 1) + s + ["</s>"] * (order - 1)
        seen |= {tuple(padded[j - order + 1: j]) for j in range(order - 1, len(padded))}
    contexts += rng.sample(sorted(seen), min(len(seen), 100))
    ours = np.array([[lm.score(w, c) for w in toks] for c in contexts])
    theirs = np.array([[ref.score(w, c) for w in toks] for c in contexts])
    assert ours.shape[0] >= min(150, 1 + 2 * len(toks))
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
    assert np.all(ours[:, toks.index("zebra")] == 0)


def test_nltk_mode_differs_from_standard_kn():
    """The conventions matter: our standard KN never predicts <s> and gives unseen words a uniform floor."""
    sents = sentences(9)
    ref = nltk_model(sents, 3, 0.1)
    counts = ngram.count_ngrams([s + ["</s>"] for s in sents], order=3)
    ours = ngram.NGramLM(counts, 3, "kn", discount=0.1)
    assert ref.score("<s>", ("<s>", "<s>")) > 0 and ours.score("<s>", ("<s>", "<s>")) == 0
    assert ref.score("zebra", ("the", "cat")) == 0 and ours.score("zebra", ("the", "cat")) > 0

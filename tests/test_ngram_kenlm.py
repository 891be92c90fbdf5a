"""Our n-gram models against KenLM, the reference implementation (DESIGN.md §9: check against tools nobody here wrote).

* KenLM's Python module (``kenlm``, in the ``[test]`` extra) reads the ARPA files we write and scores sentences
  within 1e-4 log10 of our own scorer, token by token (KenLM stores float32 values: ~1e-6 is what it reaches).
* KenLM's estimator ``lmplz`` and its ``query``, trained and scored on the same WikiText-2 text, give the same
  modified Kneser-Ney discounts and test perplexity as ours, at orders 2-5. Those two are programs built from
  https://github.com/kpu/kenlm (``cmake`` + ``make lmplz query``), not Python packages: the test looks for them in
  ``$KENLM_BIN`` or on ``PATH`` and is skipped without them (CI does not build them).
"""
from __future__ import annotations

import math
import os
import random
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from shoulders.data import mirror_folder, wikitext2
from shoulders.models import ngram

WORDS = "the a cat dog sat on mat log saw ate big red".split()
WT2 = mirror_folder("wikitext-2")  # SHOULDERS_DATA_MIRROR/wikitext-2, or None
NO_WT2 = "no WikiText-2 in the offline mirror: set SHOULDERS_DATA_MIRROR to the book's shared/data folder"


def corpus(seed: int, lines: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(WORDS) for _ in range(rng.randint(0, 9))] + ["<eos>"] for _ in range(lines)]


def kenlm_log10(model, lines: list[list[str]]) -> np.ndarray:
    """log10 p of every token as KenLM scores ``<s> w_1 .. w_T </s>`` (our line ``w_1 .. w_T <eos>``)."""
    out = []
    for line in lines:
        assert line[-1] == "<eos>"
        out += [s[0] for s in model.full_scores(" ".join(line[:-1]), bos=True, eos=True)]
    return np.array(out)


@pytest.mark.parametrize("method", ["mkn", "kn", "katz", "interpolation", "absolute", "add_k"])
@pytest.mark.parametrize("precision", [None, 7])
def test_kenlm_reads_our_arpa_and_scores_like_us(tmp_path, method, precision):
    kenlm = pytest.importorskip("kenlm", reason="KenLM's Python module is not installed (pip install kenlm; it is "
                                "in the [test] extra and compiles from source)")
    counts = ngram.count_ngrams(corpus(0, 300), order=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ngram.DiscountFallbackWarning)
        lm = ngram.NGramLM(counts, n=4, smoothing=method)
    path = ngram.write_arpa(lm, tmp_path / f"{method}.arpa", precision=precision)
    assert "</s>" in path.read_text(encoding="utf-8") and "<eos>" not in path.read_text(encoding="utf-8")
    model = kenlm.Model(str(path))
    assert model.order == 4
    lines = corpus(5, 40) + [["<eos>"], ["zebra", "the", "<eos>"], ["the", "cat", "zebra", "sat", "<eos>"]]
    ours = lm.token_logprobs(lines) / math.log(10)
    theirs = kenlm_log10(model, lines)
    assert theirs.shape == ours.shape
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-4)
    back = ngram.load_arpa(path)  # and our reader maps </s> back to <eos>
    assert back.vocab.tokens == lm.vocab.tokens
    np.testing.assert_allclose(back.token_logprobs(lines), lm.token_logprobs(lines),
                               rtol=1e-12 if precision is None else 1e-5)


@pytest.mark.skipif(WT2 is None, reason=NO_WT2)
def test_kenlm_scores_our_wikitext_5gram_like_us(tmp_path):
    kenlm = pytest.importorskip("kenlm", reason="KenLM's Python module is not installed (pip install kenlm)")
    train = wikitext2("train", root=WT2)[:6000]
    valid = wikitext2("valid", root=WT2)[:400]
    lm = ngram.NGramLM(ngram.count_ngrams(train, order=5), n=5, smoothing="mkn")
    model = kenlm.Model(str(ngram.write_arpa(lm, tmp_path / "wt2.arpa")))
    ours = lm.token_logprobs(valid) / math.log(10)
    theirs = kenlm_log10(model, valid)
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-4)
    assert abs(10 ** -theirs.mean() / 10 ** -ours.mean() - 1) < 1e-6  # the perplexities


# ---------------------------------------------------------------------------------------------- lmplz and query
def kenlm_program(name: str) -> str | None:
    folder = os.environ.get("KENLM_BIN", "").strip()
    if folder:
        path = Path(folder) / name
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(name)


LMPLZ, QUERY = kenlm_program("lmplz"), kenlm_program("query")
NO_KENLM = pytest.mark.skipif(
    LMPLZ is None or QUERY is None,
    reason="KenLM's lmplz and query are not found: build them from https://github.com/kpu/kenlm (cmake, then "
           "make lmplz query) and set KENLM_BIN to the folder holding them (or put them on PATH)")


@pytest.fixture(scope="module")
def wikitext_for_kenlm(tmp_path_factory):
    """WikiText-2 train and test as KenLM reads text: one sentence a line, without the final ``<eos>`` (KenLM adds
    ``</s>``), and ``<unk>`` renamed to a plain word (lmplz reserves ``<unk>`` for words it never saw)."""
    if WT2 is None:
        pytest.skip(NO_WT2)
    train, test = wikitext2("train", root=WT2), wikitext2("test", root=WT2)
    vocab = {w for line in train for w in line}
    plain = "UNKNOWN_WORD"
    while plain in vocab:
        plain += "_"
    folder = tmp_path_factory.mktemp("kenlm")
    for name, lines in (("train", train), ("test", test)):
        with open(folder / f"{name}.txt", "w", encoding="utf-8") as f:
            f.writelines(" ".join(plain if w == "<unk>" else w for w in line[:-1]) + "\n" for line in lines)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ngram.DiscountFallbackWarning)  # like lmplz without --discount_fallback
        counts = ngram.count_ngrams(train, order=5)
    return folder, counts, test


@NO_KENLM
@pytest.mark.parametrize("order", [2, 3, 4, 5])
def test_lmplz_agrees_with_our_modified_kneser_ney(wikitext_for_kenlm, order):
    """Both sides: interpolated modified Kneser-Ney of order ``order`` on all of WikiText-2 train, discounts
    estimated from the count-of-counts of the adjusted counts, nothing pruned, no discount fallback -- ours is
    ``NGramLM(count_ngrams(train, order=5), n=order, smoothing="mkn")``, theirs ``lmplz -o order -S 1G`` (its
    defaults: unigrams interpolated with the uniform distribution, no pruning, and no ``--discount_fallback``,
    so it would stop rather than guess a discount). Scored on WikiText-2 test: ``query`` on lmplz's ARPA file,
    ``perplexity`` for ours; one ``<s>`` and ``</s>`` (our ``<eos>``) per line on both sides. The one modelling
    difference: lmplz's vocabulary has one more word, its own ``<unk>`` (count 0; WikiText's ``<unk>`` is renamed
    for it, see the fixture), which takes 1/|V| of the unigram level's uniform share.
    """
    folder, counts, test = wikitext_for_kenlm
    arpa = folder / f"lmplz{order}.arpa"
    with open(folder / "train.txt", "rb") as src, open(arpa, "wb") as dst:
        run = subprocess.run([LMPLZ, "-o", str(order), "-S", "1G", "-T", str(folder)], stdin=src, stdout=dst,
                             stderr=subprocess.PIPE, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    stats = {int(m.group(1)): tuple(float(m.group(i)) for i in (2, 3, 4)) for m in re.finditer(
        r"^(\d+) \d+ D1=(\S+) D2=(\S+) D3\+=(\S+)$", run.stderr, flags=re.M)}
    with open(folder / "test.txt", "rb") as src:
        q = subprocess.run([QUERY, "-v", "summary", str(arpa)], stdin=src, capture_output=True, text=True,
                           timeout=900)
    assert q.returncode == 0, q.stderr[-2000:]
    theirs = float(re.search(r"Perplexity including OOVs:\s*(\S+)", q.stdout).group(1))
    assert int(re.search(r"Tokens:\s*(\d+)", q.stdout).group(1)) == sum(map(len, test))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ngram.DiscountFallbackWarning)
        lm = ngram.NGramLM(counts, n=order, smoothing="mkn")
    ours = lm.perplexity(test)
    assert sorted(stats) == list(range(1, order + 1))
    ds = np.array(lm.discounts)
    np.testing.assert_allclose(ds[1:], np.array([stats[k] for k in range(2, order + 1)]),
                               rtol=1e-4)  # lmplz prints 6 digits of its float32 discounts
    # order 1: lmplz counts the last unigram of its stream (by id) in the count-of-counts with its raw count, not
    # its adjusted count (AdjustCounts::Run, the loop after "This outputs the last n-grams"): on WikiText-2 that
    # moves one word from n_2 to n_3, and the unigram discounts move by < 0.1%
    np.testing.assert_allclose(ds[0], np.array(stats[1]), rtol=1e-3)
    assert abs(ours / theirs - 1) < 5e-4, (order, ours, theirs)  # within 0.05%

"""ARPA export: the file is valid ARPA, and reading it back scores exactly like the model that wrote it."""
from __future__ import annotations

import math
import random
import re
import warnings

import numpy as np
import pytest

from shoulders.models import ngram
from shoulders.models.ngram_counts import rows_to_words

WORDS = "the a cat dog sat on mat log saw ate big red".split()


def corpus(seed: int, lines: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(WORDS) for _ in range(rng.randint(0, 9))] + ["<eos>"] for _ in range(lines)]


@pytest.fixture(scope="module")
def counts():
    return ngram.count_ngrams(corpus(0, 150), order=3)


def model(counts, method, n=3):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ngram.DiscountFallbackWarning)
        return ngram.NGramLM(counts, n, method)


def parse(path):
    """A strict, independent reading of the file: header, sections {k: [(log10 p, words, log10 bow|None)]}."""
    text = path.read_text(encoding="utf-8").split("\n")
    assert text[0] == "\\data\\" and text[-2:] == ["\\end\\", ""]
    header, i = {}, 1
    while (m := re.fullmatch(r"ngram (\d+)=(\d+)", text[i])):
        header[int(m.group(1))] = int(m.group(2))
        i += 1
    sections, k = {}, None
    for line in text[i:-2]:
        if not line:
            continue
        if (m := re.fullmatch(r"\\(\d+)-grams:", line)):
            k = int(m.group(1))
            sections[k] = []
            continue
        parts = line.split("\t")
        assert len(parts) in (2, 3), line
        words = tuple(parts[1].split(" "))
        assert len(words) == k
        sections[k].append((float(parts[0]), words, float(parts[2]) if len(parts) == 3 else None))
    return header, sections


@pytest.mark.parametrize("method", ["mkn", "kn", "katz", "interpolation", "absolute", "add_k", "mle"])
def test_arpa_is_valid(tmp_path, counts, method):
    lm = model(counts, method)
    path = tmp_path / "lm.arpa"
    ngram.write_arpa(lm, path)
    header, sections = parse(path)
    assert sorted(header) == sorted(sections) == [1, 2, 3]
    for k in header:
        assert header[k] == len(sections[k]) == lm.sizes[k - 1]  # header counts = section lines
        assert len({w for _, w, _ in sections[k]}) == len(sections[k])  # no duplicates
        assert all(lp <= 1e-12 for lp, _, _ in sections[k])  # log10 probabilities
        assert all(-99 <= lp for lp, _, _ in sections[k])
    assert all(b is None for _, _, b in sections[3])  # no backoff weights at the top order
    entries = {k: {w: (lp, b) for lp, w, b in sections[k]} for k in sections}
    for k in (2, 3):
        for w in entries[k]:
            assert w[:-1] in entries[k - 1] and entries[k - 1][w[:-1]][1] is not None  # context has a bow
            assert w[1:] in entries[k - 1]  # and the suffix is there to back off to
    assert entries[1][("<s>",)][0] == -99  # <s> is never predicted: log10 0
    assert sum(10 ** lp for lp, _, _ in sections[1]) == pytest.approx(1.0, abs=1e-9)
    # log10 values: every stored n-gram equals log10 of the model's probability
    named = {"</s>": "<eos>"}  # the file calls our end token by the ARPA name
    for k in (1, 2, 3):
        for lp, words, _ in sections[k]:
            w = [named.get(x, x) for x in words]
            p = lm.score(w[-1], w[:-1])
            assert lp == pytest.approx(math.log10(p) if p > 0 else -99.0, abs=1e-12), (k, words)
    assert ("</s>",) in entries[1] and ("<eos>",) not in entries[1]


@pytest.mark.parametrize("method", ["mkn", "kn", "katz", "interpolation", "mle"])
def test_arpa_round_trip_scores_identically(tmp_path, counts, method):
    lm = model(counts, method)
    path = tmp_path / "lm.arpa"
    ngram.write_arpa(lm, path)
    back = ngram.NGramLM.from_arpa(path)
    assert back.n == lm.n and back.sizes == lm.sizes and back.vocab.tokens == lm.vocab.tokens
    words = lm.vocab.tokens + ["zebra"]
    contexts = [(), ("the",), ("the", "cat"), ("<s>", "<s>"), ("<s>", "the"), ("zebra", "cat"), ("cat", "zebra"),
                ("<eos>", "the")]
    for ctx in contexts:
        a = np.array([lm.logprob(w, ctx) for w in words])
        b = np.array([back.logprob(w, ctx) for w in words])
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=0)  # -inf == -inf for mle zeros
        np.testing.assert_allclose(back.distribution(ctx), lm.distribution(ctx), rtol=1e-12, atol=1e-300)
    test = corpus(5, 30)
    np.testing.assert_allclose(back.token_logprobs(test), lm.token_logprobs(test), rtol=1e-12)


def test_format_decimals_matches_printf():
    rng = np.random.default_rng(0)
    x = np.concatenate([-rng.random(5000) * 5, -rng.random(2000) * 1e-3, -rng.random(500) * 99, rng.random(500) * 3,
                        [-99.0, 0.0, -0.0, -1.0, -10.0, -0.1, 5.5, 123.456, -1e-05, -3.2e-07, -1e-300, 1234.5]])
    with np.errstate(divide="ignore"):
        e = np.floor(np.log10(np.abs(x)))
    for digits in (17, 12, 7, 3, 1):
        m = ngram.format_decimals(x, digits)
        text = [bytes(row[row != 0]).decode() for row in m]
        got, want = np.array([float(t) for t in text]), np.array([float(f"%.{digits}g" % v) for v in x])
        exact = (x == 0) | ((e >= digits - 23) & (e <= digits - 1))  # where 10**(digits - 1 - e) is a float64
        assert np.array_equal(got[exact], want[exact]), digits  # correctly rounded, as printf
        np.testing.assert_allclose(got, x, rtol=10.0 ** (1 - digits) + 1e-15, atol=0)
        fixed = [t for t in text if "e" not in t]
        assert not [t for t in fixed if t.endswith(".") or ("." in t and t.endswith("0"))]  # no trailing zeros
    back = np.array([float(bytes(row[row != 0])) for row in ngram.format_decimals(x)])
    assert np.array_equal(back[np.abs(x) >= 1e-6], x[np.abs(x) >= 1e-6])  # 17 digits read back exactly
    assert [bytes(r[r != 0]).decode() for r in ngram.format_decimals(np.array([-99.0, 0.0, -2.5, -1e-7]))] == [
        "-99", "0", "-2.5", "-1e-07"]
    with pytest.raises(ValueError, match="non-finite"):
        ngram.format_decimals(np.array([np.nan]))


def test_long_tokens_and_threads_write_the_same_lines(tmp_path):
    """Lines with a token longer than the matrix width (the longest 0.1% of tokens) are written whole, in place."""
    rng = random.Random(1)
    short = [f"w{i}" for i in range(1500)]
    long = ["x" * 40, "y" * 75 + "é"]
    lines = [[rng.choice(short if rng.random() < 0.97 else long) for _ in range(rng.randint(1, 12))] + ["<eos>"]
             for _ in range(3000)]
    lm = model(ngram.count_ngrams(lines, order=3), "mkn")
    one = ngram.write_arpa(lm, tmp_path / "one.arpa")
    two = ngram.write_arpa(lm, tmp_path / "two.arpa", threads=2)
    assert one.read_bytes() == two.read_bytes()
    header, sections = parse(one)
    itos = lm.vocab.tokens
    for k in (1, 2, 3):  # every line, in key order, with the model's exact values
        words = [tuple("</s>" if itos[i] == "<eos>" else itos[i] for i in w) for w in
                 rows_to_words(lm._keys[:k], len(itos))]
        assert [w for _, w, _ in sections[k]] == words
        with np.errstate(divide="ignore"):
            want = np.where(lm._prob[k - 1] > 0, np.log10(lm._prob[k - 1]), -99.0)
        assert np.array_equal([lp for lp, _, _ in sections[k]], want)  # 17 digits: the values, to the last bit
    assert any(long[1] in w for _, w, _ in sections[2])
    back = ngram.load_arpa(one)
    np.testing.assert_allclose(back.token_logprobs(lines[:50]), lm.token_logprobs(lines[:50]), rtol=1e-12)


def test_reads_kenlm_s_sentence_end_as_ours(tmp_path):
    """A file with </s> (lmplz, SRILM) scores our lines, which end in <eos>; eos="</s>" keeps the file's name."""
    path = tmp_path / "k.arpa"
    path.write_text("\n".join([
        "\\data\\", "ngram 1=4", "ngram 2=2", "", "\\1-grams:", "-1\t<unk>\t0", "0\t<s>\t-0.5",
        "-0.5\t</s>\t0", "-0.4\ta\t-0.2", "", "\\2-grams:", "-0.1\t<s> a", "-0.3\ta </s>", "", "\\end\\", ""]),
        encoding="utf-8")
    lm = ngram.load_arpa(path)
    assert "<eos>" in lm.vocab and "</s>" not in lm.vocab
    np.testing.assert_allclose(lm.token_logprobs([["a", "<eos>"]]) / math.log(10), [-0.1, -0.3])
    kept = ngram.load_arpa(path, eos="</s>")
    assert "</s>" in kept.vocab and kept.logprob("</s>", ["a"]) == pytest.approx(-0.3 * math.log(10))


def test_arpa_seven_digits(tmp_path, counts):
    lm = model(counts, "mkn")
    path = tmp_path / "lm7.arpa"
    ngram.write_arpa(lm, path, precision=7)
    back = ngram.load_arpa(path)
    test = corpus(6, 30)
    diff = np.abs(back.token_logprobs(test) - lm.token_logprobs(test)) / math.log(10)  # in log10 units
    assert diff.max() < 1e-6 * 3  # a score sums up to n stored (rounded) log10 values


def test_stupid_backoff_cannot_be_written(tmp_path, counts):
    with pytest.raises(ValueError, match="ARPA"):
        ngram.write_arpa(model(counts, "stupid_backoff"), tmp_path / "sb.arpa")


def test_reads_a_hand_written_srilm_style_file(tmp_path):
    """One <s> (SRILM/KenLM convention), </s>, missing bows = 0, the two-<s> padding backs off cleanly."""
    path = tmp_path / "hand.arpa"
    path.write_text("\n".join([
        "some preamble", "", "\\data\\", "ngram 1=4", "ngram 2=2", "", "\\1-grams:",
        "-99\t<s>\t-0.30103", "-0.30103\ta\t-0.5", "-0.60206\tb", "-0.60206\t</s>", "",
        "\\2-grams:", "-0.1\t<s> a", "-0.2\ta b", "", "\\end\\", ""]), encoding="utf-8")
    lm = ngram.load_arpa(path, eos="</s>")
    assert lm.logprob("a", ["<s>"]) == pytest.approx(-0.1 * math.log(10))
    assert lm.logprob("b", ["<s>"]) == pytest.approx((-0.30103 - 0.60206) * math.log(10))
    assert lm.logprob("</s>", ["a"]) == pytest.approx((-0.5 - 0.60206) * math.log(10))
    assert lm.logprob("a", ["b"]) == pytest.approx(-0.30103 * math.log(10))  # b has no bow: log10 1
    assert lm.vocab.unk is None
    with pytest.raises(KeyError, match="zebra"):
        lm.logprob("zebra", ["a"])


@pytest.mark.parametrize("text, msg", [
    ("hello\n", "no \\\\data"),
    ("\\data\\\nngram 1=2\n\n\\1-grams:\n-1\ta\n\n\\end\\\n", "ngram 1=2"),
    ("\\data\\\nngram 1=1\n\n\\1-grams:\n-1\ta\n", "truncated"),
    ("\\data\\\nngram 1=1\nngram 2=1\n\n\\1-grams:\n-1\ta\n\\2-grams:\n-1\tb a\n\\end\\\n", "not among"),
    ("\\data\\\nngram 1=2\nngram 2=1\nngram 3=1\n\n\\1-grams:\n-1\ta\n-1\tb\n\\2-grams:\n-1\ta b\n"
     "\\3-grams:\n-1\tb a b\n\\end\\\n", "no entry for its context"),
    ("\\data\\\nngram 1=1\n\n\\1-grams:\n-1\ta b c\n\\end\\\n", "1-gram line"),
    ("\\data\\\nngram 1=1\n\n\\1-grams:\nx\ta\n\\end\\\n", "not a number"),
    ("\\data\\\nngram 1=1\n\n\\1-grams:\nnan\ta\n\\end\\\n", "non-finite"),
])
def test_bad_arpa_files(tmp_path, text, msg):
    path = tmp_path / "bad.arpa"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=msg):
        ngram.load_arpa(path)


def test_malformed_arpa_is_refused_with_the_line_number(tmp_path):
    """A log10 probability above 0 used to load (a distribution summing to 100,003, perplexity 0.0018)."""
    good = "\\data\\\nngram 1=3\nngram 2=1\n\n\\1-grams:\n-0.5\t<s>\t-0.3\n-0.4\ta\t-0.2\n-0.6\t</s>\n\n" \
           "\\2-grams:\n-0.1\t<s> a\n\n\\end\\\n"
    (tmp_path / "good.arpa").write_text(good)
    ngram.read_arpa(tmp_path / "good.arpa")
    cases = {
        "positive": (good.replace("-0.4\ta", "5.0\ta"), r"line 7: log10 probability 5.0 of 'a' is above 0"),
        "nan": (good.replace("-0.1\t<s> a", "nan\t<s> a"), r"line 11: non-finite value 'nan' in the 2-grams"),
        "word": (good.replace("-0.6\t</s>", "oops\t</s>"), r"line 8: not a number in the 1-grams: 'oops'"),
        "bow": (good.replace("-0.3", "inf"), r"line 6: non-finite value 'inf' in the 1-grams"),
        "short": (good.replace("-0.1\t<s> a", "-0.1\t<s>"), r"line 11: a 2-gram line needs"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / f"{name}.arpa").write_text(text)
        with pytest.raises(ValueError, match=message):
            ngram.read_arpa(tmp_path / f"{name}.arpa")

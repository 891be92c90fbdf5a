"""n-gram LM benchmark: build + evaluate a 5-gram modified Kneser-Ney model on WikiText-2, against NLTK.

    SHOULDERS_DATA_MIRROR=../shared/data python benchmarks/ngram.py            # ours (full) + NLTK (slice)
    python benchmarks/ngram.py --all                                          # + every method, n = 1..5
    python benchmarks/ngram.py --nltk-tokens 50000 --nltk-ngrams 300          # a smaller NLTK slice

Runs on one core (OMP/MKL/OpenBLAS threads = 1, ``torch.set_num_threads(1)`` if torch is there).

1. **Ours, full data**: count orders 1..5 on WikiText-2 train (2,088,628 tokens), fit modified KN, perplexity on
   valid and test (sentence-wise, 217,646 / 245,569 predicted tokens); wall time per stage, peak RSS.
2. **Against NLTK** (``nltk.lm.KneserNeyInterpolated``, order 5, its default discount 0.1), on the largest slice it
   can do in reasonable time: fit on the first ``--nltk-tokens`` training tokens, score the first
   ``--nltk-ngrams`` 5-grams of valid (NLTK-padded). Ours does the same work in its NLTK-compatible mode
   (``ngram.nltk_kneser_ney``: NLTK's padding and ``<UNK>``, ``kn`` with ``nltk=True``); the scores must agree, and the
   ratio of the times is printed. NLTK scores one n-gram by scanning every stored n-gram of the next order
   (its continuation counts are not cached), so its time per score grows with the corpus.
3. ``--all``: valid/test perplexity of every smoothing method for n = 1..5 (interpolation and add-k tuned on
   valid; ``kn_auto`` = KN with D = n1/(n1 + 2 n2) per order), with the time of each.
4. ``--arpa``: write the 5-gram model as ARPA and read it back (pure Python text I/O: tens of seconds).
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

try:
    import torch  # noqa: E402

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    torch = None

import shoulders as sh  # noqa: E402
from shoulders.models import ngram  # noqa: E402


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def ours_full(train, valid, test) -> float:
    print("== ours: 5-gram modified Kneser-Ney on full WikiText-2 (one core) ==")
    t0 = time.perf_counter()
    counts = ngram.count_ngrams(train, order=5)
    t1 = time.perf_counter()
    lm = ngram.NGramLM(counts, n=5, smoothing="mkn")
    t2 = time.perf_counter()
    pv = lm.perplexity(valid)
    pt = lm.perplexity(test)
    t3 = time.perf_counter()
    print(f"  {counts}")
    print(f"  count {t1 - t0:.2f} s | fit {t2 - t1:.2f} s | perplexity valid+test {t3 - t2:.2f} s "
          f"| total build+evaluate {t3 - t0:.2f} s (target <= 60 s)")
    print(f"  perplexity: valid {pv:.2f}, test {pt:.2f}   (|V| = {len(counts.vocab) - 1:,} predictable words)")
    print("  discounts per order (D1, D2, D3+): " + "; ".join(
        "(" + ", ".join(f"{d:.3f}" for d in ds) + ")" for ds in lm.discounts))
    print(f"  peak RSS so far {peak_rss_mb():,.0f} MB")
    return t3 - t0


def arpa_round_trip(train, valid) -> None:
    import tempfile
    from pathlib import Path

    print("== ARPA: write and read back the 5-gram modified-KN model ==")
    lm = ngram.NGramLM(ngram.count_ngrams(train, order=5), n=5, smoothing="mkn")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "wt2-5gram-mkn.arpa"
        t0 = time.perf_counter()
        ngram.write_arpa(lm, path)
        t1 = time.perf_counter()
        back = ngram.load_arpa(path)
        t2 = time.perf_counter()
        diff = float(np.max(np.abs(back.token_logprobs(valid) - lm.token_logprobs(valid))))
        print(f"  {path.stat().st_size / 1e6:,.0f} MB, {sum(lm.sizes):,} entries: write {t1 - t0:.1f} s, "
              f"read {t2 - t1:.1f} s; max |ln p difference| on valid {diff:.1e}")


def first_tokens(lines, n_tokens):
    out, total = [], 0
    for line in lines:
        if total >= n_tokens:
            break
        out.append(line)
        total += len(line)
    return out, total


def against_nltk(train, valid, n_tokens: int, n_ngrams: int) -> None:
    from nltk.lm import KneserNeyInterpolated
    from nltk.lm.preprocessing import pad_both_ends, padded_everygram_pipeline
    from nltk.util import ngrams as nltk_ngrams

    order = 5
    lines, total = first_tokens(train, n_tokens)
    tests = [g for line in valid[:2000] for g in nltk_ngrams(list(pad_both_ends(line, n=order)), order)][:n_ngrams]
    print(f"== against NLTK: KneserNeyInterpolated(order=5, discount=0.1), fit on {total:,} train tokens, "
          f"score {len(tests):,} valid 5-grams ==")

    t0 = time.perf_counter()
    train_ngrams, vocab_text = padded_everygram_pipeline(order, lines)
    ref = KneserNeyInterpolated(order)
    ref.fit(train_ngrams, vocab_text)
    t1 = time.perf_counter()
    ref_scores = np.array([ref.score(g[-1], g[:-1]) for g in tests])
    t2 = time.perf_counter()

    s0 = time.perf_counter()
    lm = ngram.nltk_kneser_ney(lines, order=order, discount=0.1)  # NLTK's padding, <UNK>, discount, recursion
    s1 = time.perf_counter()
    our_scores = np.array([lm.score(g[-1], g[:-1]) for g in tests])
    s2 = time.perf_counter()

    diff = float(np.max(np.abs(ref_scores - our_scores)))
    nltk_t, our_t = t2 - t0, s2 - s0
    print(f"  NLTK: fit {t1 - t0:.2f} s, score {t2 - t1:.2f} s ({(t2 - t1) / len(tests) * 1e3:.1f} ms per n-gram) "
          f"-> {nltk_t:.2f} s")
    print(f"  ours: fit {s1 - s0:.3f} s, score {s2 - s1:.3f} s ({(s2 - s1) / len(tests) * 1e6:.0f} us per n-gram, "
          f"one call each) -> {our_t:.3f} s")
    print(f"  max |p_nltk - p_ours| = {diff:.2e}")
    print(f"  ratio NLTK / ours (fit + score, same work): {nltk_t / our_t:,.0f}x (target >= 10x)")
    per = (t2 - t1) / len(tests)
    print(f"  (NLTK at {per * 1e3:.1f} ms per n-gram would need ~{per * 217_646 / 3600:.1f} h for WikiText-2 valid "
          f"even on this slice's model; the time per n-gram grows with the training data)")


def all_methods(train, valid, test) -> None:
    print("== every method, n = 1..5, full WikiText-2 (interpolation and add_k tuned on valid) ==")
    t0 = time.perf_counter()
    counts = ngram.count_ngrams(train, order=5)
    print(f"  counting: {time.perf_counter() - t0:.2f} s")
    methods = ["mle", "add_k", "interpolation", "absolute", "kn", "kn_auto", "mkn", "katz"]
    table: dict[str, list[tuple[float, float]]] = {}
    for m in methods:
        table[m] = []
        for n in range(1, 6):
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ngram.DiscountFallbackWarning)
                lm = (ngram.NGramLM(counts, n=n, smoothing="kn", discount="auto") if m == "kn_auto"
                      else ngram.NGramLM(counts, n=n, smoothing=m))
            if m in ("interpolation", "add_k"):
                lm.tune(valid)
            pv, pt = lm.perplexity(valid), lm.perplexity(test)
            table[m].append((pv, pt))
            print(f"  {m:>13} n={n}: valid {pv:10.2f}  test {pt:10.2f}   ({time.perf_counter() - t:.2f} s)")
    print(f"  total {time.perf_counter() - t0:.1f} s\n")
    print("| method | " + " | ".join(f"n={n} valid / test" for n in range(1, 6)) + " |")
    print("|---|" + "---|" * 5)
    for m in methods:
        print(f"| {m} | " + " | ".join(f"{v:.1f} / {t:.1f}" for v, t in table[m]) + " |")
    for n in range(2, 6):
        for kn in ("kn", "mkn"):
            for other in ("add_k", "interpolation"):
                ok = table[kn][n - 1][0] < table[other][n - 1][0] and table[kn][n - 1][1] < table[other][n - 1][1]
                if not ok:
                    print(f"  !! {kn} does not beat {other} at n={n}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nltk-tokens", type=int, default=100_000, help="training tokens NLTK is fitted on")
    ap.add_argument("--nltk-ngrams", type=int, default=500, help="valid 5-grams scored by both")
    ap.add_argument("--no-nltk", action="store_true", help="skip the NLTK comparison")
    ap.add_argument("--all", action="store_true", help="also every smoothing method for n = 1..5")
    ap.add_argument("--arpa", action="store_true", help="also time writing + reading the 5-gram ARPA file")
    args = ap.parse_args()
    t = time.perf_counter()
    train, valid, test = (sh.data.wikitext2(s) for s in ("train", "valid", "test"))
    print(f"reading WikiText-2: {time.perf_counter() - t:.2f} s (not counted below); numpy {np.__version__}, "
          f"torch threads {torch.get_num_threads() if torch else '-'}")
    print(f"peak RSS after reading the data: {peak_rss_mb():,.0f} MB")
    ours_full(train, valid, test)
    if not args.no_nltk:
        against_nltk(train, valid, args.nltk_tokens, args.nltk_ngrams)
    if args.arpa:
        arpa_round_trip(train, valid)
    if args.all:
        all_methods(train, valid, test)


if __name__ == "__main__":
    main()

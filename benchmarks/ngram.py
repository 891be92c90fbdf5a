"""n-gram LM benchmark: a 5-gram modified Kneser-Ney model of WikiText-2, against KenLM (the reference) and NLTK.

    SHOULDERS_DATA_MIRROR=../shared/data python benchmarks/ngram.py                 # ours, + KenLM / NLTK if there
    KENLM_BIN=/path/to/kenlm/build/bin python benchmarks/ngram.py --repeats 5       # KenLM's lmplz and query
    python benchmarks/ngram.py --all                                               # + every method, n = 1..5
    python benchmarks/ngram.py --train-lines 2000 --nltk-tokens 2000 --nltk-ngrams 20 --repeats 1   # seconds

Our side runs on one core (OMP/MKL/OpenBLAS threads = 1); lmplz uses its own threads, as it does by default.

1. **Ours**: count orders 1..5 on WikiText-2 train, fit modified KN, perplexity on valid and test (sentence-wise:
   one ``<s>`` before each line, its ``<eos>`` predicted); time per stage and peak RSS.
2. **Against KenLM** (when ``lmplz``, ``query`` and ``build_binary`` are in ``$KENLM_BIN`` or on ``PATH``; built from
   https://github.com/kpu/kenlm): the same text (lines without ``<eos>``, which KenLM writes ``</s>``; WikiText's
   ``<unk>`` renamed, as lmplz reserves that name), alternating ours and KenLM ``--repeats`` times, median and
   minimum of each. Ratios, ours / KenLM (time: lower is better; speed: higher is better), with the targets:
   *build* = our count + fit vs the whole ``lmplz -o 5 -S 1G`` run, which also writes its ARPA file (<= 1.0);
   *ARPA writing* = our ``write_arpa`` alone vs that same whole lmplz run (<= 1.0); *scoring* = test tokens/s of
   our ``perplexity`` (words to ids included) vs ``query`` on lmplz's model in KenLM's binary (probing) format, its
   whole run (>= 0.5). Also the two test perplexities (they agree to ~1e-6; tests/test_ngram_kenlm.py checks
   orders 2-5) and peak memory.
3. **Against NLTK** (``nltk.lm.KneserNeyInterpolated``, order 5, its default discount 0.1), on the largest slice it
   can do in reasonable time: fit on the first ``--nltk-tokens`` training tokens, score the first
   ``--nltk-ngrams`` 5-grams of valid (NLTK-padded). Ours does the same work in its NLTK-compatible mode
   (``ngram.nltk_kneser_ney``); the scores must agree, and the ratio of the times is printed. NLTK scores one
   n-gram by scanning every stored n-gram of the next order, so its time per score grows with the corpus.
4. ``--all``: valid/test perplexity of every smoothing method for n = 1..5 (interpolation and add-k tuned on
   valid; ``kn_auto`` = KN with D = n1/(n1 + 2 n2) per order), with the time of each.
5. ``--arpa``: write the 5-gram model as ARPA and read it back with our reader (the reader is plain Python text
   parsing, the slow half).
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import shoulders as sh  # noqa: E402
from shoulders.models import ngram  # noqa: E402


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def load() -> str:
    try:
        return "load average %.2f %.2f %.2f" % os.getloadavg() + f" on {os.cpu_count()} CPUs"
    except OSError:  # pragma: no cover
        return "load average unknown"


def ours_full(train, valid, test) -> float:
    print("== ours: 5-gram modified Kneser-Ney on WikiText-2 (one core) ==")
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
          f"| total build+evaluate {t3 - t0:.2f} s")
    print(f"  perplexity: valid {pv:.2f}, test {pt:.2f}   (|V| = {len(counts.vocab) - 1:,} predictable words)")
    print("  discounts per order (D1, D2, D3+): " + "; ".join(
        "(" + ", ".join(f"{d:.3f}" for d in ds) + ")" for ds in lm.discounts))
    print(f"  peak RSS so far {peak_rss_mb():,.0f} MB")
    return t3 - t0


# ------------------------------------------------------------------------------------------------------ KenLM
def kenlm_programs() -> dict[str, str] | None:
    folder = os.environ.get("KENLM_BIN", "").strip()
    found = {}
    for name in ("lmplz", "query", "build_binary"):
        path = (Path(folder) / name) if folder else (shutil.which(name) and Path(shutil.which(name)))
        if not path or not Path(path).is_file():
            return None
        found[name] = str(path)
    return found


def kenlm_text(lines, path: Path, plain: str, vocab: set[str]) -> None:
    """One sentence a line without its final <eos> (KenLM adds </s>); <unk>, and any word outside the training
    vocabulary (which we read as <unk>), renamed to the plain word ``plain`` (lmplz reserves <unk>)."""
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(" ".join(plain if w == "<unk>" or w not in vocab else w for w in line[:-1]) + "\n"
                     for line in lines)


def run_watched(cmd: list[str], stdin, stdout) -> tuple[int, str, float]:
    """Run ``cmd``; return its exit code, stderr and peak RSS in MB (its VmHWM, read every 20 ms: a child's own
    rusage would start from this Python process's size, which fork and exec carry over)."""
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdin=stdin, stdout=stdout, stderr=err)
    peak = float("nan")
    status = Path(f"/proc/{proc.pid}/status")
    while proc.poll() is None:
        try:
            m = re.search(r"VmHWM:\s*(\d+) kB", status.read_text())
            if m:
                peak = max(int(m.group(1)) / 1024, 0 if peak != peak else peak)
        except OSError:
            pass
        time.sleep(0.02)
    err.seek(0)
    return proc.returncode, err.read().decode(errors="replace"), peak


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def against_kenlm(train, test, programs: dict[str, str], repeats: int, memory: str) -> None:
    print(f"== against KenLM (lmplz -o 5 -S {memory}, query on its binary model), alternating, {repeats} x; "
          f"{load()} ==")
    vocab = {w for line in train for w in line}
    plain = "UNKNOWN_WORD"
    while plain in vocab:
        plain += "_"
    tokens = sum(map(len, test))
    times: dict[str, list[float]] = {k: [] for k in ("ours build", "ours write", "ours score", "lmplz", "query")}
    lmplz_rss = 0.0
    ppl: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="shoulders-kenlm-") as tmp:
        tmp = Path(tmp)
        kenlm_text(train, tmp / "train.txt", plain, vocab)
        kenlm_text(test, tmp / "test.txt", plain, vocab)
        for r in range(repeats):
            # ours: count + fit, then the ARPA file, then scoring the test text
            t_build, lm = timed(lambda: ngram.NGramLM(ngram.count_ngrams(train, order=5), n=5, smoothing="mkn"))
            t_write, _ = timed(lambda: ngram.write_arpa(lm, tmp / "ours.arpa"))
            t_score, ppl["ours"] = timed(lambda: lm.perplexity(test))
            size_ours = (tmp / "ours.arpa").stat().st_size
            lm = None  # freed before KenLM runs (a del here hides lm from the lambdas above, for linters)
            # KenLM: the whole lmplz run (count, estimate, write its ARPA), then query on the binary model
            with open(tmp / "train.txt", "rb") as src, open(tmp / "lmplz.arpa", "wb") as dst:
                t_lmplz, (code, err, rss) = timed(lambda: run_watched(
                    [programs["lmplz"], "-o", "5", "-S", memory, "-T", str(tmp)], src, dst))
            if code:
                raise SystemExit(f"lmplz failed:\n{err[-2000:]}")
            lmplz_rss = max(lmplz_rss, rss)
            if r == 0:
                subprocess.run([programs["build_binary"], str(tmp / "lmplz.arpa"), str(tmp / "lmplz.bin")],
                               check=True, capture_output=True)
            with open(tmp / "test.txt", "rb") as src:
                t_query, q = timed(lambda: subprocess.run([programs["query"], "-v", "summary", str(tmp / "lmplz.bin")],
                                                         stdin=src, capture_output=True, text=True))
            ppl["kenlm"] = float(re.search(r"Perplexity including OOVs:\s*(\S+)", q.stdout).group(1))
            for k, v in zip(times, (t_build, t_write, t_score, t_lmplz, t_query)):
                times[k].append(v)
            print(f"  run {r + 1}: ours build {t_build:.2f} s, write {t_write:.2f} s, score {t_score:.3f} s | "
                  f"lmplz {t_lmplz:.2f} s, query {t_query:.3f} s   ({load()})")
        size_kenlm = (tmp / "lmplz.arpa").stat().st_size

    def both(k: str) -> tuple[float, float]:
        return statistics.median(times[k]), min(times[k])

    lz, qy = both("lmplz"), both("query")
    rows = [("build: count + fit vs the whole lmplz run", both("ours build"), lz, "<= 1.0", False),
            ("ARPA writing vs the whole lmplz run", both("ours write"), lz, "<= 1.0", False),
            ("build + ARPA writing vs the whole lmplz run",
             tuple(a + b for a, b in zip(both("ours build"), both("ours write"))), lz, "(like for like)", False),
            ("scoring, tokens/s vs query", both("ours score"), qy, ">= 0.5", True)]
    print("\n| | ours median / min | KenLM median / min | ratio ours/KenLM (median, min) | target |")
    print("|---|---|---|---|---|")
    for name, ours, theirs, target, speed in rows:
        if speed:  # tokens/s: the inverse ratio of times
            o = f"{tokens / ours[0]:,.0f} / {tokens / ours[1]:,.0f} tok/s"
            t = f"{tokens / theirs[0]:,.0f} / {tokens / theirs[1]:,.0f} tok/s"
            ratio = (theirs[0] / ours[0], theirs[1] / ours[1])
        else:
            o, t = f"{ours[0]:.2f} / {ours[1]:.2f} s", f"{theirs[0]:.2f} / {theirs[1]:.2f} s"
            ratio = (ours[0] / theirs[0], ours[1] / theirs[1])
        print(f"| {name} | {o} | {t} | {ratio[0]:.2f}, {ratio[1]:.2f} | {target} |")
    print(f"\n  test perplexity: ours {ppl['ours']:.4f}, KenLM {ppl['kenlm']:.4f} "
          f"(relative difference {ppl['ours'] / ppl['kenlm'] - 1:+.1e}); {tokens:,} tokens")
    print(f"  ARPA files: ours {size_ours / 1e6:,.0f} MB (17 significant digits, reads back exactly), "
          f"lmplz {size_kenlm / 1e6:,.0f} MB (float32)")
    print(f"  peak RSS: ours {peak_rss_mb():,.0f} MB (this process: the data as Python lists included), "
          f"lmplz {lmplz_rss:,.0f} MB (its VmHWM)\n")


# ------------------------------------------------------------------------------------------------------- ARPA
def arpa_round_trip(train, valid) -> None:
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


# ------------------------------------------------------------------------------------------------------- NLTK
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
    print("== every method, n = 1..5, WikiText-2 (interpolation and add_k tuned on valid) ==")
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
    ap.add_argument("--train-lines", type=int, default=None, help="use only the first N training lines")
    ap.add_argument("--repeats", type=int, default=3, help="alternating ours/KenLM runs (median and minimum)")
    ap.add_argument("--lmplz-memory", default="1G", help="lmplz -S (its sorting memory)")
    ap.add_argument("--no-kenlm", action="store_true", help="skip the KenLM comparison")
    ap.add_argument("--nltk-tokens", type=int, default=100_000, help="training tokens NLTK is fitted on")
    ap.add_argument("--nltk-ngrams", type=int, default=500, help="valid 5-grams scored by both")
    ap.add_argument("--no-nltk", action="store_true", help="skip the NLTK comparison")
    ap.add_argument("--all", action="store_true", help="also every smoothing method for n = 1..5")
    ap.add_argument("--arpa", action="store_true", help="also time writing + reading the 5-gram ARPA file")
    args = ap.parse_args()
    t = time.perf_counter()
    train, valid, test = (sh.data.wikitext2(s) for s in ("train", "valid", "test"))
    if args.train_lines is not None:
        train = train[: args.train_lines]
    print(f"reading WikiText-2: {time.perf_counter() - t:.2f} s (not counted below); numpy {np.__version__}; "
          f"{load()}")
    print(f"peak RSS after reading the data: {peak_rss_mb():,.0f} MB")
    ours_full(train, valid, test)
    programs = None if args.no_kenlm else kenlm_programs()
    if programs is not None:
        against_kenlm(train, test, programs, max(1, args.repeats), args.lmplz_memory)
    elif not args.no_kenlm:
        print("== KenLM: lmplz, query and build_binary not found (set KENLM_BIN to the folder of a KenLM build, "
              "https://github.com/kpu/kenlm); no KenLM column ==")
    if not args.no_nltk:
        against_nltk(train, valid, args.nltk_tokens, args.nltk_ngrams)
    if args.arpa:
        arpa_round_trip(train, valid)
    if args.all:
        all_methods(train, valid, test)


if __name__ == "__main__":
    main()

"""word2vec benchmark: shoulders' skip-gram (or CBOW) against gensim's ``Word2Vec``, same settings, same threads.

    SHOULDERS_DATA_MIRROR=../shared/data python benchmarks/word2vec.py          # WikiText-2, 5 epochs, N = 1, 2
    python benchmarks/word2vec.py --threads 1 --repeats 5                        # one core each, five seeds
    python benchmarks/word2vec.py --share-negatives 16 1 --no-gensim             # the shared noise words, measured
    python benchmarks/word2vec.py --output hs --hs-rule sqrt sum                 # hierarchical softmax: batch rules
    python benchmarks/word2vec.py --part update-cost                             # one SGD step against |V|
    python benchmarks/word2vec.py --epochs 1 --tokens 500000 --repeats 1         # a quick look
    python benchmarks/word2vec.py --tiny                                         # seconds: both parts, N = 1, 2

``--part train`` (the default). Both sides train on the same lines of WikiText-2 train
(``sh.data.wikitext2("train", eos=None)``, empty lines dropped), with the same vocabulary rule (``min_count``),
dimension, window (dynamic, 1..window), output layer (k negatives from unigram^0.75, or the hierarchical
softmax: gensim ``hs=1, negative=0``), subsampling (t = ``--sample``, word2vec.c's keep rule, which gensim uses),
epochs and learning rate (0.025 for skip-gram, 0.05 for CBOW with ``--arch cbow``, decaying linearly). Both
sets of vectors are scored by the *same* functions, ``sh.evaluate.analogy`` (3CosAdd on questions-words.txt, over
the questions the vocabulary covers), ``sh.evaluate.word_similarity`` (Spearman on WordSim-353 and SimLex-999)
and ``sh.evaluate.group_precision`` (months and numbers among each other's 5 nearest neighbours); gensim's own
``evaluate_word_analogies`` is printed beside ours as a cross-check of the scorer.

Threads: for each N of ``--threads`` (default 1 and 2), gensim runs with ``workers=N`` and shoulders with
``workers=N`` Hogwild processes of one torch thread each (``train_word2vec``). Several variants of ours
(``--share-negatives``, ``--hs-rule``, ``--batch-words`` take several values) run beside gensim. Every seed runs
every side once, one after the other -- ours, gensim, ours, gensim... -- so a change in the machine's load hits
both sides alike; the table gives the median and the best (minimum) training time of each side, and the ratios
of the medians and of the minima. Speed is corpus words (all tokens of the lines, as gensim's ``raw words``) x
epochs / training seconds; building the vocabulary is not timed for either. The load average (``uptime``) is
printed before and after: on a shared machine, read the speed ratios with it.

``--part update-cost``: the time of one SGD step of a batch of 1,000 (input, output) pairs with each output layer
(full softmax, hierarchical softmax, negative sampling with word2vec.c's own k draws per pair) for vocabularies of
1,000 to 64,000 words with Zipf counts, one thread, the fastest of ``--cost-repeats``: chapter 4 counts what such a
step reads; this measures what it costs.
"""
from __future__ import annotations

import itertools
import math
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

import shoulders as sh  # noqa: E402
from shoulders.models import word2vec as w2v  # noqa: E402
from shoulders.recipes import word_vectors as wv  # noqa: E402

METRICS = ("analogy", "semantic", "syntactic", "ws353", "simlex", "groups")


def load() -> str:
    """The 1, 5 and 15 minute load averages (what ``uptime`` prints)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def scores(vectors: torch.Tensor, words: list[str]) -> dict[str, float]:
    a = sh.evaluate.analogy(vectors, words)
    ws = sh.evaluate.word_similarity(vectors, words, "wordsim353")
    sl = sh.evaluate.word_similarity(vectors, words, "simlex999")
    return {"analogy": a["accuracy"], "semantic": a["semantic"], "syntactic": a["syntactic"],
            "coverage": a["coverage"], "ws353": ws["spearman"], "simlex": sl["spearman"],
            "groups": sh.evaluate.group_precision(vectors, words)}


def lr_of(args) -> float:
    """word2vec.c's starting rate: 0.025 for skip-gram, 0.05 for CBOW (unless --lr)."""
    return args.lr if args.lr is not None else (0.025 if args.arch == "sg" else 0.05)


def run_gensim(lines, args, seed: int, threads: int, variant: dict) -> tuple[dict[str, float], float, int]:
    from gensim.models import Word2Vec

    hs = args.output == "hs"
    lr = lr_of(args)
    model = Word2Vec(vector_size=args.dim, window=args.window, negative=0 if hs else args.negative,
                     sg=int(args.arch == "sg"), hs=int(hs), sample=args.sample, min_count=args.min_count,
                     workers=threads, epochs=args.epochs, alpha=lr, min_alpha=lr * 1e-4, seed=seed)
    model.build_vocab(lines)
    t = time.perf_counter()
    model.train(lines, total_examples=model.corpus_count, epochs=model.epochs)
    seconds = time.perf_counter() - t
    vectors, words = torch.from_numpy(model.wv.vectors.copy()), list(model.wv.index_to_key)
    result = scores(vectors, words)
    result["gensim_own_analogy"] = model.wv.evaluate_word_analogies(
        str(sh.evaluate.gensim_test_file("questions-words")), case_insensitive=True)[0]
    return result, seconds, len(words)


def run_ours(lines, args, seed: int, threads: int, variant: dict) -> tuple[dict[str, float], float, int]:
    cfg = w2v.Word2VecConfig.preset("cpu", arch=args.arch, output=args.output, dim=args.dim, window=args.window,
                                    negatives=args.negative, sample=args.sample, sample_rule="word2vec.c",
                                    min_count=args.min_count, epochs=args.epochs, lr=lr_of(args),
                                    batch_words=variant["batch_words"], share_negatives=variant["share_negatives"],
                                    hs_rule=variant["hs_rule"], workers=threads, seed=seed)
    corpus = wv.prepare(cfg, lines)
    torch.manual_seed(seed)
    model = cfg.build(corpus.counts)
    t = time.perf_counter()
    wv.train_word2vec(model, corpus, cfg, progress=args.progress)
    seconds = time.perf_counter() - t
    return scores(model.vectors(), corpus.vocab.tokens), seconds, len(corpus.vocab)


def variant_name(variant: dict, args) -> str:
    parts = [f"batch {variant['batch_words']}"]
    if args.output == "ns":
        parts.append(f"share_negatives {variant['share_negatives']}")
    else:
        parts.append(f"hs rule {variant['hs_rule']}")
    return "shoulders (" + ", ".join(parts) + ")"


def train_part(args) -> None:
    lines, total = [], 0
    for line in sh.data.wikitext2("train", eos=None):
        if line and (args.tokens is None or total < args.tokens):
            lines.append(line)
            total += len(line)
    arch = "skip-gram" if args.arch == "sg" else "CBOW"
    print(f"WikiText-2 train: {len(lines):,} lines, {total:,} tokens; {arch} + {args.output}, lr {lr_of(args)}, "
          f"dim {args.dim}, "
          f"window {args.window}, k {args.negative}, sample {args.sample:g}, min_count {args.min_count}, "
          f"{args.epochs} epochs; threads {args.threads}, seeds 1..{args.repeats}, {os.cpu_count()} cores")
    print(f"load average at start: {load()}")
    keys = ("batch_words", "share_negatives", "hs_rule")
    variants = [dict(zip(keys, v)) for v in itertools.product(args.batch_words, args.share_negatives, args.hs_rule)]
    sides = [(variant_name(v, args), run_ours, v) for v in variants]
    if not args.no_gensim:
        sides.append(("gensim", run_gensim, {}))
    runs: dict[tuple[str, int], list[dict[str, float]]] = {}
    for seed in range(1, args.repeats + 1):
        for n in args.threads:
            for name, fn, variant in sides:  # alternated: one run of each side in turn
                res, seconds, V = fn(lines, args, seed, n, variant)
                res["words_per_s"] = total * args.epochs / seconds
                res["seconds"] = seconds
                runs.setdefault((name, n), []).append(res)
                print(f"  {name} seed {seed}, {n} thread(s): |V| {V:,}, train {seconds:6.1f} s, "
                      f"{res['words_per_s']:9,.0f} words/s, analogy {res['analogy']:.4f} (sem {res['semantic']:.4f}, "
                      f"syn {res['syntactic']:.4f}, coverage {res['coverage']:.3f}), WS353 {res['ws353']:.4f}, "
                      f"SimLex {res['simlex']:.4f}, groups P@5 {res['groups']:.3f}"
                      + (f", gensim's own analogy scorer {res['gensim_own_analogy']:.4f}"
                         if "gensim_own_analogy" in res else ""), flush=True)
    print(f"load average at the end: {load()}")

    def mean_sd(xs: list[float]) -> str:
        xs = [x for x in xs if not math.isnan(x)]  # a section without covered questions gives NaN
        if not xs:
            return "n/a"
        return f"{statistics.fmean(xs):.4f}" + (f" ± {statistics.stdev(xs):.4f}" if len(xs) > 1 else "")

    print(f"\nquality (mean ± sd over {args.repeats} seed(s), all thread counts pooled)")
    print("| side | " + " | ".join(METRICS) + " |")
    print("|---" * (len(METRICS) + 1) + "|")
    for name, _, _ in sides:
        pooled = [r for n in args.threads for r in runs[name, n]]
        print(f"| {name} | " + " | ".join(mean_sd([r[k] for r in pooled]) for k in METRICS) + " |")
    print("\nspeed (training seconds: median and minimum over the seeds; words/s of the median run)")
    print("| side | threads | median s | min s | words/s (median) | ratio to gensim (medians) | ratio (minima) |")
    print("|---|---|---|---|---|---|---|")
    for n in args.threads:
        ref = runs.get(("gensim", n))
        for name, _, _ in sides:
            secs = [r["seconds"] for r in runs[name, n]]
            med, best = statistics.median(secs), min(secs)
            ratio = ratio_min = ""
            if ref is not None:  # words/s ratio = gensim's seconds / ours
                ratio = f"{statistics.median(r['seconds'] for r in ref) / med:.2f}"
                ratio_min = f"{min(r['seconds'] for r in ref) / best:.2f}"
            print(f"| {name} | {n} | {med:.1f} | {best:.1f} | {total * args.epochs / med:,.0f} | {ratio} | "
                  f"{ratio_min} |")
    if not args.no_gensim:
        print("\ntargets: analogy and similarity within seed noise of gensim's; words/s >= 1.0x gensim's at every "
              "thread count")


def update_cost_part(args) -> None:
    """Time of one sgd_step on 1,000 pairs, per output layer and vocabulary size (the fastest of the repeats)."""
    torch.set_num_threads(1)
    print(f"one SGD step, 1,000 pairs, d = {args.dim}, k = {args.negative} (share_negatives 1), one thread; "
          f"load average {load()}")
    sizes = args.cost_sizes
    print("| output layer | " + " | ".join(f"µs/pair, V={V:,}" for V in sizes) + " |")
    print("|---" * (len(sizes) + 1) + "|")
    for output in ("softmax", "hs", "ns"):
        cells = []
        for V in sizes:
            c = w2v.Word2VecConfig(arch="sg", output=output, dim=args.dim, negatives=args.negative, vocab_size=V,
                                   share_negatives=1)
            model = c.build()
            g = torch.Generator().manual_seed(0)
            p = w2v.zipf_counts(V).double()
            x = torch.multinomial(p, 1000, replacement=True, generator=g)
            y = torch.multinomial(p, 1000, replacement=True, generator=g)
            model.sgd_step(x, y, lr=0.025)  # warm-up
            times = []
            for _ in range(args.cost_repeats if output != "softmax" else max(1, args.cost_repeats // 2)):
                t0 = time.perf_counter()
                model.sgd_step(x, y, lr=0.025)
                times.append(time.perf_counter() - t0)
            cells.append(f"{min(times) / 1000 * 1e6:,.1f}")
        print(f"| {output} | " + " | ".join(cells) + " |", flush=True)
    print(f"load average at the end: {load()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("train", "update-cost", "all"), default="train")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--negative", type=int, default=5)
    ap.add_argument("--arch", choices=("sg", "cbow"), default="sg", help="skip-gram or CBOW (both sides)")
    ap.add_argument("--output", choices=("ns", "hs"), default="ns", help="output layer (both sides)")
    ap.add_argument("--lr", type=float, default=None, help="starting rate (default 0.025 for sg, 0.05 for cbow)")
    ap.add_argument("--sample", type=float, default=1e-3)
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=None, help="only the first N tokens of WikiText-2 train")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                    help="thread counts N: gensim workers=N against our workers=N (Hogwild processes)")
    ap.add_argument("--workers", type=int, nargs="+", dest="threads", help="same as --threads")
    ap.add_argument("--batch-words", type=int, nargs="+", default=[500], help="shoulders: centre words per batch")
    ap.add_argument("--share-negatives", type=int, nargs="+", default=[16],
                    help="shoulders: pairs sharing their k negatives (1 = word2vec.c)")
    ap.add_argument("--hs-rule", choices=w2v.HS_RULES, nargs="+", default=["sqrt"],
                    help="shoulders, --output hs: the batch rule of the tree's nodes (HierarchicalSoftmax.sgd_step)")
    ap.add_argument("--repeats", type=int, default=3, help="seeds; every side runs once per seed, alternated")
    ap.add_argument("--cost-sizes", type=int, nargs="+", default=[1_000, 4_000, 16_000, 64_000])
    ap.add_argument("--cost-repeats", type=int, default=5)
    ap.add_argument("--progress", action="store_true", help="show shoulders' progress bar")
    ap.add_argument("--no-gensim", action="store_true")
    ap.add_argument("--tiny", action="store_true",
                    help="seconds (the test suite's run): both parts, 20,000 tokens, 1 epoch, 1 seed, N = 1 and 2, "
                         "vocabularies of 1,000 and 2,000 for the update cost")
    args = ap.parse_args()
    if args.tiny:
        args.part, args.epochs, args.tokens, args.repeats = "all", 1, 20_000, 1
        args.cost_sizes, args.cost_repeats = [1_000, 2_000], 1
    torch.set_num_threads(1)
    if args.part in ("update-cost", "all"):
        update_cost_part(args)
    if args.part in ("train", "all"):
        train_part(args)


if __name__ == "__main__":
    main()

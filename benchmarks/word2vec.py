"""word2vec benchmark: shoulders' skip-gram with negative sampling against gensim's ``Word2Vec``, same settings.

    SHOULDERS_DATA_MIRROR=../shared/data python benchmarks/word2vec.py              # WikiText-2, 5 epochs
    python benchmarks/word2vec.py --epochs 1 --tokens 500000                        # a quick look
    python benchmarks/word2vec.py --threads 1 --workers 1                           # one core each

Both train on the same lines of WikiText-2 train (``sh.data.wikitext2("train", eos=None)``, empty lines
dropped), with the same vocabulary rule (``min_count``), dimension, window (dynamic, 1..window), k negatives
from unigram^0.75, subsampling (t = ``--sample``, word2vec.c's keep rule, which gensim uses), epochs, and
learning rate (0.025 decaying linearly). Both sets of vectors are scored by the *same* functions,
``sh.evaluate.analogy`` (3CosAdd on questions-words.txt, over the questions the vocabulary covers) and
``sh.evaluate.word_similarity`` (Spearman on WordSim-353 and SimLex-999); gensim's own
``evaluate_word_analogies`` is printed beside ours as a cross-check of the scorer.

Speed is corpus words (all tokens of the lines, as gensim's ``raw words``) x epochs / training seconds, for
gensim with ``--workers`` threads and for shoulders with ``torch.set_num_threads(--threads)``. Vocabulary
building is not timed for either. Results on WikiText-2 (2M tokens) are small and noisy: ``--repeats`` runs
each side with several seeds and prints the mean.
"""
from __future__ import annotations

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


def scores(vectors: torch.Tensor, words: list[str]) -> dict[str, float]:
    a = sh.evaluate.analogy(vectors, words)
    ws = sh.evaluate.word_similarity(vectors, words, "wordsim353")
    sl = sh.evaluate.word_similarity(vectors, words, "simlex999")
    return {"analogy": a["accuracy"], "semantic": a["semantic"], "syntactic": a["syntactic"],
            "coverage": a["coverage"], "ws353": ws["spearman"], "simlex": sl["spearman"]}


def run_gensim(lines, args, seed: int) -> tuple[dict[str, float], float, int]:
    from gensim.models import Word2Vec

    model = Word2Vec(vector_size=args.dim, window=args.window, negative=args.negative, sg=1, hs=0,
                     sample=args.sample, min_count=args.min_count, workers=args.workers, epochs=args.epochs,
                     alpha=0.025, min_alpha=0.025 * 1e-4, seed=seed)
    model.build_vocab(lines)
    t = time.perf_counter()
    model.train(lines, total_examples=model.corpus_count, epochs=model.epochs)
    seconds = time.perf_counter() - t
    vectors, words = torch.from_numpy(model.wv.vectors.copy()), list(model.wv.index_to_key)
    result = scores(vectors, words)
    result["gensim_own_analogy"] = model.wv.evaluate_word_analogies(
        str(sh.evaluate.gensim_test_file("questions-words")), case_insensitive=True)[0]
    return result, seconds, len(words)


def run_ours(lines, args, seed: int) -> tuple[dict[str, float], float, int]:
    cfg = w2v.Word2VecConfig.preset("cpu", dim=args.dim, window=args.window, negatives=args.negative,
                                    sample=args.sample, sample_rule="word2vec.c", min_count=args.min_count,
                                    epochs=args.epochs, lr=0.025, batch_words=args.batch_words,
                                    share_negatives=args.share_negatives, seed=seed)
    corpus = wv.prepare(cfg, lines)
    torch.manual_seed(seed)
    model = cfg.build(corpus.counts)
    t = time.perf_counter()
    wv.train_word2vec(model, corpus, cfg, progress=args.progress)
    seconds = time.perf_counter() - t
    return scores(model.vectors(), corpus.vocab.tokens), seconds, len(corpus.vocab)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--dim", type=int, default=100)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--negative", type=int, default=5)
    ap.add_argument("--sample", type=float, default=1e-3)
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=None, help="only the first N tokens of WikiText-2 train")
    ap.add_argument("--workers", type=int, default=2, help="gensim worker threads")
    ap.add_argument("--threads", type=int, default=1, help="torch threads for shoulders (its ops are small: one is fastest)")
    ap.add_argument("--batch-words", type=int, default=500, help="shoulders: centre words per batch")
    ap.add_argument("--share-negatives", type=int, default=16, help="shoulders: pairs sharing their k negatives")
    ap.add_argument("--repeats", type=int, default=1, help="seeds per side (scores are averaged)")
    ap.add_argument("--progress", action="store_true", help="show shoulders' progress bar")
    ap.add_argument("--no-gensim", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    lines, total = [], 0
    for line in sh.data.wikitext2("train", eos=None):
        if line and (args.tokens is None or total < args.tokens):
            lines.append(line)
            total += len(line)
    print(f"WikiText-2 train: {len(lines):,} lines, {total:,} tokens; dim {args.dim}, window {args.window}, "
          f"k {args.negative}, sample {args.sample:g}, min_count {args.min_count}, {args.epochs} epochs; "
          f"gensim workers {args.workers}, torch threads {args.threads} (batch_words {args.batch_words}, "
          f"share_negatives {args.share_negatives})")
    sides = [("shoulders", run_ours)] + ([] if args.no_gensim else [("gensim", run_gensim)])
    table: dict[str, dict[str, float]] = {}
    for name, fn in sides:
        runs = []
        for r in range(args.repeats):
            res, seconds, V = fn(lines, args, seed=r + 1)
            res["words_per_s"] = total * args.epochs / seconds
            res["seconds"] = seconds
            runs.append(res)
            print(f"  {name:>9} seed {r + 1}: |V| {V:,}, train {seconds:6.1f} s, {res['words_per_s']:9,.0f} words/s, "
                  f"analogy {res['analogy']:.4f} (sem {res['semantic']:.4f}, syn {res['syntactic']:.4f}, "
                  f"coverage {res['coverage']:.3f}), WS353 {res['ws353']:.4f}, SimLex {res['simlex']:.4f}"
                  + (f", gensim's own analogy scorer {res['gensim_own_analogy']:.4f}" if "gensim_own_analogy" in res
                     else ""))
        table[name] = {k: statistics.fmean(run[k] for run in runs) for k in runs[0]}
    if "gensim" in table:
        ours, ref = table["shoulders"], table["gensim"]
        print("\n| metric | shoulders | gensim | ratio |")
        print("|---|---|---|---|")
        for k in ("analogy", "semantic", "syntactic", "ws353", "simlex", "words_per_s"):
            ratio = ours[k] / ref[k] if ref[k] else float("nan")
            print(f"| {k} | {ours[k]:.4g} | {ref[k]:.4g} | {ratio:.2f} |")
        print(f"\ntargets: analogy and similarity >= gensim's, words/s >= 0.5x gensim's "
              f"(here {ours['words_per_s'] / ref['words_per_s']:.2f}x)")


if __name__ == "__main__":
    main()

"""Paragraph-vector benchmark: shoulders' PV-DBOW / PV-DM against gensim's ``Doc2Vec``, same text, same settings.

    SHOULDERS_DATA_MIRROR=../shared/data python benchmarks/doc2vec.py          # PV-DBOW, WikiText-2, seeds 1, 2
    python benchmarks/doc2vec.py --arch dm --repeats 3                          # PV-DM, three seeds a side
    python benchmarks/doc2vec.py --threads 2                                    # two workers a side
    python benchmarks/doc2vec.py --tiny                                         # seconds: a few hundred sentences

Both sides train on the same documents: WikiText-2 train cut into sentences (each sentence one paragraph,
lower-cased; ``shoulders.recipes.sentence_vectors.wikitext_sentences``), with the same vocabulary rule (``min_count``),
dimension, window, k negatives from unigram^0.75, subsampling (``--sample``, word2vec.c's keep rule, which gensim
uses), epochs and learning rate (0.025, decaying linearly to 0.025e-4). gensim: ``Doc2Vec(dm=0)`` for PV-DBOW
(without ``dbow_words``), ``Doc2Vec(dm=1, dm_mean=1)`` for PV-DM, ``hs=0``. Each side's *inferred* vectors of the
small SentEval's sentences (``shoulders.evaluate.senteval``: SST-2, SST-5 and SNLI with the same splits, probe and
penalty grid) are its quality: gensim's ``infer_vector`` (its epochs and rates: the model's) against
``shoulders.recipes.sentence_vectors.infer_vectors`` with the same epochs. SentEval sentences are split by
``shoulders.text.simple_words`` for both.

Every seed runs every side once, one after the other -- ours, gensim, ours, gensim -- so a change in the machine's
load hits both alike; speed is corpus words x epochs / training seconds (building the vocabulary not timed),
median and minimum over the seeds. The quality ratio is ours / gensim's mean accuracy per task.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import shoulders as sh  # noqa: E402
from shoulders.evaluate import senteval  # noqa: E402
from shoulders.models.paragraph_vectors import ParagraphVectorConfig  # noqa: E402
from shoulders.recipes.sentence_vectors import (paragraph_encoder, train_paragraph_vectors,  # noqa: E402
                                                wikitext_sentences)
from shoulders.text.tokenize import simple_words  # noqa: E402


def load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def documents(limit: int | None) -> list[list[str]]:
    """WikiText-2 train's sentences, lower-cased, each one paragraph (the first ``limit`` of them)."""
    docs = wikitext_sentences()
    return docs[:limit] if limit else docs


def run_ours(docs, args, seed: int, threads: int):
    cfg = ParagraphVectorConfig.preset("cpu", arch=args.arch, dim=args.dim, window=args.window,
                                       negatives=args.negative, sample=args.sample, min_count=args.min_count,
                                       epochs=args.epochs, infer_epochs=args.epochs, lr=0.025, workers=threads,
                                       seed=seed)
    torch.manual_seed(seed)
    t = time.perf_counter()
    model, corpus, _ = train_paragraph_vectors(cfg, docs, progress=False)
    seconds = time.perf_counter() - t
    return paragraph_encoder(model, corpus.vocab, seed=seed), seconds, len(corpus.vocab)


def run_gensim(docs, args, seed: int, threads: int):
    from gensim.models.doc2vec import Doc2Vec, TaggedDocument

    tagged = [TaggedDocument(d, [i]) for i, d in enumerate(docs)]
    model = Doc2Vec(dm=int(args.arch == "dm"), dm_mean=1, vector_size=args.dim, window=args.window,
                    negative=args.negative, hs=0, sample=args.sample, min_count=args.min_count, workers=threads,
                    epochs=args.epochs, alpha=0.025, min_alpha=0.025e-4, seed=seed)
    model.build_vocab(tagged)
    t = time.perf_counter()
    model.train(tagged, total_examples=model.corpus_count, epochs=model.epochs)
    seconds = time.perf_counter() - t

    def encode(sentences):
        return torch.from_numpy(np.stack([model.infer_vector(simple_words(s)) for s in sentences]))

    return encode, seconds, len(model.wv.index_to_key)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arch", choices=("dbow", "dm"), default="dbow")
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--window", type=int, default=5)
    p.add_argument("--negative", type=int, default=5)
    p.add_argument("--sample", type=float, default=1e-4)
    p.add_argument("--min-count", type=int, default=2)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--sentences", type=int, default=None, help="only the first N sentences of WikiText-2 train")
    p.add_argument("--senteval", choices=sh.SCALES, default="cpu", help="the SentEval preset (splits and grid)")
    p.add_argument("--no-gensim", action="store_true")
    p.add_argument("--tiny", action="store_true", help="400 sentences, 2 epochs, a small SentEval: seconds")
    args = p.parse_args(argv)
    if args.tiny:
        args.sentences, args.epochs, args.repeats, args.dim, args.senteval = 400, 2, 1, 16, "smoke"
    docs = documents(args.sentences)
    words = sum(len(d) for d in docs)
    scfg = senteval.SentEvalConfig.preset(args.senteval)
    if args.tiny:
        scfg = scfg.replace(tasks=("sst2",), sst_train=200, sst_test=200, l2_grid=(1e-2,), max_iter=50)
    tasks = senteval.load_tasks(scfg)
    print(f"WikiText-2 train: {len(docs):,} sentences as paragraphs, {words:,} words; PV-{args.arch}, dim {args.dim}, "
          f"window {args.window}, k {args.negative}, sample {args.sample:g}, min_count {args.min_count}, "
          f"{args.epochs} epochs (and inference epochs), {args.threads} thread(s) a side, seeds 1..{args.repeats}; "
          f"SentEval preset {args.senteval}: {', '.join(tasks)}")
    print(f"load average at start: {load()}")
    sides = [("shoulders", run_ours)] + ([] if args.no_gensim else [("gensim", run_gensim)])
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, _ in sides}
    for seed in range(1, args.repeats + 1):
        for name, fn in sides:  # alternated
            encode, seconds, V = fn(docs, args, seed, args.threads)
            t = time.perf_counter()
            res = {k: r.test for k, r in senteval.evaluate_encoder(encode, tasks, scfg, progress=False).items()}
            res.update(seconds=seconds, words_per_s=words * args.epochs / seconds,
                       senteval_s=time.perf_counter() - t)
            runs[name].append(res)
            print(f"  {name} seed {seed}: |V| {V:,}, train {seconds:6.1f} s ({res['words_per_s']:,.0f} words/s), "
                  + ", ".join(f"{k} {res[k]:.1f}" for k in tasks) + f"; inference + SentEval {res['senteval_s']:.0f} s",
                  flush=True)
    print(f"load average at the end: {load()}")

    def mean_sd(xs: list[float]) -> str:
        return f"{statistics.fmean(xs):.1f}" + (f" ± {statistics.stdev(xs):.1f}" if len(xs) > 1 else "")

    print(f"\nquality: SentEval test accuracy % (mean ± sd over {args.repeats} seed(s))")
    print("| side | " + " | ".join(tasks) + " | train s (median) | train s (min) | words/s (median) |")
    print("|---" * (len(tasks) + 4) + "|")
    for name, _ in sides:
        rs = runs[name]
        secs = [r["seconds"] for r in rs]
        med = statistics.median(secs)
        print(f"| {name} | " + " | ".join(mean_sd([r[k] for r in rs]) for k in tasks)
              + f" | {med:.1f} | {min(secs):.1f} | {words * args.epochs / med:,.0f} |")
    if "gensim" in runs:
        ours, ref = runs["shoulders"], runs["gensim"]
        quality = {k: statistics.fmean(r[k] for r in ours) / statistics.fmean(r[k] for r in ref) for k in tasks}
        speed = statistics.median(r["seconds"] for r in ref) / statistics.median(r["seconds"] for r in ours)
        speed_min = min(r["seconds"] for r in ref) / min(r["seconds"] for r in ours)
        print("\n| ratio shoulders / gensim | " + " | ".join(tasks) + " | speed (medians) | speed (minima) |")
        print("|---" * (len(tasks) + 3) + "|")
        print("| | " + " | ".join(f"{quality[k]:.3f}" for k in tasks) + f" | {speed:.2f} | {speed_min:.2f} |")
        print("\ntarget (chapter 7's issue): quality ratio >= 0.95 on every task; the speed ratio reported")


if __name__ == "__main__":
    main()

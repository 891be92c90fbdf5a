"""Chapter 11's runs side by side: how much sooner do its independent runs finish in two forked processes of one
thread each than in order on two threads, and are the numbers the same?

    python benchmarks/parallel_runs.py                  # cpu: the cached awd_lstm giant, 300 labels, ~6 minutes
    python benchmarks/parallel_runs.py --stage 2        # cpu: 11.6's two stage-2 ablations, ~6 minutes
    python benchmarks/parallel_runs.py --tiny           # seconds: the smoke giant, 100 sentences, 10 updates (a test)
    python benchmarks/parallel_runs.py --tiny --stage 2 # seconds: two stage-2 runs on 100 sentences (a test)

Page 11's time is mostly stage-3 classifier runs (:func:`shoulders.recipes.finetune.compare` of ULMFiT and the same
network from scratch, three seeds each), and a batch of 64 sentences through an AWD-LSTM keeps two cores only
partly busy. ``ULMFiTConfig.workers`` hands the runs to forked processes that share the threads
(:func:`shoulders.train.forked.run_forked`). This script runs the page's comparison at ``--labels`` labels (the
giant's weights as they are, no stage 2: the arithmetic is the question, not the recipe) with ``workers=1`` and
``workers=2``, alternating A, B, A, B (``--reps`` pairs), and prints each call's wall time, the median and minimum of
each and their ratio, and the largest difference between the two in any seed's dev accuracy and mean training loss.

``--stage 2`` measures the same for stage 2 (:func:`shoulders.recipes.ulmfit.finetune_lms`): 11.6's two ablated
language models (stage 2 without discriminative rates, and without STLR) fine-tuned on all the task's text from the
giant, in order and side by side, with each one's held-out perplexity and the largest difference between the ways.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

import shoulders as sh
from shoulders.models.awd_lstm import AWDLSTM, AWDLSTMConfig
from shoulders.recipes import ulmfit
from shoulders.recipes.finetune import accuracy, compare, prior_loss

WORKERS = (1, 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiny", action="store_true", help="the smoke giant, 100 sentences, 10 updates, two seeds")
    ap.add_argument("--labels", type=int, default=300, help="training sentences (the page's ablation budget)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=2, help="A, B pairs")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--stage", type=int, choices=(2, 3), default=3,
                    help="3: the classifier runs of a label budget; 2: 11.6's two stage-2 ablations")
    args = ap.parse_args()
    scale = "smoke" if args.tiny else "cpu"
    torch.set_num_threads(args.threads)
    giant = sh.giants.load("awd_lstm", AWDLSTMConfig.preset(scale), scale=scale, progress=False)
    lm0, vocab = giant.model.eval(), giant.tokenizer
    ucfg = ulmfit.ULMFiTConfig.preset(scale)
    if args.stage == 2:
        stage_2(lm0, vocab, ucfg, args)
        return
    labels, seeds, reps = (100, 2, 1) if args.tiny else (args.labels, args.seeds, args.reps)
    if args.tiny:
        ucfg = ucfg.replace(min_steps=10, max_steps=10)
    train_x, train_y, dev_x, dev_y = ulmfit.sst2_sentences(labels, 100 if args.tiny else None)  # the page's
    train = ulmfit.classifier_features(train_x, train_y, vocab)
    dev = ulmfit.classifier_features(dev_x, dev_y, vocab)
    majority = 100.0 * max(dev_y.count(0), dev_y.count(1)) / len(dev_y)
    trainers = {"ULMFiT": lambda *a, **k: ulmfit.train_classifier(*a, ulmfit=ucfg, **k),
                "from scratch": lambda *a, **k: ulmfit.train_classifier(*a, ulmfit=ucfg, gradual=False, **k)}
    encoders = {"ULMFiT": ulmfit.fresh_copy(lm0), "from scratch": lambda: AWDLSTM(giant.config)}
    lrs = {"ULMFiT": ucfg.lr, "from scratch": ucfg.scratch_lr}
    print(f"{scale}: {torch.get_num_threads()} thread(s); {len(train):,} labels, "
          f"{ucfg.finetuning().steps_for(len(train)):,} updates a run, {len(encoders)} encoders x {seeds} seeds, "
          f"{len(dev):,} dev sentences\n\n| call | workers | seconds | dev accuracy % (per seed) |\n|---|---|---|---|",
          flush=True)
    seconds: dict[int, list[float]] = {w: [] for w in WORKERS}
    rows: dict[int, list[dict]] = {w: [] for w in WORKERS}
    for rep in range(reps):
        for w in WORKERS:
            t0 = time.perf_counter()
            row = compare(ulmfit.classifier_maker(ucfg, n_classes=2), encoders, train, vocab.unk_id,
                          ucfg.replace(workers=w).finetuning(), lambda h: accuracy(h, dev, vocab.unk_id), lrs,
                          metric="dev accuracy %", baseline=majority, prior=prior_loss(train_y),
                          seeds=range(seeds), trainers=trainers)
            seconds[w].append(time.perf_counter() - t0)
            rows[w].append(row)
            print(f"| {rep} | {w} | {seconds[w][-1]:.1f} | "
                  + "; ".join(f"{e} {', '.join(f'{s:.1f}' for s in row[e]['scores'])}" for e in encoders)
                  + " |", flush=True)
    d_score = max(abs(x - y) for a in rows[1] for b in rows[2] for e in encoders
                  for x, y in zip(a[e]["scores"], b[e]["scores"]))
    d_loss = max(abs(a[e]["train_loss"] - b[e]["train_loss"]) for a in rows[1] for b in rows[2] for e in encoders)
    print_speed(seconds)
    print(f"largest difference between the two: dev accuracy {d_score:.2f} points, mean training loss {d_loss:.1e} "
          "(one thread sums in another order than two)")


def print_speed(seconds: dict[int, list[float]]) -> None:
    """Each way's median and minimum wall time, and their ratio in order / side by side."""
    med = {w: statistics.median(v) for w, v in seconds.items()}
    print("\n" + "; ".join(f"workers={w}: median {med[w]:.1f} s, min {min(seconds[w]):.1f} s" for w in WORKERS)
          + f"; in order / side by side = {med[1] / med[2]:.2f}x (min {min(seconds[1]) / min(seconds[2]):.2f}x)")


def stage_2(lm0: AWDLSTM, vocab: sh.text.Vocab, ucfg: ulmfit.ULMFiTConfig, args: argparse.Namespace) -> None:
    """11.6's two ablated stage-2 runs through finetune_lms, with workers=1 and workers=2, alternating."""
    text, held = sh.data.sst_trees("train")[0], sh.data.sst_trees("dev")[0]
    if args.tiny:
        text, held, ucfg = text[:100], held[:50], ucfg.replace(lm_min_steps=10, lm_epochs=1.0)
    stream, held_out = ulmfit.task_stream(text, vocab), ulmfit.task_stream(held, vocab)
    runs = {"without discriminative rates": (lm0, stream, {"discriminative": False}),
            "without STLR": (lm0, stream, {"slanted": False})}
    reps = 1 if args.tiny else args.reps
    print(f"stage 2: {torch.get_num_threads()} thread(s); {len(text):,} sentences ({len(stream):,} tokens), "
          f"{len(runs)} runs\n\n| call | workers | seconds | held-out perplexity (per run) |\n|---|---|---|---|",
          flush=True)
    seconds: dict[int, list[float]] = {w: [] for w in WORKERS}
    ppls: dict[int, list[list[float]]] = {w: [] for w in WORKERS}
    for rep in range(reps):
        for w in WORKERS:
            t0 = time.perf_counter()
            tuned = ulmfit.finetune_lms(runs, ucfg.replace(workers=w))
            seconds[w].append(time.perf_counter() - t0)
            ppls[w].append([ulmfit.task_perplexity(lm, held_out) for lm, _ in tuned.values()])
            print(f"| {rep} | {w} | {seconds[w][-1]:.1f} | "
                  + "; ".join(f"{name} {p:.2f}" for name, p in zip(runs, ppls[w][-1])) + " |", flush=True)
    d_ppl = max(abs(x - y) for a in ppls[1] for b in ppls[2] for x, y in zip(a, b))
    print_speed(seconds)
    print(f"largest difference between the two: held-out perplexity {d_ppl:.2f} (one thread sums in another order "
          "than two)")


if __name__ == "__main__":
    main()

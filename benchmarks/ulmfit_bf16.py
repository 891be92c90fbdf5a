"""bf16 arithmetic for chapter 11's classifier on a CPU: how much faster, and does it still learn?

    python benchmarks/ulmfit_bf16.py            # cpu: the cached awd_lstm giant, 300 labels, three seeds, ~2 minutes
    python benchmarks/ulmfit_bf16.py --tiny     # seconds: the smoke giant, 100 sentences, 10 updates (a test)

Page 11's time is almost all AWD-LSTM forward and backward passes (oneDNN's fused LSTM kernel). CPUs with
AVX512-BF16 or AMX run those kernels in bf16 faster, so ``torch.autocast("cpu", dtype=torch.bfloat16)`` around the
training loop is the obvious lever for the page's 20 minutes. This script trains the page's stage-3 classifier
(:func:`shoulders.recipes.ulmfit.train_classifier`: gradual unfreezing, STLR, the page's rates and updates) on the
giant's weights as they are (no stage 2: the arithmetic is the question, not the recipe) on the first ``--labels``
training sentences of the page's order, in float32 and under bf16 autocast, alternating A, B, A, B, one seed per
pair, and prints per run the seconds, the dev accuracy and the mean training loss of the last ten updates, then
the median and minimum seconds of each and their ratio.

Measured at cpu (2026-12-05, two threads, the project's 2-core AMD EPYC with AVX512-BF16, seeds 0-2): float32 14.8
s a run (median; min 14.6), bf16 10.7 s (min 10.5), 1.39x; but under bf16 the classifier no longer fits its 300
labels (training loss 0.551-0.563 against 0.049-0.077) and scores 62.0 / 63.2 / 62.8 on dev against 63.1 / 67.1 /
64.8, so chapter 11 stays in float32.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import statistics
import time

import torch

import shoulders as sh
from shoulders.models.awd_lstm import AWDLSTMConfig
from shoulders.recipes import ulmfit
from shoulders.recipes.finetune import accuracy

MODES = ("float32", "bf16")


def native_bf16() -> bool:
    """Whether oneDNN reports native bf16 arithmetic on this CPU (without it, bf16 is emulated and slow)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiny", action="store_true", help="the smoke giant, 100 sentences, 10 updates, one seed")
    ap.add_argument("--labels", type=int, default=300, help="training sentences (the page's ablation budget)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    scale = "smoke" if args.tiny else "cpu"
    torch.set_num_threads(args.threads)
    giant = sh.giants.load("awd_lstm", AWDLSTMConfig.preset(scale), scale=scale, progress=False)
    lm0, vocab = giant.model.eval(), giant.tokenizer
    ucfg = ulmfit.ULMFiTConfig.preset(scale)
    labels, seeds = (100, 1) if args.tiny else (args.labels, args.seeds)
    if args.tiny:
        ucfg = ucfg.replace(min_steps=10, max_steps=10)
    train_x, train_y, dev_x, dev_y = ulmfit.sst2_sentences(labels, 100 if args.tiny else None)  # the page's
    train = ulmfit.classifier_features(train_x, train_y, vocab)
    dev = ulmfit.classifier_features(dev_x, dev_y, vocab)
    make, ft = ulmfit.classifier_maker(ucfg, n_classes=2), ucfg.finetuning()
    print(f"{scale}: {torch.get_num_threads()} thread(s), native bf16: {native_bf16()}; {len(train):,} labels, "
          f"{ft.steps_for(len(train)):,} updates, {len(dev):,} dev sentences\n\n"
          "| seed | arithmetic | seconds | dev accuracy % | training loss (last 10) |\n|---|---|---|---|---|",
          flush=True)
    seconds: dict[str, list[float]] = {m: [] for m in MODES}
    for seed in range(seeds):
        for mode in MODES:
            sh.seed(seed)
            clf = make(copy.deepcopy(lm0))
            ctx = torch.autocast("cpu", dtype=torch.bfloat16) if mode == "bf16" else contextlib.nullcontext()
            t0 = time.perf_counter()
            with ctx:
                history = ulmfit.train_classifier(clf, train, vocab.unk_id, ft, ulmfit=ucfg, progress=False)
            seconds[mode].append(time.perf_counter() - t0)
            loss = history.series("loss")[1][-10:].mean()
            print(f"| {seed} | {mode} | {seconds[mode][-1]:.1f} | {accuracy(clf, dev, vocab.unk_id):.1f} | "
                  f"{loss:.3f} |", flush=True)
    med = {m: statistics.median(v) for m, v in seconds.items()}
    print("\n" + "; ".join(f"{m}: median {med[m]:.1f} s, min {min(seconds[m]):.1f} s" for m in MODES)
          + f"; float32 / bf16 = {med['float32'] / med['bf16']:.2f}x")


if __name__ == "__main__":
    main()

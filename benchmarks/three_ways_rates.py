"""One fine-tuning rate for every network, or each network at its own chapter's (chapter 16): both, measured.

    python benchmarks/three_ways_rates.py                        # cpu giants (cached), SST-2 and SNLI, ~27 minutes
    python benchmarks/three_ways_rates.py --networks awd_lstm --tasks SST-2      # one network, one task, ~4 minutes
    python benchmarks/three_ways_rates.py --tiny                 # smoke giants, one seed, a few updates
    python benchmarks/three_ways_rates.py --scale smoke --networks gpt bert xlnet --pooling paper mean --rates chapters

Page 16 fine-tunes four pre-trained networks -- the AWD-LSTM (ULMFiT's), GPT, BERT and XLNet -- two ways ("top":
the top layer and the head; "full": everything) beside the same network from scratch, with the same updates,
batch and schedule for all. Which rate? Its first version gave every network one rate (``ThreeWaysConfig.lr``,
5e-4 at cpu, ``rates="shared"``); the page now gives each network the rates its own chapter fine-tuned it and its
from-scratch twin at (``rates="chapters"``: chapter 11's 3e-3 for the AWD-LSTM, chapter 13's 2e-3 for GPT and 5e-4
for its twin, chapters 14 and 15's 5e-4 for BERT and XLNet). This script runs both on the page's tasks, budgets,
seeds and samples (:func:`shoulders.recipes.three_ways.run`, the frozen way left out: it has no rate) and prints
one Markdown row per network, rates, task, budget and way: the mean held-out accuracy, each seed, whether every
seed fitted its labels (its last updates' training loss below the sample's label-blind loss, the page's check),
and the seconds per run. A network whose two settings give the same rates runs once (BERT and XLNet at cpu).

Measured at cpu (2026-12-05, two threads, 2-core CPU, seeds 0-2, 60 / 120 updates at 500 / 2,000 labels; the
AWD-LSTM and GPT at both settings took 20.8 minutes): at the shared 5e-4 neither the AWD-LSTM (top and full) nor
GPT's top layer fits 2,000 SST-2 labels, and the AWD-LSTM fits no SNLI sample (38.2% fine-tuned); at the chapters'
rates every top and full run fits (AWD-LSTM SST-2 60.2 / 64.3, SNLI 44.0 / 46.0; GPT SST-2 58.9 / 69.7, SNLI 46.1 /
39.5 -- GPT's whole network does better on SNLI at 5e-4, 47.2). From scratch the AWD-LSTM fits no SNLI sample at
either rate (34.6% at 3e-3), which is why the page asserts fitting for the giants' ways only. BERT and XLNet
(one setting each: chapters 14 and 15 fine-tune both twins at 5e-4; 5 minutes, the same numbers as the page):
every top and full run fits except XLNet's top layer with 500 SST-2 labels (54.4%) and with 2,000 SNLI pairs
(36.9%; it fits with twice the updates, which page 16 checks: ``slow_to_fit`` in its preset); fine-tuned whole,
BERT SST-2 59.7 / 64.8, SNLI 41.0 / 45.2; XLNet SST-2 61.0 / 66.1, SNLI 36.7 / 42.1; BERT from scratch fits no SST-2
sample at 5e-4 (50.9 / 55.7).

``--pooling mean`` asks a second question of GPT, BERT and XLNet: what if the classifier read the mean of the top
layer's token vectors (:class:`shoulders.heads.MeanPooled`, as Sentence-BERT pools) instead of the summary each
paper uses (GPT's and XLNet's last token, BERT's ``[CLS]`` pooler)? Masked LM trains every token's top vector and
next-sentence prediction only ``[CLS]``'s; a one-minute giant's ``[CLS]`` barely differs from one sentence pair to
the next. The AWD-LSTM's head (ULMFiT's concat pooling) pools every state already, so it has no such row. Measured
at smoke (2026-12-08, two threads, 2-core CPU, seed 0, the page's 600 labels and 100 updates, the chapters' rates;
``--scale smoke --networks gpt bert xlnet --pooling paper mean --rates chapters``, 2.5 minutes), the paper's summary
then the mean: on SNLI (majority class 36.2%) BERT fine-tuned whole 35.5 -> 43.3 and its top layer 33.3 -> 40.5,
XLNet's top layer 33.3 -> 37.7, but XLNet fine-tuned whole 37.3 -> 34.7 and GPT below the majority class either
way (whole 30.0 -> 30.8, top layer 30.5 -> 32.2); on SST-2 (51.5%) the top layer of XLNet 51.5 -> 54.3, of GPT
52.2 -> 50.7, of BERT 51.5 -> 51.0. One seed on 400 held-out examples (a standard error of about 2.4 points): the
mean helps BERT, whose ``[CLS]`` only next-sentence prediction trained, and is no way to make every one-minute
giant clear the majority class at smoke.
"""
from __future__ import annotations

import argparse
import dataclasses
from types import SimpleNamespace

import numpy as np
import torch

from shoulders import giants, heads
from shoulders.recipes import three_ways as tw

CONTENDERS = {"awd_lstm": tw.awd_lstm_contender, "gpt": tw.gpt_contender, "bert": tw.bert_contender,
              "xlnet": tw.xlnet_contender}
TASKS = ("SST-2", "SNLI")
WAYS = ("top", "full", "scratch")
POOLINGS = ("paper", "mean")


def mean_pooled(c: tw.Contender) -> tw.Contender:
    """``c`` with its networks' summary the mean of the top layer's real tokens (:class:`~shoulders.heads.
    MeanPooled` around the giant and around its from-scratch twin); its top layers are the wrapped network's."""
    def top(head, k):
        return c.top(SimpleNamespace(encoder=head.encoder.encoder), k)

    return dataclasses.replace(c, pretrained=lambda pair: heads.MeanPooled(c.pretrained(pair)),
                               scratch=lambda pair: heads.MeanPooled(c.scratch(pair)), top=top)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--tiny", action="store_true", help="smoke giants, 120 labels, 10 updates, one seed")
    p.add_argument("--scale", choices=("smoke", "cpu"), default="cpu", help="whose giants and page preset (without "
                   "--tiny: the page's budgets, updates and seeds at that scale)")
    p.add_argument("--networks", nargs="*", default=list(CONTENDERS), help=f"of {list(CONTENDERS)}")
    p.add_argument("--tasks", nargs="*", default=list(TASKS), help=f"of {list(TASKS)}")
    p.add_argument("--budgets", type=int, nargs="*", default=None, help="label budgets (default: the page's)")
    p.add_argument("--rates", nargs="*", default=list(tw.RATES), help=f"of {list(tw.RATES)}")
    p.add_argument("--pooling", nargs="*", default=["paper"], help=f"of {list(POOLINGS)}: the paper's summary "
                   "(last token, [CLS]) or the mean of the top layer (not for the AWD-LSTM: it pools already)")
    p.add_argument("--shared-lr", type=float, default=None, help="the one rate of rates='shared' (default: the "
                   "preset's lr)")
    args = p.parse_args()
    for name, given, known in (("--networks", args.networks, CONTENDERS), ("--tasks", args.tasks, TASKS),
                               ("--rates", args.rates, tw.RATES), ("--pooling", args.pooling, POOLINGS)):
        if not given or not set(given) <= set(known):
            p.error(f"{name} takes some of {list(known)}, got {given}")
    torch.set_num_threads(args.threads)
    scale = "smoke" if args.tiny else args.scale
    tiny = dict(budgets=(120,), steps=(10,), seeds=1, sst_eval=200, snli_eval=200) if args.tiny else {}
    base = tw.ThreeWaysConfig.preset(scale, **tiny, **({"lr": args.shared_lr} if args.shared_lr else {}))
    if args.budgets:
        page = dict(zip(base.budgets, base.steps))
        if not set(args.budgets) <= set(page):
            p.error(f"--budgets takes some of the page's {list(page)}, got {args.budgets}")
        base = base.replace(budgets=tuple(sorted(args.budgets)), steps=tuple(page[n] for n in sorted(args.budgets)))
    tasks = {k: v for k, v in tw.load_tasks(base).items() if k in args.tasks}
    print(f"scale={scale}, threads={torch.get_num_threads()}; {base.seeds} seed(s), budgets {list(base.budgets)} "
          f"with {list(base.steps)} updates; held-out accuracy %, mean and each seed; 'fits': every seed's training "
          f"loss below its label-blind loss\n\n| network | rates | pooling | lr | task | labels | way | mean | seeds | "
          f"fits | s per run |\n|---|---|---|---|---|---|---|---:|---|---|---:|", flush=True)
    for name in args.networks:
        giant = giants.load(name, scale=scale, progress=False)
        for pooling in args.pooling:
            if pooling == "mean" and name == "awd_lstm":
                print(f"| {name} | any | mean | ULMFiT's concat pooling pools every state already | | | | | | | |")
                continue
            done: set[tuple[float, float | None]] = set()
            for rates in args.rates:
                cfg = base.replace(rates=rates)
                c = CONTENDERS[name](giant, cfg)
                if (c.lr, c.scratch_lr) in done:
                    print(f"| {name} | {rates} | {pooling} | the same as above | | | | | | | |", flush=True)
                    continue
                done.add((c.lr, c.scratch_lr))
                results = tw.run([mean_pooled(c) if pooling == "mean" else c], tasks, cfg, ways=WAYS,
                                 progress=False)
                for (task, _, way, n), r in results.items():
                    print(f"| {name} | {rates} | {pooling} | {r['lr']:g} | {task} | {n:,} | {way} | "
                          f"{np.mean(r['scores']):.1f} | {' / '.join(f'{s:.1f}' for s in r['scores'])} | "
                          f"{'yes' if tw.fitted(r) else 'no'} | {np.mean(r['seconds']):.1f} |", flush=True)


if __name__ == "__main__":
    main()

"""One fine-tuning rate for every network, or each network at its own chapter's (chapter 16): both, measured.

    python benchmarks/three_ways_rates.py                        # cpu giants (cached), SST-2 and SNLI, ~27 minutes
    python benchmarks/three_ways_rates.py --networks awd_lstm --tasks SST-2      # one network, one task, ~4 minutes
    python benchmarks/three_ways_rates.py --tiny                 # smoke giants, one seed, a few updates

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
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

from shoulders import giants
from shoulders.recipes import three_ways as tw

CONTENDERS = {"awd_lstm": tw.awd_lstm_contender, "gpt": tw.gpt_contender, "bert": tw.bert_contender,
              "xlnet": tw.xlnet_contender}
TASKS = ("SST-2", "SNLI")
WAYS = ("top", "full", "scratch")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--tiny", action="store_true", help="smoke giants, 120 labels, 10 updates, one seed")
    p.add_argument("--networks", nargs="*", default=list(CONTENDERS), help=f"of {list(CONTENDERS)}")
    p.add_argument("--tasks", nargs="*", default=list(TASKS), help=f"of {list(TASKS)}")
    p.add_argument("--budgets", type=int, nargs="*", default=None, help="label budgets (default: the page's)")
    p.add_argument("--rates", nargs="*", default=list(tw.RATES), help=f"of {list(tw.RATES)}")
    p.add_argument("--shared-lr", type=float, default=None, help="the one rate of rates='shared' (default: the "
                   "preset's lr)")
    args = p.parse_args()
    for name, given, known in (("--networks", args.networks, CONTENDERS), ("--tasks", args.tasks, TASKS),
                               ("--rates", args.rates, tw.RATES)):
        if not given or not set(given) <= set(known):
            p.error(f"{name} takes some of {list(known)}, got {given}")
    torch.set_num_threads(args.threads)
    scale = "smoke" if args.tiny else "cpu"
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
          f"loss below its label-blind loss\n\n| network | rates | lr | task | labels | way | mean | seeds | fits | "
          f"s per run |\n|---|---|---|---|---|---|---:|---|---|---:|", flush=True)
    for name in args.networks:
        giant = giants.load(name, scale=scale, progress=False)
        done: set[tuple[float, float | None]] = set()
        for rates in args.rates:
            cfg = base.replace(rates=rates)
            c = CONTENDERS[name](giant, cfg)
            if (c.lr, c.scratch_lr) in done:
                print(f"| {name} | {rates} | the same as above | | | | | | | |", flush=True)
                continue
            done.add((c.lr, c.scratch_lr))
            results = tw.run([c], tasks, cfg, ways=WAYS, progress=False)
            for (task, _, way, n), r in results.items():
                print(f"| {name} | {rates} | {r['lr']:g} | {task} | {n:,} | {way} | {np.mean(r['scores']):.1f} | "
                      f"{' / '.join(f'{s:.1f}' for s in r['scores'])} | {'yes' if tw.fitted(r) else 'no'} | "
                      f"{np.mean(r['seconds']):.1f} |", flush=True)


if __name__ == "__main__":
    main()

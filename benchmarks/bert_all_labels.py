"""What moves BERT's SST-2 score with every label (chapter 14b): the levers tried, each measured the page's way.

    python benchmarks/bert_all_labels.py            # cpu: the bert and bert_sst giants (cached), ~35 minutes
    python benchmarks/bert_all_labels.py --tiny     # smoke giants, a few hundred labels, seconds of fine-tuning

Page 14b fine-tunes the ``bert`` giant and the same network from scratch on SST-2 with three seeds. With every
label (67,349 phrases) the cpu giant barely moves past the fresh network. This script fine-tunes on all of
SST-2's training phrases (``--labels`` of them at ``--tiny``) exactly as the page does
(:func:`shoulders.recipes.finetune.compare`: same phrases, order, seeds, schedule and head; below every label,
each seed's own sample, :func:`~shoulders.recipes.finetune.seed_samples`) and varies one setting
at a time:

* the encoder: from scratch, the ``bert`` giant, or the ``bert_sst`` giant (the ``bert`` giant pre-trained further
  with masked LM on SST's unlabelled training sentences: task-adaptive pre-training, Gururangan et al. 2020);
* the fine-tuning learning rate (the page: 5e-4 for both);
* the number of updates (the page: at most 1,500, under one pass over the phrases; 0 below means no cap: the
  paper's three passes, Appendix A.3);
* the pooler: the giant's ``[CLS]`` pooler, trained for next-sentence prediction, re-initialised before
  fine-tuning (Zhang et al. 2021, "Revisiting few-sample BERT fine-tuning", §5, re-initialise the top of the
  pre-trained network: it is the part most specialised to the pre-training task).

It prints one Markdown row per variant: the mean dev accuracy, each seed, and the seconds per run. A second table
asks whether the page's one rate for both encoders is fair to the fresh network where labels are few: for the
page's budgets up to 1,000 phrases, every encoder at each of ``RATES`` (the page's curve uses 5e-4 for all), and
the gain of pre-training when each encoder gets its own best rate (chosen on the dev set itself, so an upper
bound for either side).
"""
from __future__ import annotations

import argparse
import copy
import functools
import time

import torch

from shoulders import giants, heads
from shoulders._seed import seed as set_seed
from shoulders.models.bert import BertModel, init_bert_weights
from shoulders.recipes.bert import BertPretrainingConfig
from shoulders.recipes.bert_in_domain import InDomainConfig
from shoulders.recipes.finetune import BertFinetuningConfig, accuracy, compare, seed_samples, sst2_phrases

# (encoder, learning rate or None for the page's, max updates: None for the page's cap, 0 for none = cfg.epochs passes)
VARIANTS = (("from scratch", None, None), ("pre-trained", None, None), ("pre-trained + SST text", None, None),
            ("pre-trained", 2e-4, None), ("pre-trained + SST text", 2e-4, None),
            ("pre-trained", 1e-3, None), ("pre-trained + SST text", 1e-3, None), ("from scratch", 1e-3, None),
            ("from scratch", None, 3_000), ("pre-trained", None, 3_000),
            ("from scratch", None, 0), ("pre-trained", None, 0),
            ("pre-trained, new pooler", None, None), ("pre-trained + SST text", None, 3_000))
RATE_ENCODERS = ("from scratch", "pre-trained", "pre-trained + SST text")  # the few-labels table's encoders
RATES = (2e-4, 5e-4, 1e-3)


def new_pooler(encoder: BertModel) -> BertModel:
    """``encoder`` with its ``[CLS]`` pooler drawn afresh, as BERT initialises it (N(0, 0.02^2), zero bias)."""
    init_bert_weights(encoder.pooler)
    return encoder


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="cpu", choices=["smoke", "cpu", "full"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seeds", type=int, default=None, help="seeds per variant (default: the preset's sst2_seeds)")
    p.add_argument("--tiny", action="store_true", help="smoke giants, --labels phrases, 10 updates, one seed")
    p.add_argument("--labels", type=int, default=300, help="phrases fine-tuned on with --tiny")
    p.add_argument("--variants", type=int, nargs="*", default=None,
                   help="run only these rows of VARIANTS (0-based; default: all), e.g. --variants 10 11")
    p.add_argument("--no-rates", action="store_true", help="skip the few-labels table of rates")
    p.add_argument("--budgets", type=int, nargs="*", default=None,
                   help="label budgets of the rates table (default: the preset's, up to 1,000)")
    args = p.parse_args()
    if args.variants is not None and not set(args.variants) <= set(range(len(VARIANTS))):
        p.error(f"--variants takes rows 0 to {len(VARIANTS) - 1} of VARIANTS, got {args.variants}")
    torch.set_num_threads(args.threads)
    preset = "smoke" if args.tiny else args.preset
    set_seed(0)
    pcfg = BertPretrainingConfig.preset(preset)
    cfg = BertFinetuningConfig.preset(preset, **(dict(max_steps=10, min_steps=10) if args.tiny else {}))
    bert = giants.load("bert", pcfg, progress=False)
    # bert_sst: loaded (or trained) the first time a row asks for it, then kept
    bert_sst = functools.cache(lambda: giants.load("bert_sst", InDomainConfig.preset(preset), progress=False))
    tok = bert.tokenizer
    encoders = {"from scratch": lambda: BertModel(bert.model.bert.cfg),
                "pre-trained": lambda: copy.deepcopy(bert.model.bert),
                "pre-trained + SST text": lambda: copy.deepcopy(bert_sst().model.bert),
                "pre-trained, new pooler": lambda: new_pooler(copy.deepcopy(bert.model.bert))}
    train, _, dev, majority = sst2_phrases(tok, cfg, args.labels if args.tiny else None)  # the page's phrases
    seeds = range(1 if args.tiny else (args.seeds or cfg.sst2_seeds))
    print(f"{preset} presets, {torch.get_num_threads()} thread(s); SST-2 dev accuracy % after fine-tuning on "
          f"{len(train):,} phrases, seeds {list(seeds)}; majority class {majority:.1f}%")

    def run(name: str, rate: float, n: int, run_cfg: BertFinetuningConfig) -> dict:
        # each seed's own n phrases, as the page's curve draws them (every label: the pool in the page's order)
        return compare(lambda enc: heads.SequenceClassifier(enc, 2), {name: encoders[name]},
                       seed_samples(train, n, seeds).__getitem__, tok.pad_id, run_cfg,
                       lambda head: accuracy(head, dev, tok.pad_id), {name: rate}, metric="dev accuracy %",
                       baseline=majority, steps=run_cfg.steps_for(n), seeds=seeds)[name]

    print("\nWith every label:\n\n| encoder | learning rate | updates | mean | seeds | s per run |\n"
          "|---|---|---|---|---|---|")
    for i, (name, lr, max_steps) in enumerate(VARIANTS):
        if args.variants is not None and i not in args.variants:
            continue
        run_cfg = cfg if max_steps is None else cfg.replace(max_steps=max_steps or None)
        rate = lr or (cfg.scratch_lr if name == "from scratch" else cfg.lr)
        t0 = time.perf_counter()
        r = run(name, rate, len(train), run_cfg)
        print(f"| {name} | {rate:g} | {r['steps']:,} | {r['score']:.1f} | "
              f"{' / '.join(f'{s:.1f}' for s in r['scores'])} | {(time.perf_counter() - t0) / len(seeds):.0f} |",
              flush=True)
    budgets = [] if args.no_rates else [n for n in (args.budgets or cfg.sst2_budgets) if n <= min(1_000, len(train))]
    if not budgets:
        return
    print("\nWith few labels, each encoder at each rate (mean over the seeds; the best rate in bold):\n\n"
          "| labels | updates | encoder | " + " | ".join(f"{r:g}" for r in RATES) + " |\n|---|---|---|"
          + "---|" * len(RATES))
    for n in budgets:
        best = {}
        for name in RATE_ENCODERS:
            scores = {rate: run(name, rate, n, cfg)["score"] for rate in RATES}
            best[name] = max(scores.values())
            print(f"| {n:,} | {cfg.steps_for(n)} | {name} | " + " | ".join(
                f"**{v:.1f}**" if v == best[name] else f"{v:.1f}" for v in scores.values()) + " |", flush=True)
        print(f"| {n:,} | | gain at each one's best rate | " + ", ".join(
            f"{k}: {best[k] - best['from scratch']:+.1f}" for k in RATE_ENCODERS if k != "from scratch") + " |",
            flush=True)


if __name__ == "__main__":
    main()

"""What moves BERT's SST-2 score with every label (chapter 14b): the levers tried, each measured the page's way.

    python benchmarks/bert_all_labels.py            # cpu: the bert and bert_sst giants (cached), over an hour
    python benchmarks/bert_all_labels.py --variants 23 24 --no-rates   # two rows (each prints its s per run)
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
  pre-trained network: it is the part most specialised to the pre-training task);
* the way of fine-tuning (the column "fine-tuning"; the page's is "as the page"), each for both encoders where it
  applies to both: a *linear probe first* (Kumar et al. 2022, "Fine-tuning can distort pretrained features": the
  classifier trained alone on the frozen encoder, a ``PROBE_SHARE`` of the run's updates more at ``PROBE_LR``,
  before the page's fine-tuning, so that a random head does not pull the pre-trained features about at first;
  the "updates" column counts the fine-tuning's only);
  *layer-wise rates* (Sun et al. 2019, "How to fine-tune BERT for text classification?": each layer's rate
  ``LAYER_DECAY`` times the one above, the embeddings lowest -- ULMFiT's discriminative rates, chapter 11);
  a *weight average* (Polyak averaging: the classifier scored with an exponential moving average of its weights,
  decay ``AVERAGE_DECAY``, which smooths the last updates' noise); *mean pooling* (the classifier on the mean of
  the top layer's token vectors instead of the ``[CLS]`` pooler: Reimers & Gurevych 2019 pool so; masked LM
  trains every token's vector and only next-sentence prediction trains ``[CLS]``); mean pooling with 3,000 updates
  also on the ``bert_sst`` giant, whose token vectors masked LM went on training on SST's own sentences (the two
  levers that helped, together); and *word embeddings frozen* (the WordPiece table left as pre-training made it,
  so that a word the labelled phrases never show keeps its place among the words they do).

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
from typing import Any

import torch

from shoulders import giants, heads
from shoulders._seed import seed as set_seed
from shoulders.models.bert import BertModel, init_bert_weights
from shoulders.recipes.bert import BertPretrainingConfig
from shoulders.recipes.bert_in_domain import InDomainConfig
from shoulders.recipes.finetune import (BertFinetuningConfig, accuracy, compare, finetune, seed_samples,
                                        set_trainable, sst2_phrases)
from shoulders.train import Callback, discriminative_lr, freeze

PAGE = "as the page"
PROBE, LAYERWISE, AVERAGE, MEAN = "linear probe first", "layer-wise rates", "weight average", "mean pooling"
WORDS_FIXED = "word embeddings frozen"
# (encoder, learning rate or None for the page's, max updates: None for the page's cap, 0 for none = cfg.epochs
# passes, the way of fine-tuning)
VARIANTS = (("from scratch", None, None, PAGE), ("pre-trained", None, None, PAGE),
            ("pre-trained + SST text", None, None, PAGE),
            ("pre-trained", 2e-4, None, PAGE), ("pre-trained + SST text", 2e-4, None, PAGE),
            ("pre-trained", 1e-3, None, PAGE), ("pre-trained + SST text", 1e-3, None, PAGE),
            ("from scratch", 1e-3, None, PAGE),
            ("from scratch", None, 3_000, PAGE), ("pre-trained", None, 3_000, PAGE),
            ("from scratch", None, 0, PAGE), ("pre-trained", None, 0, PAGE),
            ("pre-trained, new pooler", None, None, PAGE), ("pre-trained + SST text", None, 3_000, PAGE),
            ("from scratch", None, None, PROBE), ("pre-trained", None, None, PROBE),
            ("pre-trained", None, None, LAYERWISE),
            ("from scratch", None, None, AVERAGE), ("pre-trained", None, None, AVERAGE),
            ("from scratch", None, None, MEAN), ("pre-trained", None, None, MEAN),
            ("from scratch", None, 3_000, MEAN), ("pre-trained", None, 3_000, MEAN),
            ("pre-trained + SST text", None, 3_000, MEAN), ("pre-trained", None, None, WORDS_FIXED))
RATE_ENCODERS = ("from scratch", "pre-trained", "pre-trained + SST text")  # the few-labels table's encoders
RATES = (2e-4, 5e-4, 1e-3)
PROBE_SHARE, PROBE_LR = 0.2, 1e-3   # the linear probe before fine-tuning: 300 updates before the page's 1,500
LAYER_DECAY = 0.8                   # Sun et al. (2019) found 0.95 best for BERT-base's 12 layers; ours has 2
AVERAGE_DECAY = 0.998               # the average's horizon: about 500 of the 1,500 updates


def new_pooler(encoder: BertModel) -> BertModel:
    """``encoder`` with its ``[CLS]`` pooler drawn afresh, as BERT initialises it (N(0, 0.02^2), zero bias)."""
    init_bert_weights(encoder.pooler)
    return encoder


class WeightAverage(Callback):
    """An exponential moving average of the model's floating-point weights, updated after every step with decay
    ``min(decay, (1 + n) / (10 + n))`` at the n-th (short at first, so the start is soon forgotten)."""

    def __init__(self, decay: float):
        self.decay, self.n, self.average = decay, 0, None

    def on_step_end(self, run: Any, logs: dict[str, float]) -> None:
        state = run.model.state_dict()
        if self.average is None:
            self.average = {k: v.detach().clone() for k, v in state.items()}
        self.n += 1
        d = min(self.decay, (1 + self.n) / (10 + self.n))
        for k, v in state.items():
            if v.is_floating_point():
                self.average[k].mul_(d).add_(v.detach(), alpha=1 - d)


def probe_first(head, features, pad_id, cfg, lr=None, steps=None, **kw):
    """:func:`finetune` after ``PROBE_SHARE * steps`` updates of the classifier alone on the frozen encoder."""
    set_trainable(head, "frozen")
    finetune(head, features, pad_id, cfg, lr=PROBE_LR, steps=max(1, round(PROBE_SHARE * steps)), **kw)
    set_trainable(head, "full")
    return finetune(head, features, pad_id, cfg, lr=lr, steps=steps, **kw)


def layerwise(head, features, pad_id, cfg, lr=None, steps=None, **kw):
    """:func:`finetune` with each layer's rate ``LAYER_DECAY`` times the one above (embeddings, layers bottom to
    top, then the pooler and classifier at ``lr``)."""
    bert = head.encoder
    groups = [bert.embeddings, *bert.encoder.layers, [bert.pooler, head.classifier]]
    return finetune(head, features, pad_id, cfg, lr=lr, steps=steps,
                    param_groups=discriminative_lr(groups, lr, decay=1 / LAYER_DECAY), **kw)


def averaged(head, features, pad_id, cfg, lr=None, steps=None, callbacks=(), **kw):
    """:func:`finetune`, then the head takes the weight average of its run (:class:`WeightAverage`)."""
    average = WeightAverage(AVERAGE_DECAY)
    history = finetune(head, features, pad_id, cfg, lr=lr, steps=steps, callbacks=[*callbacks, average], **kw)
    head.load_state_dict(average.average)
    return history


def words_fixed(head, features, pad_id, cfg, **kw):
    """:func:`finetune` with the encoder's WordPiece embeddings left as pre-training made them."""
    freeze(head.encoder.embeddings.word)
    return finetune(head, features, pad_id, cfg, **kw)


TRAINERS = {PAGE: finetune, PROBE: probe_first, LAYERWISE: layerwise, AVERAGE: averaged, MEAN: finetune,
            WORDS_FIXED: words_fixed}


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

    def run(name: str, rate: float, n: int, run_cfg: BertFinetuningConfig, way: str = PAGE) -> dict:
        # each seed's own n phrases, as the page's curve draws them (every label: the pool in the page's order)
        return compare(lambda enc: heads.SequenceClassifier(heads.MeanPooled(enc) if way == MEAN else enc, 2),
                       {name: encoders[name]},
                       seed_samples(train, n, seeds).__getitem__, tok.pad_id, run_cfg,
                       lambda head: accuracy(head, dev, tok.pad_id), {name: rate}, metric="dev accuracy %",
                       baseline=majority, steps=run_cfg.steps_for(n), seeds=seeds,
                       trainers={name: TRAINERS[way]})[name]

    print("\nWith every label:\n\n| encoder | fine-tuning | learning rate | updates | mean | seeds | s per run |\n"
          "|---|---|---|---|---|---|---|")
    for i, (name, lr, max_steps, way) in enumerate(VARIANTS):
        if args.variants is not None and i not in args.variants:
            continue
        run_cfg = cfg if max_steps is None else cfg.replace(max_steps=max_steps or None)
        rate = lr or (cfg.scratch_lr if name == "from scratch" else cfg.lr)
        t0 = time.perf_counter()
        r = run(name, rate, len(train), run_cfg, way)
        print(f"| {name} | {way} | {rate:g} | {r['steps']:,} | {r['score']:.1f} | "
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

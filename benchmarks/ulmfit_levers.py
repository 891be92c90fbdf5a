"""Chapter 11's levers on ULMFiT's SST-2 score: classifier updates, task words, stage 2, stage 3's rate and dropout,
the text's start, the giant's pre-training.

    python benchmarks/ulmfit_levers.py                  # cpu: the cached awd_lstm giant, about 30 minutes on two cores
    python benchmarks/ulmfit_levers.py --lever updates  # one lever
    python benchmarks/ulmfit_levers.py --lever samples --seeds 9   # one lever, nine seeds a row
    python benchmarks/ulmfit_levers.py --tiny           # seconds: the smoke giant, a few hundred sentences (a test)

Page 11 trains the stage-3 classifier for three passes over its labels (at least 100 updates), and its ULMFiT
classifier ends with a higher training loss than the same network from scratch (with all labels 0.478 against
0.311): under gradual unfreezing its lower layers train for half of the updates. Is ULMFiT held back by too few
updates, or by the words it cannot read? Every row here is the page's comparison
(:func:`shoulders.recipes.finetune.compare`: stage 2 on all the task's text as in 11.3, the page's shuffle of the
6,920 training sentences -- its label budgets the first n of it, one sample for every seed, unless the row's sample
column says "per seed" --, the concat-pooling classifier, ULMFiT under gradual unfreezing and from scratch all at
once, dev accuracy, seeds 0-2 or ``--seeds``) with one setting changed:

* ``updates`` -- every label, three passes (the page, 325 updates) and ten passes (1,082 updates);
* ``labels`` -- 1,000 labels, the page's 100 updates and 300 updates (ten passes, at least 300);
* ``vocabulary`` -- 100, 300 and 1,000 labels with the giant's vocabulary as it is (every word WikiText-2 lacks is
  its ``<unk>``) and grown by the task's words seen at least twice before stage 2 (:func:`~shoulders.recipes.ulmfit.
  task_vocabulary`, as ULMFiT's code does); the control from scratch reads the same vocabulary;
* ``stage-2`` -- the grown vocabulary with six passes of stage 2 instead of two, at 100 and 300 labels;
* ``rates`` -- stage 3's peak rate, for both encoders, at 1e-3, the page's 3e-3 and 1e-2, at 100, 300 and 1,000
  labels: is the page's one rate fair to both? (A pre-trained network may want a gentler rate with few labels, a
  random one a bolder one.) Choosing each encoder's best rate on the dev set that also scores it flatters both
  alike; the gain between the two best rows is an upper bound on what rates can do for ULMFiT here;
* ``dropout`` -- stage 3's dropouts (the head's two and the encoder's five AWD-LSTM ones, both encoders) times 0.5,
  1 (the page) and 2 (fastai's ``drop_mult``; its IMDb classifier uses 0.5), at 100, 300 and 1,000 labels: does a
  pre-trained encoder want less regularisation with few labels, or a random one more?
* ``boundary`` -- each classifier text as the page reads it (its first word read from the LSTMs' zero state) and
  started by ``<eos>`` (``mark_start``), the boundary the giant read before every sentence in stages 1 and 2 (the
  authors' code starts every text with ``xxbos``), at 100, 300 and 1,000 labels, both encoders alike;
* ``authors-text`` -- both of what the authors' code does to the text, the task's vocabulary (``vocabulary``) and
  a marked start (``boundary``), at 100, 300 and 1,000 labels;
* ``pretraining`` -- the page's giant and one pre-trained for twice its steps (the same preset with ``steps``
  doubled, its cosine schedule stretched to match: a variant giant, cached under its own key, about an hour once at
  ``cpu`` on a fast day), at 100, 300 and 1,000 labels: 11.8 shows accuracy still rising at the giant's last step,
  so does twice the pre-training buy the rest of the paper's gain? The from-scratch runs do not depend on it;
* ``samples`` -- the page's labelled sentences (the first n of its one shuffle, the same for every seed) and a
  sample of its own for each seed (:func:`~shoulders.recipes.finetune.seed_samples`, as chapter 16 draws them),
  at 100, 300 and 1,000 labels: is the page's gain a property of its one sample? With a sample per seed, the
  seeds' range holds the luck of the sample too;
* ``long-stage-2`` -- stage 2 for ten passes over the task's text instead of the page's two (the ``full`` preset's
  ten), at 100 and 300 labels, each seed with a sample of its own: the task's own text is the only in-domain text
  there is offline, so does reading it longer teach the LM more of what sentiment the labels then pick up?
* ``own-samples`` -- the two levers that lifted the page's sample most at 300 labels, the task's vocabulary and a
  marked start, with each seed's own sample: do they lift ULMFiT's gain on other samples too?

Each row prints both encoders' mean (range) over the seeds, their final training loss and the gain of ULMFiT.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import time

import torch

import shoulders as sh
from shoulders.models.awd_lstm import AWDLSTM, AWDLSTMConfig
from shoulders.recipes import ulmfit
from shoulders.recipes.finetune import accuracy, compare, score_text, seed_samples


@dataclasses.dataclass(frozen=True)
class Row:
    """One row: the label budget (None: all), the ULMFiTConfig settings it changes, the giant's pre-training steps
    (times the preset's), and whether each seed draws its own labelled sample (else the page's one)."""

    labels: int | None
    overrides: dict = dataclasses.field(default_factory=dict)
    giant_steps: int = 1
    sample_per_seed: bool = False


BUDGETS = (100, 300, 1_000)
LEVERS = {
    "updates": [Row(None), Row(None, {"epochs": 10.0})],
    "labels": [Row(1_000), Row(1_000, {"epochs": 10.0, "min_steps": 300})],
    "vocabulary": [Row(n, {"vocab_min_count": k}) for n in BUDGETS for k in (0, 2)],
    "stage-2": [Row(n, {"vocab_min_count": 2, "lm_epochs": 6.0}) for n in (100, 300)],
    "rates": [Row(n, {"lr": r, "scratch_lr": r}) for n in BUDGETS for r in (1e-3, 3e-3, 1e-2)],
    "dropout": [Row(n, {"drop_mult": m}) for n in BUDGETS for m in (0.5, 1.0, 2.0)],
    "boundary": [Row(n, {"mark_start": m}) for n in BUDGETS for m in (False, True)],
    "authors-text": [Row(n, {"vocab_min_count": 2, "mark_start": True}) for n in BUDGETS],
    "pretraining": [Row(n, giant_steps=k) for n in BUDGETS for k in (1, 2)],
    "samples": [Row(n, sample_per_seed=p) for n in BUDGETS for p in (False, True)],
    "long-stage-2": [Row(n, {"lm_epochs": e}, sample_per_seed=True) for n in (100, 300) for e in (2.0, 10.0)],
    "own-samples": [Row(300, o, sample_per_seed=True) for o in ({"vocab_min_count": 2}, {"mark_start": True})],
}
SEMI, SCRATCH = "ULMFiT", "from scratch"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lever", choices=sorted(LEVERS), action="append", help="default: all")
    ap.add_argument("--tiny", action="store_true", help="the smoke giant, 300 sentences, a few updates, one seed")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seeds", type=int, help="seeds per row (default: the preset's, 3 at cpu)")
    args = ap.parse_args()
    scale = "smoke" if args.tiny else "cpu"
    torch.set_num_threads(args.threads)
    sh.seed(0)
    giants = {1: sh.giants.load("awd_lstm", AWDLSTMConfig.preset(scale), scale=scale, progress=False)}
    giant = giants[1]
    ucfg = ulmfit.ULMFiTConfig.preset(scale)
    if args.tiny:
        ucfg = ucfg.replace(seeds=1, train=300, lm_min_steps=5)
    if args.seeds is not None:
        ucfg = ucfg.replace(seeds=args.seeds)
    train_x, train_y, dev_x, dev_y = ulmfit.sst2_sentences(ucfg.train, 100 if args.tiny else None)  # the page's
    task_text = sh.data.sst_trees("train")[0]
    adapted: dict[tuple, tuple] = {}

    def giant_lm(times: int) -> AWDLSTM:
        """The giant pre-trained for ``times`` the preset's steps (loaded from the cache, or trained once)."""
        if times not in giants:
            gcfg = AWDLSTMConfig.preset(scale)
            gcfg = gcfg.replace(steps=gcfg.steps * times)
            t0 = time.perf_counter()
            giants[times] = sh.giants.load("awd_lstm", gcfg, scale=scale, progress=False)
            print(f"the giant of {gcfg.steps:,} steps: validation perplexity "
                  f"{giants[times].metrics['valid_ppl']:.1f} (the page's {giant.metrics['valid_ppl']:.1f}), ready "
                  f"in {time.perf_counter() - t0:.0f} s", flush=True)
        return giants[times].model.eval()

    def stage2(u: ulmfit.ULMFiTConfig, times: int = 1) -> tuple:
        """The vocabulary (the giant's, grown by the task's words seen ``u.vocab_min_count`` times), stage 2 on all
        the task's text as in 11.3 for ``u.lm_epochs`` passes from the giant of ``times`` its steps, and the
        labelled sentences in that vocabulary: once per setting."""
        key = (u.vocab_min_count, u.lm_epochs, times)
        if key not in adapted:
            lm0 = giant_lm(times)
            t0 = time.perf_counter()
            lm, vocab = ulmfit.task_vocabulary(lm0, giant.tokenizer, task_text, u.vocab_min_count)
            ulmfit.finetune_lm(lm, ulmfit.task_stream(task_text, vocab), u)
            adapted[key] = (lm, vocab)
            print(f"stage 2 with {len(vocab):,} words (task words seen {u.vocab_min_count}+ times added; 0: none), "
                  f"{u.lm_epochs:g} passes, in {time.perf_counter() - t0:.0f} s", flush=True)
        lm, vocab = adapted[key]
        return (lm, vocab, ulmfit.classifier_features(train_x, train_y, vocab, mark_start=u.mark_start),
                ulmfit.classifier_features(dev_x, dev_y, vocab, mark_start=u.mark_start))

    print(f"scale={scale}, threads={torch.get_num_threads()}; SST-2 dev accuracy %, mean (range) over the seeds, "
          "(final training loss)\n")
    print("| labels | passes (LM / classifier) | updates | vocabulary | rate | dropout x | text starts | giant steps "
          "| sample | ULMFiT | from scratch | gain |\n|---|---|---|---|---|---|---|---|---|---|---|---|")
    done: dict[tuple[int, str, int, bool], str] = {}
    for lever in args.lever or list(LEVERS):
        for r in LEVERS[lever]:
            times = r.giant_steps
            u = ucfg.replace(**r.overrides)
            if args.tiny:  # a twentieth of the row's stage-2 passes, a few classifier updates
                u = u.replace(min_steps=12, max_steps=12, lm_epochs=u.lm_epochs / 20)
            lm, vocab, train, dev = stage2(u, times)
            ft = u.finetuning()
            n = min(r.labels or len(train), len(train))
            key = (n, repr(u), times, r.sample_per_seed)
            if key in done:  # the same runs as an earlier row (at --tiny, 300 sentences cap n)
                print(done[key] + "  <!-- as above -->", flush=True)
                continue
            trainers = {SEMI: functools.partial(ulmfit.train_classifier, ulmfit=u),
                        SCRATCH: functools.partial(ulmfit.train_classifier, ulmfit=u, gradual=False)}
            t0 = time.perf_counter()
            seeds = range(u.seeds)
            # the labelled sentences of each seed: the page's one sample, or the seed's own (seed_samples)
            parts = seed_samples(train, n, seeds) if r.sample_per_seed else {s: train[:n] for s in seeds}
            row = compare(ulmfit.classifier_maker(u, 2), {SEMI: ulmfit.fresh_copy(lm),
                                                          SCRATCH: lambda: AWDLSTM(lm.cfg)},
                          parts.__getitem__, vocab.unk_id, ft, lambda h: accuracy(h, dev, vocab.unk_id),
                          {SEMI: u.lr, SCRATCH: u.scratch_lr}, metric="dev accuracy %", baseline=50.0,
                          steps=ft.steps_for(n), seeds=seeds, trainers=trainers)
            line = (f"| {n:,} | {u.lm_epochs:g} / {u.epochs:g} | {row[SEMI]['steps']:,} | {len(vocab):,} | "
                    f"{u.lr:g} | {u.drop_mult:g} | {'<eos>' if u.mark_start else 'word'} | "
                    f"{giants[times].model.cfg.steps:,} | {'per seed' if r.sample_per_seed else 'page'} | "
                    + " | ".join(f"{score_text(row[k])} ({row[k]['train_loss']:.3f})" for k in (SEMI, SCRATCH))
                    + f" | {row[SEMI]['score'] - row[SCRATCH]['score']:+.1f} |")
            done[key] = line
            print(line + f"  <!-- {time.perf_counter() - t0:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()

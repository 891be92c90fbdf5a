"""What the giant's own pre-training settings do to BERT's SST-2 score with every label (chapter 14b).

    python benchmarks/bert_giant_levers.py                  # cpu: each variant giant ~40-80 min here, once
    python benchmarks/bert_giant_levers.py --levers 1 --scratch   # one variant and the from-scratch row
    python benchmarks/bert_giant_levers.py --tiny           # smoke giants (variants: a tenth of the steps), seconds

``benchmarks/bert_all_labels.py`` varies how the cpu ``bert`` giant is fine-tuned; this script varies how it is
pre-trained, the giant's compute held at the preset's (same model, steps, batch and lengths) unless a row says
otherwise. Each variant is the ``bert`` recipe with a few settings of the cpu preset changed, trained and cached as
its own giant (:func:`shoulders.giants.load` keys the cache by the config), then fine-tuned on all 67,349 SST-2
phrases exactly as page 14b does (:func:`shoulders.recipes.finetune.compare`: same phrases, order, seeds, schedule,
rate and head). Every pre-trained encoder is fine-tuned with the preset's dropout (0.1), whatever it was
pre-trained with, so the rows differ only in their pre-trained weights. The levers:

* no dropout while pre-training: a short pre-training run underfits, and dropout only slows it (Geiping &
  Goldstein 2023, "Cramming: training a language model on a single GPU in one day", §4.3);
* a larger peak rate (small BERTs take larger rates, Turc et al. 2019);
* 40% of the pieces masked instead of 15% (Wettig et al. 2023, "Should you mask 15% in masked language
  modeling?"): more predictions per step for the same compute;
* twice the steps: not a cpu option (it would take about twice the hour), it says how the curve goes on;
* half the vocabulary (4,000 WordPiece pieces at cpu): words split into more pieces, so more of what a word is
  has to be learned from how pieces combine -- which pre-training can teach and a network from scratch must learn
  from its labels; the output layer is half as wide. Its rows read SST-2 in that vocabulary, so it gets its own
  from-scratch row (every other lever keeps the preset's vocabulary and shares the preset's);
* pre-LN layers (Xiong et al. 2020, "On layer normalization in the Transformer architecture"): LayerNorm at each
  sub-layer's input and one over the top layer's output, instead of the paper's LayerNorm after each residual sum;
  well-behaved gradients at the start of training, so the same warm-up and rate may go further in a short run. It
  is another network, so it too gets its own from-scratch row (the same pre-LN network, random);
* no next-sentence prediction: the same pairs (B the text that follows A half of the time), masked LM alone -- the
  ablation of RoBERTa (Liu et al. 2019, §4.2, who found NSP's removal matched or helped) and XLNet (Table 6), whose
  giant in chapter 15 is pre-trained this way. The ``[CLS]`` pooler then gets no pre-training (it starts
  fine-tuning as initialised), and the row's NSP column is empty;
* a larger network in the same hour: BERT-mini (Turc et al. 2019: 4 layers of width 256 instead of tiny's 2 of
  128) costs about four times as much a step (its rows show it: the seconds per fine-tuning run, and the giant's
  minutes for its steps), so a quarter of the steps: larger language models learn more from each token they see
  (Kaplan et al. 2020, "Scaling laws for neural language models"), and a wider network has room for more of what
  pre-training teaches. It is another network, so it gets its own from-scratch row.

A lever that changes the network (its vocabulary, its layers or its size) is compared with that network from scratch.

It prints one Markdown row per encoder: the giant's held-out MLM / NSP accuracy and training minutes, then the
mean dev accuracy, each seed, and the seconds per fine-tuning run. On a GPU (``shoulders.device()``) the same rows
take minutes; its numbers are not the cpu page's to the digit (bf16 autocast, other kernels).
"""
from __future__ import annotations

import argparse
import time

import torch

from shoulders import giants, heads
from shoulders.device import device as default_device
from shoulders.models.bert import BertModel
from shoulders.recipes.bert import BertPretrainingConfig, wordpiece
from shoulders.recipes.finetune import BertFinetuningConfig, accuracy, compare, prior_loss, sst2_phrases

# name -> the settings of the preset it changes (a function of the preset, so --tiny scales them too)
LEVERS = (("the preset", lambda c: {}),
          ("no dropout while pre-training", lambda c: dict(dropout=0.0)),
          ("peak rate x2", lambda c: dict(lr=2 * c.lr)),
          ("40% masked", lambda c: dict(mask_prob=0.4)),
          ("no dropout, peak rate x2", lambda c: dict(dropout=0.0, lr=2 * c.lr)),
          ("twice the steps", lambda c: dict(steps=2 * c.steps, warmup=2 * c.warmup)),
          ("40% masked, peak rate x2", lambda c: dict(mask_prob=0.4, lr=2 * c.lr)),
          ("half the vocabulary", lambda c: dict(vocab_size=c.vocab_size // 2)),
          ("pre-LN", lambda c: dict(norm_first=True)),
          ("no next-sentence prediction", lambda c: dict(nsp=False)),
          ("BERT-mini, a quarter of the steps", lambda c: dict(size="mini", steps=c.steps // 4, warmup=c.warmup // 4,
                                                               snapshots=())))


def finetuning_encoder(giant: giants.Loaded, like: BertModel) -> BertModel:
    """The giant's encoder weights in a fresh network shaped (and with the dropout) of ``like``."""
    encoder = BertModel(like.cfg)
    encoder.load_state_dict(giant.model.bert.state_dict())
    return encoder


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seeds", type=int, default=None, help="seeds per row (default: the preset's sst2_seeds)")
    p.add_argument("--levers", type=int, nargs="*", default=None,
                   help="rows of LEVERS to run (0-based; default: all), e.g. --levers 0 1")
    p.add_argument("--scratch", action="store_true", help="also the from-scratch row (default: only with all levers)")
    p.add_argument("--tiny", action="store_true", help="smoke giants, --labels phrases, 10 updates, one seed")
    p.add_argument("--labels", type=int, default=300, help="phrases fine-tuned on with --tiny")
    p.add_argument("--progress", action="store_true", help="a progress bar while a giant trains")
    args = p.parse_args()
    if args.levers is not None and not set(args.levers) <= set(range(len(LEVERS))):
        p.error(f"--levers takes rows 0 to {len(LEVERS) - 1} of LEVERS, got {args.levers}")
    torch.set_num_threads(args.threads)
    preset = "smoke" if args.tiny else "cpu"
    pcfg = BertPretrainingConfig.preset(preset)
    cfg = BertFinetuningConfig.preset(preset, **(dict(max_steps=10, min_steps=10) if args.tiny else {}))
    chosen = range(len(LEVERS)) if args.levers is None else args.levers
    scratch = args.scratch or args.levers is None
    seeds = range(1 if args.tiny else (args.seeds or cfg.sst2_seeds))
    tasks: dict[int, tuple] = {}
    networks: dict[str, BertModel] = {}

    def task(vcfg: BertPretrainingConfig) -> tuple:
        """The WordPiece vocabulary of ``vcfg`` (built once per vocabulary size), the network every row of
        ``vcfg`` fine-tunes (its shape and layers, the preset's dropout) and the page's SST-2 phrases in that
        vocabulary."""
        if vcfg.vocab_size not in tasks:
            tok = wordpiece(vcfg)[0]
            tasks[vcfg.vocab_size] = (tok, *sst2_phrases(tok, cfg, args.labels if args.tiny else None))
        tok, *phrases = tasks[vcfg.vocab_size]
        shape = vcfg.model_config(len(tok), tok.pad_id).replace(dropout=pcfg.dropout, attn_dropout=pcfg.dropout)
        if repr(shape) not in networks:
            networks[repr(shape)] = BertModel(shape)
        return (tok, networks[repr(shape)], *phrases)

    tok, like, train, y, dev, majority = task(pcfg)
    preset_network = like
    print(f"{preset} presets on {default_device()}, {torch.get_num_threads()} thread(s); SST-2 dev accuracy % after "
          f"fine-tuning on {len(train):,} phrases ({cfg.steps_for(len(train)):,} updates), seeds {list(seeds)}; "
          f"majority class {majority:.1f}%", flush=True)

    def row(name: str, build, rate: float, pre: str, vcfg: BertPretrainingConfig) -> None:
        tok, _, train, y, dev, majority = task(vcfg)
        t0 = time.perf_counter()
        r = compare(lambda enc: heads.SequenceClassifier(enc, 2), {name: build}, train, tok.pad_id, cfg,
                    lambda head: accuracy(head, dev, tok.pad_id), {name: rate}, metric="dev accuracy %",
                    baseline=majority, prior=prior_loss(y), steps=cfg.steps_for(len(train)), seeds=seeds)[name]
        print(f"| {name} | {pre} | {r['score']:.1f} | {' / '.join(f'{s:.1f}' for s in r['scores'])} | "
              f"{(time.perf_counter() - t0) / len(seeds):.0f} |", flush=True)

    print("\n| encoder | pre-training: steps, held-out MLM / NSP %, minutes | mean | seeds | s per run |\n"
          "|---|---|---|---|---|", flush=True)
    if scratch:
        row("from scratch", lambda: BertModel(like.cfg), cfg.scratch_lr, "none", pcfg)
    for i in chosen:
        name, change = LEVERS[i]
        vcfg = pcfg.replace(**change(pcfg))
        if args.tiny and vcfg != pcfg:  # a variant only this script trains: a tenth of its steps (a test of the rows)
            vcfg = vcfg.replace(steps=vcfg.steps // 10, warmup=vcfg.warmup // 10, eval_every=vcfg.steps // 10,
                                snapshots=())
        tok, like, *_ = task(vcfg)
        if like.cfg != preset_network.cfg:  # another network: its own control, the same network from scratch
            what = ([f"{vcfg.vocab_size:,} pieces"] if vcfg.vocab_size != pcfg.vocab_size else []) + (
                ["pre-LN"] if vcfg.norm_first != pcfg.norm_first else []) + (
                [f"BERT-{vcfg.size}"] if vcfg.size != pcfg.size else [])
            row(f"from scratch, {', '.join(what) or name}", lambda like=like: BertModel(like.cfg), cfg.scratch_lr,
                "none", vcfg)
        giant = giants.load("bert", vcfg, progress=args.progress)
        if list(giant.tokenizer.vocab.tokens) != list(tok.vocab.tokens):
            raise RuntimeError(f"lever {name!r}: the giant's WordPiece vocabulary is not the one its rows read")
        m = giant.metrics
        nsp = f"{100 * m['nsp_acc']:.1f}" if "nsp_acc" in m else "-"
        pre = (f"{vcfg.steps:,}, {100 * m['mlm_acc']:.1f} / {nsp}, "
               f"{giant.card.get('wall_time_s', float('nan')) / 60:.1f}")
        row(f"pre-trained: {name}", lambda: finetuning_encoder(giant, like), cfg.lr, pre, vcfg)


if __name__ == "__main__":
    main()

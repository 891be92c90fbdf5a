"""Pre-training BERT on WikiText-2: masked LM + next-sentence prediction (Devlin et al. 2019, §3.1, Appendix A.2).

This is the recipe of the book's first giant (``shoulders.giants.load("bert")``, chapter 14): trained once per
machine and scale, then loaded by every later page. The recipe, scaled down: documents of sentences
(:func:`shoulders.data.corpora.wikitext_documents`) tokenised with the corpus's own WordPiece vocabulary; each
epoch draws fresh A/B pairs (50% IsNext / 50% NotNext, :func:`~shoulders.text.nsp_pairs.nsp_pairs`) and each batch
a fresh 15% / 80-10-10 masking (:func:`~shoulders.text.masking.mask_tokens`); loss = MLM + NSP; AdamW (β = 0.9,
0.999, weight decay 0.01 on matrices) with linear warm-up and linear decay, as in Appendix A.2.
"""
from __future__ import annotations

import dataclasses
import math
import random
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import torch

from ..config import Config, ConfigError, check_snapshots, late_field
from ..data.corpora import wikitext_documents
from ..models.bert import BertConfig, BertForPreTraining
from ..text.bert_inputs import IGNORE, collate, pack
from ..text.masking import mask_tokens
from ..text.nsp_pairs import nsp_pairs
from ..text.tokenizer_cache import learned_once
from ..text.wordpiece import WordPiece
from ..train.callbacks import Callback, Snapshots
from ..train.history import History
from ..train.loop import fit
from ..train.optimizers import adamw
from ..train.schedules import linear_warmup_decay
from .artefact import Artefact

__all__ = ["BertPretrainingConfig", "PretrainingBatches", "WikiTextForBert", "build", "evaluate_pretraining",
           "fixed_eval_batches", "pretrain", "train_giant", "unigram_mlm_baseline", "wikitext_for_bert", "wordpiece"]


@dataclasses.dataclass
class BertPretrainingConfig(Config):
    """How BERT is pre-trained at each scale (architecture: ``size`` in :attr:`BertConfig.SIZES`)."""

    size: str = "mini"
    vocab_size: int = 8_000       # WordPiece vocabulary learned on WikiText-2 train
    max_len: int = 128            # packed [CLS] A [SEP] B [SEP] length (the paper: 128 for 90% of steps, then 512)
    positions: int = 128          # the model's position table (fine-tuning inputs may be longer than max_len)
    batch_size: int = 32
    long_len: int | None = None   # the paper's second phase: the last ~long_frac of the steps at this length ...
    long_batch_size: int | None = None  # ... in batches of this many pairs (default: batch_size)
    long_frac: float = 0.1
    snapshots: tuple[int, ...] = ()  # steps at which a copy of the weights is kept (the giant stores them)
    steps: int = 2_000
    warmup: int = 200             # the paper: 10,000 of 1M steps; 10% here, since runs are short
    lr: float = 5e-4              # the paper: 1e-4 at batch 256; small models take larger rates (Turc et al.)
    weight_decay: float = 0.01
    adam_eps: float = 1e-6
    clip: float | None = 1.0
    dropout: float = 0.1
    mask_prob: float = 0.15
    short_seq_prob: float = 0.1
    max_documents: int | None = None  # use only the first N articles (smoke)
    eval_pairs: int = 512             # held-out pairs (WikiText-2 validation) for MLM / NSP accuracy
    eval_every: int = 200
    norm_first: bool = late_field(False)  # the paper's post-LN layer; True: pre-LN (Xiong et al. 2020), a lever
    nsp: bool = late_field(True)  # the next-sentence loss; False: masked LM alone on the same pairs, an ablation

    page_presets: ClassVar = {
        # chapter 14a's checks: held-out MLM accuracy above the unigram guess by this margin (smoke: ~9% vs ~5%
        # after one minute), NSP accuracy above this (None: at chance after a one-minute run), and whether with
        # few SST-2 labels (steps_labels, each seed its own) every seed of the giant must beat every seed of the same
        # network from scratch (smoke: one minute of pre-training buys nothing yet). Measured at cpu (2026-12-07,
        # two threads, seeds 0-2, 1,000 labels): 62.7 (61.2-64.1) vs 58.0 (56.5-60.0), +4.7. The page asserted
        # +5 points before each seed drew its own sample: on the one shared sample the gain was +8.4.
        "smoke": dict(mlm_margin=0.02, min_nsp=None, steps_beats_spread=False),
        "cpu": dict(mlm_margin=0.05, min_nsp=0.55, steps_beats_spread=True),
        "full": dict(mlm_margin=0.05, min_nsp=0.55, steps_beats_spread=True),
    }
    presets: ClassVar = {
        # measured: MLM accuracy leaves the unigram plateau slowly (BERT-tiny, 300 steps: ~9% against the
        # unigram guess's ~5%; 1,200 steps: ~13%), exactly as Hugging Face's BertForPreTraining does on the same
        # batches; a small vocabulary and a high rate get the most out of a one-minute run
        "smoke": dict(size="tiny", vocab_size=2_000, max_len=64, batch_size=32, steps=300, warmup=30, lr=2e-3,
                      max_documents=150, eval_pairs=512, eval_every=100, snapshots=(100,)),
        # BERT-tiny on 2 CPU threads: ~0.15 s a step of 64 x 64 pieces or of 32 x 128. MLM accuracy leaves the
        # unigram plateau only after ~3,000 steps (chapter 14a's curve), and fine-tuning gains follow it (14a's
        # snapshots): 16,000 steps, the last ~10% at length 128 as in the paper (which also trains positions
        # 64-127 that fine-tuning inputs use), about 45 minutes once
        "cpu": dict(size="tiny", vocab_size=8_000, max_len=64, batch_size=64, long_len=128, long_batch_size=32,
                    steps=16_000, warmup=1_600, lr=1e-3, eval_every=1_000, snapshots=(1_000, 2_000, 4_000, 8_000)),
        "full": dict(size="mini", vocab_size=8_000, max_len=256, positions=256, batch_size=128, steps=20_000,
                     warmup=1_000, lr=5e-4, eval_pairs=2_048, eval_every=1_000, snapshots=(2_500, 5_000, 10_000)),
    }

    def validate(self) -> None:
        if self.size not in BertConfig.SIZES:
            raise ConfigError(f"size must be one of {sorted(BertConfig.SIZES)}, got {self.size!r}")
        if min(self.vocab_size, self.batch_size, self.steps, self.eval_pairs, self.eval_every) < 1:
            raise ConfigError("vocab_size, batch_size, steps, eval_pairs and eval_every must be positive")
        if not 8 <= self.max_len <= self.positions:
            raise ConfigError(f"need 8 <= max_len <= positions, got max_len={self.max_len}, "
                              f"positions={self.positions}")
        if self.long_len is not None and not self.max_len <= self.long_len <= self.positions:
            raise ConfigError(f"need max_len <= long_len <= positions, got long_len={self.long_len}")
        if self.long_batch_size is not None and self.long_batch_size < 1:
            raise ConfigError(f"long_batch_size must be positive, got {self.long_batch_size}")
        if not 0.0 < self.long_frac < 1.0:
            raise ConfigError(f"long_frac must be in (0, 1), got {self.long_frac}")
        check_snapshots(self.snapshots, self.steps)
        if not 0 <= self.warmup < self.steps:
            raise ConfigError(f"need 0 <= warmup < steps, got warmup={self.warmup}, steps={self.steps}")
        if not 0.0 < self.mask_prob < 1.0:
            raise ConfigError(f"mask_prob must be in (0, 1), got {self.mask_prob}")

    def build(self) -> BertForPreTraining:
        """The model for a ``vocab_size`` vocabulary (the chapter builds it for the trained WordPiece's size)."""
        return BertForPreTraining(self.model_config(self.vocab_size))

    def example_batch(self, batch_size: int = 2) -> dict[str, torch.Tensor]:
        return self.model_config(self.vocab_size).example_batch(batch_size)

    def step_batch(self) -> dict[str, torch.Tensor]:
        """A random batch with the exact shapes of one pre-training step of this preset: ``batch_size`` packed
        pairs of ``max_len`` pieces (collated to the longest row, which is ``max_len`` in nearly every batch: 84%
        of the pairs fill it), 15% of the real tokens to predict, ids below ``vocab_size``
        (:meth:`shoulders.models.bert.BertConfig.step_batch`)."""
        return self.model_config(self.vocab_size).step_batch(self.batch_size, self.max_len)

    def model_config(self, vocab_size: int, pad_id: int = 0) -> BertConfig:
        """The architecture: ``size``'s layers and widths, ``positions`` learned positions."""
        return BertConfig.named(self.size, vocab_size=vocab_size, max_len=self.positions, dropout=self.dropout,
                                attn_dropout=self.dropout, pad_id=pad_id, norm_first=self.norm_first)


class PretrainingBatches:
    """Re-iterable pre-training batches: every pass draws new NSP pairs, every batch a new masking.

    Yields dicts for :class:`~shoulders.models.bert.BertForPreTraining`: ``input_ids``, ``token_type_ids``,
    ``attention_mask`` ``(B, T)``, ``mlm_labels`` ``(B, T)`` (:data:`IGNORE` where not predicted) and
    ``nsp_labels`` ``(B,)`` -- left out with ``cfg.nsp`` off: the same pairs (B random half of the time), masked LM
    alone, the ablation of RoBERTa (Liu et al. 2019, §4.2) and XLNet (Table 6). Randomness comes from the global
    ``random`` and torch generators, which ``fit`` reseeds per epoch, so a resumed run replays the same batches.

    The paper's two phases (Appendix A.2: length 128 for 90% of the steps, then 512): for a run of ``steps``
    updates, passes from ``long_from`` on (:meth:`long_phase_start`; ``fit`` tells the pass number through
    :meth:`set_epoch`) pack pairs of ``cfg.long_len`` pieces in batches of ``cfg.long_batch_size``. The phase is a
    function of the pass number alone, so a resumed run replays it too.
    """

    def __init__(self, documents: Sequence[Sequence[Sequence[int]]], tok: Any, cfg: BertPretrainingConfig,
                 n_specials: int = len(WordPiece.SPECIALS), steps: int | None = None):
        self.documents, self.tok, self.cfg, self.n_specials = documents, tok, cfg, n_specials
        self.epoch = 0
        self.long_from = self.long_phase_start(steps) if steps is not None else None

    def set_epoch(self, epoch: int) -> None:
        """Called by ``fit`` before each pass: decides the pass's phase."""
        self.epoch = int(epoch)

    @property
    def long(self) -> bool:
        """Whether this pass belongs to the long-sequence phase."""
        return self.long_from is not None and self.epoch >= self.long_from

    @property
    def length(self) -> int:
        return self.cfg.long_len if self.long else self.cfg.max_len

    @property
    def batch_size(self) -> int:
        return (self.cfg.long_batch_size or self.cfg.batch_size) if self.long else self.cfg.batch_size

    def pairs(self, rng: random.Random | None = None, length: int | None = None) -> list[dict[str, Any]]:
        """One pass's packed (unmasked) features of ``length`` pieces (default: the current phase's), shuffled."""
        r = rng if rng is not None else random
        features = []
        T = self.length if length is None else length
        for p in nsp_pairs(self.documents, T, self.cfg.short_seq_prob, rng=r):
            ids, segments = self.pack(p.a, p.b, T)
            features.append({"input_ids": ids, "token_type_ids": segments}
                            | ({"nsp_labels": p.label} if self.cfg.nsp else {}))
        r.shuffle(features)
        return features

    def pack(self, a: Sequence[int], b: Sequence[int], length: int) -> tuple[list[int], list[int]]:
        """One pair as the model reads it: ``[CLS] A [SEP] B [SEP]`` and its segment ids (XLNet overrides it)."""
        return pack(a, b, self.tok.cls_id, self.tok.sep_id, length)

    def batch(self, features: Sequence[dict[str, Any]], generator: torch.Generator | None = None) -> dict:
        """Collate ``features`` and mask them (15%; 80% [MASK] / 10% random / 10% unchanged)."""
        b = collate(features, self.tok.pad_id)
        maskable = b["attention_mask"] & (b["input_ids"] != self.tok.cls_id) & (b["input_ids"] != self.tok.sep_id)
        b["input_ids"], b["mlm_labels"] = mask_tokens(b["input_ids"], maskable, self.tok.mask_id, len(self.tok),
                                                      self.n_specials, self.cfg.mask_prob, generator=generator)
        return b

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        features = self.pairs()
        B = self.batch_size
        for i in range(0, len(features) - B + 1, B):  # drop the last, partial batch
            yield self.batch(features[i:i + B])

    def long_phase_start(self, steps: int) -> int | None:
        """The first pass of the long phase for a run of ``steps`` updates: after the passes that hold
        ``(1 - long_frac) * steps`` updates of short batches (counted on one draw of pairs; passes vary by a few
        pairs), so the long phase gets about ``long_frac`` of the steps, in whole passes. ``None``: no long
        phase (or fewer than two passes to split)."""
        if self.cfg.long_len is None:
            return None
        per_pass = len(self.pairs(random.Random(0), self.cfg.max_len)) // self.cfg.batch_size
        short = math.ceil((1.0 - self.cfg.long_frac) * steps / max(1, per_pass))
        return short if short * per_pass < steps else None


def fixed_eval_batches(documents: Sequence[Sequence[Sequence[int]]], tok: Any, cfg: BertPretrainingConfig,
                       seed: int = 0, batches: type[PretrainingBatches] = PretrainingBatches,
                       ) -> list[dict[str, torch.Tensor]]:
    """``cfg.eval_pairs`` held-out pairs with one fixed masking, in batches (the same for every evaluation);
    ``batches``: the class that lays out and masks them (XLNet's: one fixed factorisation order per pair)."""
    data = batches(documents, tok, cfg)
    features = data.pairs(random.Random(seed))[: cfg.eval_pairs]
    g = torch.Generator().manual_seed(seed)
    B = cfg.batch_size
    return [data.batch(features[i:i + B], g) for i in range(0, len(features), B)]


@torch.no_grad()
def evaluate_pretraining(model: BertForPreTraining, batches: Sequence[dict[str, torch.Tensor]]) -> dict[str, float]:
    """MLM accuracy and loss over all predicted positions, NSP accuracy over all pairs (where the batches have
    ``nsp_labels``; masked-LM-only batches give no ``nsp_acc``)."""
    dev = next(model.parameters()).device
    correct = total = nsp_correct = nsp_total = 0
    loss_sum = 0.0
    for b in batches:
        b = {k: v.to(dev) for k, v in b.items()}
        out = model(**b)
        n = int((b["mlm_labels"] != IGNORE).sum())
        correct += float(out["mlm_acc"]) * n
        loss_sum += float(out["mlm_loss"]) * n
        total += n
        if "nsp_labels" in b:
            m = b["nsp_labels"].numel()
            nsp_correct += float(out["nsp_acc"]) * m
            nsp_total += m
    metrics = {"mlm_acc": correct / total, "mlm_loss": loss_sum / total}
    if nsp_total:
        metrics["nsp_acc"] = nsp_correct / nsp_total
    return metrics


def _validation(batches: Sequence[dict[str, torch.Tensor]]) -> Any:
    """``fit``'s ``evaluate``: :func:`evaluate_pretraining` on ``batches``, names prefixed ``val_``."""
    return lambda m: {f"val_{k}": v for k, v in evaluate_pretraining(m, batches).items()}


def unigram_mlm_baseline(train_documents: Sequence[Sequence[Sequence[int]]],
                         batches: Sequence[dict[str, torch.Tensor]]) -> dict[str, Any]:
    """The unigram-frequency guess: always predict the most frequent training token; its accuracy on ``batches``."""
    counts: Counter = Counter(t for d in train_documents for s in d for t in s)
    top = counts.most_common(1)[0][0]
    labels = torch.cat([b["mlm_labels"][b["mlm_labels"] != IGNORE] for b in batches])
    return {"token": top, "mlm_acc": float((labels == top).float().mean())}


def pretrain(cfg: BertPretrainingConfig, tok: Any, train_documents: Sequence[Sequence[Sequence[int]]],
             eval_batches: Sequence[dict[str, torch.Tensor]] | None = None, model: BertForPreTraining | None = None,
             callbacks: Sequence[Callback] = (), batches: PretrainingBatches | None = None,
             **fit_kwargs: Any) -> tuple[BertForPreTraining, History]:
    """Build (or take) a :class:`BertForPreTraining` and pre-train it; returns the model and its history.

    ``fit_kwargs`` go to :func:`shoulders.train.fit` (``checkpoint=``, ``progress=``, ...). The history logs the
    training batches' ``mlm_acc``/``nsp_acc``/losses every step and, with
    ``eval_batches``, :func:`evaluate_pretraining`'s metrics prefixed ``val_`` every ``cfg.eval_every`` steps.
    With ``cfg.long_len`` the last passes (about ``cfg.long_frac`` of the steps) use the longer pairs
    (:meth:`PretrainingBatches.long_phase_start`). ``batches``: the :class:`PretrainingBatches` of
    ``train_documents`` for ``cfg.steps`` steps, when the caller has made them already.
    """
    if model is None:
        model = BertForPreTraining(cfg.model_config(len(tok), tok.pad_id))
    if batches is None:
        batches = PretrainingBatches(train_documents, tok, cfg, steps=cfg.steps)
    optimizer = adamw(model, lr=cfg.lr, weight_decay=cfg.weight_decay, eps=cfg.adam_eps)
    history = fit(model, batches, optimizer, steps=cfg.steps,
                  schedule=linear_warmup_decay(cfg.warmup, cfg.steps), clip=cfg.clip,
                  evaluate=_validation(eval_batches) if eval_batches is not None else None,
                  eval_every=cfg.eval_every if eval_batches is not None else None,
                  callbacks=callbacks, **fit_kwargs)
    return model, history


@dataclasses.dataclass
class WikiTextForBert:
    """WikiText-2 ready for pre-training: the WordPiece tokenizer and the documents as sentences of ids."""

    tok: WordPiece
    train: list[list[list[int]]]
    valid: list[list[list[int]]]
    seconds: dict[str, float]  # "wordpiece" (training the vocabulary, 0 when cached), "tokenize"


def wordpiece(cfg: BertPretrainingConfig, train_documents: Sequence[Sequence[str]] | None = None,
              progress: bool = False) -> tuple[WordPiece, float]:
    """The WordPiece vocabulary of ``cfg`` (``cfg.vocab_size`` pieces learned on the first ``cfg.max_documents``
    WikiText-2 train articles, or on ``train_documents`` of sentences, which must be those), learned once and kept
    as a ``vocab.txt`` under ``<data cache>/tokenizers/`` (two processes learning it at once: the second waits and
    reads), and the seconds learning it took (0 when it was kept)."""
    def learn() -> WordPiece:
        docs = train_documents if train_documents is not None else wikitext_documents(
            "train", max_documents=cfg.max_documents)
        return WordPiece.train((s for d in docs for s in d), vocab_size=cfg.vocab_size, progress=progress)
    return learned_once(f"wordpiece-wikitext2-{cfg.vocab_size}-{cfg.max_documents or 'all'}", "vocab.txt",
                        WordPiece.load, learn)


def wikitext_for_bert(cfg: BertPretrainingConfig, tok: WordPiece | None = None,
                      progress: bool = False) -> WikiTextForBert:
    """Documents of WikiText-2 train/valid tokenised with a WordPiece vocabulary learned on train.

    The vocabulary (``cfg.vocab_size`` pieces, from the first ``cfg.max_documents`` articles) is learned once and
    kept as a ``vocab.txt`` under ``<data cache>/tokenizers/`` (two processes learning it at once: the second
    waits and reads), unless ``tok`` is given.
    """
    train_docs = wikitext_documents("train", max_documents=cfg.max_documents)
    valid_docs = wikitext_documents("valid")
    seconds = {"wordpiece": 0.0}
    if tok is None:
        tok, seconds["wordpiece"] = wordpiece(cfg, train_docs, progress)
    t0 = time.perf_counter()
    train = [[tok.encode(s) for s in d] for d in train_docs]
    valid = [[tok.encode(s) for s in d] for d in valid_docs]
    seconds["tokenize"] = time.perf_counter() - t0
    return WikiTextForBert(tok, [d for d in train if d], [d for d in valid if d], seconds)


def build(cfg: BertPretrainingConfig, tok: WordPiece) -> BertForPreTraining:
    """The untrained model for ``tok``'s vocabulary: what a cached giant's weights are loaded into."""
    return BertForPreTraining(cfg.model_config(len(tok), tok.pad_id))


def train_giant(cfg: BertPretrainingConfig, *, data: WikiTextForBert | None = None, device: Any = None,
                progress: bool = True, **fit_kwargs: Any) -> Artefact:
    """The whole recipe: WordPiece vocabulary, then :func:`pretrain` with evaluation every ``cfg.eval_every``
    steps on ``cfg.eval_pairs`` fixed WikiText-2 validation pairs (``val_mlm_acc``, ...).

    ``data``: the page's :func:`wikitext_for_bert` of the same ``cfg``, passed to save tokenising twice.
    Returns the :class:`~shoulders.recipes.artefact.Artefact` that :mod:`shoulders.giants` caches; its metrics
    are the final held-out MLM/NSP accuracies.
    """
    data = data if data is not None else wikitext_for_bert(cfg, progress=progress)
    eval_batches = fixed_eval_batches(data.valid, data.tok, cfg)
    snapshots = Snapshots(cfg.snapshots)
    batches = PretrainingBatches(data.train, data.tok, cfg, steps=cfg.steps)
    model, history = pretrain(cfg, data.tok, data.train, eval_batches, device=device, progress=progress,
                              callbacks=[snapshots, *fit_kwargs.pop("callbacks", ())], batches=batches,
                              **fit_kwargs)
    metrics = evaluate_pretraining(model.eval(), eval_batches)
    metrics["unigram_mlm_acc"] = unigram_mlm_baseline(data.train, eval_batches)["mlm_acc"]
    long_from = batches.long_from
    long_steps = 0 if long_from is None else int((history.series("epoch")[1] >= long_from).sum())
    return Artefact(model=model, history=history, tokenizer=data.tok, metrics=metrics, snapshots=snapshots.states,
                    facts={"training pairs per pass": "fresh NSP pairs of the WikiText-2 train articles",
                           "train articles": len(data.train), "wordpiece seconds": data.seconds["wordpiece"],
                           "steps at the long length": long_steps})

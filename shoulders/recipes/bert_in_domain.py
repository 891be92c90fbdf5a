"""Further pre-training of a BERT on a task's own unlabelled text (chapter 14).

Gururangan et al. (2020), "Don't Stop Pretraining": after general pre-training, a few more passes of the masked-LM
objective over the task's *training inputs* -- labels unused -- ("task-adaptive pre-training", TAPT) move the
encoder towards the task's domain, and fine-tuning gains from it even with every label (their §4). Our
giant read Wikipedia articles; SST-2 is movie-review snippets, so this is the domain shift their paper measures.

Departures, stated: the inputs are single sentences laid out exactly as fine-tuning reads them (``[CLS] text
[SEP]``), so there is no next sentence to predict -- masked LM only, like Gururangan et al.'s RoBERTa (which has no
NSP); everything else (masking 15% as 80/10/10, AdamW, warm-up then linear decay) is the giant's own recipe,
:func:`shoulders.recipes.bert.pretrain`, on a copy of the giant.
"""
from __future__ import annotations

import copy
import dataclasses
import random
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from ..config import Config, ConfigError
from ..data.sentiment import sst_trees
from ..models.bert import BertForPreTraining
from ..text.task_features import classification_features
from ..train.history import History
from .artefact import Artefact
from .bert import BertPretrainingConfig, PretrainingBatches, evaluate_pretraining, fixed_eval_batches, pretrain
from .bert import build as build_bert

__all__ = ["InDomainConfig", "TaskTextBatches", "build", "further_pretrain", "held_out_batches", "sst_giant"]


@dataclasses.dataclass
class InDomainConfig(Config):
    """How long and how fast the giant keeps pre-training on a task's text (the rest is the giant's recipe).

    Gururangan et al. (2020, §4) run TAPT for 100 passes over the task's text (RoBERTa-base); the cpu preset makes
    15 passes over SST's 8,544 training sentences (2,000 steps of 64) at half the cpu giant's peak rate (5e-4).
    """

    steps: int = 2_000
    lr: float = 1e-4
    warmup_frac: float = 0.06
    batch_size: int = 64
    max_len: int = 128          # the fine-tuning inputs' length (texts are cut as fine-tuning cuts them)
    eval_pairs: int = 512       # held-out texts for the masked-LM accuracy
    eval_every: int = 500

    presets: ClassVar = {
        "smoke": dict(steps=60, lr=1e-3, batch_size=32, max_len=64, eval_pairs=256, eval_every=60),
        "cpu": dict(steps=2_000, lr=5e-4, batch_size=64, max_len=128, eval_every=500),
        "full": dict(steps=4_000, lr=1e-4, batch_size=128, max_len=128, eval_every=1_000),
    }

    def validate(self) -> None:
        if min(self.steps, self.batch_size, self.max_len, self.eval_pairs, self.eval_every) < 1:
            raise ConfigError("steps, batch_size, max_len, eval_pairs and eval_every must be positive")
        if not 0.0 <= self.warmup_frac < 1.0:
            raise ConfigError(f"warmup_frac must be in [0, 1), got {self.warmup_frac}")
        if self.lr <= 0:
            raise ConfigError(f"lr must be positive, got {self.lr}")

    def pretraining(self, base: BertPretrainingConfig) -> BertPretrainingConfig:
        """The giant's pre-training config with this stage's steps, rate, batches and length; one phase, no
        snapshots (masking, weight decay, Adam's epsilon, clipping and dropout stay the giant's)."""
        if self.max_len > base.positions:
            raise ConfigError(f"max_len {self.max_len} exceeds the giant's {base.positions} positions")
        return dataclasses.replace(base, steps=self.steps, lr=self.lr, warmup=int(self.warmup_frac * self.steps),
                                   batch_size=self.batch_size, max_len=self.max_len, long_len=None,
                                   long_batch_size=None, snapshots=(), eval_pairs=self.eval_pairs,
                                   eval_every=self.eval_every)


class TaskTextBatches(PretrainingBatches):
    """Masked-LM batches of unlabelled single-text features (``input_ids``, ``token_type_ids``): every pass
    shuffles them, every batch draws a new masking; no ``nsp_labels``.

    ``features`` takes the place of :class:`~shoulders.recipes.bert.PretrainingBatches`'s documents, so
    :func:`~shoulders.recipes.bert.fixed_eval_batches` builds held-out batches from it unchanged.
    """

    def __init__(self, features: Sequence[dict[str, Any]], tok: Any, cfg: BertPretrainingConfig, **kwargs: Any):
        super().__init__([], tok, cfg, **kwargs)
        self.features = [{"input_ids": list(f["input_ids"]), "token_type_ids": list(f["token_type_ids"])}
                         for f in features]
        if not self.features:
            raise ValueError("TaskTextBatches needs at least one text")

    def pairs(self, rng: random.Random | None = None, length: int | None = None) -> list[dict[str, Any]]:
        """One pass's features, shuffled (``length`` is unused: they were cut when they were made)."""
        features = list(self.features)
        (rng if rng is not None else random).shuffle(features)
        return features


def held_out_batches(tok: Any, texts: Sequence[str], cfg: InDomainConfig,
                     base: BertPretrainingConfig) -> list[dict[str, torch.Tensor]]:
    """``cfg.eval_pairs`` of ``texts`` laid out as fine-tuning reads them, with one fixed masking: the held-out
    batches of :func:`further_pretrain` (the same before and after it, so the two accuracies compare)."""
    return fixed_eval_batches(classification_features(tok, texts, None, None, cfg.max_len), tok,
                              cfg.pretraining(base), batches=TaskTextBatches)


def further_pretrain(model: BertForPreTraining, tok: Any, texts: Sequence[str], cfg: InDomainConfig,
                     base: BertPretrainingConfig, eval_batches: Sequence[dict[str, torch.Tensor]] | None = None,
                     **fit_kwargs: Any) -> tuple[BertForPreTraining, History]:
    """A copy of ``model`` pre-trained further with masked LM on ``texts`` (no labels); ``model`` is untouched.

    ``base``: the giant's pre-training config (masking, optimiser settings, positions); ``eval_batches``: held-out
    batches (:func:`held_out_batches`), whose masked-LM accuracy and loss are logged as ``val_mlm_acc`` /
    ``val_mlm_loss`` every ``cfg.eval_every`` steps and after the last. ``fit_kwargs`` go to
    :func:`shoulders.train.fit` (``device=``, ``progress=``, ...).
    """
    if not texts:
        raise ValueError("further_pretrain needs the task's texts; got none")
    pcfg = cfg.pretraining(base)
    batches = TaskTextBatches(classification_features(tok, texts, None, None, cfg.max_len), tok, pcfg)
    return pretrain(pcfg, tok, [], eval_batches, model=copy.deepcopy(model), batches=batches, **fit_kwargs)


def build(cfg: InDomainConfig, tok: Any) -> BertForPreTraining:
    """The untrained model a cached further-pre-trained giant is loaded into: the ``bert`` giant's architecture
    (its preset at ``cfg``'s scale, the one :mod:`shoulders.giants` continues from)."""
    return build_bert(BertPretrainingConfig.preset(getattr(cfg, "scale", None)), tok)


def sst_giant(cfg: InDomainConfig, *, base: Any, device: Any = None, progress: bool = True) -> Artefact:
    """The ``bert_sst`` giant's recipe: the ``bert`` giant (``base``, a loaded giant: ``model``, ``tokenizer``,
    ``config``) pre-trained further on the Stanford Sentiment Treebank's 8,544 training sentences -- SST-2's
    training phrases are pieces of them; labels unused -- with held-out masked-LM accuracy on the 1,101 dev
    sentences before and after (SST-2's dev sentences are among them: read, never trained on)."""
    texts, held_out = sst_trees("train")[0], sst_trees("dev")[0]
    held = held_out_batches(base.tokenizer, held_out, cfg, base.config)
    before = evaluate_pretraining(base.model.eval(), held)
    model, history = further_pretrain(base.model, base.tokenizer, texts, cfg, base.config, eval_batches=held,
                                      device=device, progress=progress)
    metrics = {k: history.last(f"val_{k}") for k in before}  # fit evaluates the held-out batches after the last step
    metrics.update({f"base_{k}": v for k, v in before.items()})
    return Artefact(model=model, history=history, tokenizer=base.tokenizer, metrics=metrics,
                    facts={"task text": f"{len(texts):,} SST training sentences, labels unused",
                           "held-out text": f"{len(held_out):,} SST dev sentences (masked-LM accuracy only)",
                           "passes": round(cfg.steps * cfg.batch_size / len(texts), 1)})

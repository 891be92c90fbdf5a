"""Quick-thoughts (Logeswaran & Lee 2018, "An efficient framework for learning sentence representations").

Skip-thoughts generates its neighbours word by word; Quick-thoughts only has to *recognise* them. Two encoders f
and g read a sentence s and each candidate; a classifier picks the true neighbours among the candidates
S_cand (§3, eq. 1):

    p(s_ctxt | s, S_cand) = exp(c(f(s), g(s_ctxt))) / sum_{s' in S_cand} exp(c(f(s), g(s')))

with the inner product c(u, v) = u^T v, so that a good encoder has to put meaning, not word order, into the
vector. The candidates are the other sentences of the mini-batch, which is a block of *consecutive* sentences
(§4.1): a sentence's neighbours are in it, and all pairs are scored with one matrix product. The training
objective sums log p over each sentence's context sentences (here the sentences within ``context`` positions in
the same document; the paper's context size 3 is ``context=1``), written as a cross-entropy against a target
spread evenly over them; a sentence is never its own candidate. At evaluation the representation is
[f(s) ; g(s)] (§3).

The encoders are :class:`~shoulders.models.sentence_encoders.RecurrentSentenceEncoder` GRUs with their own word
tables, the same shape as chapter 7's Skip-thoughts encoder, so the two compare at equal size.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError
from .sentence_encoders import RecurrentSentenceEncoder

__all__ = ["QuickThoughts", "QuickThoughtsConfig", "neighbour_loss"]


def neighbour_loss(u: torch.Tensor, v: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
    """Eq. 1's objective for a block: ``u = f(s)`` and ``v = g(s)`` ``(B, d)``, ``positive`` ``(B, B)`` bool
    (True where sentence j is a context sentence of i). Scores ``u v^T`` with the diagonal removed, then for each
    row with a context sentence the cross-entropy against the even spread over its context sentences; the mean
    over those rows."""
    if positive.shape != (u.shape[0], v.shape[0]) or u.shape != v.shape:
        raise ValueError(f"need u, v (B, d) and positive (B, B); got {tuple(u.shape)}, {tuple(v.shape)}, "
                         f"{tuple(positive.shape)}")
    eye = torch.eye(u.shape[0], dtype=torch.bool, device=u.device)
    if bool((positive & eye).any()):
        raise ValueError("a sentence cannot be its own context sentence (positive has a True on its diagonal)")
    scores = (u @ v.T).masked_fill(eye, float("-inf"))  # (B, B)
    rows = positive.any(1)
    if not bool(rows.any()):
        raise ValueError("no sentence of the block has a context sentence in it")
    logp = F.log_softmax(scores[rows], dim=-1)  # (R, B)
    target = positive[rows].to(logp.dtype)
    target = target / target.sum(1, keepdim=True)
    return -(target * logp.masked_fill(~positive[rows], 0.0)).sum(1).mean()


class QuickThoughts(nn.Module):
    """Encoders f and g and the neighbour classifier; ``model(ids, positive)`` returns :func:`neighbour_loss` of a
    block of consecutive sentences ``ids`` ``(B, T)``; :meth:`encode` gives ``[f(s) ; g(s)]`` ``(B, 2 hidden)``."""

    def __init__(self, cfg: QuickThoughtsConfig):
        super().__init__()
        self.cfg = cfg
        self.f, self.g = (RecurrentSentenceEncoder(cfg.vocab_size, cfg.d_embed, cfg.hidden, "gru", pooling="last",
                                                   pad_id=cfg.pad_id) for _ in range(2))

    def encode(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.f(ids), self.g(ids)], -1)  # (B, 2 hidden)

    def forward(self, ids: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
        return neighbour_loss(self.f(ids), self.g(ids), positive)


@dataclasses.dataclass
class QuickThoughtsConfig(Config):
    """Quick-thoughts' sizes and training (the paper, BookCorpus: 300-d words, GRUs of 1,200 (uni) / 2,400 units,
    blocks of 400 sentences, context size 3, Adam at 5e-4, gradients clipped at norm 1)."""

    vocab_size: int = 20_000
    d_embed: int = 300
    hidden: int = 2_400
    pad_id: int = 0
    max_len: int = 30
    batch_size: int = 400     # consecutive sentences per block: each is the others' candidates
    context: int = 1          # neighbours on each side that are targets (the paper's context size 3)
    lr: float = 5e-4
    clip: float = 1.0
    epochs: int = 1
    train_docs: int = 0       # only the first documents of WikiText-2 train (0: all of them)
    seed: int = 0

    presets: ClassVar = {
        # the same encoder sizes as SkipThoughtsConfig at each scale, so the two compare at equal size
        "smoke": dict(vocab_size=3_000, d_embed=64, hidden=128, max_len=25, batch_size=100, train_docs=60),
        # cpu: no decoder, ~17 GFLOPs a block of 200 sentences, 380 blocks an epoch: 1.1 minutes an epoch measured
        # on two threads (2026-12-03), so it reads more epochs than Skip-thoughts in a fraction of the time. It
        # learns at Skip-thoughts' rate, 1e-3 (the paper's 5e-4 is for GRUs of 1,200+): SentEval SST-2 / SST-5 /
        # SNLI 63.9 / 33.0 / 54.0 against 62.3 / 30.5 / 52.7 at 5e-4, and 59.0 / 30.3 / 52.1 at 5e-4 with the
        # paper's blocks of 400 (2026-12-03; benchmarks/quick_thoughts_settings.py)
        "cpu": dict(vocab_size=8_000, d_embed=128, hidden=256, max_len=30, batch_size=200, epochs=5, lr=1e-3),
        "full": dict(d_embed=620),
    }

    def validate(self) -> None:
        sizes = dict(vocab_size=self.vocab_size, d_embed=self.d_embed, hidden=self.hidden, max_len=self.max_len,
                     context=self.context, epochs=self.epochs)
        if any(v < 1 for v in sizes.values()) or self.batch_size < 2:
            raise ConfigError(f"sizes must be positive and batch_size >= 2, got {sizes}, batch_size={self.batch_size}")
        if self.train_docs < 0:
            raise ConfigError(f"train_docs must be >= 0 (0: all documents), got {self.train_docs}")
        if not 0 <= self.pad_id < self.vocab_size or self.lr <= 0 or self.clip <= 0:
            raise ConfigError(f"need 0 <= pad_id < vocab_size, lr > 0, clip > 0; got {self.pad_id}, {self.lr}, "
                              f"{self.clip}")

    def build(self) -> QuickThoughts:
        return QuickThoughts(self)

    def example_batch(self, batch_size: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
        return self._batch(batch_size, 7)

    def step_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        """One step's shapes: a block of ``batch_size`` sentences of ``max_len`` words from one document."""
        return self._batch(self.batch_size, self.max_len)

    def _batch(self, B: int, T: int) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(1, self.vocab_size, (B, T), generator=torch.Generator().manual_seed(0))
        gap = (torch.arange(B)[:, None] - torch.arange(B)[None, :]).abs()
        return ids, (gap >= 1) & (gap <= self.context)

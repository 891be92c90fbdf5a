"""Recurrent language models: the LSTM LM of Zaremba, Sutskever & Vinyals (2014).

A word-level LM factorises P(w_1..w_T) = prod_t P(w_t | w_<t) (the chain rule) and lets an LSTM summarise the
whole history w_<t in its state h_t, instead of the n-1 words an n-gram model keeps:

    e_t = E[w_t]                       (embedding, |V| x d)
    h_t = LSTM(e_t, h_{t-1})           (L stacked layers, dropout between them: Zaremba et al. 2014, sec. 3)
    P(w_{t+1} | w_<=t) = softmax(W h_t + b)

With ``tie_weights`` the output matrix W is the embedding E itself (Press & Wolf 2017; Inan et al. 2017), which
needs d == hidden size.  The chapter on neural LMs grows this file (Elman RNN, carried state across windows).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError

State = tuple[torch.Tensor, torch.Tensor]


@dataclasses.dataclass
class LSTMLMConfig(Config):
    """An LSTM LM and how to train it on a contiguous token stream (truncated BPTT)."""

    vocab_size: int = 33_278  # WikiText-2's vocabulary (incl. <eos>), Merity et al. 2016
    emb_dim: int = 200
    hidden: int = 200
    layers: int = 2
    dropout: float = 0.2
    tie_weights: bool = True
    batch_size: int = 20
    bptt: int = 35
    steps: int = 2_000
    warmup: int = 100
    lr: float = 3e-3
    weight_decay: float = 0.01
    clip: float = 0.25
    max_vocab: int | None = None  # keep only the N most frequent words (the rest become <unk>): smoke scale
    train_tokens: int | None = None  # use only the first N training tokens (smoke scale)
    eval_tokens: int | None = None  # evaluate on the first N validation tokens

    presets: ClassVar = {
        "smoke": dict(emb_dim=64, hidden=64, layers=1, dropout=0.0, batch_size=32, bptt=32, steps=200, warmup=10,
                      lr=1e-2, max_vocab=10_000, train_tokens=200_000, eval_tokens=20_000),
        "cpu": dict(emb_dim=200, hidden=200, layers=2, dropout=0.2, batch_size=20, bptt=35, steps=1_500, warmup=100,
                    lr=3e-3),
        # Zaremba et al. 2014 "medium": 2 x 650, dropout 0.5 (their PTB model; here on WikiText-2, tied, AdamW)
        "full": dict(emb_dim=650, hidden=650, layers=2, dropout=0.5, batch_size=20, bptt=35, steps=20_000,
                     warmup=500, lr=2e-3),
    }

    def validate(self) -> None:
        if self.tie_weights and self.emb_dim != self.hidden:
            raise ConfigError(f"tie_weights needs emb_dim == hidden, got {self.emb_dim} and {self.hidden}")
        if min(self.vocab_size, self.emb_dim, self.hidden, self.layers, self.batch_size, self.bptt, self.steps) <= 0:
            raise ConfigError("sizes, batch_size, bptt and steps must be positive")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout}")

    def build(self) -> "LSTMLM":
        return LSTMLM(self)

    def example_batch(self, batch_size: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
        """A tiny random (x, y) batch of the right shape, for preset health checks."""
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(self.vocab_size, (batch_size, min(self.bptt, 8) + 1), generator=g)
        return ids[:, :-1], ids[:, 1:]


class LSTMLM(nn.Module):
    """Embedding -> L-layer LSTM -> linear softmax over the vocabulary (Zaremba et al. 2014)."""

    def __init__(self, cfg: LSTMLMConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.emb_dim)
        self.drop = nn.Dropout(cfg.dropout)
        self.lstm = nn.LSTM(cfg.emb_dim, cfg.hidden, cfg.layers, batch_first=True,
                            dropout=cfg.dropout if cfg.layers > 1 else 0.0)
        self.out = nn.Linear(cfg.hidden, cfg.vocab_size)
        if cfg.tie_weights:
            self.out.weight = self.embed.weight  # one |V| x d matrix, shared (Press & Wolf 2017)
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)
        nn.init.zeros_(self.out.bias)

    def logits(self, x: torch.Tensor, state: State | None = None) -> tuple[torch.Tensor, State]:
        """Next-token logits for every position. x: (B, T) ids -> ((B, T, |V|), (h, c) each (L, B, H))."""
        h, state = self.lstm(self.drop(self.embed(x)), state)  # (B, T, H)
        return self.out(self.drop(h)), state

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy (nats per token) of predicting y from x; both (B, T)."""
        logits, _ = self.logits(x)
        return F.cross_entropy(logits.flatten(0, 1), y.flatten())

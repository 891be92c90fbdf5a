"""InferSent (Conneau, Kiela, Schwenk, Barrault & Bordes 2017, "Supervised Learning of Universal Sentence
Representations from Natural Language Inference Data").

A sentence encoder trained on SNLI (Bowman et al. 2015): the premise u and the hypothesis v are encoded by the
*same* encoder, and a classifier reads (§3.1, Figure 1)

    [u, v, |u - v|, u * v]  ->  a fully connected layer of 512 units  ->  3-way softmax (entailment / neutral /
                                                                          contradiction)

so that everything the task needs must go through the sentence vectors, which are then reused elsewhere. Among
the encoders the paper compares (§3.2: LSTM/GRU last state, BiGRU with the last states concatenated, BiLSTM with
mean or max pooling, self-attention, hierarchical convolutions), the BiLSTM with max pooling transfers best;
:class:`~shoulders.models.sentence_encoders.RecurrentSentenceEncoder` provides the recurrent ones and
:mod:`shoulders.models.universal_encoder` the DAN and Transformer encoders of chapter 8's multi-task comparison
(any module ``forward(ids (B, T)) -> (B, dim)`` with a ``dim`` fits here).

The word vectors are GloVe's (chapter 5's giant, frozen, as the paper keeps its 300-d GloVe fixed).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError
from .ids import check_labels
from .sentence_encoders import CELLS, POOLINGS, RecurrentSentenceEncoder

__all__ = ["InferSentConfig", "NLIClassifier", "pair_features"]


def pair_features(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``[u, v, |u - v|, u * v]`` ``(N, 4d)`` of two batches of sentence vectors ``(N, d)`` (§3.1)."""
    if u.shape != v.shape or u.dim() != 2:
        raise ValueError(f"u and v must both be (N, d), got {tuple(u.shape)} and {tuple(v.shape)}")
    return torch.cat([u, v, (u - v).abs(), u * v], dim=-1)


class NLIClassifier(nn.Module):
    """``model(premise (B, T), hypothesis (B, T'), labels (B,))`` -> cross-entropy: one ``encoder`` for both
    sentences, :func:`pair_features`, a hidden layer of ``hidden`` units with tanh (the paper's multi-layer
    perceptron) and the 3-way output."""

    def __init__(self, encoder: nn.Module, hidden: int = 512, classes: int = 3, dropout: float = 0.0):
        super().__init__()
        self.encoder, self.classes = encoder, classes
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(4 * encoder.dim, hidden), nn.Tanh(),
                                        nn.Dropout(dropout), nn.Linear(hidden, classes))

    def encode(self, ids: torch.Tensor) -> torch.Tensor:
        """The sentence vectors ``(B, dim)`` of ``ids`` ``(B, T)``: what transfers (SentEval reads these)."""
        return self.encoder(ids)

    def logits(self, premise: torch.Tensor, hypothesis: torch.Tensor) -> torch.Tensor:
        return self.classifier(pair_features(self.encoder(premise), self.encoder(hypothesis)))  # (B, classes)

    def forward(self, premise: torch.Tensor, hypothesis: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        check_labels(labels, "labels", self.classes)
        return F.cross_entropy(self.logits(premise, hypothesis), labels)


@dataclasses.dataclass
class InferSentConfig(Config):
    """InferSent's encoder and training (the paper: 300-d GloVe, BiLSTM of 2 x 2,048 with max pooling, an MLP of
    512 units, SGD at 0.1 decayed by 0.99 per epoch, batches of 64)."""

    vocab_size: int = 20_000
    d_embed: int = 300
    hidden: int = 2_048        # per direction
    cell: str = "lstm"
    bidirectional: bool = True
    pooling: str = "max"
    mlp: int = 512
    pad_id: int = 0
    max_len: int = 64
    batch_size: int = 64
    lr: float = 0.1
    lr_decay: float = 0.99     # per epoch
    epochs: int = 1
    seed: int = 0

    presets: ClassVar = {
        "smoke": dict(vocab_size=5_000, d_embed=50, hidden=64, mlp=64, max_len=40),
        "cpu": dict(vocab_size=20_000, d_embed=100, hidden=256, mlp=256, max_len=50, epochs=3),
        "full": dict(epochs=10),
    }

    def validate(self) -> None:
        if self.cell not in CELLS or self.pooling not in POOLINGS:
            raise ConfigError(f"cell must be one of {CELLS} and pooling one of {POOLINGS}, got {self.cell!r}, "
                              f"{self.pooling!r}")
        sizes = dict(vocab_size=self.vocab_size, d_embed=self.d_embed, hidden=self.hidden, mlp=self.mlp,
                     max_len=self.max_len, batch_size=self.batch_size, epochs=self.epochs)
        if any(v < 1 for v in sizes.values()):
            raise ConfigError(f"sizes must be positive, got {sizes}")
        if not 0 <= self.pad_id < self.vocab_size or self.lr <= 0 or not 0 < self.lr_decay <= 1:
            raise ConfigError(f"need 0 <= pad_id < vocab_size, lr > 0, 0 < lr_decay <= 1; got {self.pad_id}, "
                              f"{self.lr}, {self.lr_decay}")

    def encoder(self) -> RecurrentSentenceEncoder:
        return RecurrentSentenceEncoder(self.vocab_size, self.d_embed, self.hidden, self.cell, self.bidirectional,
                                        self.pooling, self.pad_id)

    def build(self) -> NLIClassifier:
        return NLIClassifier(self.encoder(), self.mlp)

    def example_batch(self, batch_size: int = 4) -> tuple[torch.Tensor, ...]:
        return self._batch(batch_size, 9)

    def step_batch(self) -> tuple[torch.Tensor, ...]:
        """One step's shapes: ``batch_size`` premises and hypotheses of ``max_len`` words (SNLI's longest)."""
        return self._batch(self.batch_size, self.max_len)

    def _batch(self, B: int, T: int) -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(0)
        return (torch.randint(1, self.vocab_size, (B, T), generator=g),
                torch.randint(1, self.vocab_size, (B, T), generator=g), torch.randint(3, (B,), generator=g))

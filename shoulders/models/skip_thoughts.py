"""Skip-thoughts (Kiros, Zhu, Salakhutdinov, Zemel, Torralba, Urtasun & Fidler 2015, "Skip-Thought Vectors").

Skip-gram one level up: a sentence s_i predicts its neighbours s_{i-1} and s_{i+1}. An encoder GRU reads s_i and its
last hidden state h_i is the sentence vector; two decoder GRUs, one for the previous and one for the next sentence,
generate their neighbour word by word *conditioned on h_i* (§2, eqs. 4-6 for the next-sentence decoder):

    r_t = sigma(W_r^d x_{t-1} + U_r^d h_{t-1} + C_r h_i)
    z_t = sigma(W_z^d x_{t-1} + U_z^d h_{t-1} + C_z h_i)
    hbar_t = tanh(W^d x_{t-1} + U^d (r_t * h_{t-1}) + C h_i)
    h^t_{i+1} = (1 - z_t) * h_{t-1} + z_t * hbar_t

and the objective is the sum of both neighbours' log-likelihoods (eq. 8), each word scored against one vocabulary
matrix V shared by the two decoders: P(w^t | w^{<t}, h_i) ∝ exp(v_{w^t} h^t) (eq. 7).

The C h_i terms are what a GRU adds when h_i is appended to its input at every step: W [x ; h_i] = W x + C h_i. The
decoders here are therefore ``nn.GRU`` s fed ``[x_{t-1} ; h_i]`` (torch's fused kernel), which is eqs. 4-6 except
that torch applies the reset gate to ``U h_{t-1} + b`` rather than to h_{t-1} before U (the cuDNN form). Both
decoders start from a zero state. Encoder and decoders share the word table, as in the released code.

Shapes follow the paper's "uni-skip" at ``full`` (620-dimensional words, 2,400 GRU units); the book's other
presets shrink them. The paper's vocabulary expansion (a linear map from word2vec into the encoder's word space)
is left out: unknown words are ``<unk>``.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError
from .ids import check_ids
from .sentence_encoders import RecurrentSentenceEncoder

__all__ = ["SkipThoughts", "SkipThoughtsConfig"]


class SkipThoughts(nn.Module):
    """The encoder (:class:`~shoulders.models.sentence_encoders.RecurrentSentenceEncoder`, GRU, last state) and
    the previous- and next-sentence decoders with a shared output matrix. ``model(cur, prev, nxt)`` returns the
    loss: the mean cross-entropy per predicted word of each neighbour, summed over the two (eq. 8, per word)."""

    def __init__(self, cfg: SkipThoughtsConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = RecurrentSentenceEncoder(cfg.vocab_size, cfg.d_embed, cfg.hidden, "gru", pooling="last",
                                                pad_id=cfg.pad_id)
        embed_and_thought = cfg.d_embed + cfg.hidden  # [x_{t-1} ; h_i]
        self.decoders = nn.ModuleDict({side: nn.GRU(embed_and_thought, cfg.hidden, batch_first=True)
                                       for side in ("prev", "next")})
        self.out = nn.Linear(cfg.hidden, cfg.vocab_size)  # V: shared by both decoders

    def encode(self, ids: torch.Tensor) -> torch.Tensor:
        """The skip-thought vectors h_i ``(B, hidden)`` of sentences ``ids`` ``(B, T)``."""
        return self.encoder(ids)

    def decode_loss(self, side: str, thought: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of ``target`` ``(B, T')`` = ``<s> words </s>`` (padded), each word predicted from
        the words before it and ``thought`` ``(B, hidden)``."""
        check_ids(target, f"{side} sentence", self.cfg.vocab_size, dims=2)
        x, y = target[:, :-1], target[:, 1:]  # (B, T'-1): read, predict
        inputs = torch.cat([self.encoder.embed(x), thought[:, None, :].expand(-1, x.shape[1], -1)], -1)
        h, _ = self.decoders[side](inputs)  # (B, T'-1, hidden)
        logits = self.out(h)  # (B, T'-1, V)
        return F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=self.cfg.pad_id)

    def forward(self, cur: torch.Tensor, prev: torch.Tensor, nxt: torch.Tensor) -> torch.Tensor:
        thought = self.encode(cur)  # (B, hidden)
        return self.decode_loss("prev", thought, prev) + self.decode_loss("next", thought, nxt)


@dataclasses.dataclass
class SkipThoughtsConfig(Config):
    """Skip-thoughts' sizes and training (the paper: uni-skip, 620-d words, 2,400 units, 20,000 words, Adam,
    batches of 128, gradients clipped at norm 10, two weeks on BookCorpus)."""

    vocab_size: int = 20_000
    d_embed: int = 620
    hidden: int = 2_400
    pad_id: int = 0
    max_len: int = 30         # words kept of a sentence
    batch_size: int = 128
    lr: float = 1e-3
    clip: float = 10.0
    epochs: int = 1
    train_docs: int = 0       # only the first documents of WikiText-2 train (0: all of them)
    seed: int = 0

    presets: ClassVar = {
        "smoke": dict(vocab_size=3_000, d_embed=64, hidden=128, max_len=25, batch_size=64, train_docs=60),
        # cpu: ~54 GFLOPs a step (the two decoders' softmax over 8,000 words is two thirds of it), 1,019 steps an
        # epoch of WikiText-2: 10.2 minutes an epoch measured on two threads (2026-12-03; 23 were projected)
        "cpu": dict(vocab_size=8_000, d_embed=128, hidden=256, max_len=30, batch_size=64, epochs=2),
        "full": dict(),
    }

    # chapter 7 times this many training steps of Skip-thoughts and of Quick-thoughts side by side
    # chapter 7: training steps timed side by side with Quick-thoughts, and the SentEval tasks on which the page
    # asserts Quick-thoughts scores at least as well (the paper's claim; at smoke both encoders sit near chance)
    page_presets: ClassVar = {"smoke": {"timed_steps": 3, "quick_at_least": ()},
                              "cpu": {"timed_steps": 20, "quick_at_least": ("sst2", "sst5", "snli")},
                              "full": {"timed_steps": 50, "quick_at_least": ("sst2", "sst5", "snli")}}

    def validate(self) -> None:
        sizes = dict(vocab_size=self.vocab_size, d_embed=self.d_embed, hidden=self.hidden, max_len=self.max_len,
                     batch_size=self.batch_size, epochs=self.epochs)
        if any(v < 1 for v in sizes.values()) or self.vocab_size < 4:
            raise ConfigError(f"sizes must be positive (vocab_size >= 4), got {sizes}")
        if self.train_docs < 0:
            raise ConfigError(f"train_docs must be >= 0 (0: all documents), got {self.train_docs}")
        if not 0 <= self.pad_id < self.vocab_size or self.lr <= 0 or self.clip <= 0:
            raise ConfigError(f"need 0 <= pad_id < vocab_size, lr > 0, clip > 0; got {self.pad_id}, {self.lr}, "
                              f"{self.clip}")

    def build(self) -> SkipThoughts:
        return SkipThoughts(self)

    def example_batch(self, batch_size: int = 3) -> tuple[torch.Tensor, ...]:
        return self._batch(batch_size, 7)

    def step_batch(self) -> tuple[torch.Tensor, ...]:
        """One step's shapes: ``batch_size`` sentences of ``max_len`` words, neighbours framed by <s> ... </s>."""
        return self._batch(self.batch_size, self.max_len)

    def _batch(self, B: int, T: int) -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(0)
        return tuple(torch.randint(1, self.vocab_size, (B, T + extra), generator=g) for extra in (0, 2, 2))

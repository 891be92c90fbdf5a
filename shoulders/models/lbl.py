"""The log-bilinear language model (LBL) of Mnih & Hinton (2007, "Three new graphical models for statistical
language modelling", ICML).

The NNLM without its hidden layer: the model *predicts a representation* of the next word as a linear function
of the representations of the context words, and scores every word by how well its own representation matches:

    r_hat = sum_{i=1}^{n-1} C_i r_{w_i}                    (d,)   one d x d matrix C_i per context position
    s(w)  = r_hat^T r_w + b_w                              for every word w of the vocabulary
    P(w_n = w | w_1 .. w_{n-1}) = exp(s(w)) / sum_j exp(s(j))

One table R (|V| x d; row r_w) serves both the context and the predicted word, so the parameters are
R (|V| d), the position matrices C_i ((n-1) d^2) and the word biases b (|V|): |V|(d + 1) + (n-1) d^2 in all. The
step from context to prediction is linear (no tanh), the direction "faster, less expressive" of the NNLM's
descendants; with a tree-structured softmax (the hierarchical LBL of Mnih & Hinton 2008) it became fast enough for
large vocabularies. Some formulations add a bias vector to r_hat (equivalently, a term b_r^T r_w); this one is
exactly the formula above.

``x`` holds the context ids ``w_1 .. w_{n-1}`` in stream order (``w_{n-1}`` is the word just before the target),
and ``C[i]`` is the matrix of position ``i`` of that order.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import ConfigError
from .ids import check_ids, check_labels
from .nnlm import NGramLMConfig, init_unigram_bias_

__all__ = ["LBL", "LBLConfig"]


@dataclasses.dataclass
class LBLConfig(NGramLMConfig):
    """The log-bilinear LM: order ``n``, representations of ``emb_dim`` = d dimensions."""

    emb_dim: int = 100  # d

    presets: ClassVar = {
        "smoke": dict(n=5, emb_dim=64, batch_size=256, steps=200, warmup=20, lr=1e-2, weight_decay=0.0,
                      max_vocab=10_000, train_tokens=200_000, eval_tokens=20_000),
        "cpu": dict(n=5, emb_dim=100, batch_size=256, steps=1_500, warmup=100, lr=3e-3, weight_decay=0.0),
        # Mnih & Hinton 2007: 100-dimensional representations and a context of a few words (AP News)
        "full": dict(n=5, emb_dim=100, batch_size=256, steps=40_000, warmup=1_000, lr=2e-3, weight_decay=0.0),
    }

    def validate(self) -> None:
        self._check_n()
        if self.emb_dim <= 0:
            raise ConfigError("emb_dim (d) must be positive")

    def build(self) -> "LBL":
        return LBL(self)


class LBL(nn.Module):
    """s(w) = r_hat^T r_w + b_w with r_hat = sum_i C_i r_{w_i} (Mnih & Hinton 2007). Attributes: ``R`` (the
    |V| x d representations, an embedding), ``C`` ((n-1, d, d): C_i = ``C[i]``), ``b`` (|V| word biases)."""

    def __init__(self, cfg: LBLConfig):
        super().__init__()
        self.cfg = cfg
        V, d, k = cfg.vocab_size, cfg.emb_dim, cfg.context
        self.R = nn.Embedding(V, d)  # |V| x d, shared by context and predicted words
        self.C = nn.Parameter(torch.empty(k, d, d))  # (n-1, d, d) position-specific
        self.b = nn.Parameter(torch.zeros(V))  # |V|
        nn.init.normal_(self.R.weight, std=0.1)
        nn.init.normal_(self.C, std=1.0 / d ** 0.5)  # each C_i roughly preserves the length of r

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """The predicted representation r_hat: x (B, n-1) ids -> (B, d)."""
        check_ids(x, "x", self.cfg.vocab_size, width=self.cfg.context)
        r = self.R(x)  # (B, n-1, d)
        return torch.einsum("ked,bkd->be", self.C, r)  # sum_i C_i r_{w_i}: (C_i r)_e = sum_d C_i[e, d] r_d

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """s(w) for every word w: x (B, n-1) -> (B, |V|)."""
        return self.predict(x) @ self.R.weight.t() + self.b  # (B, d) @ (d, |V|) + (|V|,)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy (nats per token) of the next words y (B,) given their contexts x (B, n-1)."""
        logits = self.logits(x)  # (B, |V|)
        check_labels(y, "y", self.cfg.vocab_size)
        return F.cross_entropy(logits, y)

    @property
    def output_bias(self) -> nn.Parameter:
        """b, the |V| word biases (see :func:`shoulders.models.nnlm.init_unigram_bias_`)."""
        return self.b

    def init_unigram_(self, counts: torch.Tensor) -> None:
        """Start at the unigram model: b = the add-one unigram log-probabilities of the training ``counts``."""
        init_unigram_bias_(self.b, counts)

    def extra_repr(self) -> str:
        return f"n={self.cfg.n}, d={self.cfg.emb_dim}"

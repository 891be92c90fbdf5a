"""The neural probabilistic language model of Bengio, Ducharme, Vincent & Jauvin (2003, JMLR 3:1137-1155).

An n-gram model with words as vectors. The ``n - 1`` previous words are looked up in one shared table C (each row
a word's m "features"), concatenated, and fed to a one-hidden-layer network whose softmax is the next word's
distribution (sec. 2 of the paper):

    x = (C(w_{t-1}), C(w_{t-2}), ..., C(w_{t-n+1}))          (n-1)m   concatenated context features
    y = b + W x + U tanh(d + H x)                             |V|      the unnormalised log-probabilities
    P(w_t = i | w_{t-n+1} .. w_{t-1}) = exp(y_i) / sum_j exp(y_j)

with parameters C (|V| x m), H (h x (n-1)m) and d (h), U (|V| x h) and b (|V|), and the optional direct
connections W (|V| x (n-1)m) from the features to the output (``direct=False`` is W = 0). Training maximises the
log-likelihood of the corpus (the paper adds a weight-decay term R(theta); AdamW's decay plays that part here).

Counting parameters gives the paper's formula, linear in n where an n-gram table grows like |V|^n:

    with W:     |V|(1 + nm + h) + h(1 + (n-1)m)      (b, W, U, C: |V|(1 + (n-1)m + h + m); d, H: h(1 + (n-1)m))
    without W:  |V|(1 + m + h)  + h(1 + (n-1)m)      (drop W's |V|(n-1)m: b, U, C give |V|(1 + h + m))

The batches are fixed windows of the stream (:func:`shoulders.text.windows.ngram_batches`): ``x`` holds the
context ids in stream order ``w_{t-n+1} .. w_{t-1}`` -- the paper lists them most recent first; the order of the
concatenation only permutes the columns of H and W, so the model is the same.
"""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError
from ..text.lm_data import unigram_log_probs
from ..text.stream import LMStream
from ..text.windows import WindowBatches, ngram_batches
from .ids import check_ids, check_labels

__all__ = ["NGramLMConfig", "NNLM", "NNLMConfig", "WindowLMConfig", "init_unigram_bias_", "nnlm_param_count"]


def nnlm_param_count(vocab_size: int, n: int, m: int, h: int, direct: bool = True) -> int:
    """Bengio et al.'s parameter count: |V|(1 + nm + h) + h(1 + (n-1)m) with direct connections W, else
    |V|(1 + m + h) + h(1 + (n-1)m)."""
    v = vocab_size
    return (v * (1 + n * m + h) if direct else v * (1 + m + h)) + h * (1 + (n - 1) * m)


@torch.no_grad()
def init_unigram_bias_(bias: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Set an output bias b (|V|) to the add-one unigram log-probabilities log((c_w + 1) / (N + |V|)).

    With every other output term still near zero, softmax(b) *is* the unigram model, so training starts from
    the baseline every chapter compares with and spends its steps on what the context adds. It matters for short
    runs: Adam moves each parameter by about lr per step, so from b = 0 the rare words' log-probabilities (about
    -12) are hundreds of steps away. ``counts`` are the training counts of each id (e.g.
    ``torch.bincount(train.ids, minlength=len(vocab))``). Used by every LM with an output bias (the NNLM's b, the
    LBL's b_w, the recurrent LMs' ``out.bias``: ``model.output_bias``).
    """
    log_p = unigram_log_probs(counts)
    if log_p.numel() != bias.numel():
        raise ValueError(f"counts has {log_p.numel()} entries but the bias has {bias.numel()} (one per word)")
    return bias.copy_(log_p.to(bias.dtype))


@dataclasses.dataclass
class WindowLMConfig(Config):
    """Fields shared by the window models (NNLM, LBL, C&W): data slice, optimiser and schedule.

    Not a chapter config itself (it has no presets); :class:`NNLMConfig` and the others extend it.
    """

    vocab_size: int = 33_278  # WikiText-2's vocabulary (incl. <eos>)
    batch_size: int = 256
    steps: int = 2_000
    warmup: int = 100
    lr: float = 3e-3
    weight_decay: float = 0.01
    clip: float | None = 1.0
    max_vocab: int | None = None  # keep only the N most frequent words (the rest become <unk>): smoke scale
    train_tokens: int | None = None  # use only the first N training tokens (smoke scale)
    eval_tokens: int | None = None  # evaluate on the first N validation tokens
    eval_batch_size: int = 1_024

    page_presets: ClassVar = {  # the WikiText-2 splits the chapter scores (the papers report test at full)
        "smoke": dict(splits=("train", "valid")),
        "cpu": dict(splits=("train", "valid")),
        "full": dict(splits=("train", "valid", "test")),
    }

    def _check_common(self) -> None:
        if min(self.vocab_size, self.batch_size, self.steps, self.eval_batch_size) <= 0:
            raise ConfigError("vocab_size, batch_size, eval_batch_size and steps must be positive")
        if self.warmup < 0 or self.lr <= 0:
            raise ConfigError(f"need warmup >= 0 and lr > 0, got warmup={self.warmup}, lr={self.lr}")


@dataclasses.dataclass
class NGramLMConfig(WindowLMConfig):
    """A window LM that predicts a word from the ``n - 1`` before it (NNLM, LBL): batches ``(x (B, n-1), y (B,))``."""

    n: int = 5  # the model sees n - 1 previous words

    def _check_n(self) -> None:
        self._check_common()
        if self.n < 2:
            raise ConfigError(f"an n-gram model needs n >= 2 (at least one context word), got n={self.n}")

    @property
    def context(self) -> int:
        """Context words per example, n - 1."""
        return self.n - 1

    def example_batch(self, batch_size: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
        """A tiny random ``(x (B, n-1), y (B,))`` batch, for preset health checks."""
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(self.vocab_size, (batch_size, self.n), generator=g)
        return ids[:, :-1], ids[:, -1]

    def step_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A random batch with the exact shapes of one training step of this preset: ``batch_size`` windows
        ``(x (B, n-1), y (B,))``, as :meth:`batches` yields them, ids below ``vocab_size`` (WikiText-2's 33,278
        words at ``full``). For the ``full``-shape checks (tests/test_full_presets.py, benchmarks/full_plan.py)."""
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(self.vocab_size, (self.batch_size, self.n), generator=g)
        return ids[:, :-1], ids[:, -1]

    def batches(self, stream: LMStream, train: bool = True) -> WindowBatches:
        """Training batches (shuffled, ``batch_size``) or evaluation batches (in order, ``eval_batch_size``, and
        padded with ``<eos>`` when the stream's vocabulary has it, so every token of ``stream`` is predicted once)
        of ``(x, y)`` windows (:func:`shoulders.text.windows.ngram_batches`)."""
        vocab = getattr(stream, "vocab", None)
        pad = vocab["<eos>"] if (not train and vocab is not None and "<eos>" in vocab) else None
        return ngram_batches(stream, self.n, self.batch_size if train else self.eval_batch_size, shuffle=train,
                             pad=pad)


@dataclasses.dataclass
class NNLMConfig(NGramLMConfig):
    """Bengio et al.'s NNLM (order ``n``, ``emb_dim`` = m features per word, ``hidden`` = h tanh units)."""

    emb_dim: int = 60  # m
    hidden: int = 50  # h
    direct: bool = True  # the direct connections W from the features to the output
    dropout: float = 0.0  # on x and on the hidden layer (not in the paper, which used weight decay only)
    samples: int | None = None  # train by importance sampling with this many proposal words per batch (None: exact)

    presets: ClassVar = {
        # smoke and cpu leave out W: with (n-1)m > h it costs several times the rest of the output layer
        "smoke": dict(n=5, emb_dim=32, hidden=64, direct=False, batch_size=256, steps=200, warmup=20, lr=1e-2,
                      max_vocab=10_000, train_tokens=200_000, eval_tokens=20_000),
        # cpu: importance sampling (4,096 unigram draws per batch of 1,024, Bengio & Senecal 2003) buys about two
        # epochs in minutes on one core; dropout 0.2 (not in the paper) because two epochs already overfit
        "cpu": dict(n=5, emb_dim=60, hidden=100, direct=False, dropout=0.2, samples=4_096, batch_size=1_024,
                    steps=4_000, warmup=200, lr=3e-3),
        # the paper's range: n = 5-6, m = 30-100, h = 50-100, with W; ~5 epochs of WikiText-2 (they trained ~5)
        "full": dict(n=6, emb_dim=100, hidden=100, direct=True, dropout=0.2, batch_size=256, steps=40_000,
                     warmup=1_000, lr=2e-3),
    }

    page_presets: ClassVar = {  # chapter 2: the scored splits, and the baseline the NNLM alone must beat
        # smoke: 200 steps on a tenth of the text leave the network above the counting models (the mixture of the
        # two still beats both, and is asserted at every scale)
        "smoke": dict(splits=("train", "valid"), nnlm_beats="unigram (add-one)"),
        # cpu and full: the paper's claim, the network alone beats the smoothed trigram
        "cpu": dict(splits=("train", "valid"), nnlm_beats="modified KN 3-gram"),
        "full": dict(splits=("train", "valid", "test"), nnlm_beats="modified KN 3-gram"),
    }

    def validate(self) -> None:
        self._check_n()
        if min(self.emb_dim, self.hidden) <= 0:
            raise ConfigError("emb_dim (m) and hidden (h) must be positive")
        if self.samples is not None and self.samples <= 0:
            raise ConfigError(f"samples must be positive (or None for the exact gradient), got {self.samples}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout}")

    def build(self) -> "NNLM":
        return NNLM(self)


class NNLM(nn.Module):
    """y = b + W x + U tanh(d + H x) over the concatenated features x of the n-1 context words (Bengio et al.
    2003, sec. 2). Attribute names are the paper's: ``C`` (embedding), ``H`` (with bias d), ``U`` (with bias b),
    ``W`` (direct connections, ``None`` without them)."""

    def __init__(self, cfg: NNLMConfig):
        super().__init__()
        self.cfg = cfg
        V, m, h, k = cfg.vocab_size, cfg.emb_dim, cfg.hidden, cfg.context
        self.C = nn.Embedding(V, m)  # |V| x m: the word features, shared by all context positions
        self.H = nn.Linear(k * m, h)  # h x (n-1)m, bias d (h)
        self.U = nn.Linear(h, V)  # |V| x h, bias b (|V|)
        self.W = nn.Linear(k * m, V, bias=False) if cfg.direct else None  # |V| x (n-1)m
        self.drop = nn.Dropout(cfg.dropout)
        nn.init.normal_(self.C.weight, std=0.1)
        nn.init.zeros_(self.U.bias)
        # Q, the proposal distribution of importance sampling (uniform until init_unigram_ sets the unigram model);
        # not a parameter and not saved: it is a property of the training data, not of the model
        self.register_buffer("proposal", torch.full((V,), 1.0 / V), persistent=False)

    def features(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The concatenated context features x (B, (n-1)m) and the hidden layer tanh(d + H x) (B, h)."""
        check_ids(x, "x", self.cfg.vocab_size, width=self.cfg.context)  # (B, n-1)
        feats = self.drop(self.C(x).flatten(1))  # (B, (n-1)m): the concatenation x of the paper
        return feats, self.drop(torch.tanh(self.H(feats)))

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """y for each context: x (B, n-1) ids -> (B, |V|) unnormalised log-probabilities."""
        feats, hidden = self.features(x)
        y = self.U(hidden)  # (B, |V|): b + U tanh(d + H x)
        if self.W is not None:
            y = y + self.W(feats)  # + W x
        return y

    def sampled_loss(self, x: torch.Tensor, y: torch.Tensor, samples: int | None = None) -> torch.Tensor:
        """The importance-sampling estimate of the cross-entropy that Bengio & Senecal (2003, 2008) trained this
        network with: its gradient replaces the softmax's expectation over all |V| words by k words drawn from
        the proposal Q (shared by the batch), each weighted by e^{y_j} / Q(j) and the weights normalised.

        -ln P(w | context) = ln sum_j e^{y_j} - y_w, and sum_j e^{y_j} = E_Q[e^{y_J} / Q(J)] is estimated by
        (1/k) sum_{i=1..k} e^{y_{j_i}} / Q(j_i); the gradient of the estimate is grad y_w minus the normalised
        weights' average of grad y_j (their "biased importance sampling"). Only the k drawn rows and the targets'
        rows of U (and W) are touched, so a step costs k instead of |V| output units.
        """
        k = samples or self.cfg.samples
        if not k:
            raise ValueError("sampled_loss needs a number of samples (the config's samples, or samples=)")
        feats, hidden = self.features(x)
        check_labels(y, "y", self.cfg.vocab_size)
        drawn = torch.multinomial(self.proposal, k, replacement=True)  # (k,) word ids from Q
        target = (hidden * self.U.weight[y]).sum(1) + self.U.bias[y]  # (B,) y_w
        others = hidden @ self.U.weight[drawn].t() + self.U.bias[drawn]  # (B, k) y_j of the drawn words
        if self.W is not None:
            target = target + (feats * self.W.weight[y]).sum(1)
            others = others + feats @ self.W.weight[drawn].t()
        log_z = torch.logsumexp(others - self.proposal[drawn].log(), dim=1) - math.log(k)  # ln of the estimate
        return (log_z - target).mean()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy (nats per token) of the next words y (B,) given their contexts x (B, n-1).

        In training mode with ``cfg.samples`` set, its importance-sampling estimate (:meth:`sampled_loss`); in
        evaluation mode always the exact value over the whole vocabulary."""
        if self.training and self.cfg.samples:
            return self.sampled_loss(x, y)
        logits = self.logits(x)  # (B, |V|)
        check_labels(y, "y", self.cfg.vocab_size)
        return F.cross_entropy(logits, y)

    @torch.no_grad()
    def init_unigram_(self, counts: torch.Tensor) -> None:
        """Start at the unigram model: b = the add-one unigram log-probabilities (:func:`init_unigram_bias_`), and
        the same distribution as the proposal Q of importance sampling."""
        init_unigram_bias_(self.U.bias, counts)
        self.proposal.copy_(unigram_log_probs(counts).exp().to(self.proposal.dtype))

    @property
    def output_bias(self) -> nn.Parameter:
        """b, the |V| output biases (see :func:`init_unigram_bias_`)."""
        return self.U.bias

    def extra_repr(self) -> str:
        c = self.cfg
        return f"n={c.n}, m={c.emb_dim}, h={c.hidden}, direct={c.direct}"

"""Recurrent language models: the Elman RNN LM of Mikolov et al. (2010) and the LSTM LM of Zaremba, Sutskever &
Vinyals (2014), trained with truncated back-propagation through time over a contiguous stream.

A word-level LM factorises P(w_1..w_T) = prod_t P(w_t | w_<t) (the chain rule) and lets a recurrent network
summarise the whole history w_<t in its state h_t, instead of the n-1 words an n-gram model or an NNLM keeps:

    e_t = E[w_t]                               embedding, |V| x d
    h_t = tanh(W_ih e_t + W_hh h_{t-1} + b)    Elman RNN (Mikolov et al. 2010, eq. 1-2; they used a sigmoid)
    h_t = LSTM(e_t, h_{t-1})                   or L stacked LSTM layers, dropout between (Zaremba et al. 2014, sec. 3)
    P(w_{t+1} | w_<=t) = softmax(W h_t + b)    (Mikolov et al. 2010, eq. 3)

Mikolov's input layer is the one-hot w(t) times a |V| x H matrix, i.e. an embedding of the hidden size; here the
embedding E (size d) is followed by ``nn.RNN``'s own input matrix W_ih, which for d = H is the same model up to a
reparametrisation. With ``tie_weights`` the output matrix W is the embedding E itself (Press & Wolf 2017; Inan et
al. 2017), which needs d == hidden size.

**A cheaper output layer.** The softmax over |V| words costs |V| x H multiply-adds per token -- for WikiText-2's
33,278 words, far more than the recurrent layers. Mikolov et al. (2011, "Extensions of recurrent neural network
language model") factorised it through word classes sorted by frequency; the *adaptive softmax* of Grave et al.
(2017) refines that: a head softmax over the most frequent words plus one entry per tail cluster, and a smaller
softmax (on a down-projected H / div_value^i state) inside each cluster, so that

    P(w) = P_head(w)                               for w in the head (the ``cutoffs[0]`` most frequent words)
    P(w) = P_head(cluster i) * P_i(w | cluster i)  for w in tail cluster i

It is an exact, normalised distribution (perplexity means the same), only cheaper: most tokens are frequent
words. ``adaptive_cutoffs=(2000, 10000)`` uses it (``torch.nn.AdaptiveLogSoftmaxWithLoss``); the vocabulary must be
ordered by frequency, as :meth:`shoulders.text.Vocab.build` orders it, and the weights cannot be tied.

**Truncated BPTT with a carried state.** The training windows of :meth:`shoulders.text.LMStream.bptt_batches`
continue each other row by row, so the state at the end of window k is the right initial state for window k+1
(Mikolov 2012; Zaremba et al. 2014). :class:`shoulders.train.CarryState` does that inside
:func:`shoulders.train.fit`: it keeps the final state of each window, *detached* (gradients stop at the window
boundary -- the truncation -- but the values still remember the text before), starts every pass over the data from
a zero state, and goes into checkpoints so a resumed run continues exactly. :func:`shoulders.evaluate.perplexity`
with ``carry_state=True`` evaluates the same way. Without them (``model(x, y)``) every window starts from zeros, as in
chapter 0.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Union

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError
from ..text.lm_data import unigram_log_probs
from ..text.stream import BPTTBatches, LMStream
from .ids import check_ids, check_labels
from .nnlm import init_unigram_bias_

__all__ = ["LSTMLM", "LSTMLMConfig", "RNNLM", "RNNLMConfig", "RecurrentLM", "RecurrentLMConfig", "State",
           "SoftmaxOutput", "init_unigram_output_", "softmax_output"]

# nn.RNN's state is h (L, B, H); nn.LSTM's is (h, c), each (L, B, H)
State = Union[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]


@torch.no_grad()
def init_unigram_output_(out: nn.Module, counts: torch.Tensor) -> None:
    """Start an output layer -- a full-softmax ``nn.Linear`` or an ``nn.AdaptiveLogSoftmaxWithLoss`` -- at the
    add-one unigram model of the training ``counts`` (|V|,).

    Full softmax: the biases b = log P(w) (:func:`~shoulders.models.nnlm.init_unigram_bias_`). Adaptive softmax:
    the head's biases are log P(w) for its words and log P(cluster i) = log of the summed P(w) of the cluster's
    words for its cluster entries, so the head is the unigram model at the cluster level (the tail layers have no
    bias; inside a cluster the start is uniform).
    """
    if not isinstance(out, nn.AdaptiveLogSoftmaxWithLoss):
        init_unigram_bias_(out.bias, counts)
        return
    log_p = unigram_log_probs(counts)  # (|V|,)
    if log_p.numel() != out.n_classes:
        raise ValueError(f"counts has {log_p.numel()} entries but the vocabulary has {out.n_classes}")
    edges = out.cutoffs  # [c_0, c_1, ..., |V|]
    clusters = [torch.logsumexp(log_p[a:b], 0) for a, b in zip(edges[:-1], edges[1:])]
    out.head.bias.copy_(torch.cat([log_p[: edges[0]], torch.stack(clusters)]).to(out.head.bias.dtype))


@dataclasses.dataclass
class RecurrentLMConfig(Config):
    """Fields shared by the recurrent LMs and how to train them on a contiguous token stream (truncated BPTT).

    Not a chapter config itself (no presets): :class:`RNNLMConfig` and :class:`LSTMLMConfig` extend it.
    """

    vocab_size: int = 33_278  # WikiText-2's vocabulary (incl. <eos>), Merity et al. 2016
    emb_dim: int = 200
    hidden: int = 200
    layers: int = 2
    dropout: float = 0.2
    tie_weights: bool = True
    adaptive_cutoffs: tuple[int, ...] | None = None  # e.g. (2000, 10000): adaptive softmax (Grave et al. 2017)
    div_value: float = 4.0  # each tail cluster's state is H / div_value^i wide
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

    page_presets: ClassVar = {  # the WikiText-2 splits the chapter scores (the papers report test at full)
        "smoke": dict(splits=("train", "valid")),
        "cpu": dict(splits=("train", "valid")),
        "full": dict(splits=("train", "valid", "test")),
    }

    def validate(self) -> None:
        if self.adaptive_cutoffs is not None:
            cuts = list(self.adaptive_cutoffs)
            if not cuts or cuts != sorted(set(cuts)) or cuts[0] < 1 or cuts[-1] >= self.vocab_size:
                raise ConfigError(f"adaptive_cutoffs must increase strictly within (0, vocab_size={self.vocab_size}),"
                                  f" got {self.adaptive_cutoffs}")
            if self.tie_weights:
                raise ConfigError("tie_weights needs a full softmax (the adaptive softmax has no |V| x H matrix to "
                                  "share): set tie_weights=False or adaptive_cutoffs=None")
        if self.tie_weights and self.emb_dim != self.output_dim():
            raise ConfigError(f"tie_weights needs emb_dim == hidden, got {self.emb_dim} and {self.hidden}")
        if min(self.vocab_size, self.emb_dim, self.hidden, self.layers, self.batch_size, self.bptt, self.steps) <= 0:
            raise ConfigError("sizes, batch_size, bptt and steps must be positive")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout}")

    def output_dim(self) -> int:
        """The width of the states the softmax reads (weight tying needs it to equal ``emb_dim``): ``hidden``."""
        return self.hidden

    def example_batch(self, batch_size: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
        """A tiny random (x, y) batch of the right shape, for preset health checks."""
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(self.vocab_size, (batch_size, min(self.bptt, 8) + 1), generator=g)
        return ids[:, :-1], ids[:, 1:]

    def step_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A random batch with the exact shapes of one training step of this preset: the ``(x, y)`` BPTT window
        ``(batch_size, bptt)`` that :meth:`batches` yields, ids below ``vocab_size`` (WikiText-2's 33,278 words
        at ``full``). For the ``full``-shape checks (tests/test_full_presets.py, benchmarks/full_plan.py)."""
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(self.vocab_size, (self.batch_size, self.bptt + 1), generator=g)
        return ids[:, :-1], ids[:, 1:]

    def batches(self, stream: LMStream, train: bool = True) -> BPTTBatches:
        """The ``(x, y)`` BPTT windows of ``stream``, ``(batch_size, bptt)`` each (training and evaluation alike)."""
        return stream.bptt_batches(bptt=self.bptt, batch_size=self.batch_size)


@dataclasses.dataclass
class RNNLMConfig(RecurrentLMConfig):
    """An Elman RNN LM (Mikolov et al. 2010): one tanh recurrent layer by default, untied as in the paper."""

    hidden: int = 200
    layers: int = 1
    dropout: float = 0.0
    tie_weights: bool = False
    lr: float = 3e-3

    presets: ClassVar = {
        # smoke and cpu: the adaptive softmax (see the module docstring) is 4-7x faster per step on a CPU than the
        # full one, and makes a pass over WikiText-2 affordable on a laptop
        "smoke": dict(emb_dim=64, hidden=64, layers=1, dropout=0.0, tie_weights=False, adaptive_cutoffs=(1_000, 4_000),
                      batch_size=32, bptt=32, steps=200, warmup=10, lr=1e-2, clip=1.0, max_vocab=10_000,
                      train_tokens=200_000, eval_tokens=20_000),
        "cpu": dict(emb_dim=200, hidden=200, layers=1, dropout=0.1, tie_weights=False, adaptive_cutoffs=(2_000, 10_000),
                    batch_size=32, bptt=35, steps=2_000, warmup=100, lr=3e-3),
        # Mikolov et al. 2010 used hidden layers of 60-400 units (no dropout, which came later); 400 here, tied,
        # and dropout because WikiText-2 is small for this size
        "full": dict(emb_dim=400, hidden=400, layers=1, dropout=0.3, tie_weights=True, batch_size=20, bptt=35,
                     steps=15_000, warmup=300, lr=2e-3),
    }

    def build(self) -> "RNNLM":
        return RNNLM(self)


@dataclasses.dataclass
class LSTMLMConfig(RecurrentLMConfig):
    """An LSTM LM and how to train it on a contiguous token stream (truncated BPTT)."""

    presets: ClassVar = {
        "smoke": dict(emb_dim=64, hidden=64, layers=1, dropout=0.0, tie_weights=False, adaptive_cutoffs=(1_000, 4_000),
                      batch_size=32, bptt=32, steps=300, warmup=10, lr=1e-2, max_vocab=10_000, train_tokens=200_000,
                      eval_tokens=20_000),
        "cpu": dict(emb_dim=200, hidden=200, layers=2, dropout=0.2, tie_weights=False, adaptive_cutoffs=(2_000, 10_000),
                    batch_size=32, bptt=35, steps=2_500, warmup=100, lr=3e-3),
        # Zaremba et al. 2014 "medium": 2 x 650, dropout 0.5 (their PTB model; here on WikiText-2, tied, AdamW)
        "full": dict(emb_dim=650, hidden=650, layers=2, dropout=0.5, batch_size=20, bptt=35, steps=20_000,
                     warmup=500, lr=2e-3),
    }

    def build(self) -> "LSTMLM":
        return LSTMLM(self)


def softmax_output(d: int, vocab_size: int, adaptive_cutoffs: tuple[int, ...] | None, div_value: float,
                   tie_to: nn.Embedding | None = None) -> nn.Module:
    """The output layer of a word-level LM reading d-dimensional states: the adaptive softmax when
    ``adaptive_cutoffs`` are given (Grave et al. 2017, see the module docstring), else a full-softmax ``nn.Linear``
    whose weight is ``tie_to``'s |V| x d matrix when given (Press & Wolf 2017); the biases start at zero."""
    if adaptive_cutoffs is not None:
        out = nn.AdaptiveLogSoftmaxWithLoss(d, vocab_size, list(adaptive_cutoffs), div_value=div_value,
                                            head_bias=True)
        nn.init.zeros_(out.head.bias)
        return out
    linear = nn.Linear(d, vocab_size)
    if tie_to is not None:
        linear.weight = tie_to.weight  # one |V| x d matrix, shared
    nn.init.zeros_(linear.bias)
    return linear


class SoftmaxOutput:
    """What a word-level LM with an output layer ``self.out`` -- a full-softmax ``nn.Linear`` or an
    ``nn.AdaptiveLogSoftmaxWithLoss`` -- offers about it: the recurrent LMs here and ELMo's biLM
    (:class:`shoulders.models.elmo.BiLM`)."""

    out: nn.Module

    @property
    def adaptive(self) -> bool:
        return isinstance(self.out, nn.AdaptiveLogSoftmaxWithLoss)

    @property
    def output_bias(self) -> nn.Parameter:
        """The |V| output biases of a full softmax (see :func:`shoulders.models.nnlm.init_unigram_bias_`)."""
        if self.adaptive:
            raise TypeError("an adaptive softmax has no |V| output biases: use model.init_unigram_(counts)")
        return self.out.bias

    def init_unigram_(self, counts: torch.Tensor) -> None:
        """Start the output layer at the add-one unigram model of the training ``counts`` (|V|,)
        (:func:`init_unigram_output_`)."""
        init_unigram_output_(self.out, counts)


class RecurrentLM(SoftmaxOutput, nn.Module):
    """Embedding -> recurrent layers -> linear softmax over the vocabulary; subclasses choose the recurrence."""

    rnn_name: ClassVar[str] = "rnn"  # the attribute that holds the recurrent module ("lstm" for the LSTM LM)

    def __init__(self, cfg: RecurrentLMConfig, rnn: nn.Module):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.emb_dim)
        self.drop = nn.Dropout(cfg.dropout)
        setattr(self, self.rnn_name, rnn)
        self.out = softmax_output(cfg.hidden, cfg.vocab_size, cfg.adaptive_cutoffs, cfg.div_value,
                                  tie_to=self.embed if cfg.tie_weights else None)
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)

    @property
    def recurrent(self) -> nn.Module:
        return getattr(self, self.rnn_name)

    def hidden(self, x: torch.Tensor, state: State | None = None) -> tuple[torch.Tensor, State]:
        """The top layer's outputs (after dropout) that the output layer reads: x (B, T) -> ((B, T, H), state)."""
        check_ids(x, "x", self.cfg.vocab_size)  # (B, T)
        h, state = self.recurrent(self.drop(self.embed(x)), state)  # (B, T, H)
        return self.drop(h), state

    def logits(self, x: torch.Tensor, state: State | None = None) -> tuple[torch.Tensor, State]:
        """Next-token logits for every position. x: (B, T) ids -> ((B, T, |V|), the final state).

        With the adaptive softmax these are the normalised log-probabilities (softmax leaves them unchanged)."""
        h, state = self.hidden(x, state)  # (B, T, H)
        if self.adaptive:
            return self.out.log_prob(h.flatten(0, 1)).view(*h.shape[:2], -1), state
        return self.out(h), state

    def forward(self, x: torch.Tensor, y: torch.Tensor, state: State | None = None,
                return_state: bool = False) -> torch.Tensor | dict[str, Any]:
        """Mean cross-entropy (nats per token) of predicting y from x; both (B, T).

        ``state`` starts the recurrence from a given state (default zeros); with ``return_state`` the result is
        ``{"loss": loss, "state": final state}`` -- the form :func:`shoulders.train.fit` accepts (the state is not
        logged) and :class:`shoulders.train.CarryState` uses.
        """
        if self.adaptive:  # the adaptive softmax scores only the targets' clusters: no (B, T, |V|) tensor
            h, new = self.hidden(x, state)  # (B, T, H); hidden checks x
            check_labels(y, "y", self.cfg.vocab_size)
            loss = self.out(h.flatten(0, 1), y.flatten()).loss
        else:
            logits, new = self.logits(x, state)
            check_labels(y, "y", self.cfg.vocab_size)
            loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        return {"loss": loss, "state": new} if return_state else loss


class RNNLM(RecurrentLM):
    """Embedding -> L-layer Elman (tanh) RNN -> linear softmax over the vocabulary (Mikolov et al. 2010)."""

    rnn_name = "rnn"

    def __init__(self, cfg: RNNLMConfig):
        super().__init__(cfg, nn.RNN(cfg.emb_dim, cfg.hidden, cfg.layers, nonlinearity="tanh", batch_first=True,
                                     dropout=cfg.dropout if cfg.layers > 1 else 0.0))


class LSTMLM(RecurrentLM):
    """Embedding -> L-layer LSTM -> linear softmax over the vocabulary (Zaremba et al. 2014)."""

    rnn_name = "lstm"

    def __init__(self, cfg: LSTMLMConfig):
        super().__init__(cfg, nn.LSTM(cfg.emb_dim, cfg.hidden, cfg.layers, batch_first=True,
                                      dropout=cfg.dropout if cfg.layers > 1 else 0.0))

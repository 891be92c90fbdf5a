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

**Truncated BPTT with a carried state.** The training windows of :meth:`shoulders.text.LMStream.bptt_batches`
continue each other row by row, so the state at the end of window k is the right initial state for window k+1
(Mikolov 2012; Zaremba et al. 2014). :class:`CarryState` does that inside :func:`shoulders.train.fit`: it keeps the
final state of each window, *detached* (gradients stop at the window boundary -- the truncation -- but the values
still remember the text before), starts every pass over the data from a zero state, and goes into checkpoints so a
resumed run continues exactly. :func:`shoulders.evaluate.perplexity` with ``carry_state=True`` evaluates the same
way. Without them (``model(x, y)``) every window starts from zeros, as in chapter 0.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Union

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError
from ..text.stream import BPTTBatches, LMStream
from ..train.callbacks import Callback, Run

__all__ = ["CarryState", "LSTMLM", "LSTMLMConfig", "RNNLM", "RNNLMConfig", "RecurrentLM", "RecurrentLMConfig",
           "State", "detach_state"]

# nn.RNN's state is h (L, B, H); nn.LSTM's is (h, c), each (L, B, H)
State = Union[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]


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

    def validate(self) -> None:
        if self.tie_weights and self.emb_dim != self.hidden:
            raise ConfigError(f"tie_weights needs emb_dim == hidden, got {self.emb_dim} and {self.hidden}")
        if min(self.vocab_size, self.emb_dim, self.hidden, self.layers, self.batch_size, self.bptt, self.steps) <= 0:
            raise ConfigError("sizes, batch_size, bptt and steps must be positive")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout}")

    def example_batch(self, batch_size: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
        """A tiny random (x, y) batch of the right shape, for preset health checks."""
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(self.vocab_size, (batch_size, min(self.bptt, 8) + 1), generator=g)
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
        "smoke": dict(emb_dim=64, hidden=64, layers=1, dropout=0.0, tie_weights=False, batch_size=32, bptt=32,
                      steps=150, warmup=10, lr=1e-2, clip=1.0, max_vocab=10_000, train_tokens=200_000,
                      eval_tokens=20_000),
        "cpu": dict(emb_dim=200, hidden=200, layers=1, dropout=0.1, tie_weights=True, batch_size=20, bptt=35,
                    steps=600, warmup=50, lr=3e-3),
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
        "smoke": dict(emb_dim=64, hidden=64, layers=1, dropout=0.0, batch_size=32, bptt=32, steps=200, warmup=10,
                      lr=1e-2, max_vocab=10_000, train_tokens=200_000, eval_tokens=20_000),
        "cpu": dict(emb_dim=200, hidden=200, layers=2, dropout=0.2, batch_size=20, bptt=35, steps=1_500, warmup=100,
                    lr=3e-3),
        # Zaremba et al. 2014 "medium": 2 x 650, dropout 0.5 (their PTB model; here on WikiText-2, tied, AdamW)
        "full": dict(emb_dim=650, hidden=650, layers=2, dropout=0.5, batch_size=20, bptt=35, steps=20_000,
                     warmup=500, lr=2e-3),
    }

    def build(self) -> "LSTMLM":
        return LSTMLM(self)


def detach_state(state: State | None) -> State | None:
    """The same state values, cut from the graph that computed them (``None`` stays ``None``)."""
    if state is None:
        return None
    if isinstance(state, torch.Tensor):
        return state.detach()
    return tuple(s.detach() for s in state)


class RecurrentLM(nn.Module):
    """Embedding -> recurrent layers -> linear softmax over the vocabulary; subclasses choose the recurrence."""

    rnn_name: ClassVar[str] = "rnn"  # the attribute that holds the recurrent module ("lstm" for the LSTM LM)

    def __init__(self, cfg: RecurrentLMConfig, rnn: nn.Module):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.emb_dim)
        self.drop = nn.Dropout(cfg.dropout)
        setattr(self, self.rnn_name, rnn)
        self.out = nn.Linear(cfg.hidden, cfg.vocab_size)
        if cfg.tie_weights:
            self.out.weight = self.embed.weight  # one |V| x d matrix, shared (Press & Wolf 2017)
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)
        nn.init.zeros_(self.out.bias)

    @property
    def recurrent(self) -> nn.Module:
        return getattr(self, self.rnn_name)

    @property
    def output_bias(self) -> nn.Parameter:
        """The |V| output biases (see :func:`shoulders.models.nnlm.init_unigram_bias_`)."""
        return self.out.bias

    def logits(self, x: torch.Tensor, state: State | None = None) -> tuple[torch.Tensor, State]:
        """Next-token logits for every position. x: (B, T) ids -> ((B, T, |V|), the final state)."""
        h, state = self.recurrent(self.drop(self.embed(x)), state)  # (B, T, H)
        return self.out(self.drop(h)), state

    def forward(self, x: torch.Tensor, y: torch.Tensor, state: State | None = None,
                return_state: bool = False) -> torch.Tensor | dict[str, Any]:
        """Mean cross-entropy (nats per token) of predicting y from x; both (B, T).

        ``state`` starts the recurrence from a given state (default zeros); with ``return_state`` the result is
        ``{"loss": loss, "state": final state}`` -- the form :func:`shoulders.train.fit` accepts (the state is not
        logged) and :class:`CarryState` uses.
        """
        logits, new = self.logits(x, state)
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


def _fits(state: State | None, x: torch.Tensor) -> bool:
    """Whether a carried state can start the rows of ``x`` (same batch size)."""
    if state is None:
        return False
    h = state if isinstance(state, torch.Tensor) else state[0]
    return h.shape[1] == x.shape[0]


class CarryState(Callback):
    """Truncated BPTT for :func:`shoulders.train.fit`: carry the recurrent state from window to window.

    Pass the *same* object twice -- as the loss and as a callback::

        carry = CarryState()
        fit(model, stream.bptt_batches(bptt=35, batch_size=20), opt, steps=..., loss_fn=carry, callbacks=[carry])

    Each step runs ``model(x, y, state=previous, return_state=True)`` and keeps the new state *detached*: window
    k+1 starts from the values window k ended with, and its backward pass stops there. The state is reset to zeros
    at the start of every pass over the data (``on_epoch_end``), when the batch size changes, and at the start of
    a fresh ``fit``; it is saved in checkpoints, so a resumed run carries on exactly. The loss dict also holds
    ``"tokens"`` (targets in the window), which ``fit`` logs cumulatively -- tokens per second is
    ``history.last("tokens") / history.last("time")``.

    Under DDP each process sees every N-th window, so consecutive windows of a process do not continue each other;
    give each process its own stream if the carried state matters there.
    """

    def __init__(self) -> None:
        self.state: State | None = None
        self._attached = False
        self._restored = False

    def reset(self) -> None:
        self.state = None

    def __call__(self, model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> dict[str, Any]:
        if not self._attached:
            raise RuntimeError("CarryState is the loss_fn but not a callback of this fit: pass it as both, "
                               "fit(..., loss_fn=carry, callbacks=[carry]), so it can reset at epoch boundaries")
        x, y = batch
        state = self.state if _fits(self.state, x) else None
        if state is not None:
            state = state.to(x.device) if isinstance(state, torch.Tensor) else tuple(s.to(x.device) for s in state)
        out = model(x, y, state=state, return_state=True)
        self.state = detach_state(out["state"])  # the values go on; the graph of this window does not
        return {"loss": out["loss"], "tokens": y.numel()}

    def on_fit_start(self, run: Run) -> None:
        self._attached = True
        if not self._restored:
            self.reset()  # a fresh fit starts from zeros (a resumed one from its checkpointed state)
        self._restored = False

    def on_epoch_end(self, run: Run, epoch: int) -> None:
        self.reset()  # the next pass starts again at the beginning of the stream

    def on_fit_end(self, run: Run) -> None:
        self._attached = False

    def state_dict(self) -> dict[str, Any]:
        if self.state is None:
            return {}
        s = self.state
        return {"state": [s.cpu()] if isinstance(s, torch.Tensor) else [t.cpu() for t in s]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        saved = state.get("state")
        if saved:
            self.state = saved[0] if len(saved) == 1 else tuple(saved)
            self._restored = True

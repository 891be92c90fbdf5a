"""AWD-LSTM: the regularised LSTM language model of Merity, Keskar & Socher (2018, "Regularizing and Optimizing LSTM
Language Models"), the network ULMFiT pre-trains and fine-tunes (Howard & Ruder 2018).

A three-layer LSTM LM like chapter 3's, whose strength is its regularisation, every kind of it on one network:

    e_t   = EmbeddingDropout(E)[w_t]          whole rows of E dropped (p = dropout_e), a word is absent
                                              everywhere in the batch or present everywhere (sec. 4.3)
    x_t   = LockedDropout(e_t)                one mask per sequence, the same at every time step (p = dropout_i;
                                              Gal & Ghahramani 2016's variational dropout, sec. 4.2)
    h^l_t = LSTM_l(h^{l-1}_t, h^l_{t-1})      DropConnect on each layer's hidden-to-hidden matrix W_hh (p = wdrop):
                                              one mask per forward pass, shared by every time step (sec. 2)
    between layers: LockedDropout (p = dropout_h); on the top layer's output: LockedDropout (p = dropout)
    P(w_{t+1} | ...) = softmax(E h^L_t + b)   the output matrix is the embedding (weight tying, sec. 4.5), so the
                                              top layer is emb_dim wide and the others ``hidden`` wide

The loss adds activation regularisation (AR, L2 on the top layer's dropped outputs, weight ``alpha``) and temporal
activation regularisation (TAR, L2 on the change of its outputs from one step to the next, before dropout, weight
``beta``; sec. 4.6):

    loss = CE + alpha * mean(m * h^L)^2 + beta * mean(h^L_{t+1} - h^L_t)^2

**DropConnect, written functionally.** The authors' ``WeightDrop`` wrapper deleted the LSTM's ``weight_hh_l0``
parameter and re-assigned a dropped copy before each call; current PyTorch keeps the weights of ``nn.LSTM`` in a
flat buffer that such assignments no longer reach. Here each layer's forward runs through
``torch.func.functional_call`` with ``weight_hh_l0`` replaced by ``F.dropout(W_hh)`` for that call: the parameter
is never touched, its gradient arrives through the mask, and the fused LSTM kernel still does the work.

Variable-length BPTT (sec. 4.1) lives in :class:`shoulders.text.stream.BPTTBatches` (``variable=True``).
The state carried between windows (:class:`shoulders.train.CarryState`) is a flat tuple ``(h_1, c_1, ..., h_L,
c_L)``, each ``(1, B, H_l)``, since the layers differ in width.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

from ..config import ConfigError, check_snapshots
from .ids import check_ids, check_labels
from .rnnlm import RecurrentLMConfig, SoftmaxOutput, softmax_output

__all__ = ["AWDLSTM", "AWDLSTMConfig", "AWDState", "embedding_dropout", "locked_dropout"]

AWDState = tuple[torch.Tensor, ...]  # (h_1, c_1, ..., h_L, c_L), each (1, B, H_l)


def embedding_dropout(weight: torch.Tensor, ids: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Embedding lookup with whole words dropped (Merity et al. 2018, sec. 4.3; Gal & Ghahramani 2016): each row
    of ``weight`` (V, d) is zeroed with probability ``p`` and the kept rows scaled by 1 / (1 - p), one mask per
    call, so every occurrence of a word in the batch is dropped or kept together. ids (B, T) -> (B, T, d)."""
    if not training or p == 0.0:
        return F.embedding(ids, weight)
    keep = torch.empty(weight.shape[0], 1, device=weight.device, dtype=weight.dtype).bernoulli_(1 - p) / (1 - p)
    return F.embedding(ids, weight * keep)


def locked_dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Variational ("locked") dropout (Gal & Ghahramani 2016; Merity et al. 2018, sec. 4.2): one mask per sequence
    and feature, the same at every time step. x (B, T, D) -> (B, T, D)."""
    if not training or p == 0.0:
        return x
    mask = torch.empty(x.shape[0], 1, x.shape[2], device=x.device, dtype=x.dtype).bernoulli_(1 - p) / (1 - p)
    return x * mask  # (B, 1, D) broadcast over T


@dataclasses.dataclass
class AWDLSTMConfig(RecurrentLMConfig):
    """The AWD-LSTM LM and how to train it on WikiText-2 (truncated BPTT over a contiguous stream).

    ``hidden`` is the width of every layer but the top one, which is ``emb_dim`` wide so the output can share the
    embedding. The paper's WikiText-2 model: 400 / 1,150 / 3 layers, dropout_e 0.1, dropout_i 0.65, dropout_h
    0.2, dropout 0.4, wdrop 0.5, alpha 2, beta 1, BPTT 70, batch 80 (Merity et al. 2018, sec. 5; their code's
    WikiText-2 command), trained with NT-ASGD for 750 epochs: validation perplexity 68.6 before fine-tuning.
    """

    emb_dim: int = 400
    hidden: int = 1_150
    layers: int = 3
    dropout: float = 0.4      # locked dropout on the top layer's output
    dropout_e: float = 0.1    # embedding (whole words)
    dropout_i: float = 0.65   # locked dropout on the embeddings
    dropout_h: float = 0.2    # locked dropout between LSTM layers
    wdrop: float = 0.5        # DropConnect on each layer's hidden-to-hidden matrix
    alpha: float = 2.0        # AR
    beta: float = 1.0         # TAR
    tie_weights: bool = True
    batch_size: int = 80
    bptt: int = 70
    variable_bptt: bool = True
    weight_decay: float = 1.2e-6
    snapshots: tuple[int, ...] = ()  # steps at which pre-training keeps a copy of the weights (the giant stores them)

    presets: ClassVar = {
        # smoke: a tenth of WikiText-2, a 10k-word adaptive softmax, one minute on a CPU
        "smoke": dict(emb_dim=64, hidden=128, layers=3, tie_weights=False, adaptive_cutoffs=(1_000, 4_000),
                      dropout=0.1, dropout_e=0.0, dropout_i=0.1, dropout_h=0.1, wdrop=0.2, batch_size=32, bptt=32,
                      steps=200, warmup=10, lr=1e-2, clip=1.0, max_vocab=10_000, train_tokens=200_000,
                      eval_tokens=20_000, snapshots=(100,)),
        # cpu: about a third of the paper's widths with the adaptive softmax of chapter 3 (so untied: the adaptive
        # softmax has no |V| x d matrix to share); AdamW with warm-up and decay instead of NT-ASGD's 750 epochs.
        # Measured (two threads, 2-core CPU): 12,000 steps (9.2 passes over WikiText-2) in 46.3 minutes (about 5 of
        # them with small test jobs beside it; 53.0 alone on 2026-12-04, to the same weights: the machine's speed
        # varies), validation perplexity 117.4 with the state carried (chapter 3's LSTM at cpu: 185.8); every 2,000
        # steps 200.4 / 153.9 / 136.6 / 126.7 / 122.1 / 117.4. A 6,000-step run (19.7 minutes, 138.1) gave
        # chapter 11 smaller gains, so the giant takes most of its hour; the snapshots feed chapter 11's
        # pre-training curve
        "cpu": dict(emb_dim=200, hidden=400, layers=3, tie_weights=False, adaptive_cutoffs=(2_000, 10_000),
                    dropout=0.3, dropout_e=0.05, dropout_i=0.3, dropout_h=0.15, wdrop=0.3, batch_size=32, bptt=50,
                    steps=12_000, warmup=600, lr=3e-3, clip=0.25, weight_decay=0.01, snapshots=(1_500, 4_000)),
        # full: the paper's WikiText-2 model (tied, full softmax); AdamW for NT-ASGD (see the chapter)
        "full": dict(steps=40_000, warmup=1_000, lr=2e-3, clip=0.25),
    }

    def validate(self) -> None:
        super().validate()  # sizes, dropout, cutoffs, tying (against output_dim(): the top layer's emb_dim)
        if self.layers < 2:
            raise ConfigError(f"AWD-LSTM has at least 2 layers (the top one is emb_dim wide), got {self.layers}")
        for name in ("dropout_e", "dropout_i", "dropout_h", "wdrop"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        if self.alpha < 0 or self.beta < 0:
            raise ConfigError(f"alpha and beta (AR, TAR) must be >= 0, got {self.alpha}, {self.beta}")
        check_snapshots(self.snapshots, self.steps)

    def output_dim(self) -> int:
        """The top layer is ``emb_dim`` wide, so the softmax can share the embedding whatever ``hidden`` is."""
        return self.emb_dim

    def batches(self, stream: Any, train: bool = True) -> Any:
        """The ``(x, y)`` BPTT windows of an :class:`~shoulders.text.LMStream`: of variable length around
        ``bptt`` for training when ``variable_bptt`` (sec. 4.1), of exactly ``bptt`` for evaluation."""
        return stream.bptt_batches(bptt=self.bptt, batch_size=self.batch_size, variable=train and self.variable_bptt)

    def layer_sizes(self) -> list[int]:
        """Input and output width of every LSTM layer: ``[emb_dim, hidden, ..., hidden, emb_dim]``."""
        return [self.emb_dim] + [self.hidden] * (self.layers - 1) + [self.output_dim()]

    def build(self) -> "AWDLSTM":
        return AWDLSTM(self)


class AWDLSTM(SoftmaxOutput, nn.Module):
    """Embedding -> ``layers`` LSTMs with DropConnect and locked dropout -> softmax (tied to the embedding)."""

    def __init__(self, cfg: AWDLSTMConfig):
        super().__init__()
        self.cfg = cfg
        sizes = cfg.layer_sizes()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.emb_dim)
        self.rnns = nn.ModuleList(nn.LSTM(sizes[i], sizes[i + 1], batch_first=True) for i in range(cfg.layers))
        self.out = softmax_output(cfg.output_dim(), cfg.vocab_size, cfg.adaptive_cutoffs, cfg.div_value,
                                  tie_to=self.embed if cfg.tie_weights else None)  # tied: Inan et al. 2017
        nn.init.uniform_(self.embed.weight, -0.1, 0.1)

    def layer_groups(self) -> list[nn.Module]:
        """ULMFiT's layer groups, bottom first: the embedding, then each LSTM layer (the tied output layer is the
        embedding; an untied softmax goes with the top layer)."""
        groups: list[nn.Module] = [self.embed, *self.rnns]
        if not self.cfg.tie_weights:
            groups[-1] = nn.ModuleList([self.rnns[-1], self.out])
        return groups

    def _run_layer(self, i: int, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None
                   ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        rnn = self.rnns[i]
        if not (self.training and self.cfg.wdrop > 0):
            return rnn(x, state)
        dropped = F.dropout(rnn.weight_hh_l0, p=self.cfg.wdrop, training=True)  # DropConnect: one mask per call
        return functional_call(rnn, {"weight_hh_l0": dropped}, (x, state))

    def encode(self, x: torch.Tensor, state: AWDState | None = None) -> dict[str, Any]:
        """Run the network: x (B, T) ids -> ``{"raw": [(B, T, H_l)] per layer (before dropout), "dropped": the
        same after dropout, "state": the final AWDState}``; ``dropped[-1]`` is what the softmax reads."""
        check_ids(x, "x", self.cfg.vocab_size)  # (B, T)
        c = self.cfg
        if state is not None and len(state) != 2 * c.layers:
            raise ValueError(f"state must be (h_1, c_1, ..., h_L, c_L) for L = {c.layers} layers, got {len(state)} "
                             "tensors")
        h = locked_dropout(embedding_dropout(self.embed.weight, x, c.dropout_e, self.training), c.dropout_i,
                           self.training)  # (B, T, emb_dim)
        raw, dropped, new = [], [], []
        for i in range(c.layers):
            layer_state = None if state is None else (state[2 * i], state[2 * i + 1])
            h, (hn, cn) = self._run_layer(i, h, layer_state)  # (B, T, H_i)
            raw.append(h)
            h = locked_dropout(h, c.dropout if i == c.layers - 1 else c.dropout_h, self.training)
            dropped.append(h)
            new += [hn, cn]
        return {"raw": raw, "dropped": dropped, "state": tuple(new)}

    def logits(self, x: torch.Tensor, state: AWDState | None = None) -> tuple[torch.Tensor, AWDState]:
        """Next-token logits (log-probabilities with the adaptive softmax): x (B, T) -> ((B, T, |V|), state)."""
        enc = self.encode(x, state)
        h = enc["dropped"][-1]  # (B, T, emb_dim)
        if self.adaptive:
            return self.out.log_prob(h.flatten(0, 1)).view(*h.shape[:2], -1), enc["state"]
        return self.out(h), enc["state"]

    def forward(self, x: torch.Tensor, y: torch.Tensor, state: AWDState | None = None,
                return_state: bool = False) -> dict[str, Any]:
        """The training loss: cross-entropy of predicting y from x (both (B, T)) plus AR and TAR in training mode.

        Returns ``{"loss", "lm_loss"`` (the cross-entropy alone, nats per token, what perplexity is made of)
        ``, "ar", "tar"`` (the two penalties as added, 0 in eval mode) ``}`` and, with ``return_state``, the final
        ``"state"`` (:class:`shoulders.train.CarryState`)."""
        enc = self.encode(x, state)
        h = enc["dropped"][-1]  # (B, T, emb_dim)
        check_labels(y, "y", self.cfg.vocab_size)
        if self.adaptive:
            lm_loss = self.out(h.flatten(0, 1), y.flatten()).loss
        else:
            lm_loss = F.cross_entropy(self.out(h).flatten(0, 1), y.flatten())
        zero = lm_loss.new_zeros(())
        ar = self.cfg.alpha * h.pow(2).mean() if self.training and self.cfg.alpha else zero
        top = enc["raw"][-1]  # (B, T, emb_dim), before dropout
        tar = (self.cfg.beta * (top[:, 1:] - top[:, :-1]).pow(2).mean()
               if self.training and self.cfg.beta and top.shape[1] > 1 else zero)
        out = {"loss": lm_loss + ar + tar, "lm_loss": lm_loss.detach(), "ar": ar.detach(), "tar": tar.detach()}
        if return_state:
            out["state"] = enc["state"]
        return out

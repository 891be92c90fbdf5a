"""ELMo: the bidirectional language model of Peters et al. (2018, "Deep contextualized word representations") and
the task-specific mix of its layers.

**The biLM** (sec. 3.1). A forward LM reads a sentence left to right and models P(t_k | t_1..t_{k-1}); a backward
LM reads it right to left and models P(t_k | t_{k+1}..t_N). Both share the token encoder (Theta_x) and the
softmax (Theta_s) but keep separate LSTMs, and are trained together to maximise the joint log-likelihood

    sum_k  log P(t_k | t_1..t_{k-1}; Theta_x, ->Theta_LSTM, Theta_s)
         + log P(t_k | t_{k+1}..t_N; Theta_x, <-Theta_LSTM, Theta_s)

The network is the CNN-BIG-LSTM of Jozefowicz et al. (2016, "Exploring the limits of language modeling") halved:

    x_k      = CharCNN(chars of t_k)                       token encoder (Kim et al. 2016): char embeddings,
                                                           convolutions of several widths, max over time, ReLU,
                                                           2 highway layers, a linear projection to proj_dim
    ->h_k,j  = LSTMP_j(->h_k,j-1),   j = 1..L              forward stack, 4096 cells projected to 512 (Sak et al.
    <-h_k,j  = LSTMP_j(<-h_k,j-1)                          2014), L = 2, a residual connection from layer 1 to 2
    P(t_{k+1} | ...) = softmax(W ->h_k,L + b),   P(t_{k-1} | ...) = softmax(W <-h_k,L + b)    one W for both

**ELMo** (sec. 3.2, eq. 1 there). For token k the biLM gives 2L + 1 vectors, R_k = {x_k, [->h_k,j ; <-h_k,j]},
written h_k,0 = [x_k ; x_k] so that every layer has the same width 2 * proj_dim (:meth:`BiLM.layers`). A task
collapses them with softmax-normalised weights s and a scale gamma that it learns (:class:`ScalarMix`):

    ELMo_k = gamma * sum_{j=0..L} s_j h_k,j

**Inputs.** Characters ``(B, T, max_chars)`` from :mod:`shoulders.text.word_chars` (``table = char_table(vocab)``,
then ``table[ids]``); a position whose row is all zeros is padding, and padding must sit at the end of a row.
The backward LSTMs read each row reversed *within its length* (:func:`reverse_padded`), so padding never comes
before a word in either direction. The targets of one window of T words ``w_1..w_T`` are its neighbours in the
text: ``targets_fwd[t] = w_{t+1}`` and ``targets_bwd[t] = w_{t-1}``, so a caller slices T + 2 ids of the
stream and :func:`bilm_targets` cuts them; -100 (or a padded position) means "not predicted". Every window
starts from zero states (the paper's bilm-tf carried the states across batches; here each window is on its own,
so the first words of a forward window and the last of a backward one have little context).

**The softmax.** The authors' bilm-tf trained on the 800k-word 1B Word Benchmark with a sampled softmax (8,192
negative samples per batch; the CNN softmax of Jozefowicz et al. is the other way). On WikiText-2's 33,278 words
a full softmax costs 33,278 x proj_dim multiply-adds per token and direction -- on a CPU more than the rest of a
small biLM -- so ``adaptive_cutoffs`` switches to the adaptive softmax of Grave et al. (2017)
(``nn.AdaptiveLogSoftmaxWithLoss``, see :mod:`shoulders.models.rnnlm`): exact and normalised, cheaper, and it needs
a frequency-ordered vocabulary (as :meth:`shoulders.text.Vocab.build` orders it).

Left out: bilm-tf's cell and projection clipping (|c| <= 3, |h| <= 3; ``nn.LSTM`` has no hook for them) and
its L2 penalty on s (weight decay on :class:`ScalarMix` does that job).
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Any, ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError
from ..text.word_chars import BOW, EOW, N_CHARS, NO_WORD, PAD_CHAR
from .ids import check_ids, check_labels
from .rnnlm import SoftmaxOutput, softmax_output

__all__ = ["IGNORE", "BiLM", "CharCNN", "ELMoConfig", "Highway", "LSTMStack", "ScalarMix", "bilm_targets",
           "reverse_padded", "word_mask"]

IGNORE = -100  # a target that is not predicted (F.cross_entropy's ignore_index)
GATE_BIAS = -2.0  # highway transform gates start mostly closed: "carry" (Srivastava et al. 2015 use -1 to -3)


def bilm_targets(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Cut T + 2 consecutive word ids per row into the biLM's input and targets: ids (B, T+2) ->
    ``(words (B, T), targets_fwd (B, T), targets_bwd (B, T))`` with ``words = ids[:, 1:-1]``, the forward targets
    the next words ``ids[:, 2:]`` and the backward targets the previous words ``ids[:, :-2]``."""
    if ids.dim() != 2 or ids.shape[1] < 3:
        raise ValueError(f"ids must be (B, T + 2) with T >= 1, got shape {tuple(ids.shape)}")
    return ids[:, 1:-1], ids[:, 2:], ids[:, :-2]


def word_mask(chars: torch.Tensor) -> torch.Tensor:
    """``True`` where a position holds a word: chars (B, T, C) -> (B, T); a padded position is an all-zero row."""
    return (chars != NO_WORD).any(-1)


@dataclasses.dataclass
class ELMoConfig(Config):
    """The biLM of ELMo (token encoder, LSTM stacks, shared softmax) and how to train it on a token stream."""

    vocab_size: int = 33_278  # the softmax's words (WikiText-2's vocabulary); the input side has no vocabulary
    max_chars: int = 50  # characters per word, BOW and EOW included (the paper's 50)
    char_dim: int = 16  # character embedding size
    filters: tuple[tuple[int, int], ...] = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024))
    n_highway: int = 2
    proj_dim: int = 512  # token vectors x_k and the LSTMs' projected outputs
    lstm_dim: int = 4096  # LSTM cells per layer and direction
    n_layers: int = 2  # L, per direction
    dropout: float = 0.1
    adaptive_cutoffs: tuple[int, ...] | None = None  # e.g. (2000, 10000): adaptive softmax (Grave et al. 2017)
    div_value: float = 4.0
    batch_size: int = 64
    bptt: int = 20  # T, words per training window (the paper unrolled 20 steps)
    steps: int = 20_000
    eval_every: int = 1_000  # validation perplexity (forward direction) every this many steps
    warmup: int = 500
    lr: float = 1e-3
    weight_decay: float = 0.01
    clip: float | None = 1.0
    max_vocab: int | None = None  # keep only the N most frequent words in the softmax (smoke scale)
    train_tokens: int | None = None  # use only the first N training tokens (smoke scale)
    eval_tokens: int | None = None  # evaluate on the first N validation tokens

    page_presets: ClassVar = {
        # chapter 10's checks: must the forward LM match chapter 3's LSTM (from the ledger), and must the biLM's top
        # layer tell the senses of "play" apart better than the same network untrained? (At smoke the biLM has had
        # 200 steps on a tenth of WikiText-2: not asserted.)
        "smoke": dict(beats_lstm=False, senses=False), "cpu": dict(beats_lstm=True, senses=True),
        "full": dict(beats_lstm=True, senses=True)}
    presets: ClassVar = {
        # smoke: seconds per few hundred steps on a CPU; a tenth of the text and a 10k-word adaptive softmax
        "smoke": dict(vocab_size=10_000, max_chars=16, char_dim=8, filters=((1, 16), (2, 16), (3, 32)), n_highway=1,
                      proj_dim=32, lstm_dim=64, n_layers=2, dropout=0.0, adaptive_cutoffs=(1_000, 4_000),
                      batch_size=16, bptt=16, steps=200, warmup=20, lr=1e-2, max_vocab=10_000,
                      train_tokens=200_000, eval_tokens=20_000),
        # cpu: 0.19 s a step of 32 x 20 words on 2 idle cores (measured), so 12,000 steps (7.7M words, ~3.7 passes
        # over WikiText-2) take about 40 minutes once. 20 characters cover all but the longest words (the rest are
        # cut). Three tail clusters with div_value 2 (tails of 64, 32, 16 dimensions): measured 1.6x cheaper than
        # (2000, 10000) with div_value 4, and 15x cheaper than the full softmax, per step on one core
        "cpu": dict(max_chars=20, char_dim=16, filters=((1, 32), (2, 32), (3, 64), (4, 128), (5, 128)), n_highway=2,
                    proj_dim=128, lstm_dim=512, n_layers=2, dropout=0.1, adaptive_cutoffs=(1_000, 5_000, 15_000),
                    div_value=2.0, batch_size=32, bptt=20, steps=12_000, eval_every=2_000, warmup=500, lr=2e-3),
        # the paper's shape (sec. 3.4): 2048 filters, 2 highway layers, 512 projections,
        # 2 x 4096-cell LSTMs per direction, dropout 0.1; a full softmax on a GPU over WikiText-2's words
        "full": dict(),
    }

    def validate(self) -> None:
        self.filters = tuple(tuple(f) for f in self.filters)  # a config read back from JSON has lists
        if self.adaptive_cutoffs is not None:
            self.adaptive_cutoffs = tuple(self.adaptive_cutoffs)
        if isinstance(self.max_chars, bool) or not isinstance(self.max_chars, int) or self.max_chars < 3:
            raise ConfigError(f"max_chars must be an int >= 3 (BOW, one byte, EOW), got {self.max_chars!r}")
        if not self.filters or any(len(f) != 2 or min(f) < 1 for f in self.filters):
            raise ConfigError(f"filters must be a non-empty tuple of (width, n_filters) pairs of positive ints, "
                              f"got {self.filters}")
        wide = [w for w, _ in self.filters if w > self.max_chars]
        if wide:
            raise ConfigError(f"filters: widths {wide} are wider than max_chars={self.max_chars}")
        for name in ("vocab_size", "char_dim", "proj_dim", "lstm_dim", "n_layers", "batch_size", "bptt", "steps",
                     "eval_every"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        if self.proj_dim >= self.lstm_dim:
            raise ConfigError(f"proj_dim ({self.proj_dim}) must be smaller than lstm_dim ({self.lstm_dim}): each LSTM "
                              "layer projects its cells down to proj_dim")
        if self.n_highway < 0:
            raise ConfigError(f"n_highway must be >= 0, got {self.n_highway}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.adaptive_cutoffs is not None:
            cuts = list(self.adaptive_cutoffs)
            if not cuts or cuts != sorted(set(cuts)) or cuts[0] < 1 or cuts[-1] >= self.vocab_size:
                raise ConfigError(f"adaptive_cutoffs must increase strictly within (0, vocab_size={self.vocab_size}),"
                                  f" got {self.adaptive_cutoffs}")
            if self.div_value < 1 or self.proj_dim // self.div_value ** len(cuts) < 1:
                raise ConfigError(f"div_value={self.div_value} leaves the last of {len(cuts)} tail clusters of the "
                                  f"adaptive softmax proj_dim // div_value^{len(cuts)} = 0 dimensions (proj_dim="
                                  f"{self.proj_dim}): lower div_value (>= 1) or use fewer adaptive_cutoffs")
        if self.warmup < 0 or self.lr <= 0:
            raise ConfigError(f"need warmup >= 0 and lr > 0, got warmup={self.warmup}, lr={self.lr}")

    @property
    def n_filters(self) -> int:
        """Width of the max-pooled convolution features: the sum of the filter counts (2048 in the paper)."""
        return sum(n for _, n in self.filters)

    @property
    def output_dim(self) -> int:
        """Width of every ELMo layer h_k,j: 2 * proj_dim (1024 in the paper)."""
        return 2 * self.proj_dim

    def build(self) -> "BiLM":
        return BiLM(self)

    def _batch(self, batch_size: int, length: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(self.vocab_size, (batch_size, length + 2), generator=g)
        _, fwd, bwd = bilm_targets(ids)
        return _random_chars(batch_size, length, self.max_chars, g), fwd, bwd

    def example_batch(self, batch_size: int = 2) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A tiny random ``(chars (B, T, C), targets_fwd (B, T), targets_bwd (B, T))`` batch, for preset checks."""
        return self._batch(batch_size, min(self.bptt, 8))

    def step_batch(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A random batch with the exact shapes of one training step of this preset: ``batch_size`` windows of
        ``bptt`` words of ``max_chars`` characters, targets below ``vocab_size``."""
        return self._batch(self.batch_size, self.bptt)


def _random_chars(batch_size: int, length: int, max_chars: int, generator: torch.Generator) -> torch.Tensor:
    """Random words of 1..10 random bytes, laid out as :func:`shoulders.text.char_ids` does: (B, T, C)."""
    shape = (batch_size, length, max_chars)
    body = torch.randint(1, 257, shape, generator=generator)  # bytes + 1
    n = torch.randint(1, min(10, max_chars - 2) + 1, (batch_size, length, 1), generator=generator)
    pos = torch.arange(max_chars)
    chars = torch.where(pos <= n, body, torch.full_like(body, PAD_CHAR))
    chars[..., 0] = BOW
    return chars.scatter(-1, n + 1, EOW)


class Highway(nn.Module):
    """``n_layers`` highway layers (Srivastava et al. 2015, eq. 3), with ELMo's ReLU as the transform g:

        y = T(x) * g(W_H x + b_H) + (1 - T(x)) * x,      T(x) = sigmoid(W_T x + b_T)

    b_T starts at :data:`GATE_BIAS` (negative), so that each layer starts close to the identity ("carry")."""

    def __init__(self, dim: int, n_layers: int):
        super().__init__()
        self.H = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n_layers))  # the transform W_H, b_H
        self.T = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n_layers))  # the gate W_T, b_T
        for gate in self.T:
            nn.init.constant_(gate.bias, GATE_BIAS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (..., D) -> (..., D)
        for H, T in zip(self.H, self.T):
            t = torch.sigmoid(T(x))
            x = t * F.relu(H(x)) + (1 - t) * x
        return x


class CharCNN(nn.Module):
    """The character-level token encoder (Kim et al. 2016; Jozefowicz et al. 2016; ELMo sec. 3.4):

        e        = Q[chars]                                 (N, C, char_dim)  character embeddings
        f_w      = max_i ReLU(conv_w(e))_i                  (N, n_w)          per filter width w: max over time
        y        = Highway([f_1; ...; f_W])                 (N, sum n_w)
        x        = P y                                      (N, proj_dim)

    Input chars (B, T, C) -> token vectors (B, T, proj_dim), zero at padded positions (all-zero rows)."""

    def __init__(self, cfg: ELMoConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(N_CHARS, cfg.char_dim, padding_idx=NO_WORD)  # Q
        self.convs = nn.ModuleList(nn.Conv1d(cfg.char_dim, n, w) for w, n in cfg.filters)
        self.highway = Highway(cfg.n_filters, cfg.n_highway)
        self.proj = nn.Linear(cfg.n_filters, cfg.proj_dim)  # P

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        check_ids(chars, "chars", N_CHARS, dims=3, width=self.cfg.max_chars)  # (B, T, C)
        B, T, C = chars.shape
        e = self.embed(chars.reshape(B * T, C)).transpose(1, 2)  # (N, char_dim, C): Conv1d wants channels first
        f = torch.cat([conv(e).amax(-1) for conv in self.convs], -1)  # (N, sum n_w): max over positions
        x = self.proj(self.highway(F.relu(f)))  # (N, proj_dim)
        return x.view(B, T, -1) * word_mask(chars).unsqueeze(-1).to(x.dtype)  # (B, T, proj_dim), 0 at padding


def reverse_padded(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each row's first ``lengths[b]`` positions and leave its padding in place: x (B, T, ...) ->
    (B, T, ...). Applying it twice gives x back."""
    T = x.shape[1]
    t = torch.arange(T, device=x.device).unsqueeze(0)  # (1, T)
    n = lengths.to(x.device).unsqueeze(1)  # (B, 1)
    index = torch.where(t < n, n - 1 - t, t)  # (B, T)
    return x.gather(1, index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x))


class LSTMStack(nn.Module):
    """One direction of the biLM: L LSTMs with projection (LSTMP: ``lstm_dim`` cells, ``proj_dim`` outputs),
    dropout on each layer's input, and a residual connection around every layer after the first (ELMo adds one
    from the first layer's output to the second's): h_j = LSTMP_j(drop(h_{j-1})) + h_{j-1} for j >= 2."""

    def __init__(self, cfg: ELMoConfig):
        super().__init__()
        self.lstms = nn.ModuleList(nn.LSTM(cfg.proj_dim, cfg.lstm_dim, proj_size=cfg.proj_dim, batch_first=True)
                                   for _ in range(cfg.n_layers))
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        """x (B, T, P) in reading order -> the L layers' outputs, each (B, T, P)."""
        outputs = []
        for j, lstm in enumerate(self.lstms):
            with warnings.catch_warnings():  # CPU: "LSTM with projections is not supported with oneDNN" (harmless)
                warnings.filterwarnings("ignore", message="LSTM with projections")
                h, _ = lstm(self.drop(x))  # (B, T, P)
            x = h + x if j > 0 else h  # residual from layer 2 on
            outputs.append(x)
        return outputs


class BiLM(SoftmaxOutput, nn.Module):
    """The biLM of ELMo: a shared :class:`CharCNN`, a forward and a backward :class:`LSTMStack` (separate
    parameters), one softmax over the vocabulary for both directions (Peters et al. 2018, sec. 3.1)."""

    def __init__(self, cfg: ELMoConfig):
        super().__init__()
        self.cfg = cfg
        self.token_encoder = CharCNN(cfg)  # Theta_x
        self.forward_lm = LSTMStack(cfg)  # ->Theta_LSTM
        self.backward_lm = LSTMStack(cfg)  # <-Theta_LSTM
        self.drop = nn.Dropout(cfg.dropout)
        self.out = softmax_output(cfg.proj_dim, cfg.vocab_size, cfg.adaptive_cutoffs, cfg.div_value)  # Theta_s

    def _mask(self, chars: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """The word mask (B, T) and the row lengths (B,); padding must come after every word of its row."""
        mask = word_mask(chars) if mask is None else mask.to(device=chars.device, dtype=torch.bool)
        if mask.shape != chars.shape[:2]:
            raise ValueError(f"mask must be (B, T) = {tuple(chars.shape[:2])}, got {tuple(mask.shape)}")
        lengths = mask.sum(1)  # (B,)
        prefix = torch.arange(mask.shape[1], device=mask.device) < lengths.unsqueeze(1)
        if not torch.equal(mask, prefix):
            raise ValueError("padding must come at the end of each row (right padding): the backward LM reverses "
                             "each row within its length")
        return mask, lengths

    def encode(self, chars: torch.Tensor, mask: torch.Tensor | None = None, directions: str = "both"
               ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
        """Token vectors x (B, T, P), the forward layers ->h_j and the backward layers <-h_j (L tensors (B, T, P)
        each, in text order) and the word mask (B, T). ->h at t has read words 1..t; <-h at t words t..T.
        ``directions="forward"`` (or ``"backward"``) runs only that LSTM stack and leaves the other list empty."""
        if directions not in ("both", "forward", "backward"):
            raise ValueError(f"directions must be 'both', 'forward' or 'backward', got {directions!r}")
        check_ids(chars, "chars", N_CHARS, dims=3, width=self.cfg.max_chars)  # (B, T, C)
        mask, lengths = self._mask(chars, mask)
        x = self.token_encoder(chars)  # (B, T, P)
        x = x * mask.unsqueeze(-1).to(x.dtype)  # a mask given by the caller may hide more than the padding
        forward = self.forward_lm(x) if directions != "backward" else []
        backward = ([reverse_padded(h, lengths) for h in self.backward_lm(reverse_padded(x, lengths))]
                    if directions != "forward" else [])
        return x, forward, backward, mask

    def layers(self, chars: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """ELMo's representations h_k,j of every token (Peters et al. 2018, sec. 3.2): chars (B, T, C) ->
        (L + 1, B, T, 2P). Layer 0 is [x_k ; x_k], layer j is [->h_k,j ; <-h_k,j]; zero at padded positions."""
        x, forward, backward, mask = self.encode(chars, mask)
        stacked = [torch.cat([x, x], -1)] + [torch.cat([f, b], -1) for f, b in zip(forward, backward)]
        m = mask.unsqueeze(-1).to(x.dtype)  # (B, T, 1)
        return torch.stack([h * m for h in stacked])  # (L + 1, B, T, 2P)

    def _token_nll(self, h: torch.Tensor, targets: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """-log P(target) for the kept positions: h (B, T, P), targets (B, T), keep (B, T) -> (n_kept,)."""
        h, y = h[keep], targets[keep]  # (n, P), (n,)
        if self.adaptive:  # scores only the targets' clusters: no (n, |V|) tensor
            return -self.out(h, y).output
        return F.cross_entropy(self.out(h), y, reduction="none")

    def _targets(self, targets: torch.Tensor, name: str, mask: torch.Tensor) -> torch.Tensor:
        if targets.shape != mask.shape:
            raise ValueError(f"{name} must be (B, T) = {tuple(mask.shape)} like the words, got {tuple(targets.shape)}")
        check_labels(targets, name, self.cfg.vocab_size, ignore_index=IGNORE)
        return mask & (targets != IGNORE)

    def forward(self, chars: torch.Tensor, targets_fwd: torch.Tensor, targets_bwd: torch.Tensor) -> dict[str, Any]:
        """The biLM's training loss, the joint log-likelihood of sec. 3.1 negated and averaged per token.

        chars (B, T, C); targets_fwd[b, t] is the word after position t, targets_bwd[b, t] the word before it
        (:func:`bilm_targets`), -100 where there is none to predict.

        Returns ``{"loss": (fwd_loss + bwd_loss) / 2, "fwd_loss", "bwd_loss"`` (mean nats per predicted token of
        each direction, detached) ``, "tokens"`` (words in the batch)} -- what :func:`shoulders.train.fit` logs.
        """
        _, forward, backward, mask = self.encode(chars)
        keep_f = self._targets(targets_fwd, "targets_fwd", mask)
        keep_b = self._targets(targets_bwd, "targets_bwd", mask)
        if not keep_f.any() or not keep_b.any():
            raise ValueError("nothing to predict: every target is padding or -100 in one direction")
        fwd = self._token_nll(self.drop(forward[-1]), targets_fwd, keep_f).mean()
        bwd = self._token_nll(self.drop(backward[-1]), targets_bwd, keep_b).mean()
        return {"loss": (fwd + bwd) / 2, "fwd_loss": fwd.detach(), "bwd_loss": bwd.detach(),
                "tokens": int(mask.sum())}

    def token_nll(self, chars: torch.Tensor, targets: torch.Tensor, direction: str = "forward") -> torch.Tensor:
        """-log P(targets[b, t] | context) of one direction, per position: (B, T), 0 where a target is -100 or
        the position is padding. ``direction="forward"``: the next words; ``"backward"``: the previous words.
        Its sum over a split, divided by the number of predicted tokens, gives that direction's perplexity."""
        if direction not in ("forward", "backward"):
            raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")
        _, forward, backward, mask = self.encode(chars, directions=direction)  # only the stack that is scored
        keep = self._targets(targets, "targets", mask)
        h = forward[-1] if direction == "forward" else backward[-1]
        nll = torch.zeros(mask.shape, dtype=torch.float32, device=h.device)
        nll[keep] = self._token_nll(h, targets, keep).float()
        return nll

    def extra_repr(self) -> str:
        c = self.cfg
        return (f"filters={c.n_filters}, proj_dim={c.proj_dim}, lstm_dim={c.lstm_dim}, n_layers={c.n_layers}, "
                f"softmax={'adaptive ' + str(c.adaptive_cutoffs) if c.adaptive_cutoffs else 'full'}")


class ScalarMix(nn.Module):
    """ELMo's task-specific mix of the biLM layers (Peters et al. 2018, sec. 3.2, eq. 1):

        ELMo_k = gamma * sum_{j=0..L} softmax(s)_j h_k,j

    The paper's s^task are the softmax-normalised weights; the parameter ``s`` holds them before the softmax and
    starts at 0 (equal weights), gamma at 1. ``n_layers`` is the number of representations mixed (L + 1).

    With ``do_layer_norm`` each layer is normalised first ("we found it beneficial to apply layer normalization to
    each biLM layer before weighting"), the way the authors' bilm-tf does it: one mean and variance per layer over
    all unmasked positions and features of the batch. Input layers (L+1, B, T, D) and an optional mask (B, T);
    output (B, T, D), zero where masked."""

    def __init__(self, n_layers: int, do_layer_norm: bool = False):
        super().__init__()
        if n_layers < 1:
            raise ValueError(f"n_layers must be >= 1 (the number of layers mixed, L + 1), got {n_layers}")
        self.n_layers, self.do_layer_norm = n_layers, do_layer_norm
        self.s = nn.Parameter(torch.zeros(n_layers))  # (L+1,) before the softmax
        self.gamma = nn.Parameter(torch.ones(()))

    def forward(self, layers: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if layers.dim() != 4 or layers.shape[0] != self.n_layers:
            raise ValueError(f"layers must be ({self.n_layers}, B, T, D), got shape {tuple(layers.shape)}")
        m = None if mask is None else mask.to(device=layers.device, dtype=layers.dtype).unsqueeze(-1)  # (B, T, 1)
        if self.do_layer_norm:
            layers = torch.stack([masked_layer_norm(h, m) for h in layers])
        w = torch.softmax(self.s, 0).to(layers.dtype)  # (L+1,)
        mixed = self.gamma * (w.view(-1, 1, 1, 1) * layers).sum(0)  # (B, T, D)
        return mixed if m is None else mixed * m

    def weights(self) -> tuple[torch.Tensor, float]:
        """The layer weights softmax(s) (a detached 1-D float tensor) and gamma, e.g. to plot them."""
        return torch.softmax(self.s.detach().float(), 0), float(self.gamma.detach())

    def extra_repr(self) -> str:
        return f"n_layers={self.n_layers}, do_layer_norm={self.do_layer_norm}"


def masked_layer_norm(h: torch.Tensor, m: torch.Tensor | None, eps: float = 1e-12) -> torch.Tensor:
    """(h - mean) / sqrt(var + eps) with one mean and variance over the unmasked positions and all features of
    h (B, T, D); m (B, T, 1) is 1 at words (None: everywhere). Padded positions are normalised too (and then
    masked by :class:`ScalarMix`)."""
    if m is None:
        m = torch.ones_like(h[..., :1])
    n = m.sum() * h.shape[-1]
    mean = (h * m).sum() / n
    var = (((h - mean) * m) ** 2).sum() / n
    return (h - mean) / torch.sqrt(var + eps)

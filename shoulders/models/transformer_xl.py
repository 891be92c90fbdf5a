"""Transformer-XL (Dai et al. 2019, "Transformer-XL: Attentive Language Models Beyond a Fixed-Length Context").

**Segment-level recurrence** (§3.2). A fixed-context LM cuts text into segments and forgets everything before
each. Transformer-XL keeps, for every layer n, the hidden states of the previous segment as a *memory* and lets
the current segment attend to it, without a gradient through it:

    h~_{τ+1}^{n-1} = [SG(h_τ^{n-1}) ∘ h_{τ+1}^{n-1}]                       (SG: stop-gradient, ∘: concatenation)
    q, k, v = h_{τ+1}^{n-1} W_q,  h~ W_k,  h~ W_v                          (queries only from the new segment)

so the longest dependency grows linearly with depth (N layers x memory length), and evaluation reuses the
memory instead of recomputing each context (:func:`stream_nll`).

**Relative positions** (§3.3). Memory breaks absolute positions (two segments would share them); the score
between query i and key j depends only on the distance i - j, through a fixed sinusoid R_{i-j}:

    A_ij = q_i^T k_j + q_i^T W_{k,R} R_{i-j} + u^T k_j + v^T W_{k,R} R_{i-j}
         =   (a) content  (b) content-dependent position  (c) global content bias  (d) global position bias

written as (q_i + u)^T k_j + (q_i + v)^T W_{k,R} R_{i-j}. Computing (q_i + v)^T W_{k,R} R_{i-j} for every (i, j)
directly costs O(L_q L_k) gathers; the paper's Appendix B computes it for every query against all L_q + L_k
distances at once (one matrix product) and then *shifts* row i left by L_q - i (:func:`rel_shift`).
:func:`rel_shift_naive` is the direct gather the tests compare it with.

The layer is post-LN with a position-wise feed-forward network, as the paper's (and XLNet's, which adds a segment
term and a second attention stream: :mod:`shoulders.models.xlnet`). The score scale 1/sqrt(d_head), the
parameter layout (query, key, value, output and position projections without biases; u, v per head) and the
sinusoid for distances L_k ... -L_q + 1 follow the released code, so Hugging Face's XLNet weights load into
:class:`RelativeLayer` (:mod:`shoulders.models.xlnet_hf`).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError
from .ids import check_ids, check_labels
from .linear_cross_entropy import linear_cross_entropy
from .transformer_blocks import ACTIVATIONS

__all__ = ["RelativeAttention", "RelativeLayer", "TransformerXLConfig", "TransformerXLLM", "causal_memory_mask",
           "init_relative_weights", "rel_shift", "rel_shift_naive", "relative_encoding", "stream_nll",
           "update_memory"]


def relative_encoding(q_len: int, k_len: int, d_model: int, clamp_len: int = 0,
                      device: Any = None) -> torch.Tensor:
    """``(q_len + k_len, d_model)``: the sinusoid R of the distances ``k_len, k_len - 1, ..., -q_len + 1``
    (row p is distance ``k_len - p``), ``[sin | cos]`` halves as in the released code; ``clamp_len > 0`` caps
    |distance| (XLNet's ``clamp_len``)."""
    dist = torch.arange(k_len, -q_len, -1, device=device, dtype=torch.float32)  # (P,)
    if clamp_len > 0:
        dist = dist.clamp(-clamp_len, clamp_len)
    inv_freq = 1.0 / 10_000 ** (torch.arange(0, d_model, 2, device=device, dtype=torch.float32) / d_model)
    angle = dist[:, None] * inv_freq[None, :]  # (P, d/2)
    return torch.cat([angle.sin(), angle.cos()], dim=-1)  # (P, d)


def rel_shift(x: torch.Tensor, k_len: int) -> torch.Tensor:
    """Appendix B's shift: ``x`` ``(..., L_q, L_q + L_k)`` scores every query against every distance of
    :func:`relative_encoding`; returns ``(..., L_q, L_k)`` with ``out[..., i, j] = x[..., i, L_q - i + j]``
    (query i sits at position ``L_k - L_q + i``, so its distance to key j is ``L_k - (L_q - i + j)``).

    Viewing the ``(L_q, P)`` block as ``(P, L_q)``, dropping its first row and viewing the rest as
    ``(L_q, P - 1)`` moves row i left by ``L_q - i``: no gather, one copy."""
    *lead, q_len, p = x.shape
    x = x.reshape(*lead, p, q_len)[..., 1:, :]  # (..., P - 1, L_q)
    return x.reshape(*lead, q_len, p - 1)[..., :k_len]  # (..., L_q, L_k)


def rel_shift_naive(x: torch.Tensor, k_len: int) -> torch.Tensor:
    """The same as :func:`rel_shift` by an explicit gather of ``x[..., i, L_q - i + j]`` (the O(L_q L_k) index
    table the shift avoids building): the reference the tests compare with."""
    *lead, q_len, _ = x.shape
    i = torch.arange(q_len, device=x.device)[:, None]
    j = torch.arange(k_len, device=x.device)[None, :]
    index = (q_len - i + j).expand(*lead, q_len, k_len)  # (..., L_q, L_k)
    return x.gather(-1, index)


def causal_memory_mask(q_len: int, mem_len: int, device: Any = None) -> torch.Tensor:
    """``(q_len, mem_len + q_len)`` bool, True where query i may attend key j: the whole memory and the
    segment's tokens up to itself (j <= mem_len + i)."""
    i = torch.arange(q_len, device=device)[:, None]
    j = torch.arange(mem_len + q_len, device=device)[None, :]
    return j <= mem_len + i


def update_memory(memory: torch.Tensor | None, hidden: torch.Tensor, mem_len: int) -> torch.Tensor:
    """``(B, ≤ mem_len, d)``: the last ``mem_len`` states of ``[memory ∘ hidden]``, detached (SG in §3.2's
    equation); ``mem_len = 0``: none."""
    both = hidden if memory is None or memory.shape[1] == 0 else torch.cat([memory, hidden], dim=1)
    return both[:, max(0, both.shape[1] - max(0, mem_len)):].detach()


class RelativeAttention(nn.Module):
    """Multi-head attention with Transformer-XL's relative positions, followed by the residual sum and LayerNorm.

    ``u`` / ``v`` are the global content and position biases of §3.3 (Hugging Face: ``r_w_bias`` / ``r_r_bias``).
    With ``segments=True`` it adds XLNet's relative segment term (Yang et al. 2019, §2.5): a learned vector s_ij
    for "same segment" or "different segment", scored as (q_i + b)^T s_ij.
    """

    def __init__(self, d_model: int, n_heads: int, d_head: int, dropout: float = 0.1, eps: float = 1e-5,
                 segments: bool = False):
        super().__init__()
        self.n_heads, self.d_head, self.scale = n_heads, d_head, 1.0 / math.sqrt(d_head)
        inner = n_heads * d_head
        self.q, self.k, self.v = (nn.Linear(d_model, inner, bias=False) for _ in range(3))
        self.r = nn.Linear(d_model, inner, bias=False)  # W_{k,R}: the positions' own key projection
        self.o = nn.Linear(inner, d_model, bias=False)
        self.u = nn.Parameter(torch.zeros(n_heads, d_head))   # global content bias
        self.v_bias = nn.Parameter(torch.zeros(n_heads, d_head))  # global position bias (the paper's v)
        self.segments = segments
        if segments:
            self.s_bias = nn.Parameter(torch.zeros(n_heads, d_head))
            self.seg_embed = nn.Parameter(torch.zeros(2, n_heads, d_head))  # [same segment, different segment]
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.drop = nn.Dropout(dropout)

    def keys(self, context: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Keys and values of ``context`` ``(B, L_k, d)`` (memory and segment) and the position keys of ``r``
        ``(P, d)``: ``(B, L_k, H, dh)``, ``(B, L_k, H, dh)``, ``(P, H, dh)`` -- shared by XLNet's two streams."""
        B, L, _ = context.shape
        shape = (B, L, self.n_heads, self.d_head)
        return self.k(context).view(shape), self.v(context).view(shape), self.r(r).view(-1, self.n_heads, self.d_head)

    def forward(self, x: torch.Tensor, kv: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                mask: torch.Tensor | None = None, different_segment: torch.Tensor | None = None,
                positions: torch.Tensor | None = None,
                need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``x`` to the keys ``kv`` (:meth:`keys`); returns ``LayerNorm(x + Dropout(attention W_o))``
        ``(B, M, d)`` and the weights ``(B, H, M, L_k)`` if asked.

        Args:
            x: ``(B, M, d)`` queries: the segment's ``L_q`` positions in order, unless ``positions`` is given.
            mask: ``(B or 1, L_q, L_k)`` bool, True where query position i may attend key j; None: everything.
            different_segment: ``(B, L_q, L_k)`` bool, True where i and j lie in different segments (needs
                ``segments=True``).
            positions: ``(B, M)`` the segment position of each query (XLNet's query stream, which predicts only
                some positions): each query uses its position's distances, mask row and segment row. Hugging
                Face scatters such queries into all ``L_q`` rows and gathers them back (``target_mapping``); only
                the M rows are computed here, the same numbers at M / L_q of the cost.
        """
        k, v, kr = kv
        B, L_k = k.shape[:2]
        q = self.q(x).view(B, -1, self.n_heads, self.d_head)  # (B, M, H, dh)
        M = q.shape[1]
        L_q = kr.shape[0] - L_k  # the encoding holds L_q + L_k distances
        ac = torch.einsum("bihd,bjhd->bhij", q + self.u, k)  # (a) + (c): (B, H, M, L_k)
        bd = torch.einsum("bihd,phd->bhip", q + self.v_bias, kr)  # (b) + (d) against every distance: (B, H, M, P)
        if positions is None:
            bd = rel_shift(bd, L_k)  # (B, H, L_q, L_k)
        else:
            j = torch.arange(L_k, device=x.device)
            index = (L_q - positions)[:, None, :, None] + j  # (B, 1, M, L_k): query at i reads distance column
            bd = bd.gather(-1, index.expand(B, self.n_heads, M, L_k))
        score = ac + bd
        if different_segment is not None:
            if not self.segments:
                raise ValueError("different_segment given to an attention built without segments=True")
            ef = torch.einsum("bihd,shd->bhis", q + self.s_bias, self.seg_embed)  # (B, H, M, 2)
            diff = _rows(different_segment, positions)[:, None]  # (B, 1, M, L_k)
            score = score + torch.where(diff, ef[..., 1:], ef[..., :1])
        score = score * self.scale
        if mask is not None:
            # a large finite penalty, as the released code: a row with nothing to see attends uniformly, no NaN
            score = score - 1e30 * (~_rows(mask, positions))[:, None].to(score.dtype)
        weights = self.drop(F.softmax(score, dim=-1))  # (B, H, M, L_k)
        out = torch.einsum("bhij,bjhd->bihd", weights, v)  # (B, M, H, dh)
        out = self.norm(x + self.drop(self.o(out.flatten(2))))  # (B, M, d)
        return out, (weights if need_weights else None)


def _rows(table: torch.Tensor, positions: torch.Tensor | None) -> torch.Tensor:
    """``table`` ``(B or 1, L_q, L_k)``, or its rows at ``positions`` ``(B, M)``: ``(B, M, L_k)``."""
    if positions is None:
        return table
    B, M = positions.shape
    return table.expand(B, -1, -1).gather(1, positions[:, :, None].expand(B, M, table.shape[-1]))


class RelativeLayer(nn.Module):
    """One Transformer-XL / XLNet layer: :class:`RelativeAttention` over [memory ∘ segment], then the
    position-wise feed-forward network, ``LayerNorm(x + Dropout(W_2 Dropout(act(W_1 x))))``.

    Given a query stream ``g`` (XLNet's two-stream attention, §2.3), the same attention weights and keys serve
    both streams: the content stream ``h`` with ``mask_h``, the query stream with ``mask_g``."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, activation: str = "relu",
                 eps: float = 1e-5, segments: bool = False):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ConfigError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        self.attn = RelativeAttention(d_model, n_heads, d_model // n_heads, dropout, eps, segments)
        self.layer_1 = nn.Linear(d_model, d_ff)
        self.layer_2 = nn.Linear(d_ff, d_model)
        self.ff_norm = nn.LayerNorm(d_model, eps=eps)
        self.drop = nn.Dropout(dropout)
        self.activation = activation

    def ff(self, x: torch.Tensor) -> torch.Tensor:
        y = self.drop(self.layer_2(self.drop(ACTIVATIONS[self.activation](self.layer_1(x)))))
        return self.ff_norm(x + y)  # (B, M, d)

    def forward(self, h: torch.Tensor, memory: torch.Tensor | None, r: torch.Tensor,
                mask_h: torch.Tensor | None = None, g: torch.Tensor | None = None,
                mask_g: torch.Tensor | None = None, different_segment: torch.Tensor | None = None,
                positions: torch.Tensor | None = None, need_weights: bool = False,
                ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """``h`` ``(B, L_q, d)``, ``memory`` ``(B, L_m, d)`` or None, ``r`` ``(2 L_q + L_m, d)``: the
        :func:`relative_encoding` of ``(L_q, L_m + L_q)``. Returns the new ``h``, the new ``g`` (or None) and the
        content stream's attention weights if asked. ``positions`` ``(B, M)``: where the M queries of ``g``
        stand (:meth:`RelativeAttention.forward`)."""
        context = h if memory is None or memory.shape[1] == 0 else torch.cat([memory, h], dim=1)  # (B, L_k, d)
        kv = self.attn.keys(context, r)
        h_out, weights = self.attn(h, kv, mask_h, different_segment, None, need_weights)
        g_out = None
        if g is not None:
            g_out, _ = self.attn(g, kv, mask_g, different_segment, positions)
            g_out = self.ff(g_out)
        return self.ff(h_out), g_out, weights


@torch.no_grad()
def init_relative_weights(model: nn.Module, std: float = 0.02) -> None:
    """N(0, std) for every Linear, Embedding and relative-attention bias (u, v, segment vectors), zero Linear
    biases, LayerNorm gain 1 and bias 0: the released code's (and Hugging Face's) initialisation."""
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.normal_(0.0, std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            module.bias.zero_()
        if isinstance(module, nn.LayerNorm):
            module.weight.fill_(1.0)
            module.bias.zero_()
        if isinstance(module, RelativeAttention):
            for p in (module.u, module.v_bias, *((module.s_bias, module.seg_embed) if module.segments else ())):
                p.normal_(0.0, std)


@dataclasses.dataclass
class TransformerXLConfig(Config):
    """A Transformer-XL language model: sizes, the training segment ``seg_len`` and the memory ``mem_len``
    (the paper's WikiText-103 base model: 16 layers of 410, 10 heads, d_ff 2,100, segments and memory of 150,
    evaluated with 1,600 of memory and segments of 64)."""

    vocab_size: int = 8_000
    d_model: int = 192
    n_layers: int = 4
    n_heads: int = 3
    d_ff: int = 768
    seg_len: int = 64          # L: tokens per training segment
    mem_len: int = 64          # M: remembered states per layer while training
    dropout: float = 0.1
    activation: str = "relu"   # the paper's position-wise FFN
    eps: float = 1e-5
    clamp_len: int = 0         # cap on |distance| in R (0: none)
    init_std: float = 0.02

    presets: ClassVar = {
        "smoke": dict(vocab_size=1_000, d_model=64, n_layers=2, n_heads=2, d_ff=256, seg_len=32, mem_len=32),
        "cpu": dict(),
        "full": dict(vocab_size=16_000, d_model=512, n_layers=8, n_heads=8, d_ff=2_048, seg_len=128, mem_len=128),
    }

    def validate(self) -> None:
        sizes = dict(vocab_size=self.vocab_size, d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads,
                     d_ff=self.d_ff, seg_len=self.seg_len)
        bad = {k: v for k, v in sizes.items() if not (isinstance(v, int) and v >= 1)}
        if bad:
            raise ConfigError(f"sizes must be positive integers, got {bad}")
        if self.d_model % self.n_heads or self.d_model % 2:
            raise ConfigError(f"d_model={self.d_model} must be even and a multiple of n_heads={self.n_heads}")
        if self.mem_len < 0 or self.clamp_len < 0:
            raise ConfigError(f"mem_len and clamp_len must be >= 0, got {self.mem_len}, {self.clamp_len}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}")

    def build(self) -> "TransformerXLLM":
        return TransformerXLLM(self)

    def example_batch(self, batch_size: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(self.vocab_size, (batch_size, min(12, self.seg_len) + 1), generator=g)
        return ids[:, :-1], ids[:, 1:]

    def step_batch(self, batch_size: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
        """A random ``(x, y)`` of ``batch_size`` segments of ``seg_len`` (the memory fills from the second step)."""
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(self.vocab_size, (batch_size, self.seg_len + 1), generator=g)
        return ids[:, :-1], ids[:, 1:]


class TransformerXLLM(nn.Module):
    """Embedding, ``n_layers`` :class:`RelativeLayer` s with causal attention over [memory ∘ segment], and the
    tied output layer (a bias per token).

    Called as :func:`shoulders.train.fit` calls a recurrent LM (:class:`shoulders.train.CarryState`):
    ``model(x, y, state=memory, return_state=True)`` returns ``{"loss", "state"}`` with the memory of every layer
    stacked ``(n_layers, B, M, d)``; ``model(x, y)`` scores a segment without memory; ``model.logits(x)`` too
    (what :func:`shoulders.evaluate.perplexity.sliding_window_nll` calls).
    """

    def __init__(self, cfg: TransformerXLConfig):
        super().__init__()
        self.cfg = cfg
        self.d_model = cfg.d_model
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList(RelativeLayer(cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.dropout, cfg.activation,
                                                  cfg.eps) for _ in range(cfg.n_layers))
        self.out_bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        self.drop = nn.Dropout(cfg.dropout)
        init_relative_weights(self, cfg.init_std)

    def hidden(self, x: torch.Tensor, memory: torch.Tensor | None = None, mem_len: int | None = None,
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """``x`` ``(B, L)`` ids, ``memory`` ``(n_layers, B, M, d)`` or None. Returns the last layer's states
        ``(B, L, d)`` and the new memory ``(n_layers, B, ≤ mem_len, d)`` (default ``cfg.mem_len``): each layer's
        input states of ``[memory ∘ segment]``, the last ``mem_len`` of them, detached."""
        check_ids(x, "x", self.cfg.vocab_size)
        mem_len = self.cfg.mem_len if mem_len is None else int(mem_len)
        B, L = x.shape
        M = 0 if memory is None else memory.shape[2]
        if memory is not None and (memory.shape[0] != len(self.layers) or memory.shape[1] != B):
            raise ValueError(f"memory {tuple(memory.shape)} does not fit {len(self.layers)} layers and a batch of {B}")
        h = self.drop(self.embed(x))  # (B, L, d)
        r = self.drop(relative_encoding(L, M + L, self.d_model, self.cfg.clamp_len, x.device))  # (2L + M, d)
        mask = causal_memory_mask(L, M, x.device)[None]  # (1, L, M + L)
        new_memory = []
        for n, layer in enumerate(self.layers):
            mem_n = None if memory is None else memory[n]
            new_memory.append(update_memory(mem_n, h, mem_len))
            h, _, _ = layer(h, mem_n, r, mask)
        return self.drop(h), torch.stack(new_memory)

    def logits(self, x: torch.Tensor, memory: torch.Tensor | None = None) -> torch.Tensor:
        """``(B, L, V)`` next-token logits of a segment (with ``memory`` if given)."""
        h, _ = self.hidden(x, memory)
        return F.linear(h, self.embed.weight, self.out_bias)

    def forward(self, x: torch.Tensor, y: torch.Tensor, state: torch.Tensor | None = None,
                return_state: bool = False) -> Any:
        """Mean next-token cross-entropy of ``y`` given ``x`` (both ``(B, L)``) and the memory ``state``."""
        if y.shape != x.shape:
            raise ValueError(f"y {tuple(y.shape)} must have the shape of x {tuple(x.shape)}: y is x shifted by one")
        check_labels(y, "y", self.cfg.vocab_size)
        h, memory = self.hidden(x, state)  # (B, L, d)
        loss = linear_cross_entropy(h.flatten(0, 1), self.embed.weight, self.out_bias, y.flatten())  # tied output
        return {"loss": loss, "state": memory} if return_state else loss


@torch.no_grad()
def stream_nll(model: TransformerXLLM, ids: torch.Tensor, seg_len: int, mem_len: int,
               batch_size: int = 1) -> tuple[float, int]:
    """Total negative log-likelihood (nats) of ``ids[1:]`` and its count, read as consecutive segments of
    ``seg_len`` with a memory of ``mem_len`` states per layer carried from segment to segment (§3.2's evaluation:
    each segment is computed once; ``mem_len = 0`` is a fixed-context model that forgets at every boundary).

    ``batch_size > 1`` cuts the text into that many equal streams read side by side (a faster pass; each stream's
    first segment starts without context, as the first segment of the text does)."""
    ids = torch.as_tensor(ids, dtype=torch.long).flatten()
    n = (ids.numel() - 1) // batch_size
    if n < 1:
        raise ValueError(f"{ids.numel()} ids are too few for {batch_size} streams")
    dev = next(model.parameters()).device
    was_training = model.training
    model.eval()
    x_all = ids[: n * batch_size].view(batch_size, n).to(dev)  # (B, n)
    y_all = ids[1: n * batch_size + 1].view(batch_size, n).to(dev)
    total, memory = 0.0, None
    try:
        for s in range(0, n, seg_len):
            x, y = x_all[:, s: s + seg_len], y_all[:, s: s + seg_len]
            h, new = model.hidden(x, memory, mem_len)
            logp = F.linear(h, model.embed.weight, model.out_bias).float().log_softmax(-1)
            total -= float(logp.gather(-1, y[..., None]).double().sum())
            memory = new if mem_len > 0 else None
    finally:
        model.train(was_training)
    return total, n * batch_size

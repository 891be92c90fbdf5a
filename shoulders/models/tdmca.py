"""T-DMCA: local attention and memory-compressed attention (Liu et al. 2018, "Generating Wikipedia by
Summarizing Long Sequences", §4.2.3), for sequences too long for full ``T x T`` attention.

* **Local attention** (:class:`LocalAttention`): the sequence is cut into blocks of ``block_size`` tokens and
  attention runs inside each block independently: cost ``T · block_size`` instead of ``T²``.
* **Memory-compressed attention** (:class:`MemoryCompressedAttention`): after the Q/K/V projections, the keys and
  values are shortened along the sequence by a strided 1-D convolution (kernel = stride = ``compression``, 3 in
  the paper), the queries are not: ``T`` queries attend ``T / compression`` keys, cost ``T² / compression``.
* **T-DMCA** (:func:`tdmca_layers`): decoder-only layers alternating the two, "LMLML" for five layers (§4.2.3).

**Causality.** A compressed key mixes ``compression`` neighbouring positions, so in a decoder it must not be seen
by a query that precedes any of them. The paper does not say how it masks them; here (``causal=True``) query
``t`` in window ``b = t // c`` sees

    every compressed slot m < b (windows wholly in its past)   +   the raw keys of its own window up to t,

with one softmax over both sets. Nothing from the future leaks (a test perturbs later tokens), the first tokens
of a window still see something, and with ``compression=1`` it is exactly full causal attention. Without
``causal`` every query sees every slot (the sequence is zero-padded to a multiple of ``c`` first). Local attention
is causal inside a block with ``causal=True``; with one block covering the sequence it is full attention.

Both are :class:`~shoulders.models.attention.MultiHeadAttention` with another core (same ``qkv``/``out``
projections), so either can be handed to :class:`~shoulders.models.transformer_blocks.EncoderLayer` as its
self-attention. They take no padding mask: the paper's decoder packs its inputs without padding.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import ConfigError
from .attention import MultiHeadAttention, merge_heads
from .transformer_blocks import BlockConfig, EncoderLayer

__all__ = ["LocalAttention", "MemoryCompressedAttention", "local_attention", "tdmca_layers"]


def _pad_to_multiple(x: torch.Tensor, size: int) -> torch.Tensor:
    """Zero-pad dim 2 of ``(B, H, T, d)`` up to a multiple of ``size``."""
    extra = -x.shape[2] % size
    return F.pad(x, (0, 0, 0, extra)) if extra else x


def _blocks(x: torch.Tensor, size: int) -> torch.Tensor:
    """``(B, H, T, d)`` -> ``(B, H, n, size, d)`` with ``n = ceil(T / size)`` (zero-padded)."""
    x = _pad_to_multiple(x, size)
    B, H, T, d = x.shape
    return x.view(B, H, T // size, size, d)


def _block_mask(T: int, size: int, causal: bool, device: torch.device) -> torch.Tensor:
    """``(n, size, size)`` bool: key ``j`` of a block is real (``< T``), and ``j <= i`` if causal."""
    n = math.ceil(T / size)
    pos = torch.arange(n * size, device=device).view(n, size)  # absolute position of each slot
    mask = (pos < T)[:, None, :].expand(n, size, size)  # (n, size_q, size_k)
    if causal:
        mask = mask & torch.ones(size, size, dtype=torch.bool, device=device).tril()
    return mask


def local_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_size: int, causal: bool = False,
                    dropout: float = 0.0) -> torch.Tensor:
    """Attention within blocks of ``block_size`` positions: ``(B, H, T, d)`` in and out."""
    T = q.shape[2]
    qb, kb, vb = (_blocks(t, block_size) for t in (q, k, v))  # (B, H, n, bs, d)
    mask = _block_mask(T, block_size, causal, q.device)  # (n, bs, bs)
    out = F.scaled_dot_product_attention(qb, kb, vb, attn_mask=mask, dropout_p=dropout)  # (B, H, n, bs, d)
    return out.flatten(2, 3)[:, :, :T]  # (B, H, T, d)


class LocalAttention(MultiHeadAttention):
    """Multi-head local attention: each head attends only inside blocks of ``block_size`` tokens."""

    def __init__(self, d_model: int, n_heads: int, block_size: int = 256, dropout: float = 0.0, bias: bool = True):
        super().__init__(d_model, n_heads, dropout, bias)
        if block_size < 1:
            raise ConfigError(f"block_size must be positive, got {block_size}")
        self.block_size = block_size

    def forward(self, x: torch.Tensor, memory: None = None, mask: None = None, causal: bool = False,
                cache: None = None, need_weights: bool = False) -> tuple[torch.Tensor, None]:
        _no_extras(mask, cache, need_weights)
        q, k, v = self.project(x, memory, None)  # (B, H, T, d_k)
        y = local_attention(q, k, v, self.block_size, causal, self.dropout if self.training else 0.0)
        return self.out(merge_heads(y)), None


class MemoryCompressedAttention(MultiHeadAttention):
    """Multi-head attention whose keys and values are compressed ``compression``-fold by strided convolutions."""

    def __init__(self, d_model: int, n_heads: int, compression: int = 3, dropout: float = 0.0, bias: bool = True):
        super().__init__(d_model, n_heads, dropout, bias)
        if compression < 1:
            raise ConfigError(f"compression must be positive, got {compression}")
        self.compression = c = compression
        # one convolution over all heads' keys, one over the values: (B, d, T) -> (B, d, T / c)
        self.compress_k = nn.Conv1d(d_model, d_model, c, stride=c) if c > 1 else nn.Identity()
        self.compress_v = nn.Conv1d(d_model, d_model, c, stride=c) if c > 1 else nn.Identity()

    def compress(self, x: torch.Tensor, conv: nn.Module) -> torch.Tensor:
        """``(B, H, T, d_k)`` -> ``(B, H, ceil(T / c), d_k)``: merge heads, convolve along T, split again."""
        B, H, T, d_k = x.shape
        x = _pad_to_multiple(x, self.compression)
        y = conv(merge_heads(x).transpose(1, 2)).transpose(1, 2)  # (B, T/c, d)
        return y.view(B, -1, H, d_k).transpose(1, 2)  # (B, H, T/c, d_k)

    def forward(self, x: torch.Tensor, memory: None = None, mask: None = None, causal: bool = False,
                cache: None = None, need_weights: bool = False) -> tuple[torch.Tensor, None]:
        _no_extras(mask, cache, need_weights)
        q, k, v = self.project(x, memory, None)  # (B, H, T, d_k)
        kc, vc = self.compress(k, self.compress_k), self.compress(v, self.compress_v)  # (B, H, M, d_k)
        p = self.dropout if self.training else 0.0
        if causal:
            y = self._causal(q, k, v, kc, vc, p)
        else:
            y = F.scaled_dot_product_attention(q, kc, vc, dropout_p=p)  # (B, H, T, d_k)
        return self.out(merge_heads(y)), None

    def _causal(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor,
                p: float) -> torch.Tensor:
        """Past compressed slots + own window's raw keys, one softmax (see the module docstring)."""
        B, H, T, d_k = q.shape
        c, M = self.compression, kc.shape[2]
        scale = 1.0 / math.sqrt(d_k)
        pos = torch.arange(T, device=q.device)
        s_c = (q @ kc.transpose(-2, -1)) * scale  # (B, H, T, M)
        s_c = s_c.masked_fill(~(torch.arange(M, device=q.device)[None, :] < (pos // c)[:, None]), float("-inf"))
        qb, kb = _blocks(q, c), _blocks(k, c)  # (B, H, n, c, d_k)
        s_l = (qb @ kb.transpose(-2, -1)) * scale  # (B, H, n, c, c)
        s_l = s_l.masked_fill(~_block_mask(T, c, True, q.device), float("-inf"))
        s_l = s_l.flatten(2, 3)[:, :, :T]  # (B, H, T, c): query t's scores for its own window
        w = torch.cat([s_c, s_l], dim=-1).softmax(dim=-1)  # (B, H, T, M + c)
        w = F.dropout(w, p, self.training) if p > 0 else w
        w_c, w_l = w[..., :M], _pad_to_multiple(w[..., M:], c)  # (B, H, T, M), (B, H, n*c, c)
        local = (w_l.view(B, H, -1, c, c) @ _blocks(v, c)).flatten(2, 3)[:, :, :T]  # (B, H, T, d_k)
        return w_c @ vc + local  # (B, H, T, d_k)


def _no_extras(mask: object, cache: object, need_weights: bool) -> None:
    if mask is not None or cache is not None or need_weights:
        raise ValueError("local / memory-compressed attention take no mask, cache or need_weights (no padding in "
                         "the paper's packed decoder input; use MultiHeadAttention to look at weights)")


def tdmca_layers(cfg: BlockConfig, pattern: str = "LMLML", block_size: int = 256,
                 compression: int = 3) -> nn.ModuleList:
    """The T-DMCA decoder stack: one :class:`EncoderLayer` per letter, ``L`` local, ``M`` memory-compressed
    (and ``F`` for ordinary full attention), causal when ``cfg.causal`` (the paper's decoder-only model)."""
    layers = []
    for kind in pattern:
        if kind == "L":
            attn: nn.Module = LocalAttention(cfg.d_model, cfg.n_heads, block_size, cfg.attn_dropout, cfg.bias)
        elif kind == "M":
            attn = MemoryCompressedAttention(cfg.d_model, cfg.n_heads, compression, cfg.attn_dropout, cfg.bias)
        elif kind == "F":
            attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attn_dropout, cfg.bias)
        else:
            raise ConfigError(f"pattern letters are L (local), M (memory-compressed) and F (full), got {kind!r}")
        layers.append(EncoderLayer(cfg, attention=attn))
    return nn.ModuleList(layers)

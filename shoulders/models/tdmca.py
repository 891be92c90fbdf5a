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

**Two versions of the causal rule, one answer** (as in :mod:`~shoulders.models.attention`).
:func:`causal_compressed_attention_written_out` spells it out: the ``T x M`` scores against the compressed slots
and the ``T x c`` scores against the own window, concatenated, one softmax. It stores those weights, so it is
slower and larger than fused full attention. :func:`causal_compressed_attention` (what the module runs) hands the
same rule to the fused kernel ``F.scaled_dot_product_attention`` as one boolean mask over the keys
``[compressed slots ‖ raw keys]``, a chunk of ``query_chunk`` queries at a time: a chunk's keys are only the slots
some query of the chunk may see plus the chunk's own raw keys, so the work is about ``T · (T / 2c + chunk)``
instead of the ``T · (T / c + T)`` of one mask over the whole sequence (which would be slower than full causal
attention). The tests check that the two agree, outputs and gradients.

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

__all__ = ["LocalAttention", "MemoryCompressedAttention", "causal_compressed_attention",
           "causal_compressed_attention_written_out", "causal_compressed_mask", "local_attention", "tdmca_layers"]


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


def causal_compressed_attention_written_out(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, kc: torch.Tensor,
                                           vc: torch.Tensor, compression: int, dropout: float = 0.0,
                                           training: bool = False) -> torch.Tensor:
    """The causal rule written out: past compressed slots + own window's raw keys, one softmax.

    ``q, k, v``: ``(B, H, T, d_k)``; ``kc, vc``: ``(B, H, M, d_k)``, ``M = ceil(T / compression)``. Returns
    ``(B, H, T, d_k)``. Stores the ``(B, H, T, M + c)`` weights: the version to read, not to run.
    """
    B, H, T, d_k = q.shape
    c, M = compression, kc.shape[2]
    scale = 1.0 / math.sqrt(d_k)
    pos = torch.arange(T, device=q.device)
    s_c = (q @ kc.transpose(-2, -1)) * scale  # (B, H, T, M)
    s_c = s_c.masked_fill(~(torch.arange(M, device=q.device)[None, :] < (pos // c)[:, None]), float("-inf"))
    qb, kb = _blocks(q, c), _blocks(k, c)  # (B, H, n, c, d_k)
    s_l = (qb @ kb.transpose(-2, -1)) * scale  # (B, H, n, c, c)
    s_l = s_l.masked_fill(~_block_mask(T, c, True, q.device), float("-inf"))
    s_l = s_l.flatten(2, 3)[:, :, :T]  # (B, H, T, c): query t's scores for its own window
    w = torch.cat([s_c, s_l], dim=-1).softmax(dim=-1)  # (B, H, T, M + c)
    w = F.dropout(w, dropout, training) if dropout > 0 else w
    w_c, w_l = w[..., :M], _pad_to_multiple(w[..., M:], c)  # (B, H, T, M), (B, H, n*c, c)
    local = (w_l.view(B, H, -1, c, c) @ _blocks(v, c)).flatten(2, 3)[:, :, :T]  # (B, H, T, d_k)
    return w_c @ vc + local  # (B, H, T, d_k)


def causal_compressed_mask(start: int, end: int, slots: int, compression: int,
                           device: torch.device | None = None) -> torch.Tensor:
    """``(end - start, slots + end - start)`` bool, ``True`` = may attend: queries ``start .. end-1`` against the
    keys ``[compressed slots 0 .. slots-1 ‖ raw keys start .. end-1]`` under the causal rule (module docstring)."""
    c = compression
    t = torch.arange(start, end, device=device)[:, None]  # query positions
    j = torch.arange(start, end, device=device)[None, :]  # raw key positions
    slot_seen = torch.arange(slots, device=device)[None, :] < t // c  # windows wholly in the query's past
    raw_seen = (j // c == t // c) & (j <= t)  # own window, up to the query
    return torch.cat([slot_seen, raw_seen], dim=1)


def causal_compressed_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, kc: torch.Tensor,
                                vc: torch.Tensor, compression: int, dropout: float = 0.0,
                                query_chunk: int = 256) -> torch.Tensor:
    """:func:`causal_compressed_attention_written_out` through the fused kernel (same shapes, same answer).

    Queries go in chunks of ``query_chunk`` positions (rounded down to a multiple of ``compression``); each chunk
    is one ``F.scaled_dot_product_attention`` call over the keys ``[kc[:m] ‖ k[chunk]]`` with the boolean mask of
    :func:`causal_compressed_mask`, where ``m`` is the number of slots the chunk's last query may see. ``dropout``
    is applied by the kernel to the weights (pass 0 outside training).
    """
    T, c = q.shape[2], compression
    size = max(c, query_chunk // c * c)  # whole windows per chunk
    outs = []
    for start in range(0, T, size):
        end = min(T, start + size)
        m = (end - 1) // c  # slots seen by the chunk's last query (earlier ones see fewer: masked)
        keys = torch.cat([kc[:, :, :m], k[:, :, start:end]], dim=2)  # (B, H, m + chunk, d_k)
        values = torch.cat([vc[:, :, :m], v[:, :, start:end]], dim=2)
        mask = causal_compressed_mask(start, end, m, c, q.device)  # (chunk, m + chunk)
        outs.append(F.scaled_dot_product_attention(q[:, :, start:end], keys, values, attn_mask=mask,
                                                   dropout_p=dropout))
    return torch.cat(outs, dim=2)  # (B, H, T, d_k)


class MemoryCompressedAttention(MultiHeadAttention):
    """Multi-head attention whose keys and values are compressed ``compression``-fold by strided convolutions.

    Causal attention runs :func:`causal_compressed_attention` (fused kernel, ``query_chunk`` queries per call);
    ``written_out=True`` runs :func:`causal_compressed_attention_written_out` instead (same answer, for reading).
    """

    def __init__(self, d_model: int, n_heads: int, compression: int = 3, dropout: float = 0.0, bias: bool = True,
                 query_chunk: int = 256, written_out: bool = False):
        super().__init__(d_model, n_heads, dropout, bias)
        if compression < 1:
            raise ConfigError(f"compression must be positive, got {compression}")
        if query_chunk < 1:
            raise ConfigError(f"query_chunk must be positive, got {query_chunk}")
        self.compression = c = compression
        self.query_chunk, self.written_out = query_chunk, written_out
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
        if causal and self.written_out:
            y = causal_compressed_attention_written_out(q, k, v, kc, vc, self.compression, p, self.training)
        elif causal:
            y = causal_compressed_attention(q, k, v, kc, vc, self.compression, p, self.query_chunk)
        else:
            y = F.scaled_dot_product_attention(q, kc, vc, dropout_p=p)  # (B, H, T, d_k)
        return self.out(merge_heads(y)), None


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

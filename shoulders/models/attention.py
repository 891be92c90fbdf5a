"""Scaled dot-product attention and multi-head attention (Vaswani et al. 2017, "Attention Is All You Need", §3.2).

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V                              (eq. 1)
    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,                          (§3.2.2)
        head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

**Two versions of eq. 1, one answer.** :func:`scaled_dot_product_attention` spells eq. 1 out (scores, mask,
softmax, dropout, weighted sum) and returns the weights: it is the version to read, and the one a widget needs.
:class:`MultiHeadAttention` calls ``torch.nn.functional.scaled_dot_product_attention`` instead (a fused kernel
that never stores the ``T x T`` weights on GPU) unless asked for the weights with ``need_weights=True``; the tests
prove the two agree, with and without masks.

**Mask convention** (the book's, from :mod:`shoulders.text.pad`): a boolean ``mask`` is ``True`` where a query
may attend a key, broadcastable to ``(B, H, T_q, T_k)``: a padding mask ``(B, T_k)`` becomes ``(B, 1, 1, T_k)``
(:func:`key_padding_mask`), the causal mask is the lower triangle (:func:`causal_mask`). A query with no key left
at all gets NaN from the softmax, as the maths says; :func:`shoulders.text.pad.attention_mask` avoids that.

**Fused projections.** Self-attention projects ``x`` once with a ``d x 3d`` matrix (``qkv``: the three W^Q, W^K,
W^V of all heads side by side, the layout of ``nn.MultiheadAttention.in_proj_weight``); cross-attention projects
the queries from the decoder (``q``) and keys and values from the encoder output (``kv``, ``d x 2d``).

**KV cache.** When generating one token at a time, the keys and values of the tokens already generated do not
change (causal attention: earlier positions never see later ones), so a :class:`KVCache` keeps them and each step
projects only the new token -- ``O(T)`` instead of ``O(T^2)`` work per step. Cross-attention keys and values (of
the encoder output) are computed once per sentence and kept the same way.
"""
from __future__ import annotations

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import ConfigError
from ..text.pad import causal_mask

__all__ = ["KVCache", "MultiHeadAttention", "causal_mask", "combine_masks", "key_padding_mask", "merge_heads",
           "scaled_dot_product_attention", "split_heads"]


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 mask: torch.Tensor | None = None, causal: bool = False,
                                 dropout: float = 0.0, training: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 1 written out: ``softmax(q k^T / sqrt(d_k)) v``, and the attention weights.

    Args:
        q: ``(..., T_q, d_k)``; k: ``(..., T_k, d_k)``; v: ``(..., T_k, d_v)``.
        mask: bool, ``True`` = may attend (or a float mask added to the scores), broadcastable to
            ``(..., T_q, T_k)``.
        causal: also hide key ``j > i`` from query ``i`` (top-left aligned, as ``is_causal=True`` in torch).
        dropout: on the weights (only when ``training``), as in the paper's §5.4 "attention dropout" and torch.

    Returns:
        ``(out (..., T_q, d_v), weights (..., T_q, T_k))``; each row of weights sums to 1 (before dropout).
    """
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} do not fit: need "
                         "q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v)")
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., T_q, T_k)
    if causal:
        T_q, T_k = scores.shape[-2:]
        scores = scores.masked_fill(~torch.ones(T_q, T_k, dtype=torch.bool, device=q.device).tril(), float("-inf"))
    if mask is not None:
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask
    weights = scores.softmax(dim=-1)  # (..., T_q, T_k), rows sum to 1
    dropped = F.dropout(weights, dropout, training) if dropout > 0 else weights
    return dropped @ v, weights  # (..., T_q, d_v)


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``(B, T, H * d_k) -> (B, H, T, d_k)``: each head sees its own d_k-wide slice of the projection."""
    B, T, D = x.shape
    return x.view(B, T, n_heads, D // n_heads).transpose(1, 2)  # (B, H, T, d_k)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``(B, H, T, d_k) -> (B, T, H * d_k)``: the Concat of §3.2.2."""
    B, H, T, d_k = x.shape
    return x.transpose(1, 2).reshape(B, T, H * d_k)  # (B, T, D)


def key_padding_mask(keep: torch.Tensor) -> torch.Tensor:
    """``(B, T_k)`` bool (``True`` = real token, :func:`shoulders.text.pad.padding_mask`) -> ``(B, 1, 1, T_k)``."""
    if keep.dim() != 2 or keep.dtype != torch.bool:
        raise ValueError(f"a key padding mask is bool (B, T_k), got {keep.dtype} {tuple(keep.shape)}")
    return keep[:, None, None, :]  # (B, 1, 1, T_k): the same keys for every head and query


def combine_masks(mask: torch.Tensor | None, causal: bool, T_q: int, T_k: int,
                  device: torch.device) -> torch.Tensor | None:
    """One bool mask from a padding/attention ``mask`` and the causal rule, or ``None`` if nothing is hidden.

    With a cache, the ``T_q`` new queries are the *last* ``T_q`` positions of ``T_k``: query ``i`` may attend key
    ``j <= i + (T_k - T_q)`` (bottom-right aligned; torch's ``is_causal`` is top-left aligned, so it is only used
    when ``T_q == T_k``).
    """
    if not causal or T_q == 1:  # one new query (a decoding step) may see every key so far
        return mask
    offset = T_k - T_q
    tri = torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril(diagonal=offset)  # (T_q, T_k)
    return tri if mask is None else mask & tri


class KVCache:
    """Keys and values of every attention layer, kept between decoding steps (``(B, H, T, d_k)`` each).

    ``cache.layer(name)`` is the dict an attention module reads and extends; :meth:`reorder` follows beam search
    when hypotheses are re-ranked (row ``i`` of the new cache is row ``index[i]`` of the old).
    """

    def __init__(self) -> None:
        self.layers: dict[str, dict[str, torch.Tensor]] = {}

    def layer(self, name: str) -> dict[str, torch.Tensor]:
        return self.layers.setdefault(name, {})

    def length(self, name: str) -> int:
        """Positions cached for ``name`` (0 before the first step)."""
        entry = self.layers.get(name)
        return 0 if not entry else int(entry["k"].shape[2])

    def reorder(self, index: torch.Tensor) -> None:
        for entry in self.layers.values():
            for key in entry:
                entry[key] = entry[key].index_select(0, index)


class MultiHeadAttention(nn.Module):
    """Multi-head attention (§3.2.2): ``h`` heads of width ``d_k = d_model / h``, fused projections.

    ``cross=False`` (self-attention): ``qkv`` projects ``x`` to queries, keys and values at once.
    ``cross=True``: ``q`` projects the queries from ``x``, ``kv`` the keys and values from ``memory``.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True, cross: bool = False):
        super().__init__()
        if n_heads < 1 or d_model % n_heads:
            raise ConfigError(f"d_model={d_model} must be a positive multiple of n_heads={n_heads}")
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.dropout, self.cross = float(dropout), cross
        if cross:
            self.q = nn.Linear(d_model, d_model, bias=bias)       # W^Q of all heads
            self.kv = nn.Linear(d_model, 2 * d_model, bias=bias)  # [W^K | W^V]
        else:
            self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)  # [W^Q | W^K | W^V]
        self.out = nn.Linear(d_model, d_model, bias=bias)  # W^O

    def project(self, x: torch.Tensor, memory: torch.Tensor | None,
                cache: dict[str, torch.Tensor] | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries, keys and values, split into heads: ``(B, H, T_q, d_k)``, ``(B, H, T_k, d_k)`` twice."""
        if self.cross:
            if memory is None:
                raise ValueError("cross-attention needs memory= (the encoder output, (B, T_k, d_model))")
            q = split_heads(self.q(x), self.n_heads)  # (B, H, T_q, d_k)
            if cache is not None and "k" in cache:
                return q, cache["k"], cache["v"]  # the encoder's keys and values, projected at the first step
            k, v = self.kv(memory).chunk(2, dim=-1)  # (B, T_k, D) each
            k, v = split_heads(k, self.n_heads), split_heads(v, self.n_heads)  # (B, H, T_k, d_k)
        else:
            if memory is not None:
                raise ValueError("self-attention takes no memory; build MultiHeadAttention(cross=True)")
            q, k, v = (split_heads(t, self.n_heads) for t in self.qkv(x).chunk(3, dim=-1))  # (B, H, T, d_k)
            if cache is not None and "k" in cache:
                k = torch.cat([cache["k"], k], dim=2)  # (B, H, T_past + T, d_k)
                v = torch.cat([cache["v"], v], dim=2)
        if cache is not None:
            cache["k"], cache["v"] = k, v
        return q, k, v

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None, mask: torch.Tensor | None = None,
                causal: bool = False, cache: dict[str, torch.Tensor] | None = None,
                need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``x`` ``(B, T_q, d_model)`` to itself or to ``memory`` ``(B, T_k, d_model)``.

        Args:
            mask: bool ``True`` = may attend, broadcastable to ``(B, H, T_q, T_k)`` (keys include cached ones).
            causal: hide later keys (bottom-right aligned with a cache, see :func:`combine_masks`).
            cache: a dict from :meth:`KVCache.layer`, read and extended in place.
            need_weights: also return the weights ``(B, H, T_q, T_k)`` (explicit eq. 1; else the fused kernel).

        Returns:
            ``(out (B, T_q, d_model), weights or None)``.
        """
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must be (B, T, d_model={self.d_model}), got {tuple(x.shape)}")
        q, k, v = self.project(x, memory, cache)
        T_q, T_k = q.shape[2], k.shape[2]
        p = self.dropout if self.training else 0.0
        if need_weights:
            full = combine_masks(mask, causal, T_q, T_k, x.device)
            y, w = scaled_dot_product_attention(q, k, v, full, dropout=p, training=self.training)
        elif mask is None and causal and T_q == T_k:
            y, w = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True), None
        else:
            full = combine_masks(mask, causal, T_q, T_k, x.device)
            y, w = F.scaled_dot_product_attention(q, k, v, attn_mask=full, dropout_p=p), None  # (B, H, T_q, d_k)
        return self.out(merge_heads(y)), w

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, cross={self.cross}, dropout={self.dropout}"

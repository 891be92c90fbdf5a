"""The pieces of a Transformer layer (Vaswani et al. 2017, §3.1-3.5), and the layers and stacks built from them.

    FFN(x) = max(0, x W_1 + b_1) W_2 + b_2                                          (eq. 2)
    PE(pos, 2i) = sin(pos / 10000^(2i/d_model)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))   (§3.5)

**One block, three models.** :class:`EncoderLayer` is self-attention + feed-forward, each wrapped in a residual
connection and a LayerNorm. What differs between the Transformer encoder, GPT and BERT is configuration, not code
(:class:`BlockConfig`): ``causal`` (GPT's masked self-attention), ``activation`` (ReLU in the paper, GELU in GPT and
BERT) and ``norm_first``:

    post-LN (the paper, §3.1 "LayerNorm(x + Sublayer(x))", and BERT):   x = LayerNorm(x + Dropout(Sublayer(x)))
    pre-LN  (GPT-2, Xiong et al. 2020):                                 x = x + Dropout(Sublayer(LayerNorm(x)))

A pre-LN stack ends with one more LayerNorm (:class:`Encoder`, :class:`Decoder`), since its residual stream is
never normalised otherwise. :class:`DecoderLayer` adds the encoder-decoder attention (queries from the decoder,
keys and values from the encoder output, §3.2.3) between the two. Dropout (P_drop, §5.4) is applied to each
sub-layer's output before the residual sum; ``attn_dropout`` (torch's and BERT's attention-probability dropout)
is separate and off by default.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import ConfigError
from .attention import KVCache, MultiHeadAttention

__all__ = ["ACTIVATIONS", "BlockConfig", "Decoder", "DecoderLayer", "Encoder", "EncoderLayer", "FeedForward",
           "LearnedPositions", "SinusoidalPositions", "copy_into_torch_encoder_layer", "sinusoidal_encoding"]

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,                                          # the paper's max(0, .)
    "gelu": F.gelu,                                          # BERT, GPT (Hendrycks & Gimpel 2016), exact erf form
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),    # GPT-2's tanh approximation
}

Weights = list[torch.Tensor]  # one (B, H, T_q, T_k) tensor per layer


@dataclasses.dataclass(frozen=True)
class BlockConfig:
    """Everything one layer needs; the Transformer, GPT and BERT configs each make one (``cfg.block()``)."""

    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 2048
    dropout: float = 0.1       # P_drop on sub-layer outputs (§5.4)
    attn_dropout: float = 0.0  # on the attention weights
    activation: str = "relu"
    norm_first: bool = False   # False: post-LN (the paper); True: pre-LN
    causal: bool = False       # self-attention sees only the past (decoder, GPT)
    eps: float = 1e-5
    bias: bool = True

    def __post_init__(self) -> None:
        if self.n_heads < 1 or self.d_model % self.n_heads:
            raise ConfigError(f"d_model={self.d_model} must be a positive multiple of n_heads={self.n_heads}")
        if self.d_ff < 1:
            raise ConfigError(f"d_ff must be positive, got {self.d_ff}")
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}")
        for name in ("dropout", "attn_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"{name} must be in [0, 1), got {getattr(self, name)}")


def sinusoidal_encoding(T: int, d_model: int, base: float = 10_000.0) -> torch.Tensor:
    """``(T, d_model)``: §3.5's PE, sin on even dimensions 2i, cos on odd 2i+1, wavelengths 2π … 10000·2π."""
    pos = torch.arange(T, dtype=torch.float64)[:, None]  # (T, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d/2),) = 2i
    angle = pos / base ** (two_i / d_model)  # (T, ceil(d/2))
    pe = torch.zeros(T, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.float()


class SinusoidalPositions(nn.Module):
    """The fixed encodings of §3.5 for positions ``offset … offset + T - 1`` (a buffer, not a parameter)."""

    def __init__(self, d_model: int, max_len: int = 1024):
        super().__init__()
        self.max_len = max_len
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model), persistent=False)  # (max_len, d)

    def forward(self, T: int, offset: int = 0) -> torch.Tensor:
        _check_length(T, offset, self.max_len)
        return self.pe[offset: offset + T]  # (T, d)


class LearnedPositions(nn.Module):
    """One learned vector per position (the paper's Table 3 row (E): "nearly identical results"; GPT, BERT)."""

    def __init__(self, d_model: int, max_len: int = 512):
        super().__init__()
        self.max_len = max_len
        self.embed = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embed.weight, std=0.02)

    def forward(self, T: int, offset: int = 0) -> torch.Tensor:
        _check_length(T, offset, self.max_len)
        return self.embed.weight[offset: offset + T]  # (T, d)


def _check_length(T: int, offset: int, max_len: int) -> None:
    if offset + T > max_len:
        raise ValueError(f"positions {offset}..{offset + T - 1} exceed max_len={max_len}: raise max_len in the "
                         "config, or truncate the input")


class FeedForward(nn.Module):
    """Position-wise feed-forward network, eq. 2: the same two-layer MLP at every position."""

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu", bias: bool = True):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=bias)
        self.w2 = nn.Linear(d_ff, d_model, bias=bias)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(ACTIVATIONS[self.activation](self.w1(x)))  # (B, T, d_ff) -> (B, T, d)


class EncoderLayer(nn.Module):
    """Self-attention + feed-forward, residual + LayerNorm around each (post- or pre-LN): the reusable block.

    ``attention`` replaces the self-attention module (anything with MultiHeadAttention's call signature, e.g.
    the local and memory-compressed attention of :mod:`shoulders.models.tdmca`).
    """

    def __init__(self, cfg: BlockConfig, attention: nn.Module | None = None):
        super().__init__()
        self.cfg = cfg
        self.self_attn = attention if attention is not None else MultiHeadAttention(
            cfg.d_model, cfg.n_heads, cfg.attn_dropout, cfg.bias)
        self.norm1 = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.activation, cfg.bias)
        self.norm2 = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, cache: dict | None = None,
                need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``x`` (B, T, d) -> (B, T, d) and the self-attention weights (B, H, T, T_k) if ``need_weights``."""
        pre = self.cfg.norm_first
        a, w = self.self_attn(self.norm1(x) if pre else x, mask=mask, causal=self.cfg.causal, cache=cache,
                              need_weights=need_weights)
        x = x + self.drop(a) if pre else self.norm1(x + self.drop(a))
        f = self.ffn(self.norm2(x) if pre else x)
        x = x + self.drop(f) if pre else self.norm2(x + self.drop(f))
        return x, w


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder-decoder attention, feed-forward (§3.1), each with residual + LayerNorm."""

    def __init__(self, cfg: BlockConfig):
        super().__init__()
        self.cfg = cfg
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attn_dropout, cfg.bias)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attn_dropout, cfg.bias, cross=True)
        self.norm1 = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.norm2 = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, cfg.activation, cfg.bias)
        self.norm3 = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, self_mask: torch.Tensor | None = None,
                memory_mask: torch.Tensor | None = None, cache: tuple[dict, dict] | None = None,
                need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """``x`` (B, T, d), ``memory`` (B, S, d) -> (B, T, d), self weights (B, H, T, T), cross (B, H, T, S)."""
        pre = self.cfg.norm_first
        self_cache, cross_cache = cache if cache is not None else (None, None)
        a, w_self = self.self_attn(self.norm1(x) if pre else x, mask=self_mask, causal=True, cache=self_cache,
                                   need_weights=need_weights)
        x = x + self.drop(a) if pre else self.norm1(x + self.drop(a))
        c, w_cross = self.cross_attn(self.norm2(x) if pre else x, memory, mask=memory_mask, cache=cross_cache,
                                     need_weights=need_weights)
        x = x + self.drop(c) if pre else self.norm2(x + self.drop(c))
        f = self.ffn(self.norm3(x) if pre else x)
        x = x + self.drop(f) if pre else self.norm3(x + self.drop(f))
        return x, w_self, w_cross


class Encoder(nn.Module):
    """``layers`` :class:`EncoderLayer` blocks (plus a final LayerNorm when pre-LN)."""

    def __init__(self, cfg: BlockConfig, layers: int):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(layers))
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.eps) if cfg.norm_first else nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, cache: KVCache | None = None,
                need_weights: bool = False) -> tuple[torch.Tensor, Weights]:
        weights: Weights = []
        for i, layer in enumerate(self.layers):
            x, w = layer(x, mask, cache.layer(f"{i}") if cache is not None else None, need_weights)
            if need_weights:
                weights.append(w)
        return self.norm(x), weights


class Decoder(nn.Module):
    """``layers`` :class:`DecoderLayer` blocks (plus a final LayerNorm when pre-LN)."""

    def __init__(self, cfg: BlockConfig, layers: int):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(layers))
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.eps) if cfg.norm_first else nn.Identity()

    def forward(self, x: torch.Tensor, memory: torch.Tensor, self_mask: torch.Tensor | None = None,
                memory_mask: torch.Tensor | None = None, cache: KVCache | None = None,
                need_weights: bool = False) -> tuple[torch.Tensor, Weights, Weights]:
        w_self: Weights = []
        w_cross: Weights = []
        for i, layer in enumerate(self.layers):
            c = (cache.layer(f"{i}.self"), cache.layer(f"{i}.cross")) if cache is not None else None
            x, ws, wc = layer(x, memory, self_mask, memory_mask, c, need_weights)
            if need_weights:
                w_self.append(ws)
                w_cross.append(wc)
        return self.norm(x), w_self, w_cross


def scaled_embedding(ids: torch.Tensor, embed: nn.Embedding) -> torch.Tensor:
    """§3.4: "we multiply those weights by sqrt(d_model)" -- ``(B, T) -> (B, T, d)``."""
    return embed(ids) * math.sqrt(embed.embedding_dim)


@torch.no_grad()
def copy_into_torch_encoder_layer(ours: "EncoderLayer", ref: nn.TransformerEncoderLayer) -> None:
    """Copy our encoder layer's weights into ``torch.nn.TransformerEncoderLayer`` (same sizes), so the two can be
    compared output for output (tests) and step for step (benchmarks/attention.py)."""
    ref.self_attn.in_proj_weight.copy_(ours.self_attn.qkv.weight)
    ref.self_attn.in_proj_bias.copy_(ours.self_attn.qkv.bias)
    ref.self_attn.out_proj.load_state_dict(ours.self_attn.out.state_dict())
    ref.linear1.load_state_dict(ours.ffn.w1.state_dict())
    ref.linear2.load_state_dict(ours.ffn.w2.state_dict())
    ref.norm1.load_state_dict(ours.norm1.state_dict())
    ref.norm2.load_state_dict(ours.norm2.state_dict())

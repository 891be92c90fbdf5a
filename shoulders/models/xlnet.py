"""XLNet (Yang et al. 2019, "XLNet: Generalized Autoregressive Pretraining for Language Understanding").

**Permutation language modelling** (§2.2). An autoregressive LM sees one side; BERT's masked LM sees both but
predicts its masked tokens independently of each other and trains on a [MASK] symbol that fine-tuning never shows.
XLNet keeps the autoregressive product but over a random *factorisation order* z of the positions:

    max_θ  E_{z ~ Z_T} [ sum_{t=c+1}^{T} log p_θ(x_{z_t} | x_{z_<t}) ]                       (eq. 3, 5)

The text stays in place (positions unchanged); only the attention masks follow z (:func:`permutation_masks`).
Over all orders every token is predicted from every subset of the others, so both sides are seen -- without
[MASK]. **Partial prediction** (§2.3): only the last tokens of the order, t > c, are predicted, with
|z| / (|z| - c) = K (K = 6 or 7 in the paper), because early tokens have too little context to learn from.

**Two-stream attention** (§2.3). Predicting x_{z_t} needs its position but must not see its content, while later
tokens need its content. So every layer keeps two states per position:

    g_{z_t}^{(m)} = Attention(Q = g_{z_t}^{(m-1)}, KV = h_{z_<t}^{(m-1)})     query stream: position, not content
    h_{z_t}^{(m)} = Attention(Q = h_{z_t}^{(m-1)}, KV = h_{z_<=t}^{(m-1)})    content stream: sees itself

g starts from one learned vector w (``mask_emb``), h from the word embeddings; both streams share every weight
(:class:`~shoulders.models.transformer_xl.RelativeLayer` with a query stream). Fine-tuning drops g.

**Transformer-XL inside** (§2.4): relative positions, segment recurrence (``mems``), and relative *segment*
encodings (§2.5: "same segment or not", not absolute segment embeddings). Inputs are ``A [SEP] B [SEP] [CLS]``:
the classifier reads ``[CLS]`` at the *end*, where it has seen everything in every layer.

The forward pass follows the released code and Hugging Face's ``XLNetModel`` (masks, the content stream seeing
itself, the memory, the bidirectional relative positions, dropout), so weights of the Hugging Face format load
(:mod:`shoulders.models.xlnet_hf`) and the tests compare outputs with ``transformers.XLNetModel`` directly.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError
from .gpt import last_real_index
from .ids import check_ids
from .transformer_blocks import ACTIVATIONS
from .transformer_xl import RelativeLayer, init_relative_weights, relative_encoding, update_memory

__all__ = ["XLNET_SIZES", "XLNetConfig", "XLNetLMHeadModel", "XLNetModel", "XLNetOutput", "permutation_masks",
           "sample_permutation"]

# published sizes: (n_layers, d_model, n_heads, d_ff); base and large (Yang et al. 2019, §3.1: "the same
# architecture hyperparameters as BERT-Base / BERT-Large"), and the tiny / mini shapes of the book's BERTs
XLNET_SIZES: dict[str, tuple[int, int, int, int]] = {
    "tiny": (2, 128, 2, 512),
    "mini": (4, 256, 4, 1024),
    "base": (12, 768, 12, 3072),
    "large": (24, 1024, 16, 4096),
}


@dataclasses.dataclass
class XLNetConfig(Config):
    """XLNet's sizes and regularisation; ``named("base")`` etc. give the published shapes (vocabulary: ours)."""

    vocab_size: int = 8_000
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 2
    d_ff: int = 512
    dropout: float = 0.1
    activation: str = "gelu"
    eps: float = 1e-12          # the released models' LayerNorm epsilon
    mem_len: int = 0            # states remembered per layer when ``use_mems`` (0: none)
    clamp_len: int = -1         # cap on |distance| (-1: none)
    init_std: float = 0.02
    pad_id: int = 0

    SIZES: ClassVar = XLNET_SIZES
    presets: ClassVar = {
        "smoke": dict(),
        "cpu": dict(),
        "full": dict(n_layers=4, d_model=256, n_heads=4, d_ff=1024),
    }

    @classmethod
    def named(cls, size: str, **overrides: Any) -> "XLNetConfig":
        if size not in XLNET_SIZES:
            raise ConfigError(f"unknown XLNet size {size!r}; the sizes are {sorted(XLNET_SIZES)}")
        L, d, H, ff = XLNET_SIZES[size]
        return cls.from_fields({"n_layers": L, "d_model": d, "n_heads": H, "d_ff": ff, **overrides})

    def validate(self) -> None:
        sizes = dict(vocab_size=self.vocab_size, d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads,
                     d_ff=self.d_ff)
        bad = {k: v for k, v in sizes.items() if not (isinstance(v, int) and v >= 1)}
        if bad:
            raise ConfigError(f"sizes must be positive integers, got {bad}")
        if self.d_model % self.n_heads or self.d_model % 2:
            raise ConfigError(f"d_model={self.d_model} must be even and a multiple of n_heads={self.n_heads}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}")
        if self.mem_len < 0:
            raise ConfigError(f"mem_len must be >= 0, got {self.mem_len}")

    def build(self) -> "XLNetLMHeadModel":
        return XLNetLMHeadModel(self)

    def example_batch(self, batch_size: int = 2, T: int = 12, predict: int = 2) -> dict[str, torch.Tensor]:
        """A tiny permutation-LM batch (:meth:`XLNetLMHeadModel.forward`'s arguments)."""
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(1, self.vocab_size, (batch_size, T), generator=g)
        perm, tm, targets = [], [], []
        for b in range(batch_size):
            order = sample_permutation(T, generator=g)
            p, t = permutation_masks(order, predict)
            perm.append(p)
            tm.append(t)
            targets.append(ids[b, t.argmax(-1)])
        return {"input_ids": ids, "token_type_ids": torch.zeros_like(ids),
                "attention_mask": torch.ones_like(ids, dtype=torch.bool), "perm_mask": torch.stack(perm),
                "target_mapping": torch.stack(tm), "target_ids": torch.stack(targets)}


    def step_batch(self, batch_size: int = 2, T: int = 512, predict: int = 85) -> dict[str, torch.Tensor]:
        """A random batch at the paper's pre-training shape per row: 512 tokens, 85 of them predicted (§3.1,
        Appendix A.2: K = 6); two rows keep the ``full`` check cheap (time and memory grow linearly with rows)."""
        return self.example_batch(batch_size, T, predict)


def sample_permutation(T: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """``(T,)``: a factorisation order z drawn uniformly from Z_T (``z[t]`` is the position predicted t-th)."""
    return torch.randperm(T, generator=generator)


def permutation_masks(order: torch.Tensor, n_predict: int,
                      maskable: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention masks of one factorisation order, with partial prediction of its last ``n_predict`` tokens.

    Returns ``perm_mask`` ``(T, T)`` bool, True where position i may **not** see position j, and
    ``target_mapping`` ``(n_predict, T)`` one-hot, row m the position of the m-th target in the order.

    As in the released code: the non-target tokens (the first ``c = T - n_predict`` of the order) form the
    context, seen by every position in both streams, and see no target; a target sees the context and the targets
    before it in the order -- in the query stream not itself (the content stream adds itself,
    :class:`XLNetModel`). ``maskable`` ``(T,)`` bool: only these positions may be targets (not ``[SEP]``,
    ``[CLS]`` or padding); the order is then taken among them.
    """
    order = torch.as_tensor(order, dtype=torch.long)
    T = order.numel()
    if maskable is not None:
        order = order[maskable[order]]  # the order restricted to positions that may be predicted
    if not 0 < n_predict <= order.numel():
        raise ValueError(f"n_predict must be in 1..{order.numel()} (the positions that may be predicted), "
                         f"got {n_predict}")
    targets = order[order.numel() - n_predict:]  # (n_predict,): the last of the order
    rank = torch.full((T,), -1, dtype=torch.long)  # -1: context
    rank[targets] = torch.arange(n_predict)
    is_target = rank >= 0
    # j is hidden from i iff j is a target and j does not come strictly before i in the order (context i: rank 0)
    perm_mask = is_target[None, :] & (rank.clamp(min=0)[:, None] <= rank[None, :])  # (T, T)
    target_mapping = F.one_hot(targets, T).float()  # (n_predict, T)
    return perm_mask, target_mapping


class XLNetOutput(NamedTuple):
    """What :class:`XLNetModel` returns (the encoder protocol of :mod:`shoulders.heads`, plus XLNet's own)."""

    hidden: torch.Tensor  # (B, T, d): the content stream's last layer
    pooled: torch.Tensor  # (B, d): at each row's last real token, the [CLS] that ends XLNet's inputs
    weights: list[torch.Tensor]  # per layer (B, H, T, T_k) if asked, else empty
    query: torch.Tensor | None  # (B, n_predict, d): the query stream's last layer, given a target_mapping
    mems: list[torch.Tensor] | None  # per layer (B, ≤ mem_len, d), given use_mems


class XLNetModel(nn.Module):
    """The XLNet encoder: word embedding, ``mask_emb`` w, ``n_layers`` two-stream relative layers."""

    def __init__(self, cfg: XLNetConfig):
        super().__init__()
        self.cfg = cfg
        self.d_model = cfg.d_model
        self.word_embedding = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.mask_emb = nn.Parameter(torch.zeros(1, 1, cfg.d_model))  # w: the query stream's first state
        self.layers = nn.ModuleList(RelativeLayer(cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.dropout, cfg.activation,
                                                  cfg.eps, segments=True) for _ in range(cfg.n_layers))
        self.drop = nn.Dropout(cfg.dropout)
        init_relative_weights(self, cfg.init_std)
        with torch.no_grad():
            self.mask_emb.normal_(0.0, cfg.init_std)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, perm_mask: torch.Tensor | None = None,
                target_mapping: torch.Tensor | None = None, mems: list[torch.Tensor] | None = None,
                use_mems: bool = False, need_weights: bool = False) -> XLNetOutput:
        """Run both streams (the query stream only given ``target_mapping``).

        Args:
            input_ids: ``(B, T)``.
            token_type_ids: ``(B, T)`` segment ids (0 for A, 1 for B, 2 for the final [CLS]); only equality
                matters (relative segment encoding). None: one segment.
            attention_mask: ``(B, T)`` True (1) at real tokens; padding is never attended to.
            perm_mask: ``(B, T, T)`` bool/0-1, True where i may not see j (:func:`permutation_masks`); None: every
                token sees every other (fine-tuning).
            target_mapping: ``(B, n_predict, T)`` one-hot targets of the query stream (Hugging Face's argument;
                a row of zeros -- a padded target -- is read as position 0).
            mems: per layer ``(B, M, d)`` states of earlier segments, always visible.
            use_mems: return the new memory (each layer's input states, the last ``cfg.mem_len``).
        """
        check_ids(input_ids, "input_ids", self.cfg.vocab_size)
        B, T = input_ids.shape
        dev = input_ids.device
        M = 0 if not mems else mems[0].shape[1]
        blocked = None  # (B, T, T) bool: True where query i may not attend key j of the segment
        if attention_mask is not None:
            if attention_mask.shape != input_ids.shape:
                raise ValueError(f"attention_mask {tuple(attention_mask.shape)} must have the shape of input_ids "
                                 f"{tuple(input_ids.shape)}")
            blocked = (~attention_mask.bool())[:, None, :].expand(B, T, T)
        if perm_mask is not None:
            if perm_mask.shape != (B, T, T):
                raise ValueError(f"perm_mask must be (B, T, T) = {(B, T, T)}, got {tuple(perm_mask.shape)}")
            blocked = perm_mask.bool() if blocked is None else blocked | perm_mask.bool()
        mask_g = mask_h = None
        if blocked is not None:
            blocked = torch.cat([blocked.new_zeros(B, T, M), blocked], dim=2)  # memory: always visible
            mask_g = ~blocked  # (B, T, M + T): the query stream
            itself = torch.cat([torch.zeros(T, M, dtype=torch.bool, device=dev),
                                torch.eye(T, dtype=torch.bool, device=dev)], dim=1)  # (T, M + T)
            mask_h = mask_g | itself  # the content stream also sees its own token
        h = self.drop(self.word_embedding(input_ids))  # (B, T, d)
        g = positions = None
        if target_mapping is not None:
            g = self.drop(self.mask_emb.expand(B, target_mapping.shape[1], -1))  # (B, n_predict, d)
            positions = target_mapping.argmax(-1)  # (B, n_predict): one-hot rows (a zero row reads position 0)
        different = None
        if token_type_ids is not None:
            keys = torch.cat([token_type_ids.new_zeros(B, M), token_type_ids], dim=1)  # memory counts as segment 0
            different = token_type_ids[:, :, None] != keys[:, None, :]  # (B, T, M + T)
        r = self.drop(relative_encoding(T, M + T, self.d_model, self.cfg.clamp_len, dev))  # (2T + M, d)
        new_mems, weights = [], []
        for n, layer in enumerate(self.layers):
            mem_n = mems[n] if mems else None
            if use_mems:
                new_mems.append(update_memory(mem_n, h, self.cfg.mem_len))
            h, g, w = layer(h, mem_n, r, mask_h, g, mask_g, different, positions, need_weights)
            if need_weights:
                weights.append(w)
        h = self.drop(h)
        g = self.drop(g) if g is not None else None
        if attention_mask is None:
            pooled = h[:, -1]  # (B, d)
        else:
            pooled = h[torch.arange(B, device=dev), last_real_index(attention_mask)]  # (B, d)
        return XLNetOutput(h, pooled, weights, g, new_mems if use_mems else None)


class XLNetLMHeadModel(nn.Module):
    """:class:`XLNetModel` and the output layer (tied to the word embedding, a bias per token) that predicts each
    target from its query stream: the permutation LM objective of eq. 5 with partial prediction."""

    def __init__(self, cfg: XLNetConfig):
        super().__init__()
        self.cfg = cfg
        self.transformer = XLNetModel(cfg)
        self.lm_bias = nn.Parameter(torch.zeros(cfg.vocab_size))

    def forward(self, input_ids: torch.Tensor, perm_mask: torch.Tensor, target_mapping: torch.Tensor,
                target_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, target_weights: torch.Tensor | None = None,
                ) -> dict[str, torch.Tensor]:
        """``{"loss", "acc"}``: mean cross-entropy (and accuracy) of ``target_ids`` ``(B, n_predict)`` at the
        targets of ``target_mapping``; ``target_weights`` ``(B, n_predict)`` 0/1 drops padded targets."""
        out = self.transformer(input_ids, token_type_ids, attention_mask, perm_mask, target_mapping)
        logits = F.linear(out.query, self.transformer.word_embedding.weight, self.lm_bias).float()  # (B, P, V)
        loss = F.cross_entropy(logits.flatten(0, 1), target_ids.flatten(), reduction="none")  # (B P,)
        hit = (logits.argmax(-1) == target_ids).float().flatten()
        w = torch.ones_like(loss) if target_weights is None else target_weights.flatten().to(loss.dtype)
        n = w.sum().clamp(min=1.0)
        return {"loss": (loss * w).sum() / n, "acc": ((hit * w).sum() / n).detach()}

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

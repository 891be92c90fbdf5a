"""GPT (Radford et al. 2018, "Improving Language Understanding by Generative Pre-Training") and GPT-2's changes
(Radford et al. 2019, "Language Models are Unsupervised Multitask Learners").

    h_0 = U W_e + W_p                                                   (GPT-1, eq. 2)
    h_l = transformer_block(h_{l-1})   for l = 1 .. n                   (masked self-attention: position i sees <= i)
    P(u) = softmax(h_n W_e^T)                                           (the output layer is W_e, tied)
    L_1(U) = sum_i log P(u_i | u_{i-k}, ..., u_{i-1}; Θ)                (eq. 1: the language-modelling objective)

U holds the one-hot tokens of a window of k = ``max_len`` positions, W_e the token embedding matrix, W_p the
learned position embeddings; :class:`GPTLMHeadModel` minimises -L_1 / |U|, the mean next-token cross-entropy.

**The same block as the Transformer and BERT.** The stack is :class:`shoulders.models.transformer_blocks.Encoder`
with ``causal=True`` (chapter 12's masked self-attention) and GELU in the feed-forward network. GPT-1 uses the
original post-LN layer, ``x = LayerNorm(x + Sublayer(x))`` (``norm="post"``). GPT-2 (§2.3) moves "layer
normalization ... to the input of each sub-block" and adds "an additional layer normalization ... after the final
self-attention block" (``norm="pre"``: ``x = x + Sublayer(LayerNorm(x))``, :class:`Encoder`'s final LayerNorm),
uses the tanh approximation of GELU (``activation="gelu_tanh"``), and scales "the weights of residual layers at
initialization by a factor of 1/sqrt(N) where N is the number of residual layers": here N = 2 ``n_layers`` (an
attention and a feed-forward output projection per block), applied to pre-LN models.

**Fine-tuning** (GPT-1 §3.2-3.3): a task input is one token sequence (with start, delimiter and extract tokens),
and the task head reads h_n at the last -- "extract" -- token: :class:`GPTModel` returns it as ``pooled``, so the
heads of :mod:`shoulders.heads` (which read ``out.pooled``) work on GPT unchanged. The fine-tuning objective adds
the LM loss as an auxiliary term, L_3(C) = L_2(C) + λ L_1(C) (eq. 5): :meth:`GPTLMHeadModel.lm_loss` takes the
hidden states the head already computed, so the stack runs once.

**Writing** (GPT-2's samples use top-k random sampling, Fan et al. 2018): :func:`generate` draws one token at a
time with temperature, top-k and nucleus (top-p) filtering (:mod:`shoulders.models.sample`), through the KV cache
of :mod:`shoulders.models.attention`. Hugging Face GPT-2 checkpoints load with
:func:`shoulders.models.gpt_hf.from_pretrained`.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError
from .attention import KVCache
from .ids import check_ids, check_labels
from .linear_cross_entropy import linear_cross_entropy
from .sample import sample_tokens
from .transformer_blocks import BlockConfig, Encoder, LearnedPositions

__all__ = ["GPT_SIZES", "GPTConfig", "GPTLMHeadModel", "GPTModel", "GPTOutput", "generate", "init_gpt_weights",
           "last_real_index"]


# The published sizes: (n_layers, d_model, n_heads, max_len, norm, activation, vocab_size); d_ff = 4 d_model
GPT_SIZES: dict[str, tuple[int, int, int, int, str, str, int]] = {
    "gpt1": (12, 768, 12, 512, "post", "gelu", 40_478),  # GPT-1 §4.1: 40,000 BPE merges (+ specials), n_ctx 512
    "gpt2": (12, 768, 12, 1024, "pre", "gelu_tanh", 50_257),  # GPT-2 small, Table 2: 117M (124M counted exactly)
    "gpt2-medium": (24, 1024, 16, 1024, "pre", "gelu_tanh", 50_257),  # 345M
    "gpt2-large": (36, 1280, 20, 1024, "pre", "gelu_tanh", 50_257),  # 762M
    "gpt2-xl": (48, 1600, 25, 1024, "pre", "gelu_tanh", 50_257),  # 1542M
}


def _size(name: str) -> dict[str, Any]:
    if name not in GPT_SIZES:
        raise ConfigError(f"unknown GPT size {name!r}; the sizes are {sorted(GPT_SIZES)}")
    L, d, H, T, norm, act, V = GPT_SIZES[name]
    return dict(n_layers=L, d_model=d, n_heads=H, d_ff=4 * d, max_len=T, norm=norm, activation=act, vocab_size=V)


@dataclasses.dataclass
class GPTConfig(Config):
    """GPT's sizes and regularisation (GPT-1 §4.1; GPT-2 §2.3); ``named("gpt1")`` / ``named("gpt2")`` give the
    published models. ``vocab_size`` is a placeholder until the chapter trains its BPE vocabulary
    (``cfg.replace(vocab_size=…)``)."""

    vocab_size: int = 8192
    d_model: int = 256         # GPT-1: 768-dimensional states
    n_layers: int = 4          # GPT-1: 12 layers
    n_heads: int = 4           # GPT-1: 12 attention heads
    d_ff: int = 1024           # GPT-1: 3072 inner states
    max_len: int = 128         # n_ctx: the context window k of eq. 1 (GPT-1: 512, GPT-2: 1024)
    dropout: float = 0.1       # on the embeddings and every sub-layer output ("residual, embedding ... 0.1")
    attn_dropout: float = 0.1  # on the attention probabilities ("and attention dropouts", GPT-1 §4.1)
    norm: str = "post"         # "post": GPT-1's LayerNorm(x + Sublayer(x)); "pre": GPT-2's (+ a final LayerNorm)
    activation: str = "gelu"   # GPT-1: GELU; GPT-2: its tanh approximation ("gelu_tanh")
    eps: float = 1e-5          # LayerNorm epsilon of both released models
    init_std: float = 0.02     # "weight initialization of N(0, 0.02)" (GPT-1 §4.1)

    SIZES: ClassVar[dict[str, tuple]] = GPT_SIZES
    presets: ClassVar = {
        "smoke": dict(n_layers=2, d_model=64, n_heads=2, d_ff=256, max_len=64, norm="pre"),
        "cpu": dict(n_layers=4, d_model=256, n_heads=4, d_ff=1024, max_len=128, norm="pre"),  # WikiText-2, 2 cores
        "full": {k: v for k, v in _size("gpt1").items() if k != "vocab_size"},  # GPT-1's shape, our vocabulary
    }

    @classmethod
    def named(cls, size: str, **overrides: Any) -> "GPTConfig":
        """A published size -- "gpt1" (post-LN, GELU, 512 positions, 40,478 tokens), "gpt2" (GPT-2 small: pre-LN,
        tanh GELU, 1,024 positions, 50,257 tokens), "gpt2-medium", "gpt2-large", "gpt2-xl" -- with ``overrides``."""
        return cls.from_fields({**_size(size), **overrides})

    def validate(self) -> None:
        sizes = dict(vocab_size=self.vocab_size, d_model=self.d_model, n_layers=self.n_layers, d_ff=self.d_ff,
                     max_len=self.max_len, n_heads=self.n_heads)
        bad = {k: v for k, v in sizes.items() if not (isinstance(v, int) and v >= 1)}
        if bad:
            raise ConfigError(f"sizes must be positive integers, got {bad}")
        if self.norm not in ("post", "pre"):
            raise ConfigError(f"norm must be 'post' (GPT-1: LayerNorm after each residual sum) or 'pre' (GPT-2: "
                              f"LayerNorm at each sub-block's input, and a final one), got {self.norm!r}")
        if not (self.eps > 0 and self.init_std > 0):
            raise ConfigError(f"eps and init_std must be positive, got eps={self.eps}, init_std={self.init_std}")
        self.block()  # d_model % n_heads, activation, dropout ranges

    def block(self) -> BlockConfig:
        """One causal (masked) self-attention layer, post- or pre-LN: chapter 12's block."""
        return BlockConfig(self.d_model, self.n_heads, self.d_ff, self.dropout, self.attn_dropout,
                           activation=self.activation, norm_first=self.norm == "pre", causal=True, eps=self.eps)

    def build(self) -> "GPTLMHeadModel":
        return GPTLMHeadModel(self)

    def example_batch(self, batch_size: int = 2, T: int = 12) -> tuple[torch.Tensor, torch.Tensor]:
        """A tiny random ``(x, y)`` next-token batch, ``(batch_size, T)`` each (``y`` is ``x`` shifted by one), for
        the preset health checks: ``model(x, y)`` is the loss, as :func:`shoulders.train.fit` calls it."""
        g = torch.Generator().manual_seed(0)
        T = min(T, self.max_len)
        ids = torch.randint(self.vocab_size, (batch_size, T + 1), generator=g)
        return ids[:, :-1], ids[:, 1:]

    def step_batch(self, batch_size: int = 2, T: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """A random ``(x, y)`` batch at full length: ``batch_size`` windows of ``T`` positions (default
        ``max_len``), ids below ``vocab_size``.

        A bare :class:`GPTConfig` names no training batch (GPT-1 trained on 64 windows of 512 tokens, §4.1; the
        pre-training recipe's config passes its own). Two windows keep the ``full`` check at GPT-1's shapes
        (12 x 768, 512 positions, 92M parameters with 8,192 tokens) to ~11 s on two CPU cores (four: 22 s, 4.4 GB):
        every shape, dtype and the whole position table are exercised, and time and activation memory grow
        linearly with the batch from there."""
        g = torch.Generator().manual_seed(0)
        T = self.max_len if T is None else min(T, self.max_len)
        ids = torch.randint(self.vocab_size, (batch_size, T + 1), generator=g)
        return ids[:, :-1], ids[:, 1:]


@torch.no_grad()
def init_gpt_weights(model: nn.Module, cfg: GPTConfig) -> None:
    """N(0, init_std) weights for every Linear and Embedding (GPT-1 §4.1), zero biases, LayerNorm gain 1 and bias
    0; for pre-LN (GPT-2 §2.3) the residual output projections (attention W^O, feed-forward W_2) get
    N(0, init_std / sqrt(2 n_layers)), so the variance the residual stream accumulates stays near init_std^2."""
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.normal_(0.0, cfg.init_std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            module.bias.zero_()
        if isinstance(module, nn.LayerNorm):
            module.weight.fill_(1.0)
            module.bias.zero_()
    if cfg.norm == "pre":
        std = cfg.init_std / math.sqrt(2 * cfg.n_layers)
        for name, p in model.named_parameters():
            if name.endswith(("self_attn.out.weight", "ffn.w2.weight")):
                p.normal_(0.0, std)


def last_real_index(attention_mask: torch.Tensor) -> torch.Tensor:
    """``(B,)``: the position of each row's last real token, from a ``(B, T)`` right-padded mask (bool or 0/1,
    True = real). Raises ValueError for left padding (a pad before a real token) and for a row with no token."""
    keep = attention_mask.bool()
    if (keep[:, 1:] & ~keep[:, :-1]).any():  # a real token after a pad
        raise ValueError("attention_mask must be right-padded (real tokens first, then padding): GPT reads each row's "
                         "last real token, and its positions count from the first one. Pad on the right.")
    lengths = keep.sum(dim=1)  # (B,)
    if (lengths == 0).any():
        raise ValueError(f"rows {lengths.eq(0).nonzero().flatten().tolist()} of attention_mask have no real token")
    return lengths - 1


class GPTOutput(NamedTuple):
    """What :class:`GPTModel` returns (the encoder protocol of :mod:`shoulders.heads`)."""

    hidden: torch.Tensor  # (B, T, d): h_n, one vector per position
    pooled: torch.Tensor  # (B, d): h_n at each row's last real token, the "extract" token of GPT-1 §3.3
    weights: list[torch.Tensor]  # per layer (B, H, T, T_k) if asked, else empty


class GPTModel(nn.Module):
    """The decoder-only stack: h_0 = U W_e + W_p, then ``n_layers`` causal Transformer blocks (GPT-1 eq. 2)."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.d_model = cfg.d_model
        self.W_e = nn.Embedding(cfg.vocab_size, cfg.d_model)  # token embedding matrix, also the output layer
        self.W_p = LearnedPositions(cfg.d_model, cfg.max_len)  # position embedding matrix
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = Encoder(cfg.block(), cfg.n_layers)  # its final LayerNorm exists only for pre-LN
        init_gpt_weights(self, cfg)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, cache: KVCache | None = None,
                need_weights: bool = False) -> GPTOutput:
        """Run the stack over a batch.

        Args:
            input_ids: ``(B, T)`` token ids.
            token_type_ids: accepted for the heads' protocol and ignored: GPT has no segment embeddings (GPT-1
                §3.3 separates the parts of a task input with delimiter tokens instead).
            attention_mask: ``(B, T)`` bool or 0/1, True at real tokens, padding on the right only. Causal
                attention already keeps every real token from seeing the pads after it, so the mask is used only
                to find each row's last real token (``pooled``); left padding raises a ValueError.
            cache: a :class:`KVCache` to read and extend: ``input_ids`` are then the *new* tokens, and their
                positions continue from the cache's length.
            need_weights: also return every layer's attention weights ``(B, H, T, T_k)`` (Vaswani et al.'s eq. 1
                written out).
        """
        check_ids(input_ids, "input_ids", self.cfg.vocab_size)
        B, T = input_ids.shape
        offset = cache.length("0") if cache is not None else 0
        h = self.drop(self.W_e(input_ids) + self.W_p(T, offset))  # (B, T, d): h_0 = U W_e + W_p
        h, weights = self.blocks(h, None, cache, need_weights)  # (B, T, d): h_n
        if attention_mask is None:
            pooled = h[:, -1]  # (B, d)
        else:
            if attention_mask.shape != input_ids.shape:
                raise ValueError(f"attention_mask {tuple(attention_mask.shape)} must have the shape of input_ids "
                                 f"{tuple(input_ids.shape)}")
            pooled = h[torch.arange(B, device=h.device), last_real_index(attention_mask)]  # (B, d)
        return GPTOutput(h, pooled, weights)

    def token_logprobs(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                       hidden: torch.Tensor | None = None) -> torch.Tensor:
        """``(B, T - 1)``: log P(x_t | x_<t) for t = 1 .. T-1 of every row (0 where x_t is padding).

        Zero-shot scoring compares sums of these (GPT-1 §5 "Zero-shot behaviours", GPT-2 §3); ``hidden`` (B, T, d)
        from a forward pass on the same ids skips the stack. The output layer is W_e (tied), which this module
        holds, so a task head around a :class:`GPTModel` can compute GPT's auxiliary LM loss without the LM head."""
        if hidden is None:
            hidden = self(input_ids, attention_mask=attention_mask).hidden  # (B, T, d)
        elif hidden.shape[:2] != input_ids.shape:
            raise ValueError(f"hidden {tuple(hidden.shape)} does not fit input_ids {tuple(input_ids.shape)}")
        logp = F.linear(hidden[:, :-1], self.W_e.weight).float().log_softmax(dim=-1)  # (B, T-1, V): positions 1..T-1
        out = logp.gather(-1, input_ids[:, 1:, None]).squeeze(-1)  # (B, T-1)
        if attention_mask is not None:
            out = out * attention_mask[:, 1:].to(out.dtype)
        return out

    def lm_loss(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                hidden: torch.Tensor | None = None) -> torch.Tensor:
        """-L_1 / N over the real tokens of a (padded) batch: the mean next-token NLL, a scalar.

        The auxiliary objective of fine-tuning, L_3 = L_2 + λ L_1 (GPT-1 eq. 5): pass the ``hidden`` states
        (B, T, d) the task head's :class:`GPTModel` forward already computed, so the stack runs once."""
        lp = self.token_logprobs(input_ids, attention_mask, hidden)  # (B, T-1)
        n = lp.numel() if attention_mask is None else attention_mask[:, 1:].sum()
        return -lp.sum() / max(int(n), 1)


class GPTLMHeadModel(nn.Module):
    """GPT with its language-modelling output layer: P(u) = softmax(h_n W_e^T) (GPT-1 eq. 2), W_e tied, no bias."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.transformer = GPTModel(cfg)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.W_e.weight  # (V, d): shared, not copied

    def logits(self, input_ids: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """``(B, T)`` ids -> ``(B, T, V)`` next-token logits h_n W_e^T (with a ``cache``: the new tokens only)."""
        return self.lm_head(self.transformer(input_ids, cache=cache).hidden)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        """-L_1 / N (eq. 1): the mean cross-entropy (nats per token) of predicting ``y`` from ``x``, both ``(B, T)``,
        ``y[:, t]`` the token after ``x[:, t]``. Returns ``{"loss", "lm_loss"}`` (the second detached, for logs)."""
        if y.shape != x.shape:
            raise ValueError(f"y {tuple(y.shape)} must have the shape of x {tuple(x.shape)}: y is x shifted by one")
        check_labels(y, "y", self.cfg.vocab_size)
        h = self.transformer(x).hidden  # (B, T, d); the logits h W_e^T are never held whole
        loss = linear_cross_entropy(h.flatten(0, 1), self.lm_head.weight, self.lm_head.bias, y.flatten())
        return {"loss": loss, "lm_loss": loss.detach()}

    def token_logprobs(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                       hidden: torch.Tensor | None = None) -> torch.Tensor:
        """``(B, T - 1)``: log P(x_t | x_<t) (:meth:`GPTModel.token_logprobs`, the output layer being W_e)."""
        return self.transformer.token_logprobs(input_ids, attention_mask, hidden)

    def lm_loss(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                hidden: torch.Tensor | None = None) -> torch.Tensor:
        """-L_1 / N over the real tokens (:meth:`GPTModel.lm_loss`)."""
        return self.transformer.lm_loss(input_ids, attention_mask, hidden)

    def num_parameters(self) -> int:
        """Distinct parameters (the tied output matrix counts once)."""
        return sum(p.numel() for p in self.parameters())


class _NextLogits:
    """``ids (T,) -> (V,)`` logits of the token after ``ids``, for :func:`sample_tokens`.

    Without a cache the model re-reads the last ``max_len`` ids at every step (a sliding window). With a cache it
    reads only the ids it has not seen; when the window is full it restarts the cache from the last
    ``max_len // 2`` ids (one pass over them), since every cached key and value belongs to its absolute position."""

    def __init__(self, model: GPTLMHeadModel, use_cache: bool):
        self.model, self.use_cache = model, use_cache
        self.max_len = model.cfg.max_len
        self.device = next(model.parameters()).device
        self.cache: KVCache | None = None
        self.start = 0  # ids[start:] is the window the cache covers
        self.seen = 0  # ids[start : start + seen] are in the cache

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        T = len(ids)
        if not self.use_cache:
            window = ids[-self.max_len:].to(self.device)[None]  # (1, <= max_len)
            return self.model.lm_head(self.model.transformer(window).hidden[0, -1])  # (V,): the last position only
        if self.cache is None or T - self.start > self.max_len:  # first call, or the window is full
            keep = self.max_len if self.cache is None else max(self.max_len // 2, 1)
            self.cache, self.start, self.seen = KVCache(), max(T - keep, 0), 0
        new = ids[self.start + self.seen:].to(self.device)[None]  # (1, T_new)
        self.seen = T - self.start
        return self.model.logits(new, cache=self.cache)[0, -1]  # (V,)


@torch.no_grad()
def generate(model: GPTLMHeadModel, prompt: Sequence[int] | torch.Tensor, max_new_tokens: int,
             temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None, use_cache: bool = True,
             generator: torch.Generator | None = None, eos_id: int | None = None) -> list[int]:
    """Up to ``max_new_tokens`` ids sampled after ``prompt`` (1-D ids; the prompt is not repeated in the result).

    Each step draws from softmax(filter(h_n W_e^T)) with :func:`shoulders.models.sample.filter_logits`:
    ``temperature`` (P^(1/T)), ``top_k`` (Fan et al. 2018), ``top_p`` (the nucleus of Holtzman et al. 2020);
    ``top_k=1`` is greedy decoding. With ``eos_id`` generation stops after that id (included as the last id).
    The model runs in eval mode (no dropout) and is put back in its former mode afterwards.

    ``use_cache=True`` feeds each new token alone through a :class:`KVCache` (O(T) work per step);
    ``use_cache=False`` re-runs the whole context every step (O(T^2)), the same numbers -- the same samples
    from the same ``generator`` -- while prompt + generated ids fit in ``max_len``. Beyond ``max_len`` positions
    the context is truncated: without the cache it slides (always the last ``max_len`` ids); with it, the cache
    restarts from the last ``max_len // 2`` ids whenever it is full (so a step sees between ``max_len // 2``
    and ``max_len`` ids -- cheaper, and no longer identical to the sliding window).
    """
    ids = prompt.flatten().tolist() if isinstance(prompt, torch.Tensor) else [int(i) for i in prompt]
    if not ids:
        raise ValueError("generate needs a prompt of at least one id")
    check_ids(torch.tensor(ids), "prompt", model.cfg.vocab_size, dims=1)
    was_training = model.training
    model.eval()
    try:
        return sample_tokens(_NextLogits(model, use_cache), ids, max_new_tokens, temperature=temperature,
                             top_k=top_k, top_p=top_p, generator=generator, eos_id=eos_id)
    finally:
        model.train(was_training)

"""The Transformer encoder-decoder (Vaswani et al. 2017, "Attention Is All You Need"), for translation.

    src ids ─ E·sqrt(d) + PE ─ Dropout ─ Encoder (N x [self-attention, FFN]) ─────────────────── memory
    tgt_in  ─ E·sqrt(d) + PE ─ Dropout ─ Decoder (N x [masked self-attn, cross-attn over memory, FFN])
            ─ Linear (= E^T when tied, §3.4) ─ softmax ─ P(y_t | y_<t, x)                  (§3.1, Fig. 1)

A batch is ``(src, tgt_in, tgt_out)``, three right-padded ``(B, T)`` id tensors with ``cfg.pad_id`` as padding:
``tgt_in = <bos> y_1 … y_n`` and ``tgt_out = y_1 … y_n <eos>`` (teacher forcing). ``model(src, tgt_in, tgt_out)``
returns ``{"loss", "tokens"}`` -- the label-smoothed cross-entropy per target token (§5.4,
:func:`label_smoothing_loss`) -- so :func:`shoulders.train.fit` trains it; ``model(src, tgt_in)`` returns the
logits ``(B, T, |V_tgt|)``.

Source padding is hidden from every attention by a key padding mask; the target needs only the causal mask, since
its padding is on the right, after every real query's last visible key. ``share_embeddings`` uses one matrix for
source and target (a joint vocabulary, as the paper's shared BPE); ``tie_output`` reuses the target embedding as
the pre-softmax matrix (§3.4, Press & Wolf 2017). Decoding -- greedy and beam search with a KV cache -- is in
:mod:`shoulders.models.transformer_decode`; the layers in :mod:`shoulders.models.transformer_blocks`.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError
from ..text.pad import pad_sequences
from .attention import KVCache, key_padding_mask
from .ids import check_ids, check_labels
from .transformer_blocks import BlockConfig, Decoder, Encoder, LearnedPositions, SinusoidalPositions, scaled_embedding

__all__ = ["Encoded", "Transformer", "TransformerConfig", "label_smoothing_loss", "translation_batch"]


@dataclasses.dataclass
class TransformerConfig(Config):
    """The encoder-decoder Transformer and how to train it on Multi30k de→en (Elliott et al. 2016).

    Vocabulary sizes are placeholders until the chapter builds its vocabularies (``cfg.replace(src_vocab=…)``).
    The special ids assume ``Vocab.build(…, specials=["<pad>", "<unk>", "<bos>", "<eos>"])``.
    """

    src_vocab: int = 8_000
    tgt_vocab: int = 6_000
    d_model: int = 512
    n_heads: int = 8
    d_ff: int = 2048
    enc_layers: int = 6
    dec_layers: int = 6
    dropout: float = 0.1
    attn_dropout: float = 0.0
    activation: str = "relu"
    norm_first: bool = False       # the paper's post-LN; True: pre-LN
    positions: str = "sinusoidal"  # or "learned"
    max_len: int = 256             # positions available (source and target)
    share_embeddings: bool = False  # one matrix for source and target (needs a joint vocabulary)
    tie_output: bool = True         # pre-softmax matrix = target embedding (§3.4)
    label_smoothing: float = 0.1    # ε_ls (§5.4)
    pad_id: int = 0
    unk_id: int = 1
    bos_id: int = 2
    eos_id: int = 3
    min_freq: int = 2               # vocabulary: words seen at least this often in training
    train_pairs: int | None = None  # use only the first N training pairs (smoke)
    eval_pairs: int | None = None   # decode only the first N test pairs
    batch_size: int = 128           # sentence pairs per update
    steps: int = 10_000
    warmup: int = 4_000
    lr: float = 1e-3                # peak lr of the normalised inverse-sqrt schedule
    betas: tuple[float, float] = (0.9, 0.98)  # Adam, §5.3
    adam_eps: float = 1e-9
    clip: float | None = 1.0
    beam_size: int = 4              # §6.1: beam 4, length penalty α = 0.6, max length input + 50
    length_penalty: float = 0.6
    max_extra_len: int = 50

    page_presets: ClassVar = {
        # chapter 12: the sequence lengths of the attention-cost measurement (timed median of ``timing_repeats``),
        # and the test BLEU the trained translator must reach (None: minutes of smoke training promise none)
        "smoke": dict(attention_lengths=(256, 512, 1024), timing_repeats=3, min_bleu=None),
        "cpu": dict(attention_lengths=(512, 1024, 2048), timing_repeats=3, min_bleu=15.0),
        "full": dict(attention_lengths=(512, 1024, 2048), timing_repeats=3, min_bleu=15.0),
    }
    presets: ClassVar = {
        "smoke": dict(src_vocab=2_000, tgt_vocab=2_000, d_model=64, n_heads=4, d_ff=128, enc_layers=2, dec_layers=2,
                      dropout=0.1, max_len=128, train_pairs=6_000, eval_pairs=200, batch_size=64, steps=240,
                      warmup=60, lr=2e-3, beam_size=2),
        # measured: 500 steps (2.2 epochs) reach ~26 greedy BLEU on 300 validation sentences, ~14 min on one
        # contended CPU thread of the 2-core test machine (~1.6 s a step); a laptop is several times faster
        "cpu": dict(src_vocab=8_000, tgt_vocab=6_000, d_model=128, n_heads=4, d_ff=512, enc_layers=2, dec_layers=2,
                    dropout=0.1, max_len=128, eval_pairs=1_000, batch_size=128, steps=500, warmup=300, lr=2e-3),
        # ~9M parameters: the paper's base model (d 512, 6+6 layers, 65M) shrunk for 29k sentence pairs
        "full": dict(src_vocab=8_000, tgt_vocab=6_000, d_model=256, n_heads=8, d_ff=1024, enc_layers=3, dec_layers=3,
                     dropout=0.1, max_len=256, batch_size=128, steps=12_000, warmup=1_000, lr=1e-3),
    }

    def validate(self) -> None:
        if min(self.src_vocab, self.tgt_vocab, self.d_model, self.enc_layers, self.dec_layers, self.max_len,
               self.batch_size, self.steps, self.warmup, self.beam_size) < 1:
            raise ConfigError("sizes, layers, max_len, batch_size, steps, warmup and beam_size must be positive")
        if self.positions not in ("sinusoidal", "learned"):
            raise ConfigError(f"positions must be 'sinusoidal' or 'learned', got {self.positions!r}")
        if self.share_embeddings and self.src_vocab != self.tgt_vocab:
            raise ConfigError(f"share_embeddings needs one joint vocabulary, got src_vocab={self.src_vocab} and "
                              f"tgt_vocab={self.tgt_vocab}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ConfigError(f"label_smoothing must be in [0, 1), got {self.label_smoothing}")
        ids = {"pad_id": self.pad_id, "unk_id": self.unk_id, "bos_id": self.bos_id, "eos_id": self.eos_id}
        if len(set(ids.values())) != 4 or min(ids.values()) < 0 or max(ids.values()) >= min(self.src_vocab,
                                                                                              self.tgt_vocab):
            raise ConfigError(f"special ids must be distinct and inside both vocabularies, got {ids}")
        self.block()  # d_model / n_heads, activation, dropout

    def block(self, causal: bool = False) -> BlockConfig:
        return BlockConfig(self.d_model, self.n_heads, self.d_ff, self.dropout, self.attn_dropout, self.activation,
                           self.norm_first, causal)

    def build(self) -> "Transformer":
        return Transformer(self)

    def collate(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> tuple[torch.Tensor, ...]:
        """A list of ``(source ids, target ids)`` pairs -> one ``(src, tgt_in, tgt_out)`` batch (a DataLoader's
        ``collate_fn``); see :func:`translation_batch`."""
        return translation_batch([p[0] for p in pairs], [p[1] for p in pairs], self.pad_id, self.bos_id,
                                 self.eos_id)

    def example_batch(self, batch_size: int = 2) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A tiny random ``(src, tgt_in, tgt_out)`` batch, right-padded (the last row is shorter)."""
        g = torch.Generator().manual_seed(0)
        low = max(self.pad_id, self.unk_id, self.bos_id, self.eos_id) + 1
        src = torch.randint(low, self.src_vocab, (batch_size, 7), generator=g)
        y = torch.randint(low, self.tgt_vocab, (batch_size, 5), generator=g)
        bos = torch.full((batch_size, 1), self.bos_id)
        eos = torch.full((batch_size, 1), self.eos_id)
        tgt_in, tgt_out = torch.cat([bos, y], 1), torch.cat([y, eos], 1)  # (B, 6) each
        if batch_size > 1:
            src[-1, 4:] = self.pad_id
            tgt_in[-1, 3:] = self.pad_id
            tgt_out[-1, 2] = self.eos_id
            tgt_out[-1, 3:] = self.pad_id
        return src, tgt_in, tgt_out

    def step_batch(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A random batch with the shapes of a typical training step of this preset: ``batch_size`` pairs padded
        to src ``(B, 13)`` and tgt_in/tgt_out ``(B, 18)``. Measured on Multi30k train (29,000 pairs, word-tokenised
        as chapter 12 does; German 12.6 and English 13.1 words on average), the chapter's batches of 128 pairs
        sorted by length within pools of 50 batches pad to 13.1 source and 17.4 target positions on average
        (the longest batch: 45 and 42). ``max_len`` is only an upper bound. Ids below ``src_vocab`` /
        ``tgt_vocab``; the rows have different lengths, so the padding masks are exercised."""
        g = torch.Generator().manual_seed(0)
        B, S, T = self.batch_size, 13, 17  # T words + <bos> (tgt_in) or <eos> (tgt_out): 18 positions
        low = max(self.pad_id, self.unk_id, self.bos_id, self.eos_id) + 1
        src_len = torch.randint(S - 3, S + 1, (B,), generator=g)
        tgt_len = torch.randint(T - 5, T + 1, (B,), generator=g)
        src_len[0], tgt_len[0] = S, T
        src = [torch.randint(low, self.src_vocab, (int(n),), generator=g).tolist() for n in src_len]
        tgt = [torch.randint(low, self.tgt_vocab, (int(n),), generator=g).tolist() for n in tgt_len]
        return translation_batch(src, tgt, self.pad_id, self.bos_id, self.eos_id)


def translation_batch(src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]], pad_id: int, bos_id: int,
                      eos_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sentence pairs of ids (no specials) -> right-padded ``(src (B, S), tgt_in (B, T), tgt_out (B, T))``,
    ``tgt_in = <bos> y`` and ``tgt_out = y <eos>`` (teacher forcing). ``cfg.collate`` fills in the ids."""
    if len(src) != len(tgt):
        raise ValueError(f"{len(src)} source but {len(tgt)} target sentences")
    src_ids, _ = pad_sequences(src, pad_id)
    tgt_in, _ = pad_sequences([[bos_id, *map(int, y)] for y in tgt], pad_id)
    tgt_out, _ = pad_sequences([[*map(int, y), eos_id] for y in tgt], pad_id)
    return src_ids, tgt_in, tgt_out


def label_smoothing_loss(logits: torch.Tensor, target: torch.Tensor, epsilon: float = 0.1,
                         ignore_index: int | None = None, exclude_index: int | None = None) -> torch.Tensor:
    """Cross-entropy against the smoothed target q' = (1 - ε) δ_{k,y} + ε u(k), averaged over real targets.

    Szegedy et al. (2016, §7), used by Vaswani et al. (§5.4, ε_ls = 0.1). With u uniform over all K classes
    this equals ``F.cross_entropy(..., label_smoothing=ε, ignore_index=…)``:

        loss = (1 - ε) · (-log p_y) + ε · mean_k(-log p_k)

    ``exclude_index`` (e.g. the padding id) gets no smoothing mass: u is uniform over the other K - 1 classes,
    so the model is never taught to put probability on <pad>. Targets equal to ``ignore_index`` do not count.

    Args:
        logits: ``(..., K)``; target: ``(...)`` class ids.
    """
    if logits.shape[:-1] != target.shape:
        raise ValueError(f"logits {tuple(logits.shape)} must be target {tuple(target.shape)} plus a class axis")
    logp = F.log_softmax(logits.float(), dim=-1).reshape(-1, logits.shape[-1])  # (N, K)
    target = target.reshape(-1)  # (N,)
    keep = target != ignore_index if ignore_index is not None else torch.ones_like(target, dtype=torch.bool)
    nll = -logp.gather(1, target.clamp(min=0)[:, None]).squeeze(1)  # (N,) = -log p_y
    if exclude_index is None:
        smooth = -logp.mean(dim=-1)  # (N,) = mean_k -log p_k
    else:
        smooth = -(logp.sum(dim=-1) - logp[:, exclude_index]) / (logp.shape[-1] - 1)
    loss = (1.0 - epsilon) * nll + epsilon * smooth  # (N,)
    return (loss * keep).sum() / keep.sum().clamp(min=1)


@dataclasses.dataclass
class Encoded:
    """The encoder's output for one batch of source sentences, what every decoding step reads."""

    memory: torch.Tensor               # (B, S, d)
    mask: torch.Tensor | None          # (B, 1, 1, S) True at real source tokens; None if nothing is padding
    weights: list[torch.Tensor]        # per layer (B, H, S, S) when asked for, else []

    def index_select(self, index: torch.Tensor) -> "Encoded":
        """Rows ``index`` of the batch (beam search repeats each sentence ``beam_size`` times)."""
        mask = self.mask.index_select(0, index) if self.mask is not None else None
        return Encoded(self.memory.index_select(0, index), mask, [])


class Transformer(nn.Module):
    """Encoder-decoder Transformer (Fig. 1): ``forward(src, tgt_in, tgt_out)`` is the training loss."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.src_embed = nn.Embedding(cfg.src_vocab, d)
        self.tgt_embed = self.src_embed if cfg.share_embeddings else nn.Embedding(cfg.tgt_vocab, d)
        pos = SinusoidalPositions if cfg.positions == "sinusoidal" else LearnedPositions
        self.src_pos, self.tgt_pos = pos(d, cfg.max_len), pos(d, cfg.max_len)
        self.drop = nn.Dropout(cfg.dropout)
        self.encoder = Encoder(cfg.block(), cfg.enc_layers)
        self.decoder = Decoder(cfg.block(causal=True), cfg.dec_layers)
        self.generator = nn.Linear(d, cfg.tgt_vocab, bias=False)
        for name, p in self.named_parameters():
            if p.dim() > 1 and name.startswith(("encoder.", "decoder.")):
                nn.init.xavier_uniform_(p)  # as the reference tensor2tensor / Annotated Transformer code
        for emb in {id(self.src_embed): self.src_embed, id(self.tgt_embed): self.tgt_embed}.values():
            nn.init.normal_(emb.weight, std=d ** -0.5)  # times sqrt(d) in the model: unit-variance inputs
        if cfg.tie_output:
            self.generator.weight = self.tgt_embed.weight

    def new_cache(self) -> KVCache:
        """An empty key/value cache for step-by-step decoding (:mod:`shoulders.models.transformer_decode`)."""
        return KVCache()

    def encode(self, src: torch.Tensor, need_weights: bool = False) -> Encoded:
        """``src`` (B, S) ids -> memory (B, S, d), the source padding mask, and the self-attention weights."""
        check_ids(src, "src", self.cfg.src_vocab)
        keep = src != self.cfg.pad_id  # (B, S)
        mask = None if bool(keep.all()) else key_padding_mask(keep)  # (B, 1, 1, S)
        x = self.drop(scaled_embedding(src, self.src_embed) + self.src_pos(src.shape[1]))  # (B, S, d)
        memory, weights = self.encoder(x, mask, need_weights=need_weights)
        return Encoded(memory, mask, weights)

    def decode(self, tgt_in: torch.Tensor, enc: Encoded, cache: KVCache | None = None,
               need_weights: bool = False) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """``tgt_in`` (B, T) -> logits (B, T, |V|), decoder self- and cross-attention weights per layer.

        With a ``cache``, ``tgt_in`` holds only the *new* tokens; they sit after the cached positions.
        """
        check_ids(tgt_in, "tgt_in", self.cfg.tgt_vocab)
        if tgt_in.dim() != 2 or tgt_in.shape[0] != enc.memory.shape[0]:
            raise ValueError(f"tgt_in must be (B, T) ids with B = {enc.memory.shape[0]}, got {tuple(tgt_in.shape)}")
        offset = cache.length("0.self") if cache is not None else 0
        y = self.drop(scaled_embedding(tgt_in, self.tgt_embed) + self.tgt_pos(tgt_in.shape[1], offset))  # (B, T, d)
        y, w_self, w_cross = self.decoder(y, enc.memory, None, enc.mask, cache, need_weights)
        return self.generator(y), w_self, w_cross  # (B, T, |V|)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor | None = None) -> Any:
        """Logits ``(B, T, |V|)``, or with ``tgt_out`` the training loss ``{"loss", "tokens"}``."""
        logits = self.decode(tgt_in, self.encode(src))[0]
        if tgt_out is None:
            return logits
        if tgt_out.shape != tgt_in.shape:
            raise ValueError(f"tgt_out {tuple(tgt_out.shape)} must have the shape of tgt_in {tuple(tgt_in.shape)}")
        check_labels(tgt_out, "tgt_out", self.cfg.tgt_vocab)
        loss = label_smoothing_loss(logits, tgt_out, self.cfg.label_smoothing, ignore_index=self.cfg.pad_id)
        return {"loss": loss, "tokens": (tgt_out != self.cfg.pad_id).sum()}

    @torch.no_grad()
    def attention_weights(self, src: torch.Tensor, tgt_in: torch.Tensor) -> dict[str, list[torch.Tensor]]:
        """Every layer's and head's weights, in eval mode: ``{"encoder", "decoder", "cross"}`` -> per layer
        ``(B, H, S, S)``, ``(B, H, T, T)``, ``(B, H, T, S)`` (the explicit eq. 1; training uses the fused kernel)."""
        was_training = self.training
        self.eval()
        try:
            enc = self.encode(src, need_weights=True)
            _, w_self, w_cross = self.decode(tgt_in, enc, need_weights=True)
        finally:
            self.train(was_training)
        return {"encoder": enc.weights, "decoder": w_self, "cross": w_cross}

    def num_parameters(self) -> int:
        """Distinct parameters (a tied matrix counts once)."""
        return sum(p.numel() for p in self.parameters())

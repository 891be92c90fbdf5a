"""The two encoders of the Universal Sentence Encoder (Cer et al. 2018, "Universal Sentence Encoder"), both
``forward(ids (B, T)) -> (B, dim)`` like :class:`~shoulders.models.sentence_encoders.RecurrentSentenceEncoder`:

* :class:`DeepAveragingNetwork` (Iyyer, Manjunatha, Boyd-Graber & Daumé III 2015; USE §3.2): the embeddings of
  the sentence's words *and bigrams* are averaged, and the average goes through a feed-forward network. Its cost
  is linear in the sentence length, with a tiny constant. Bigrams are hashed into ``buckets`` rows as fastText
  does (Joulin et al. 2017), here from the two word ids (``(a * P + b) mod buckets``) so that a padded batch
  hashes on the fly.
* :class:`TransformerSentenceEncoder` (USE §3.1): chapter 12's encoder blocks over the words with sinusoidal
  positions; "the element-wise sum of the representations at each word position ... divided by the square root
  of the sentence length" is the sentence vector. Self-attention makes its cost quadratic in the length, which
  chapter 8 measures against the DAN's.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from .attention import key_padding_mask
from .ids import check_ids
from .transformer_blocks import BlockConfig, Encoder, SinusoidalPositions

__all__ = ["BIGRAM_HASH_PRIME", "DeepAveragingNetwork", "TransformerSentenceEncoder", "hashed_bigrams"]

BIGRAM_HASH_PRIME = 116_049_371  # fastText's multiplier for word bigrams


def hashed_bigrams(ids: torch.Tensor, mask: torch.Tensor, vocab_size: int, buckets: int
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows ``vocab_size + (a * P + b) mod buckets`` of each adjacent pair of real words of ``ids`` ``(B, T)``,
    ``(B, T - 1)``, and where both words are real (``mask`` (B, T) True), ``(B, T - 1)``."""
    rows = vocab_size + (ids[:, :-1] * BIGRAM_HASH_PRIME + ids[:, 1:]) % buckets
    return rows, mask[:, :-1] & mask[:, 1:]


def _mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    mask = ids != pad_id  # (B, T)
    if bool((mask.sum(1) == 0).any()):
        raise ValueError("every sentence needs at least one word (a row of padding only has nothing to encode)")
    return mask


class DeepAveragingNetwork(nn.Module):
    """Average of word and hashed-bigram embeddings, then ``layers`` feed-forward layers with tanh (USE's DAN);
    the last layer's width ``dim`` is the sentence vector's."""

    def __init__(self, vocab_size: int, d_embed: int, hidden: int, dim: int, layers: int = 2, buckets: int = 100_000,
                 pad_id: int = 0, dropout: float = 0.0):
        super().__init__()
        if layers < 1 or buckets < 1:
            raise ValueError(f"need layers >= 1 and buckets >= 1, got {layers}, {buckets}")
        self.vocab_size, self.buckets, self.pad_id, self.dim = vocab_size, buckets, pad_id, dim
        self.embed = nn.Embedding(vocab_size + buckets, d_embed)  # (V + buckets, d): words, then bigram buckets
        widths = [d_embed] + [hidden] * (layers - 1) + [dim]
        blocks: list[nn.Module] = []
        for a, b in zip(widths, widths[1:]):
            blocks += [nn.Dropout(dropout), nn.Linear(a, b), nn.Tanh()]
        self.ff = nn.Sequential(*blocks)

    def average(self, ids: torch.Tensor) -> torch.Tensor:
        """``(B, d_embed)``: the mean of the rows of the sentence's words and bigrams (padding excluded)."""
        check_ids(ids, "ids", self.vocab_size, dims=2)
        mask = _mask(ids, self.pad_id)
        rows, both = hashed_bigrams(ids, mask, self.vocab_size, self.buckets)
        every = torch.cat([ids, rows], 1)  # (B, 2T - 1)
        keep = torch.cat([mask, both], 1).unsqueeze(-1).to(self.embed.weight.dtype)
        return (self.embed(every) * keep).sum(1) / keep.sum(1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.ff(self.average(ids))  # (B, dim)


class TransformerSentenceEncoder(nn.Module):
    """Scaled word embeddings + sinusoidal positions, ``layers`` encoder blocks (chapter 12's, post-LN), then the
    sum over the real words divided by sqrt(length): ``(B, d_model)``."""

    def __init__(self, vocab_size: int, d_model: int, n_heads: int, d_ff: int, layers: int = 2, max_len: int = 512,
                 pad_id: int = 0, dropout: float = 0.1):
        super().__init__()
        self.vocab_size, self.pad_id, self.dim = vocab_size, pad_id, d_model
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        self.positions = SinusoidalPositions(d_model, max_len)
        self.encoder = Encoder(BlockConfig(d_model=d_model, n_heads=n_heads, d_ff=d_ff, dropout=dropout), layers)
        self.drop = nn.Dropout(dropout)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        check_ids(ids, "ids", self.vocab_size, dims=2)
        mask = _mask(ids, self.pad_id)  # (B, T)
        x = self.drop(self.embed(ids) * math.sqrt(self.dim) + self.positions(ids.shape[1]))  # (B, T, d)
        h, _ = self.encoder(x, key_padding_mask(mask))  # (B, T, d)
        keep = mask.unsqueeze(-1).to(h.dtype)
        return (h * keep).sum(1) / keep.sum(1).sqrt()  # (B, d): USE's sum / sqrt(n)

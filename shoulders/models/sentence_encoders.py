"""A recurrent sentence encoder: word ids -> one vector per sentence, the trunk of chapters 7-8's encoders.

Embedding, then a GRU (Cho et al. 2014) or LSTM, one direction or two, then one of three poolings over the real
(unpadded) words, the three InferSent compares (Conneau et al. 2017, §3.2):

* ``last``: the final hidden state -- of each direction, concatenated for a BiRNN (Skip-thoughts' and
  Quick-thoughts' encoders, InferSent's "LSTM/GRU" baselines);
* ``max``: the largest value of each dimension over the words (InferSent's BiLSTM-max);
* ``mean``: the average over the words.

Padding never reaches a vector: sequences are packed (the RNN stops at each sentence's end) and the poolings mask
the padded positions (:func:`pool_states`; a test checks that appending padding changes nothing).
"""
from __future__ import annotations

import torch
import torch.nn as nn

from .ids import check_ids

__all__ = ["CELLS", "POOLINGS", "RecurrentSentenceEncoder", "pool_states"]

CELLS = ("gru", "lstm")
POOLINGS = ("last", "max", "mean")


def pool_states(states: torch.Tensor, mask: torch.Tensor, how: str) -> torch.Tensor:
    """``states`` (B, T, d) pooled over the positions where ``mask`` (B, T) is True: ``"max"`` or ``"mean"``
    -> (B, d); every row needs a real position."""
    keep = mask.bool().unsqueeze(-1)  # (B, T, 1)
    if how == "max":
        return states.masked_fill(~keep, torch.finfo(states.dtype).min).amax(1)
    if how == "mean":
        return (states * keep).sum(1) / keep.sum(1).clamp(min=1).to(states.dtype)
    raise ValueError(f"pooling over states must be 'max' or 'mean', got {how!r}")


class RecurrentSentenceEncoder(nn.Module):
    """``forward(ids (B, T)) -> (B, dim)``; ``dim`` = ``hidden`` x directions.

    Args:
        vocab_size, d_embed: the word table (row ``pad_id`` is padding and stays zero).
        hidden: units per direction.
        cell: ``"gru"`` or ``"lstm"``; ``bidirectional``: read both ways.
        pooling: ``"last"``, ``"max"`` or ``"mean"`` (module docstring).
        embed: share an existing word table (Skip-thoughts' decoders read the encoder's) instead of a new one.
    """

    def __init__(self, vocab_size: int, d_embed: int, hidden: int, cell: str = "gru", bidirectional: bool = False,
                 pooling: str = "last", pad_id: int = 0, embed: nn.Embedding | None = None):
        super().__init__()
        if cell not in CELLS or pooling not in POOLINGS:
            raise ValueError(f"cell must be one of {CELLS} and pooling one of {POOLINGS}, got {cell!r}, {pooling!r}")
        self.pad_id, self.cell, self.pooling = int(pad_id), cell, pooling
        self.embed = embed if embed is not None else nn.Embedding(vocab_size, d_embed, padding_idx=pad_id)
        rnn = nn.GRU if cell == "gru" else nn.LSTM
        self.rnn = rnn(self.embed.embedding_dim, hidden, batch_first=True, bidirectional=bidirectional)
        self.dim = hidden * (2 if bidirectional else 1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        check_ids(ids, "ids", self.embed.num_embeddings, dims=2)
        mask = ids != self.pad_id  # (B, T)
        lengths = mask.sum(1)
        if bool((lengths == 0).any()):
            raise ValueError("every sentence needs at least one word (a row of padding only has nothing to encode)")
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(ids), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        out, h_n = self.rnn(packed)
        if self.pooling == "last":
            h_n = h_n[0] if self.cell == "lstm" else h_n  # (directions, B, hidden)
            return h_n.transpose(0, 1).flatten(1)  # (B, dim): [forward's last ; backward's last]
        states, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=ids.shape[1])  # (B, T, dim)
        return pool_states(states, mask, self.pooling)

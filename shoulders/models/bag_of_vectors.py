"""Word vectors as a task model's first layer: the mean of a sentence's word vectors, fed to a classifier.

The survey's first way of standing on a giant (seed §2.4): pre-trained word vectors initialise the embedding layer
of a supervised model, which then either keeps them **frozen** or **fine-tunes** them with the task. The model here
is the simplest such task model -- the deep averaging network of Iyyer et al. (2015) without its hidden layers, or
fastText's classifier (Joulin et al. 2017, §2) on given vectors: a sentence is the average of its word vectors,

    u = (1 / |s|) sum_{w in s} E[w]                                                     (B, d)

and a pair (SNLI) is InferSent's [u, v, |u - v|, u * v] of its two sentences (Conneau et al. 2017, §3.2), so the
same classifier serves both. The same module with random vectors is the from-scratch control.

The protocol of :mod:`shoulders.heads`: ``forward(input_ids, token_type_ids, attention_mask)`` returns ``hidden``
(B, T, d), the word vectors, and ``pooled`` (B, d_model); the second sentence of a pair is the words with
``token_type_ids == 1``.
"""
from __future__ import annotations

import dataclasses

import torch
from torch import nn

from .ids import check_ids
from .infersent import pair_features
from .sentence_encoders import pool_states

__all__ = ["BagOfVectors", "BagOutput"]


@dataclasses.dataclass
class BagOutput:
    hidden: torch.Tensor  # (B, T, d): each word's vector (zero at padding)
    pooled: torch.Tensor  # (B, d) for a sentence, (B, 4d) for a pair


class BagOfVectors(nn.Module):
    """Averaged word vectors.

    Args:
        vectors: (V, d) the initial word vectors (a giant's, or random for the from-scratch control).
        pair: inputs are sentence pairs (``token_type_ids`` 0 then 1): pooled is [u, v, |u - v|, u * v].
        train_words: fine-tune the vectors with the task (else they stay as given).
        pad_id: the padding id (ignored where ``attention_mask`` is given).
    """

    def __init__(self, vectors: torch.Tensor, pair: bool = False, train_words: bool = True, pad_id: int = 0):
        super().__init__()
        if vectors.dim() != 2:
            raise ValueError(f"vectors must be (V, d), got shape {tuple(vectors.shape)}")
        self.words = nn.Embedding.from_pretrained(vectors.float().clone(), freeze=not train_words)
        self.pair, self.pad_id = bool(pair), int(pad_id)
        self.d_model = vectors.shape[1] * (4 if pair else 1)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None) -> BagOutput:
        check_ids(input_ids, "input_ids", self.words.num_embeddings, dims=2)  # (B, T)
        mask = (input_ids != self.pad_id) if attention_mask is None else attention_mask.bool()  # (B, T)
        h = self.words(input_ids) * mask.unsqueeze(-1)  # (B, T, d)
        if not self.pair:
            return BagOutput(h, pool_states(h, mask, "mean"))
        if token_type_ids is None:
            raise ValueError("a pair model needs token_type_ids (0 for the first sentence, 1 for the second)")
        second = token_type_ids.bool() & mask
        first = mask & ~second
        if bool((first.sum(1) == 0).any() or (second.sum(1) == 0).any()):
            raise ValueError("every pair needs at least one word in each sentence")
        return BagOutput(h, pair_features(pool_states(h, first, "mean"), pool_states(h, second, "mean")))

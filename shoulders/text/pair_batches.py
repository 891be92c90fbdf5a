"""Training batches of translation pairs (chapters 9 and 12): pairs of similar length batched together, so that
little of each batch is padding, in a new order every pass."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

__all__ = ["PairBatches"]


class PairBatches:
    """Re-iterable batches of about ``batch_size`` ``(source ids, target ids)`` pairs, reshuffled every pass.

    Each pass shuffles the pairs, sorts them by (source, target) length inside pools of ``pool`` batches, cuts the
    pools into batches and shuffles the batches -- the global RNG draws both shuffles, so
    :func:`shoulders.train.fit` (which seeds it per epoch) replays the same order on resume. ``collate`` turns a
    list of pairs into the model's batch (e.g. ``cfg.collate``: ``(src, tgt_in, tgt_out)``).
    """

    def __init__(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]], batch_size: int,
                 collate: Callable[[list[tuple[Sequence[int], Sequence[int]]]], Any], pool: int = 50):
        if not pairs:
            raise ValueError("no training pairs")
        if batch_size < 1 or pool < 1:
            raise ValueError(f"batch_size and pool must be positive, got {batch_size} and {pool}")
        self.pairs, self.batch_size, self.collate, self.pool = pairs, batch_size, collate, pool

    def __iter__(self) -> Iterator[Any]:
        B, pairs = self.batch_size, self.pairs
        order = torch.randperm(len(pairs)).tolist()
        groups = []
        for i in range(0, len(order), B * self.pool):
            chunk = sorted(order[i:i + B * self.pool], key=lambda j: (len(pairs[j][0]), len(pairs[j][1])))
            groups += [chunk[k:k + B] for k in range(0, len(chunk), B)]
        for b in torch.randperm(len(groups)).tolist():
            yield self.collate([pairs[j] for j in groups[b]])

    def __len__(self) -> int:
        return math.ceil(len(self.pairs) / self.batch_size)

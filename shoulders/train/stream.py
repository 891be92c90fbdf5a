"""Endless batches from a re-iterable, with a position that a checkpoint can restore exactly.

**How the data position is resumed.** ``batches`` is iterated once per epoch (``iter(batches)`` starts a fresh
pass) and cycled until the loop has done its updates. The stream's position is ``(epoch, index)``: the epoch
number and how many batches of that epoch were consumed.

* Each epoch's order is seeded: every ``iter()`` and ``next()`` on ``batches`` runs inside a private data RNG
  lane (:class:`~shoulders.train.rng.DataRNG`: Python's ``random``, NumPy's and torch's global CPU generators
  swapped in) reseeded at the start of epoch ``e`` from ``(seed, e)``; ``set_epoch(e)`` is called on
  ``batches``, its sampler or batch sampler when they have one (``DistributedSampler`` needs it); a
  DataLoader's own ``generator``, if it was given one, is seeded from ``(seed, e)`` too. So a shuffling
  DataLoader, or any iterable drawing from the global generators, yields the same batches for the same
  ``(seed, e)`` -- whatever dropout drew in between, and without disturbing the training RNG.
* To resume, the stream reseeds for the saved epoch, starts a new pass and consumes (and throws away)
  ``index`` batches; the next batch is the one the uninterrupted run would have drawn. This costs producing up
  to one epoch of batches again (no model computation).

What it assumes: a pass is determined by ``(seed, epoch)`` and those generators -- not by wall-clock time,
worker timing, the CUDA RNG, or state the iterable keeps between passes. The lane swap costs about 0.15 ms a
step (NumPy's state is the slow part), negligible next to a real model's step but not next to a fastText step
(~0.2 ms). A batches object that draws all of a pass's randomness when ``iter()`` is called -- and none in
``next()`` -- may say so with a class attribute ``draws_at_iter = True``; then only ``iter()`` runs in the lane
(:class:`shoulders.models.fasttext.ClassificationBatches` and :class:`shoulders.models.glove.GloVeBatches` do).
"""
from __future__ import annotations

import collections.abc
from typing import Any, Iterable, Iterator

import torch

from .errors import CheckpointError
from .rng import DataRNG, epoch_seed


class BatchStream:
    """Cycle over ``batches`` epoch after epoch, tracking ``(epoch, index)``."""

    def __init__(self, batches: Iterable[Any], seed: int):
        if not hasattr(batches, "__iter__"):
            raise TypeError(f"batches must be iterable (a list, a DataLoader, ...), got {type(batches).__name__}")
        if isinstance(batches, collections.abc.Iterator):
            raise TypeError(
                f"batches is a one-shot iterator ({type(batches).__name__}); fit needs a re-iterable so it can start "
                "a new pass each epoch and replay a pass on resume: pass a list, a DataLoader, or an object whose "
                "__iter__ starts a fresh pass (e.g. a class with `def __iter__(self): yield from ...`)"
            )
        self.batches = batches
        self.lane_per_batch = getattr(batches, "draws_at_iter", False) is not True
        self.seed = int(seed)
        self.epoch = 0
        self.index = 0  # batches consumed in the current epoch
        self._rng = DataRNG(epoch_seed(self.seed, 0))
        self._it: Iterator[Any] | None = None

    def _start_epoch(self) -> None:
        seed = epoch_seed(self.seed, self.epoch)
        self._rng.reseed(seed)
        generator = getattr(self.batches, "generator", None)
        if isinstance(generator, torch.Generator):  # a DataLoader(generator=g) shuffles with g, not the global RNG
            generator.manual_seed(seed)
        b = self.batches
        for owner in (b, getattr(b, "sampler", None), getattr(b, "batch_sampler", None)):
            set_epoch = getattr(owner, "set_epoch", None)
            if callable(set_epoch):
                set_epoch(self.epoch)
        with self._rng.active():
            self._it = iter(self.batches)
        self.index = 0

    def __iter__(self) -> "BatchStream":
        return self

    def __next__(self) -> Any:
        """The next batch; rolls over to a new epoch when a pass ends."""
        for attempt in range(2):
            if self._it is None:
                self._start_epoch()
            try:
                if self.lane_per_batch:
                    with self._rng.active():
                        batch = next(self._it)
                else:
                    batch = next(self._it)
            except StopIteration:
                if attempt == 1 or self.index == 0:
                    raise ValueError(f"batches yielded no batch in epoch {self.epoch}; "
                                     "fit needs at least one per pass") from None
                self._it = None
                self.epoch += 1
                continue
            self.index += 1
            return batch
        raise AssertionError("unreachable")

    def state_dict(self) -> dict[str, int]:
        return {"seed": self.seed, "epoch": self.epoch, "index": self.index}

    def load_state_dict(self, state: dict[str, int]) -> None:
        """Move to ``(epoch, index)`` by replaying the epoch's first ``index`` batches."""
        self.seed = int(state["seed"])
        self.epoch = int(state["epoch"])
        self._start_epoch()
        target = int(state["index"])
        with self._rng.active():
            for i in range(target):
                try:
                    next(self._it)
                except StopIteration:
                    raise CheckpointError(
                        f"cannot resume: epoch {self.epoch} of batches now has {i} batches but the checkpoint was "
                        f"taken after {target}; the data changed since the checkpoint. Use the same batches, "
                        "or start afresh in a new checkpoint folder"
                    ) from None
        self.index = target

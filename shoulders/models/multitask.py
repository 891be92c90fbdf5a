"""One sentence encoder, several objectives at once (Subramanian, Trischler, Bengio & Pal 2018, "Learning General
Purpose Distributed Sentence Representations via Large Scale Multi-task Learning"; the Universal Sentence Encoder
of Cer et al. 2018 trains its encoders the same way).

The shared encoder E (any ``forward(ids (B, T)) -> (B, dim)`` module: a BiLSTM-max, the DAN, the Transformer
encoder) serves every task, each with its own small head:

* ``"nli"`` -- InferSent's classifier on [E(premise), E(hypothesis), |u - v|, u * v] (supervised, SNLI);
* ``"qt"`` -- Quick-thoughts' neighbour classification (unsupervised, running text): E plays f, a second encoder
  g (its own parameters, or E itself with ``tie_context=True``) reads the candidates.

Training alternates the tasks' batches (:class:`TaggedBatches`): a batch is ``(task, *inputs)`` and the model returns
that task's loss times its weight, so one :func:`shoulders.train.fit` call trains them all. Whether the encoder
trained on both transfers better than either alone is what chapter 8 measures.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import torch
import torch.nn as nn

from .infersent import NLIClassifier
from .quick_thoughts import neighbour_loss

__all__ = ["MULTITASK_TASKS", "MultiTaskEncoder", "TaggedBatches"]

MULTITASK_TASKS = ("nli", "qt")


class MultiTaskEncoder(nn.Module):
    """``model(task, *inputs)`` -> the weighted loss of ``task``: ``("nli", premise, hypothesis, labels)`` or
    ``("qt", ids, positive)``; :meth:`encode` is the shared encoder."""

    def __init__(self, encoder: nn.Module, tasks: Iterable[str] = MULTITASK_TASKS, nli_hidden: int = 512,
                 context_encoder: nn.Module | None = None, tie_context: bool = False,
                 weights: Mapping[str, float] | None = None):
        super().__init__()
        self.tasks = tuple(tasks)
        unknown = sorted(set(self.tasks) - set(MULTITASK_TASKS))
        if unknown or not self.tasks:
            raise ValueError(f"tasks must be some of {MULTITASK_TASKS}, got {self.tasks}")
        self.encoder = encoder
        self.weights = {t: float((weights or {}).get(t, 1.0)) for t in self.tasks}
        if "nli" in self.tasks:
            self.nli = NLIClassifier(encoder, nli_hidden)  # shares the encoder's parameters
        if "qt" in self.tasks:
            if context_encoder is None and not tie_context:
                raise ValueError("Quick-thoughts needs a context encoder g (or tie_context=True to use E for both)")
            self.g = encoder if tie_context else context_encoder

    def encode(self, ids: torch.Tensor) -> torch.Tensor:
        return self.encoder(ids)

    def forward(self, task: str, *inputs: torch.Tensor) -> torch.Tensor:
        if task not in self.tasks:
            raise ValueError(f"this model trains {self.tasks}, got a batch of task {task!r}")
        if task == "nli":
            loss = self.nli(*inputs)
        else:
            ids, positive = inputs
            loss = neighbour_loss(self.encoder(ids), self.g(ids), positive)
        return self.weights[task] * loss


class TaggedBatches:
    """Alternate the batches of several tasks, each tagged with its name: one epoch is one pass over the first
    task's batches, with ``every[t]`` batches of task ``t`` after each of them (default one), the other tasks'
    batches cycling (a new pass starting when one ends). ``batches``: task name -> a re-iterable of tuples."""

    def __init__(self, batches: Mapping[str, Any], every: Mapping[str, int] | None = None):
        if not batches:
            raise ValueError("no tasks")
        self.batches = dict(batches)
        self.first = next(iter(self.batches))
        self.every = {t: int((every or {}).get(t, 1)) for t in self.batches if t != self.first}
        if any(n < 0 for n in self.every.values()):
            raise ValueError(f"every must be >= 0, got {self.every}")

    def __len__(self) -> int:
        return len(self.batches[self.first]) * (1 + sum(self.every.values()))

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        others = {t: self._cycle(b) for t, b in self.batches.items() if t != self.first}
        for batch in self.batches[self.first]:
            yield (self.first, *batch)
            for t, n in self.every.items():
                for _ in range(n):
                    yield (t, *next(others[t]))

    @staticmethod
    def _cycle(batches: Any) -> Iterator[tuple[Any, ...]]:
        while True:
            empty = True
            for b in batches:
                empty = False
                yield b
            if empty:
                raise ValueError("a task has no batches")

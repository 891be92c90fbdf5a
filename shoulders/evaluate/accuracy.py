"""Classification accuracy, and the floor every classifier of the book is held against: the majority class.

Accuracy is the score of SST-2, SNLI and COPA (Socher et al. 2013; Bowman et al. 2015; Roemmele et al. 2011) and
of fastText's text-classification tables (Joulin et al. 2017, Table 1). The majority-class baseline -- always
answer the label most frequent in the training data -- is the number below which a model has learned nothing
from its inputs; SuperGLUE (Wang et al. 2019) lists it, "most frequent class", first among its baselines.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Hashable, Iterable

import torch

__all__ = ["accuracy", "majority_baseline"]


def _as_list(x: Any) -> list:
    """A plain list of labels from a list, a NumPy array or a tensor (scalars become Python numbers)."""
    if hasattr(x, "tolist"):
        return x.tolist()
    return list(x)


def accuracy(pred: Any, gold: Any) -> float:
    """The share of examples, in 0-1, whose predicted label equals the gold one.

    ``pred`` holds one label per example (a list, array or tensor (N,)), or a tensor / array of scores (N, C)
    whose argmax over the classes is the prediction; ``gold`` holds the N gold labels (ints or strings).
    """
    if getattr(pred, "ndim", 1) == 2:
        pred = torch.as_tensor(pred).argmax(-1)  # (N, C) scores -> (N,) labels
    p, g = _as_list(pred), _as_list(gold)
    if len(p) != len(g):
        raise ValueError(f"{len(p)} predictions but {len(g)} gold labels")
    if not g:
        raise ValueError("accuracy needs at least one example")
    return sum(a == b for a, b in zip(p, g)) / len(g)


def majority_baseline(train_labels: Iterable[Hashable], eval_labels: Iterable[Hashable]) -> float:
    """The accuracy on ``eval_labels`` of always predicting the label most frequent in ``train_labels`` (ties go
    to the label met first). ``majority_baseline(dev, dev)`` is the share of the largest class of ``dev``, the
    "majority" line some tables print instead -- an upper bound on the honest baseline."""
    counts = Counter(_as_list(train_labels))
    if not counts:
        raise ValueError("majority_baseline needs at least one training label")
    label = counts.most_common(1)[0][0]
    gold = _as_list(eval_labels)
    return accuracy([label] * len(gold), gold)

"""A linear probe: what a frozen representation already knows about a task (Alain & Bengio 2016, "Understanding
intermediate layers using linear classifier probes"; the frozen-feature evaluations of Peters et al. 2018 and
Conneau & Kiela 2018 are of this kind).

Multinomial logistic regression on fixed feature vectors, fitted to convergence by L-BFGS with a small L2 penalty on
standardised features (mean and spread of the training features): no network is trained, so the held-out accuracy
measures the features, not a fine-tuning recipe. :func:`fit_probe` returns the fitted classifier (the small SentEval,
:mod:`shoulders.evaluate.senteval`, scores one fit on a validation and a test set); :func:`linear_probe` is the
one-call version.
"""
from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F

__all__ = ["LogisticProbe", "fit_probe", "linear_probe"]


@dataclasses.dataclass
class LogisticProbe:
    """A fitted probe: ``softmax(((x - mean) / std) W + b)``; ``W`` ``(d, K)``, ``b`` ``(K,)``."""

    mean: torch.Tensor
    std: torch.Tensor
    weight: torch.Tensor
    bias: torch.Tensor
    l2: float

    def scores(self, x: torch.Tensor) -> torch.Tensor:
        """``(N, K)`` class scores of feature vectors ``x`` ``(N, d)``."""
        if x.dim() != 2 or x.shape[1] != self.weight.shape[0]:
            raise ValueError(f"features must be (N, {self.weight.shape[0]}), got {tuple(x.shape)}")
        return ((x.double() - self.mean) / self.std) @ self.weight + self.bias

    def accuracy(self, x: torch.Tensor, y: torch.Tensor) -> float:
        """Accuracy (%) on ``x`` ``(N, d)`` with labels ``y`` ``(N,)``."""
        if len(x) != len(y):
            raise ValueError("one label per feature vector")
        return 100 * float((self.scores(x).argmax(-1) == torch.as_tensor(y).long()).double().mean())


def fit_probe(train_x: torch.Tensor, train_y: torch.Tensor, l2: float = 1e-3, max_iter: int = 200,
              classes: int | None = None) -> LogisticProbe:
    """Logistic regression fitted on ``train_x`` ``(N, d)`` with labels ``train_y`` ``(N,)`` by L-BFGS, minimising
    the mean cross-entropy + ``l2 * ||W||^2`` (``classes``: K, default the largest label + 1)."""
    if train_x.dim() != 2 or len(train_x) != len(train_y) or len(train_x) == 0:
        raise ValueError(f"features must be (N, d) with one label each, got {tuple(train_x.shape)} and "
                         f"{len(train_y)} labels")
    if l2 < 0:
        raise ValueError(f"l2 must be >= 0, got {l2}")
    y = torch.as_tensor(train_y).long()
    x = train_x.double()
    mean, std = x.mean(0), x.std(0).nan_to_num(0.0).clamp(min=1e-8)
    x = (x - mean) / std
    k = int(y.max()) + 1 if classes is None else int(classes)
    w = torch.zeros(x.shape[1], k, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(k, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=max_iter, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(x @ w + b, y) + l2 * w.square().sum()
        loss.backward()
        return loss

    opt.step(closure)
    return LogisticProbe(mean, std, w.detach(), b.detach(), float(l2))


def linear_probe(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor,
                 l2: float = 1e-3, max_iter: int = 200) -> float:
    """Held-out accuracy (%) of logistic regression fitted on ``train_x`` (N, d) with labels ``train_y`` (N,)."""
    if train_x.dim() != 2 or test_x.dim() != 2 or train_x.shape[1] != test_x.shape[1]:
        raise ValueError(f"features must be (N, d) with the same d, got {tuple(train_x.shape)}, {tuple(test_x.shape)}")
    if len(train_x) != len(train_y) or len(test_x) != len(test_y):
        raise ValueError("one label per feature vector")
    k = int(max(int(torch.as_tensor(train_y).max()), int(torch.as_tensor(test_y).max()))) + 1
    return fit_probe(train_x, train_y, l2, max_iter, classes=k).accuracy(test_x, test_y)

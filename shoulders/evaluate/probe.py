"""A linear probe: what a frozen representation already knows about a task (Alain & Bengio 2016, "Understanding
intermediate layers using linear classifier probes"; the frozen-feature evaluations of Peters et al. 2018 and
Conneau & Kiela 2018 are of this kind).

Multinomial logistic regression on fixed feature vectors, fitted to convergence by L-BFGS with a small L2 penalty on
standardised features (mean and spread of the training features): no network is trained, so the held-out accuracy
measures the features, not a fine-tuning recipe.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["linear_probe"]


def linear_probe(train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor,
                 l2: float = 1e-3, max_iter: int = 200) -> float:
    """Held-out accuracy (%) of logistic regression fitted on ``train_x`` (N, d) with labels ``train_y`` (N,)."""
    if train_x.dim() != 2 or test_x.dim() != 2 or train_x.shape[1] != test_x.shape[1]:
        raise ValueError(f"features must be (N, d) with the same d, got {tuple(train_x.shape)}, {tuple(test_x.shape)}")
    if len(train_x) != len(train_y) or len(test_x) != len(test_y):
        raise ValueError("one label per feature vector")
    x, xt = train_x.double(), test_x.double()
    mean, std = x.mean(0), x.std(0).clamp(min=1e-8)
    x, xt = (x - mean) / std, (xt - mean) / std
    k = int(max(int(train_y.max()), int(test_y.max()))) + 1
    w = torch.zeros(x.shape[1], k, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(k, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=max_iter, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(x @ w + b, train_y.long()) + l2 * w.square().sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return 100 * float(((xt @ w + b).argmax(-1) == test_y.long()).double().mean())

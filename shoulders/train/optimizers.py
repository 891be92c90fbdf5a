"""Optimiser constructors with the conventions of the papers the book follows."""
from __future__ import annotations

from typing import Any, Iterable

import torch
from torch import nn


def decay_groups(params: nn.Module | Iterable[Any], weight_decay: float) -> list[dict[str, Any]]:
    """Split parameters into a weight-decayed group (matrices) and an undecayed one (biases, norms: 1-D).

    BERT's AdamW "excludes LayerNorm and bias from weight decay"; decaying only tensors of ≥ 2 dimensions is
    the same rule by shape (nanoGPT). ``params`` may be a module, parameters, or param-group dicts (e.g. from
    :func:`~shoulders.train.discriminative_lr`), each of which is split in two with its other settings kept.
    """
    if isinstance(params, nn.Module):
        params = list(params.parameters())
    items = list(params)
    groups = items if items and isinstance(items[0], dict) else [{"params": items}]
    out = []
    for group in groups:
        ps = list(group["params"])
        rest = {k: v for k, v in group.items() if k != "params"}
        decay = [p for p in ps if p.dim() >= 2]
        no_decay = [p for p in ps if p.dim() < 2]
        wd = rest.pop("weight_decay", weight_decay)
        if decay:
            out.append({"params": decay, "weight_decay": wd, **rest})
        if no_decay:
            out.append({"params": no_decay, "weight_decay": 0.0, **rest})
    return out


def adamw(params: nn.Module | Iterable[Any], lr: float, weight_decay: float = 0.01,
          betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, **kwargs: Any) -> torch.optim.AdamW:
    """AdamW (Loshchilov & Hutter, 2019) with weight decay on matrices only (see :func:`decay_groups`).

    Uses PyTorch's fused implementation where it exists for the parameters' device (one kernel for the whole
    update; on a CPU several times faster than the default for models with a large embedding); ``fused=False``
    turns it off.
    """
    groups = decay_groups(params, weight_decay)
    if "fused" not in kwargs:
        try:
            return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, fused=True, **kwargs)
        except (RuntimeError, TypeError, ValueError):  # an older torch or a device without the fused kernel
            pass
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, **kwargs)

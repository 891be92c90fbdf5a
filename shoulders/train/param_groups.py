"""Which parameters train, and how fast: discriminative learning rates, freezing and unfreezing.

ULMFiT (Howard & Ruder, 2018, §3.2) fine-tunes each layer group with its own rate, η^{l−1} = η^l / 2.6 (eq. 2),
and unfreezes the groups one at a time from the top (§3.3, :class:`~shoulders.train.callbacks.GradualUnfreezing`).
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator, Union

import torch
from torch import nn

# A layer group: a module, one parameter, or any iterable of modules/parameters.
Group = Union[nn.Module, nn.Parameter, Iterable[Union[nn.Module, nn.Parameter]]]


def parameters_of(group: Group) -> list[nn.Parameter]:
    """The parameters of a layer group, each once, in a stable order."""
    if isinstance(group, nn.Parameter):
        items: Iterable[Any] = [group]
    elif isinstance(group, nn.Module):
        items = [group]
    else:
        items = list(group)
    out: list[nn.Parameter] = []
    seen: set[int] = set()
    for item in items:
        if isinstance(item, nn.Module):
            params: Iterator[nn.Parameter] = item.parameters()
        elif isinstance(item, torch.Tensor):
            params = iter([item])
        else:
            raise TypeError(f"a layer group holds modules or parameters, got {type(item).__name__}")
        for p in params:
            if id(p) not in seen:
                seen.add(id(p))
                out.append(p)
    return out


def discriminative_lr(layer_groups: Iterable[Group], lr: float, decay: float = 2.6,
                      **opt_kwargs: Any) -> list[dict[str, Any]]:
    """Optimiser param groups with one learning rate per layer group (ULMFiT eq. 2: η^{l−1} = η^l / decay).

    Args:
        layer_groups: ordered **bottom → top** (embeddings first, classifier head last).
        lr: the top group's rate η^L; each group below gets the rate of the one above divided by ``decay``.
        decay: 2.6 in the paper.
        **opt_kwargs: copied into every group (e.g. ``weight_decay=0.01``).

    Returns:
        ``[{"params": [...], "lr": ..., **opt_kwargs}, ...]`` bottom → top, ready for ``torch.optim.AdamW(...)``.
        Frozen parameters are included, so unfreezing them later needs no new optimiser.
    """
    groups = [parameters_of(g) for g in layer_groups]
    if not groups:
        raise ValueError("discriminative_lr needs at least one layer group")
    if decay <= 0:
        raise ValueError(f"decay must be > 0, got {decay}")
    owner: dict[int, int] = {}
    for i, params in enumerate(groups):
        if not params:
            raise ValueError(f"layer group {i} has no parameters")
        for p in params:
            if id(p) in owner:
                raise ValueError(f"a parameter {tuple(p.shape)} is in layer groups {owner[id(p)]} and {i}; "
                                 "each may be in one only")
            owner[id(p)] = i
    lrs = [float(lr)]
    for _ in groups[1:]:
        lrs.append(lrs[-1] / decay)  # η^{l−1} = η^l / decay, from the top down
    lrs.reverse()
    return [{"params": params, "lr": rate, **opt_kwargs} for params, rate in zip(groups, lrs)]


def freeze(*groups: Group) -> int:
    """Stop training these modules/parameters: ``requires_grad=False`` and their ``.grad`` cleared.

    Clearing the gradient matters: PyTorch optimisers skip parameters whose ``.grad`` is ``None`` but would keep
    applying momentum and weight decay to a frozen parameter that still carries an old gradient.
    Returns the number of parameter tensors frozen.
    """
    n = 0
    for group in groups:
        for p in parameters_of(group):
            p.requires_grad_(False)
            p.grad = None
            n += 1
    return n


def unfreeze(*groups: Group) -> int:
    """Train these modules/parameters again (``requires_grad=True``). Returns the number of tensors."""
    n = 0
    for group in groups:
        for p in parameters_of(group):
            p.requires_grad_(True)
            n += 1
    return n


def trainable(model: nn.Module) -> tuple[int, int]:
    """``(trainable, total)`` parameter counts -- a one-line check after freezing."""
    params = list(model.parameters())
    return sum(p.numel() for p in params if p.requires_grad), sum(p.numel() for p in params)

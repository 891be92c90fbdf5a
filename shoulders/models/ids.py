"""Checking token ids at a model's door: a clear error naming the argument instead of ``IndexError: index out of
range in self`` from deep inside an embedding, or a NaN loss from an empty batch.

Every model that takes ids calls :func:`check_ids` on them first. The range check costs one small reduction and,
on a GPU, one host sync per call (a device-side assert would otherwise stop the whole process with no hint).
"""
from __future__ import annotations

import torch

__all__ = ["check_ids", "check_labels"]


def _describe(x: torch.Tensor) -> str:
    return f"shape {tuple(x.shape)}, dtype {x.dtype}"


def check_ids(x: torch.Tensor, name: str, vocab_size: int, *, dims: int | None = 2, allow_empty: bool = False,
              low: int = 0, width: int | None = None) -> None:
    """``x`` must be an integer tensor of ``dims`` dimensions (``None``: any), ``width`` ids in its last dimension
    when given (a window model's context), with values in ``[low, vocab_size)``, not empty unless
    ``allow_empty``; else a ValueError/TypeError naming ``name``, its shape and dtype, and the allowed range."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a tensor of token ids, got {type(x).__name__}")
    if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids (torch.long), got {_describe(x)}: convert it with "
                        f"{name}.long() only if the values are ids")
    if dims is not None and x.dim() != dims:
        want = "(B, T)" if dims == 2 else "(B,)" if dims == 1 else f"{dims} dimensions"
        raise ValueError(f"{name} must be {want}, got {_describe(x)}")
    if width is not None and (x.dim() == 0 or x.shape[-1] != width):
        raise ValueError(f"{name} must hold {width} ids per row (the model's window), got {_describe(x)}")
    if x.numel() == 0:
        if allow_empty:
            return
        what = "is an empty batch" if x.dim() and x.shape[0] == 0 else "holds sequences of length 0"
        raise ValueError(f"{name} {what} ({_describe(x)}): give at least one example of at least one token")
    lo, hi = torch.stack([x.min(), x.max()]).tolist()
    if lo < low or hi >= vocab_size:
        raise ValueError(f"{name} holds ids from {lo} to {hi} but must lie in [{low}, {vocab_size}) "
                         f"({_describe(x)}): an id from another vocabulary, or a vocabulary larger than the model's")


def check_labels(y: torch.Tensor, name: str, num_classes: int, *, ignore_index: int | None = None) -> None:
    """Class labels ``y``: integers in ``[0, num_classes)`` (or ``ignore_index``), else an error naming ``name``."""
    if not isinstance(y, torch.Tensor) or y.dtype.is_floating_point or y.dtype == torch.bool:
        got = _describe(y) if isinstance(y, torch.Tensor) else type(y).__name__
        raise TypeError(f"{name} must be integer class ids (torch.long), got {got}")
    if y.numel() == 0:
        raise ValueError(f"{name} is empty ({_describe(y)}): give at least one label")
    kept = y if ignore_index is None else y[y != ignore_index]
    if kept.numel() == 0:
        return
    lo, hi = torch.stack([kept.min(), kept.max()]).tolist()
    if lo < 0 or hi >= num_classes:
        extra = f" (or {ignore_index}, ignored)" if ignore_index is not None else ""
        raise ValueError(f"{name} holds labels from {lo} to {hi} but must lie in [0, {num_classes}){extra} "
                         f"({_describe(y)})")

"""Padding a batch of variable-length sequences, and the boolean masks attention needs.

**Mask convention (one for the whole book):** ``True`` means *take part* -- a real token, or a key that a
query may attend to. It is the convention of the boolean ``attn_mask`` of
:func:`torch.nn.functional.scaled_dot_product_attention` (``True`` = attend; ``False`` scores become
``-inf`` before the softmax). Beware: ``nn.MultiheadAttention``'s ``key_padding_mask`` and boolean
``attn_mask`` use the *opposite* convention (``True`` = ignore); pass ``~mask`` there.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["attention_mask", "causal_mask", "pad_sequences", "padding_mask"]

_SIDES = ("right", "left")


def _check_side(name: str, side: str) -> None:
    if side not in _SIDES:
        raise ValueError(f"{name} must be 'right' or 'left', got {side!r}")


def padding_mask(lengths: Any, T: int | None = None, side: str = "right",
                 device: torch.device | str | None = None) -> torch.Tensor:
    """``(B, T)`` bool, ``True`` at real tokens, ``False`` at padding.

    ``side="right"``: row ``b`` is real at ``t < lengths[b]``; ``side="left"``: real at ``t >= T - lengths[b]``.
    ``T`` defaults to ``max(lengths)`` (0 for an empty batch).
    """
    _check_side("side", side)
    lengths = torch.as_tensor(lengths, dtype=torch.long, device=device)  # (B,)
    if lengths.dim() != 1:
        raise ValueError(f"lengths must be 1-D (B,), got shape {tuple(lengths.shape)}")
    if T is None:
        T = int(lengths.max()) if lengths.numel() else 0
    if lengths.numel() and (int(lengths.min()) < 0 or int(lengths.max()) > T):
        raise ValueError(f"lengths must lie in [0, T={T}], got {lengths.tolist()}")
    pos = torch.arange(T, device=lengths.device)  # (T,)
    if side == "right":
        return pos[None, :] < lengths[:, None]  # (B, T)
    return pos[None, :] >= (T - lengths)[:, None]  # (B, T)


def pad_sequences(seqs: Sequence[Any], pad_id: int, max_len: int | None = None, side: str = "right",
                  truncate: str = "right") -> tuple[torch.Tensor, torch.Tensor]:
    """Stack sequences of ids into a padded ``(B, T)`` LongTensor and their lengths ``(B,)``.

    ``side`` -- where padding goes: ``"right"`` (encoders, BERT) or ``"left"`` (batched generation, so every
    row's last real token sits at ``T - 1``). ``max_len`` -- if given, ``T = max_len`` exactly: shorter rows are
    padded up to it, longer ones are cut, dropping their end (``truncate="right"``) or their beginning
    (``truncate="left"``, keeping the most recent context). Without it ``T`` is the longest row.
    Returned lengths are after truncation; ``padding_mask(lengths, T, side)`` marks the real tokens.
    """
    _check_side("side", side)
    _check_side("truncate", truncate)
    rows = [torch.as_tensor(s, dtype=torch.long).reshape(-1) for s in seqs]
    if max_len is not None:
        if max_len < 0:
            raise ValueError(f"max_len must be >= 0, got {max_len}")
        rows = [r if r.numel() <= max_len else (r[:max_len] if truncate == "right" else r[r.numel() - max_len:])
                for r in rows]
    lengths = torch.tensor([r.numel() for r in rows], dtype=torch.long)  # (B,)
    T = max_len if max_len is not None else (int(lengths.max()) if rows else 0)
    dev = rows[0].device if rows else None  # tensors in -> tensors out on the same device
    lengths = lengths.to(dev)
    out = torch.full((len(rows), T), int(pad_id), dtype=torch.long, device=dev)  # (B, T)
    if rows:
        # row-major boolean assignment fills the real positions in the order of the concatenated rows
        out[padding_mask(lengths, T, side)] = torch.cat([r.to(dev) for r in rows])
    return out, lengths


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """``(T, T)`` bool, ``True`` where query ``i`` may attend key ``j``, i.e. ``j <= i`` (lower triangle).

    Same as ``is_causal=True`` in :func:`torch.nn.functional.scaled_dot_product_attention` when passed as its
    ``attn_mask`` (``True`` = take part in attention).
    """
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def attention_mask(lengths: Any, T: int | None = None, causal: bool = False, side: str = "right",
                   device: torch.device | str | None = None) -> torch.Tensor:
    """``(B, 1, T, T)`` bool ``attn_mask`` for padded batches (broadcasts over heads); ``True`` = may attend.

    Query ``i`` of row ``b`` may attend key ``j`` when key ``j`` is a real token (and ``j <= i`` if ``causal``).
    Every query may also attend *itself*: a query at a padding position (e.g. left padding with ``causal``, or
    an empty row) would otherwise have no key at all, and the softmax of an all ``-inf`` row is NaN. Outputs at
    padding positions are meaningless either way -- ignore them (the loss masks them out).
    """
    keys = padding_mask(lengths, T, side, device)  # (B, T)
    T = keys.shape[1]
    allowed = keys[:, None, :].expand(-1, T, -1)  # (B, T_q, T_k)
    if causal:
        allowed = allowed & causal_mask(T, keys.device)
    allowed = allowed | torch.eye(T, dtype=torch.bool, device=keys.device)
    return allowed[:, None]  # (B, 1, T, T)

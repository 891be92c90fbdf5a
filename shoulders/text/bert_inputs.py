"""BERT's input format (Devlin et al. 2019, §3, Figure 2): ``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]``.

Every token carries a segment id (0 for ``[CLS]``, A and its ``[SEP]``; 1 for B and its ``[SEP]``), added to the
token and position embeddings. Pre-training (:mod:`shoulders.recipes.bert`) and every fine-tuning task
(:mod:`shoulders.text.task_features`) build their inputs with :func:`pack` and batch them with :func:`collate`.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from .pad import pad_sequences, padding_mask

__all__ = ["IGNORE", "collate", "pack", "truncate_pair"]

IGNORE = -100  # the label of a position no loss scores (torch's cross_entropy ignore_index; Hugging Face's too)


def truncate_pair(a: list[int], b: list[int] | None, budget: int) -> tuple[list[int], list[int] | None]:
    """Cut tokens from the end of the longer sequence, one at a time, until ``len(a) + len(b) <= budget``.

    BERT's ``_truncate_seq_pair`` rule: the longer of the two loses tokens, so a short question keeps all of it.
    """
    if budget < (1 if b is None else 2):
        raise ValueError(f"no room left for the text: budget {budget} after the special tokens")
    a = list(a)
    b = None if b is None else list(b)
    while len(a) + (len(b) if b is not None else 0) > budget:
        if b is not None and len(b) > len(a):
            b.pop()
        else:
            a.pop()
    return a, b


def pack(a: Sequence[int], b: Sequence[int] | None, cls_id: int, sep_id: int,
         max_len: int) -> tuple[list[int], list[int]]:
    """``[CLS] a [SEP] (b [SEP])`` truncated to ``max_len`` tokens (:func:`truncate_pair`), and its segment ids."""
    specials = 2 if b is None else 3
    a, b = truncate_pair(list(a), None if b is None else list(b), max_len - specials)
    ids = [cls_id, *a, sep_id]
    segments = [0] * len(ids)
    if b is not None:
        ids += [*b, sep_id]
        segments += [1] * (len(b) + 1)
    return ids, segments


def collate(features: Sequence[Mapping[str, Any]], pad_id: int, label_pad: int = IGNORE) -> dict[str, torch.Tensor]:
    """A list of feature dicts -> one batch of right-padded tensors.

    Each feature has ``input_ids`` and ``token_type_ids`` (lists of equal length) and optionally more entries:
    a list of per-token values (padded with ``label_pad``: tagging labels, MLM labels), or a scalar (a class
    label, a span start). A feature may also hold ``choices``: a list of ``input_ids``/``token_type_ids`` dicts
    (multiple choice), which become ``(B, C, T)`` tensors.

    Returns ``input_ids`` ``(B, T)``, ``token_type_ids`` ``(B, T)``, ``attention_mask`` ``(B, T)`` bool
    (``True`` at real tokens), and every other key stacked (``(B,)`` or ``(B, T)``).
    """
    if not features:
        raise ValueError("collate needs at least one feature")
    if "choices" in features[0]:
        flat = [c for f in features for c in f["choices"]]
        C = len(features[0]["choices"])
        if any(len(f["choices"]) != C for f in features):
            raise ValueError("every multiple-choice feature needs the same number of choices")
        batch = collate(flat, pad_id, label_pad)  # (B*C, T)
        out = {k: v.reshape(len(features), C, -1) for k, v in batch.items()}  # (B, C, T)
        out.update(_stack_rest(features, ("choices",), label_pad, out["input_ids"].shape[-1]))
        return out
    ids, lengths = pad_sequences([f["input_ids"] for f in features], pad_id)  # (B, T), (B,)
    T = ids.shape[1]
    segs, _ = pad_sequences([f["token_type_ids"] for f in features], 0, max_len=T)  # (B, T)
    out = {"input_ids": ids, "token_type_ids": segs, "attention_mask": padding_mask(lengths, T)}
    out.update(_stack_rest(features, ("input_ids", "token_type_ids"), label_pad, T))
    return out


def _stack_rest(features: Sequence[Mapping[str, Any]], skip: tuple[str, ...], label_pad: int,
                T: int) -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
    for key, first in features[0].items():
        if key in skip:
            continue
        if isinstance(first, (list, tuple)):
            out[key], _ = pad_sequences([f[key] for f in features], label_pad, max_len=T)  # (B, T)
        else:
            out[key] = torch.as_tensor([f[key] for f in features])  # (B,)
    return out

"""Training the Transformer for translation (Vaswani et al. 2017, §5.3): Adam with β = (0.9, 0.98), ε = 1e-9, the
warm-up then inverse-square-root learning rate of eq. 3, gradient clipping -- one :func:`shoulders.train.fit` call.

Chapter 12 trains :class:`~shoulders.models.transformer.Transformer` on Multi30k de→en with it; the batches are
``(src, tgt_in, tgt_out)`` (``cfg.collate``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
from torch import nn

from ..models.transformer import TransformerConfig
from ..train.history import History
from ..train.loop import fit
from ..train.schedules import Schedule, inverse_sqrt

__all__ = ["optimizer", "schedule", "train"]


def optimizer(model: nn.Module, cfg: TransformerConfig) -> torch.optim.Optimizer:
    """Adam with the paper's β₁ = 0.9, β₂ = 0.98, ε = 1e-9 (§5.3), at the peak rate ``cfg.lr``."""
    return torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=cfg.betas, eps=cfg.adam_eps)


def schedule(cfg: TransformerConfig) -> Schedule:
    """Eq. 3's warm-up then inverse-sqrt decay, normalised to peak at ``cfg.lr`` after ``cfg.warmup`` steps."""
    return inverse_sqrt(cfg.warmup)


def train(model: nn.Module, batches: Iterable[Any], cfg: TransformerConfig, *,
          evaluate: Callable[[nn.Module], Mapping[str, float]] | None = None, eval_every: int | None = None,
          **fit_kwargs: Any) -> History:
    """``cfg.steps`` updates of :func:`optimizer` under :func:`schedule`, clipped at ``cfg.clip``; returns fit's
    History. ``fit_kwargs`` go to :func:`shoulders.train.fit` (``device=``, ``checkpoint=``, ``callbacks=``, ...)."""
    return fit(model, batches, optimizer(model, cfg), steps=cfg.steps, schedule=schedule(cfg), clip=cfg.clip,
               evaluate=evaluate, eval_every=eval_every, **fit_kwargs)

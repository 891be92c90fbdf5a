"""The one training loop of the book, and what goes around it.

* :func:`fit` -- train any model that returns its loss (progress bar, live plot, clipping, bf16 on CUDA,
  evaluation, early stopping, NaN guard, exact checkpoint/resume, DDP under torchrun) → :class:`History`;
* :mod:`~shoulders.train.schedules` -- learning-rate multipliers of the step: :func:`constant`,
  :func:`linear_warmup_decay` (BERT), :func:`inverse_sqrt` (Transformer), :func:`stlr` (ULMFiT),
  :func:`cosine_warmup` (GPT), :func:`one_cycle`;
* :func:`discriminative_lr`, :func:`freeze`, :func:`unfreeze`, :class:`GradualUnfreezing` (ULMFiT);
* :class:`Callback`, :class:`EarlyStopping`; :func:`adamw`;
* checkpoints: :func:`load_checkpoint`, :func:`load_weights`, :func:`latest_checkpoint`; :func:`load_or_train`;
* errors: :class:`TrainingDiverged`, :class:`CheckpointError`.
"""
from __future__ import annotations

from . import distributed, schedules
from .cache import load_or_train, models_root
from .callbacks import Callback, EarlyStopping, GradualUnfreezing, Run
from .checkpoint import latest_checkpoint, load_checkpoint, load_weights, save_checkpoint
from .errors import CheckpointError, TrainingDiverged
from .history import History
from .loop import fit
from .optimizers import adamw, decay_groups
from .param_groups import discriminative_lr, freeze, trainable, unfreeze
from .schedules import Schedule, constant, cosine_warmup, inverse_sqrt, linear_warmup_decay, one_cycle, stlr

__all__ = [
    "Callback",
    "CheckpointError",
    "EarlyStopping",
    "GradualUnfreezing",
    "History",
    "Run",
    "Schedule",
    "TrainingDiverged",
    "adamw",
    "constant",
    "cosine_warmup",
    "decay_groups",
    "discriminative_lr",
    "distributed",
    "fit",
    "freeze",
    "inverse_sqrt",
    "latest_checkpoint",
    "linear_warmup_decay",
    "load_checkpoint",
    "load_or_train",
    "load_weights",
    "models_root",
    "one_cycle",
    "save_checkpoint",
    "schedules",
    "stlr",
    "trainable",
    "unfreeze",
]

"""The one training loop of the book, and what goes around it. It knows nothing of any model family.

* :func:`fit` -- train any model that returns its loss (progress bar, clipping of dense and sparse gradients,
  bf16 on CUDA, evaluation, early stopping, NaN guard, exact checkpoint/resume, DDP under torchrun) →
  :class:`History`;
* :class:`Tracker` -- the progress bar, history and evaluation hook of a run, shared by ``fit`` and by the loops
  that keep a paper's own update rule (word2vec's SGD);
* :mod:`~shoulders.train.schedules` -- learning-rate multipliers of the step: :func:`constant`,
  :func:`linear_warmup_decay` (BERT), :func:`inverse_sqrt` (Transformer), :func:`stlr` (ULMFiT),
  :func:`cosine_warmup` (GPT), :func:`one_cycle`;
* :func:`discriminative_lr`, :func:`freeze`, :func:`unfreeze`, :class:`GradualUnfreezing` (ULMFiT);
* :class:`Callback`, :class:`EarlyStopping`, :class:`Snapshots`, :class:`Probe` (log what a run should record),
  :class:`CarryState` (truncated BPTT); :func:`adamw`;
* :func:`~shoulders.train.forked.run_forked` -- independent runs (seeds of a small network) side by side in
  forked CPU processes that share the threads; :func:`~shoulders.train.forked.run_seeded_runs` for training runs
  that seed themselves (forked only on the CPU, the random state left as in order);
* checkpoints: :func:`save_checkpoint`, :func:`load_checkpoint`, :func:`load_weights`, :func:`latest_checkpoint`;
* errors: :class:`TrainingDiverged`, :class:`CheckpointError`.

Pre-trained models that later chapters share are cached by :mod:`shoulders.giants`, not here.
"""
from __future__ import annotations

from . import distributed, schedules
from .bptt import CarryState, detach_state
from .callbacks import Callback, EarlyStopping, GradualUnfreezing, Probe, Run, Snapshots
from .checkpoint import latest_checkpoint, load_checkpoint, load_weights, save_checkpoint
from .errors import CheckpointError, TrainingDiverged
from .history import History
from .loop import fit
from .optimizers import adamw, decay_groups
from .param_groups import discriminative_lr, freeze, trainable, unfreeze
from .progress import Tracker
from .schedules import Schedule, constant, cosine_warmup, inverse_sqrt, linear_warmup_decay, one_cycle, stlr

__all__ = [
    "Callback",
    "CarryState",
    "CheckpointError",
    "EarlyStopping",
    "GradualUnfreezing",
    "History",
    "Probe",
    "Run",
    "Schedule",
    "Snapshots",
    "Tracker",
    "TrainingDiverged",
    "adamw",
    "constant",
    "cosine_warmup",
    "decay_groups",
    "detach_state",
    "discriminative_lr",
    "distributed",
    "fit",
    "freeze",
    "inverse_sqrt",
    "latest_checkpoint",
    "linear_warmup_decay",
    "load_checkpoint",
    "load_weights",
    "one_cycle",
    "save_checkpoint",
    "schedules",
    "stlr",
    "trainable",
    "unfreeze",
]

"""Hooks into :func:`shoulders.train.fit` for chapter-specific tricks.

A callback subclasses :class:`Callback` and overrides the hooks it needs; each receives the :class:`Run`
(model, optimiser, step, history, ...). ``state_dict``/``load_state_dict`` put the callback's own state into
checkpoints (tensors and plain containers only), so a resumed run behaves like an uninterrupted one.

Order within update ``t``: the update, ``on_step_end``, then (when due) evaluation and ``on_evaluate``, then the
checkpoint. ``on_epoch_end`` runs when a pass over the batches ends, just before the first update of the next.
"""
from __future__ import annotations

import copy
import dataclasses
import math
import warnings
from pathlib import Path
from typing import Any, Iterable, Sequence

import torch
from torch import nn

from .history import History
from .param_groups import Group, freeze, unfreeze


@dataclasses.dataclass
class Run:
    """What a callback can see and change during :func:`~shoulders.train.fit`."""

    model: nn.Module  # the bare model (not the DDP wrapper)
    optimizer: torch.optim.Optimizer
    history: History
    steps: int  # the update count fit will reach
    step: int = 0  # updates done so far
    epoch: int = 0
    rank: int = 0
    world_size: int = 1
    checkpoint: Path | None = None  # the run's checkpoint folder, if any
    stop_reason: str | None = None

    def stop(self, reason: str) -> None:
        """Finish training after the current step (evaluation and checkpoint of this step still happen)."""
        self.stop_reason = reason

    @property
    def is_main(self) -> bool:
        return self.rank == 0


class Callback:
    """Base class: every hook is a no-op."""

    def on_fit_start(self, run: Run) -> None: ...

    def on_step_end(self, run: Run, logs: dict[str, float]) -> None: ...

    def on_epoch_end(self, run: Run, epoch: int) -> None: ...

    def on_evaluate(self, run: Run, metrics: dict[str, float]) -> None: ...

    def on_fit_end(self, run: Run) -> None: ...

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class EarlyStopping(Callback):
    """Stop when ``metric`` has not improved for ``patience`` evaluations (Prechelt, 1998, "early stopping").

    Args:
        metric: a key returned by ``evaluate(model)``, e.g. ``"val_loss"``.
        patience: evaluations without improvement tolerated before stopping.
        mode: ``"min"`` (lower is better) or ``"max"``.
        min_delta: an improvement must beat the best by more than this.
        restore_best: at the end of ``fit``, load the weights of the best evaluation back into the model.

    After ``fit``, ``best``, ``best_step`` and ``stopped_step`` (``None`` if it never stopped) tell what happened.
    """

    def __init__(self, metric: str, patience: int = 3, mode: str = "min", min_delta: float = 0.0,
                 restore_best: bool = True):
        if mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
        if patience < 0:
            raise ValueError(f"patience must be >= 0, got {patience}")
        self.metric, self.patience, self.mode = metric, int(patience), mode
        self.min_delta, self.restore_best = float(min_delta), restore_best
        self.best: float | None = None
        self.best_step: int | None = None
        self.stopped_step: int | None = None
        self.wait = 0
        self._best_weights: dict[str, torch.Tensor] | None = None

    def _improved(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        if self.best is None:
            return True
        return value < self.best - self.min_delta if self.mode == "min" else value > self.best + self.min_delta

    def on_evaluate(self, run: Run, metrics: dict[str, float]) -> None:
        if self.metric not in metrics:
            raise KeyError(f"EarlyStopping watches {self.metric!r} but evaluate() returned {sorted(metrics)}")
        value = float(metrics[self.metric])
        if self._improved(value):
            self.best, self.best_step, self.wait = value, run.step, 0
            if self.restore_best:
                self._best_weights = {k: v.detach().to("cpu", copy=True) for k, v in run.model.state_dict().items()}
            return
        if not math.isfinite(value):
            warnings.warn(f"EarlyStopping: {self.metric} is {value} at step {run.step}; counted as no improvement",
                          RuntimeWarning, stacklevel=2)
        self.wait += 1
        if self.wait > self.patience:
            self.stopped_step = run.step
            best = "any finite value" if self.best is None else f"{self.best:.6g} (step {self.best_step})"
            run.stop(f"early stopping: {self.metric} did not improve on {best} for {self.wait} evaluations")

    def on_fit_end(self, run: Run) -> None:
        if self.restore_best and self._best_weights is not None:
            run.model.load_state_dict(self._best_weights)

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "best_step": self.best_step, "wait": self.wait, "stopped_step": self.stopped_step,
                "best_weights": self._best_weights}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best, self.best_step, self.wait = state["best"], state["best_step"], state["wait"]
        self.stopped_step, self._best_weights = state["stopped_step"], state["best_weights"]


class GradualUnfreezing(Callback):
    """Train only the top layer group first, then unfreeze one more group from the top every ``every``.

    ULMFiT (Howard & Ruder, 2018, §3.3): "we first unfreeze the last layer and fine-tune all unfrozen layers for
    one epoch. We then unfreeze the next lower frozen layer and repeat, until we fine-tune all layers".

    Args:
        layer_groups: ordered bottom → top, as for :func:`~shoulders.train.discriminative_lr` (give the
            optimiser *all* groups; frozen parameters get no gradient, so the optimiser leaves them alone).
        every: ``"epoch"`` (unfreeze at each new pass over the batches) or a number of updates.

    The count of unfrozen groups is logged to the history as ``unfrozen`` whenever it changes. Under DDP the
    set of trained parameters must stay fixed, so this callback refuses to run there.
    """

    def __init__(self, layer_groups: Sequence[Group], every: str | int = "epoch"):
        self.layer_groups = list(layer_groups)
        if not self.layer_groups:
            raise ValueError("GradualUnfreezing needs at least one layer group")
        if every != "epoch" and not (isinstance(every, int) and every >= 1):
            raise ValueError(f"every must be 'epoch' or a positive number of steps, got {every!r}")
        self.every = every
        self.unfrozen = 0

    def _apply(self, run: Run, log: bool = True) -> None:
        n = len(self.layer_groups)
        k = min(self.unfrozen, n)
        freeze(*self.layer_groups[: n - k])
        unfreeze(*self.layer_groups[n - k:])
        if log:
            run.history.log(run.step, unfrozen=k)

    def on_fit_start(self, run: Run) -> None:
        if run.world_size > 1:
            raise RuntimeError("GradualUnfreezing changes which parameters train, which DDP does not allow; "
                               "run it in one process")
        fresh = self.unfrozen == 0  # a resumed run already logged its count
        self.unfrozen = max(self.unfrozen, 1)
        self._apply(run, log=fresh)

    def _more(self, run: Run) -> None:
        if self.unfrozen < len(self.layer_groups):
            self.unfrozen += 1
            self._apply(run)

    def on_epoch_end(self, run: Run, epoch: int) -> None:
        if self.every == "epoch":
            self._more(run)

    def on_step_end(self, run: Run, logs: dict[str, float]) -> None:
        if isinstance(self.every, int) and run.step % self.every == 0:
            self._more(run)

    def state_dict(self) -> dict[str, Any]:
        return {"unfrozen": self.unfrozen}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.unfrozen = int(state["unfrozen"])


def as_callbacks(callbacks: Iterable[Callback] | Callback | None) -> list[Callback]:
    if callbacks is None:
        return []
    if isinstance(callbacks, Callback):
        return [callbacks]
    out = list(callbacks)
    for cb in out:
        if not isinstance(cb, Callback):
            raise TypeError(f"callbacks must be Callback instances, got {type(cb).__name__}")
    return out


class Snapshots(Callback):
    """Keep a CPU copy of the model's weights after each of ``steps`` updates: ``states[step]`` is the
    ``state_dict`` then (tied weights stay tied). What a giant stores beside its final weights, so a page can
    measure what more training buys without training again (chapter 14a). The copies go into checkpoints, so a
    resumed run still has the snapshots taken before it was stopped."""

    def __init__(self, steps: Iterable[int]):
        self.steps = {int(s) for s in steps}
        self.states: dict[int, dict[str, torch.Tensor]] = {}

    def on_step_end(self, run: Run, logs: dict[str, float]) -> None:
        if run.step in self.steps:
            self.states[run.step] = copy.deepcopy(run.model).to("cpu").state_dict()

    def state_dict(self) -> dict[str, Any]:
        return {"states": {str(k): v for k, v in self.states.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.states = {int(k): dict(v) for k, v in state.get("states", {}).items()}


class Probe(Callback):
    """Log ``fn(model)`` -- numbers by name -- into the history after every ``every`` updates (and after the last):
    quantities a run should record that are not outputs of the model's forward, e.g. the layer weights of
    ELMo's scalar mix while a task trains (chapter 10, :func:`shoulders.viz.layer_mix`)."""

    def __init__(self, fn: Any, every: int = 1):
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.fn, self.every = fn, int(every)

    def on_step_end(self, run: Run, logs: dict[str, float]) -> None:
        if run.step % self.every == 0 or run.step == run.steps:
            values = self.fn(run.model)
            run.history.log(run.step, **{k: float(v.detach() if torch.is_tensor(v) else v) for k, v in values.items()})

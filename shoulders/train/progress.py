"""What a reader sees and what a run records while a model trains: the progress bar, the history and the
evaluation hook.

:class:`Tracker` bundles the three for one run. :func:`~shoulders.train.fit` uses it, and so does every loop
that keeps a paper's own update rule instead of an optimiser (word2vec's hand-written SGD,
:mod:`shoulders.recipes.word_vectors`): the same bar, the same :class:`~shoulders.train.History`, the same
evaluation hook (:func:`run_evaluate`: eval mode, no gradients, train mode restored, names checked).

A live loss plot in a notebook is a callback of :mod:`shoulders.viz` (:class:`shoulders.viz.LivePlot`), so the
loop itself draws nothing.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import torch
from torch import nn

from .history import History

__all__ = ["RESERVED", "ProgressBar", "Tracker", "run_evaluate"]

RESERVED = ("grad_norm", "time", "epoch", "unfrozen")
"""Series names a training loop logs itself; a model output or an evaluation metric may not reuse them."""


class ProgressBar:
    """``tqdm.auto`` bar over updates (or words, ...), showing the smoothed loss, the lr and the latest metrics."""

    def __init__(self, total: int, initial: int = 0, enabled: bool = True, desc: str = "train", unit: str = "step"):
        self.bar = None
        self._avg, self._weight = 0.0, 0.0
        self._metrics: dict[str, float] = {}
        if enabled:
            from tqdm.auto import tqdm

            # mininterval: at most one redraw a second -- in a notebook each redraw is a widget message, and a
            # flood of them under load has made nbval give up waiting for a cell's output
            self.bar = tqdm(total=total, initial=initial, desc=desc, unit=unit, unit_scale=unit != "step",
                            dynamic_ncols=True, smoothing=0.05, mininterval=1.0)

    def update(self, loss: float | None, lr: float | None, n: int = 1) -> None:
        if self.bar is None:
            return
        if loss is not None and math.isfinite(loss):
            self._avg = 0.98 * self._avg + 0.02 * loss
            self._weight = 0.98 * self._weight + 0.02
        post: dict[str, Any] = {"loss": f"{self._avg / self._weight:.4g}" if self._weight else "nan"}
        if lr is not None:
            post["lr"] = f"{lr:.3g}"
        post.update({k: f"{v:.4g}" for k, v in self._metrics.items()})
        self.bar.set_postfix(post, refresh=False)
        self.bar.update(n)

    def metrics(self, metrics: Mapping[str, float]) -> None:
        self._metrics = dict(list(metrics.items())[:3])

    def write(self, msg: str) -> None:
        """A line above the bar (nothing when the bar is off: ``progress=False`` means quiet)."""
        if self.bar is not None:
            self.bar.write(msg)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_evaluate(evaluate: Callable[[nn.Module], Mapping[str, Any]], model: nn.Module) -> dict[str, float]:
    """``evaluate(model)`` in eval mode without gradients; the train/eval mode is restored afterwards.

    Returns the metrics as floats; names that clash with what a loop logs itself (:data:`RESERVED`, ``loss``,
    ``lr/*``) are an error.
    """
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            out = evaluate(model)
    finally:
        model.train(was_training)
    if not isinstance(out, Mapping):
        raise TypeError("evaluate(model) must return a dict of metrics, e.g. {'val_loss': 3.2}; "
                        f"got {type(out).__name__}")
    metrics = {str(k): float(v.item() if isinstance(v, torch.Tensor) else v) for k, v in out.items()}
    clash = [k for k in metrics if k in RESERVED or k == "loss" or k.startswith("lr/")]
    if clash:
        raise ValueError(f"evaluate() returned {clash}, which clash with names fit logs itself; "
                         "rename them (e.g. 'val_loss')")
    return metrics


class Tracker:
    """The progress bar, the history and the evaluation schedule of one training run.

    Args:
        total: the bar's length (updates, or words for word2vec's bar: ``unit="word"``).
        history: continue this history (a resumed run), else a new one.
        evaluate: ``evaluate(model) -> {name: number}``, run by :meth:`evaluate` (see :func:`run_evaluate`).
        eval_every: :meth:`due` is true every this many updates; with ``last`` also at update ``last``.
        last: the final update, when the loop knows it in advance.
        progress: show the bar.
        initial: where the bar starts (a resumed run).
    """

    def __init__(self, total: int, history: History | None = None, *,
                 evaluate: Callable[[nn.Module], Mapping[str, Any]] | None = None, eval_every: int | None = None,
                 last: int | None = None, progress: bool = True, initial: int = 0, desc: str = "train",
                 unit: str = "step"):
        if eval_every is not None and int(eval_every) < 1:
            raise ValueError(f"eval_every must be >= 1 or None, got {eval_every}")
        self.history = history if history is not None else History()
        self.evaluate_fn, self.eval_every, self.last = evaluate, eval_every, last
        self.bar = ProgressBar(total=total, initial=initial, enabled=progress, desc=desc, unit=unit)

    def log(self, step: int, **values: float) -> None:
        """Record ``values`` at ``step`` in the history."""
        self.history.log(step, **values)

    def advance(self, loss: float | None = None, lr: float | None = None, n: int = 1) -> None:
        """Move the bar ``n`` units, showing the (smoothed) ``loss`` and the ``lr``."""
        self.bar.update(loss, lr, n)

    def due(self, step: int) -> bool:
        """Whether the evaluation hook runs after update ``step``."""
        if self.evaluate_fn is None:
            return False
        return (self.eval_every is not None and step % int(self.eval_every) == 0) or step == self.last

    def evaluate(self, model: nn.Module, step: int) -> dict[str, float]:
        """Run the evaluation hook, log its metrics at ``step`` and show them on the bar."""
        if self.evaluate_fn is None:
            raise RuntimeError("this tracker has no evaluate function")
        metrics = run_evaluate(self.evaluate_fn, model)
        self.history.log(step, **metrics)
        self.bar.metrics(metrics)
        return metrics

    def write(self, msg: str) -> None:
        self.bar.write(msg)

    def close(self) -> None:
        self.bar.close()

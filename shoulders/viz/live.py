"""A live training plot for a notebook: a :class:`~shoulders.train.Callback` that redraws the loss as it falls.

Pass it to :func:`shoulders.train.fit` (``callbacks=[sh.viz.LivePlot()]``). It draws one small figure, displayed
once with a ``display_id`` and updated in place, so the cell output stays a single image -- which is also what
the static book shows. Outside a notebook it does nothing.
"""
from __future__ import annotations

import time
from typing import Any

from ..train.callbacks import Callback, Run
from ..train.history import History, ema
from .figure import BookFigure

__all__ = ["LivePlot", "in_notebook"]


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where a figure can be updated in place)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


class LivePlot(Callback):
    """The training loss (and the evaluation metrics, else the learning rate) redrawn during ``fit``.

    Args:
        redraws: about how many times a run is redrawn (each redraw costs tens of milliseconds); never more
            often than once a second.
    """

    def __init__(self, redraws: int = 50):
        if redraws < 1:
            raise ValueError(f"redraws must be >= 1, got {redraws}")
        self.redraws = int(redraws)
        self.handle: Any = None
        self._last = 0.0
        self._every = 1
        self._total = 1

    def on_fit_start(self, run: Run) -> None:
        if not (run.is_main and in_notebook()):
            return
        from IPython.display import display

        self._total = run.steps
        self._every = max(1, (run.steps - run.step) // self.redraws)
        self.fig = BookFigure(figsize=(7, 3), layout="constrained")
        self.ax_loss = self.fig.add_subplot(1, 2, 1)
        self.ax_metric = self.fig.add_subplot(1, 2, 2)
        self.handle = display(self.fig, display_id=True)

    def on_step_end(self, run: Run, logs: dict[str, float]) -> None:
        if self.handle is not None and run.step % self._every == 0 and time.monotonic() - self._last >= 1.0:
            self.draw(run.history)

    def on_fit_end(self, run: Run) -> None:
        if self.handle is not None:
            self.draw(run.history)
            self.handle = None

    def draw(self, history: History) -> None:
        """Redraw both panels from ``history`` and update the displayed image."""
        self._last = time.monotonic()
        ax = self.ax_loss
        ax.clear()
        steps, loss = history.series("loss") if "loss" in history else ((), ())
        if len(steps):
            ax.plot(steps, loss, lw=0.8, alpha=0.35, color="C0")
            ax.plot(steps, ema(loss, 0.95), lw=1.5, color="C0")
        ax.set_xlim(0, self._total)
        ax.set_title("training loss")
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax = self.ax_metric
        ax.clear()
        n = len(history)
        metric_keys = [k for k in history.keys()
                       if k != "loss" and not k.startswith("lr/") and len(history.series(k)[0]) < n]
        for i, key in enumerate(metric_keys[:4]):
            s, v = history.series(key)
            ax.plot(s, v, "o-", ms=3, lw=1, color=f"C{i + 1}", label=key)
        if metric_keys:
            ax.legend(fontsize=8)
            ax.set_title("evaluation")
        else:
            lr_steps, lr = history.series("lr/0") if "lr/0" in history else ((), ())
            ax.plot(lr_steps, lr, color="C1")
            ax.set_title("learning rate (group 0)")
        ax.set_xlim(0, self._total)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        self.handle.update(self.fig)

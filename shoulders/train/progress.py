"""What a reader watches while a model trains: a tqdm progress bar and, in a notebook, a live loss plot."""
from __future__ import annotations

import math
import time
from typing import Any

from .history import History, ema


class ProgressBar:
    """``tqdm.auto`` bar over updates, showing the smoothed loss, the lr of group 0 and the latest metrics."""

    def __init__(self, total: int, initial: int, enabled: bool, desc: str = "train"):
        self.bar = None
        self._avg, self._weight = 0.0, 0.0
        self._metrics: dict[str, float] = {}
        if enabled:
            from tqdm.auto import tqdm

            # mininterval: at most one redraw a second -- in a notebook each redraw is a widget message, and a
            # flood of them under load has made nbval give up waiting for a cell's output
            self.bar = tqdm(total=total, initial=initial, desc=desc, dynamic_ncols=True, smoothing=0.05,
                            mininterval=1.0)

    def update(self, loss: float, lr: float | None) -> None:
        if self.bar is None:
            return
        if math.isfinite(loss):
            self._avg = 0.98 * self._avg + 0.02 * loss
            self._weight = 0.98 * self._weight + 0.02
        post: dict[str, Any] = {"loss": f"{self._avg / self._weight:.4g}" if self._weight else "nan"}
        if lr is not None:
            post["lr"] = f"{lr:.3g}"
        post.update({k: f"{v:.4g}" for k, v in self._metrics.items()})
        self.bar.set_postfix(post, refresh=False)
        self.bar.update(1)

    def metrics(self, metrics: dict[str, float]) -> None:
        self._metrics = dict(list(metrics.items())[:3])

    def write(self, msg: str) -> None:
        """A line above the bar (nothing when the bar is off: ``progress=False`` means quiet)."""
        if self.bar is not None:
            self.bar.write(msg)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where a figure can be updated in place)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


class LivePlot:
    """A loss curve (plus evaluation metrics) redrawn in place every ``every`` updates, in a notebook only.

    One small matplotlib figure, displayed once with a ``display_id`` and updated through it, so the cell
    output stays a single image (which is also what the static book shows). Redrawing costs tens of
    milliseconds, so ``every`` is chosen to redraw at most ~50 times a run and never more often than once a
    second.
    """

    def __init__(self, every: int, total: int, enabled: bool):
        self.every = max(1, int(every))
        self.handle = None
        self._last = 0.0
        if not (enabled and in_notebook()):
            return
        from IPython.display import display

        from ..viz.figure import BookFigure  # shows itself as a PNG, with or without pyplot's inline backend

        self.fig = BookFigure(figsize=(7, 3), layout="constrained")
        self.ax_loss = self.fig.add_subplot(1, 2, 1)
        self.ax_metric = self.fig.add_subplot(1, 2, 2)
        self.total = total
        self.handle = display(self.fig, display_id=True)

    def update(self, history: History, step: int, force: bool = False) -> None:
        if self.handle is None or (not force and (step % self.every or time.monotonic() - self._last < 1.0)):
            return
        self._last = time.monotonic()
        ax = self.ax_loss
        ax.clear()
        steps, loss = history.series("loss") if "loss" in history else ((), ())
        if len(steps):
            ax.plot(steps, loss, lw=0.8, alpha=0.35, color="C0")
            ax.plot(steps, ema(loss, 0.95), lw=1.5, color="C0")
        ax.set_xlim(0, self.total)
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
        ax.set_xlim(0, self.total)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        self.handle.update(self.fig)

"""Training curves: loss and metrics against the update step, from a run's history.

Works with any object that has ``series(key) -> (steps, values)`` and ``keys()`` (a
:class:`shoulders.train.History`, or a stand-in in tests).
"""
from __future__ import annotations

import fnmatch
import math
from typing import Any, Sequence

import numpy as np

from ..train.history import ema  # bias-corrected exponential moving average
from .figure import BookFigure, subplots

__all__ = ["default_keys", "expand_keys", "training_curves"]

DENSE = 50
"""A series with more points than this is "per step" (plotted as a thin line, smoothed); fewer: markers."""


def expand_keys(history: Any, keys: Sequence[Any]) -> list[list[str]]:
    """One list of series names per panel.

    Each entry of ``keys`` is a name (``"loss"``), a glob (``"lr/*"``: all matches in one panel) or a
    tuple/list of names and globs drawn together (``("loss", "val_loss")``). Unknown names raise ``KeyError``
    listing what the history has.
    """
    available = list(history.keys())
    panels: list[list[str]] = []
    for entry in ([keys] if isinstance(keys, str) else keys):
        names: list[str] = []
        for pattern in ([entry] if isinstance(entry, str) else entry):
            hits = [k for k in available if fnmatch.fnmatchcase(k, pattern)] if any(c in pattern for c in "*?[") \
                else ([pattern] if pattern in available else [])
            if not hits:
                raise KeyError(f"history has no series matching {pattern!r}; it has {available}")
            if any(c in pattern for c in "*?[") and all(h.rsplit("/", 1)[-1].isdigit() for h in hits):
                hits.sort(key=lambda h: int(h.rsplit("/", 1)[-1]))  # lr/0, lr/1, ..., lr/10
            names += [h for h in hits if h not in names]
        panels.append(names)
    return panels


def default_keys(history: Any) -> list[str]:
    """``loss`` and every series logged less often than it, except learning rates: what a run is judged by."""
    names = list(history.keys())
    n = len(history.series("loss")[0]) if "loss" in names else 0
    rest = [k for k in names if k != "loss" and not k.startswith("lr/") and len(history.series(k)[0]) < n]
    return (["loss"] if "loss" in names else []) + rest


def _smoothed(name: str, n: int, smooth: float | None, smooth_keys: Sequence[str]) -> bool:
    return bool(smooth) and n > DENSE and any(fnmatch.fnmatchcase(name, p) for p in smooth_keys)


def training_curves(history: Any, keys: Sequence[Any] | None = None, *, smooth: float | None = 0.9,
                    smooth_keys: Sequence[str] = ("*loss*",), logy: bool | Sequence[str] = False, ncols: int = 3,
                    title: str | None = None, panel_size: tuple[float, float] = (4.0, 2.8)) -> BookFigure:
    """A static figure: one panel per entry of ``keys``, each series against the step.

    Args:
        history: what a run recorded (``series(key)``, ``keys()``).
        keys: panels, see :func:`expand_keys` -- e.g. ``("loss", ("val_ppl",), "lr/*")``; default: ``loss`` and
            every series logged less often than the loss (the evaluation metrics), one panel each.
        smooth: β of a bias-corrected EMA drawn over every dense series (more than ``DENSE`` points) whose name
            matches ``smooth_keys`` (default: the losses; learning rates and other exact series are never
            smoothed), the raw series staying faint underneath; ``None`` or ``0`` draws raw series only.
        smooth_keys: globs of the series that may be smoothed.
        logy: log-scale the y axis of every panel (``True``) or of the panels containing these names.
        ncols: panels per row.

    Lines per panel: one per series, plus one EMA line per smoothed series.
    Returns a :class:`~shoulders.viz.figure.BookFigure` (shown as a PNG when it is the cell's value).
    """
    panels = expand_keys(history, default_keys(history) if keys is None else keys)
    if not panels:
        raise ValueError("training_curves needs at least one key")
    ncols = max(1, min(ncols, len(panels)))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = subplots(nrows, ncols, figsize=(panel_size[0] * ncols, panel_size[1] * nrows), squeeze=False)
    flat = axes.ravel()
    for ax in flat[len(panels):]:
        fig.delaxes(ax)
    for ax, names in zip(flat, panels):
        any_smoothed = False
        for j, name in enumerate(names):
            steps, values = history.series(name)
            steps, values = np.asarray(steps), np.asarray(values, dtype=np.float64)
            color = f"C{j % 10}"
            dense = len(steps) > DENSE
            smoothed = _smoothed(name, len(steps), smooth, smooth_keys)
            any_smoothed |= smoothed
            if smoothed:
                ax.plot(steps, values, lw=0.8, alpha=0.3, color=color)
                ax.plot(steps, ema(values, smooth), lw=1.5, color=color, label=f"{name} (EMA {smooth:g})")
            else:
                ax.plot(steps, values, "-" if dense else "o-", lw=1.2, ms=3, color=color, label=name)
        if logy is True or (not isinstance(logy, bool) and any(n in logy for n in names)):
            ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_title(", ".join(names) if len(names) <= 3 else f"{names[0]} … {names[-1]}", fontsize=10)
        ax.grid(alpha=0.3)
        if len(names) > 1 or any_smoothed:
            ax.legend(fontsize=7)
    if title:
        fig.suptitle(title)
    return fig

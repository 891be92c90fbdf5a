"""The small SentEval as a picture (chapters 7 and 8): one panel per task, one horizontal bar per frozen encoder
(its test accuracy), and the task's majority class as a dashed line -- the floor every encoder must clear.

The rows are what :func:`shoulders.evaluate.senteval.evaluate_encoder` returns, collected per encoder:
``{encoder name: {task: TaskResult}}``, the same mapping :func:`~shoulders.evaluate.senteval.results_table` reads.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


from .figure import BookFigure, subplots

__all__ = ["senteval_bars"]


def senteval_bars(results: Mapping[str, Mapping[str, Any]], title: str = "", height: float = 3.2) -> BookFigure:
    """Test accuracy (%) of every encoder of ``results`` on each of its tasks, the majority class dashed; the
    encoders' names label the first panel's rows."""
    names = list(results)
    tasks = list(dict.fromkeys(t for per in results.values() for t in per))
    if not names or not tasks:
        raise ValueError("senteval_bars needs at least one encoder's results")
    fig, axes = subplots(1, len(tasks), figsize=(3.2 * len(tasks), height), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        acc = [results[n][task].test for n in names]  # (encoders,)
        majority = next(results[n][task].majority for n in names)
        ax.barh(range(len(names)), acc, color="#6baed6")
        ax.axvline(majority, color="#444", ls="--", lw=1)
        ax.set_yticks(range(len(names)))
        ax.set_yticklabels(names if ax is axes[0, 0] else [], fontsize=7)
        ax.set_xlim(min(acc + [majority]) - 5, max(acc) + 3)
        ax.set_title(f"{task} (test %)", fontsize=8)
        ax.tick_params(labelsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig

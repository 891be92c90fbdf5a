"""Pre-trained against from scratch, task by task: the picture of chapter 14's table.

Each task is a panel with three bars -- the label-blind baseline, the network trained from random initialisation,
the same network fine-tuned from the pre-trained weights -- and, where a row was run with several seeds, each
seed's score as a dot on its bar, so that a gain can be read against the spread of the seeds (Devlin et al. 2019,
Table 1 reports such comparisons; the dots are what a single number hides).

The rows are the dictionaries that :func:`shoulders.recipes.finetune.compare` returns (or
:func:`~shoulders.recipes.finetune.rows_from_ledger` rebuilds): ``{"metric", "baseline", "pre-trained": {"score",
"scores"}, "from scratch": {...}}``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .figure import BookFigure, subplots

__all__ = ["label_budget_figure", "pretraining_steps_figure", "score_curves", "transfer_bars"]

ENCODERS = ("from scratch", "pre-trained")
COLOURS = {"baseline": "#bbbbbb", "from scratch": "#9ecae1", "pre-trained": "#08519c"}


def transfer_bars(results: Mapping[str, Mapping[str, Any]], title: str = "", ncols: int = 3,
                  encoders: tuple[str, str] = ENCODERS, gain_name: str = "pre-training") -> BookFigure:
    """One panel per task of ``results`` ({task: row}): baseline, from scratch and pre-trained as bars (the mean
    over seeds), every seed as a dot, the gain of pre-training over from scratch written above the panel.

    ``encoders``: the row's keys of the control and of the model it is compared with (chapter 10: ``("GloVe",
    "GloVe + ELMo")``), shown as the panel's second and third bars; ``gain_name`` labels their difference."""
    if not results:
        raise ValueError("transfer_bars needs at least one task's row")
    tasks = list(results)
    ncols = min(ncols, len(tasks))
    nrows = -(-len(tasks) // ncols)
    fig, axes = subplots(nrows, ncols, figsize=(2.6 * ncols, 2.4 * nrows), squeeze=False)
    for ax, task in zip(axes.flat, tasks):
        row = results[task]
        missing = [k for k in ("metric", "baseline", *encoders) if k not in row]
        if missing:
            raise ValueError(f"{task}: the row lacks {missing} (give rows as shoulders.recipes.finetune.compare "
                             f"returns them)")
        means = [float(row["baseline"])] + [float(row[e]["score"]) for e in encoders]
        ax.bar(range(3), means, color=[COLOURS[n] for n in ("baseline", *ENCODERS)], width=0.7)
        for i, e in enumerate(encoders, start=1):
            seeds = np.asarray(row[e].get("scores", [row[e]["score"]]), dtype=float)
            if len(seeds) > 1:
                ax.plot(np.full(len(seeds), i) + np.linspace(-0.15, 0.15, len(seeds)), seeds, "o", ms=3,
                        color="black", zorder=3)
        for i, m in enumerate(means):
            ax.text(i, m, f"{m:.1f}", ha="center", va="bottom", fontsize=7)
        gain = means[2] - means[1]
        ax.set_title(f"{task}\n{gain_name} {gain:+.1f}", fontsize=8)
        ax.set_xticks(range(3))
        ax.set_xticklabels(["baseline", *(("scratch", "pre-trained") if encoders == ENCODERS else encoders)],
                           fontsize=7)
        ax.set_ylabel(row["metric"], fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
        top = max(means + [float(s) for e in encoders for s in row[e].get("scores", [])])
        ax.set_ylim(0, max(1.0, top) * 1.18)
    for ax in list(axes.flat)[len(tasks):]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def label_budget_figure(curve: Mapping[str, Any], title: str = "") -> BookFigure:
    """Score against labelled examples (log axis), one line per encoder: the mean over seeds, the band from the
    lowest to the highest seed, and the label-blind baseline dashed -- ULMFiT's Figure 3 (Howard & Ruder 2018).

    ``curve`` is what :func:`shoulders.recipes.finetune.label_budget_curve` returns: ``{"metric", "baseline",
    "budgets", "rows"}``, each row ``{encoder: {"score", "scores"}}``; an encoder missing from a row has no point
    at that budget.
    """
    missing = [k for k in ("metric", "baseline", "budgets", "rows") if k not in curve]
    if missing or len(curve.get("rows", [])) != len(curve.get("budgets", [])) or not curve.get("budgets"):
        raise ValueError(f"a label-budget curve needs 'metric', 'baseline' and one row per budget (missing {missing})")
    budgets = np.asarray(curve["budgets"], dtype=float)
    fig, ax = subplots(figsize=(5.0, 3.0))
    names = list(dict.fromkeys(k for row in curve["rows"] for k, v in row.items()
                               if isinstance(v, Mapping) and "score" in v))
    for i, name in enumerate(names):
        has = [j for j, row in enumerate(curve["rows"]) if name in row]  # an encoder may skip some budgets
        runs = [np.asarray(curve["rows"][j][name].get("scores", [curve["rows"][j][name]["score"]]), dtype=float)
                for j in has]
        mean = np.array([r.mean() for r in runs])
        colour = COLOURS.get(name, f"C{i + 3}")
        ax.plot(budgets[has], mean, "o-", color=colour, label=name, ms=4)
        ax.fill_between(budgets[has], [r.min() for r in runs], [r.max() for r in runs], color=colour, alpha=0.2,
                        lw=0)
    ax.axhline(float(curve["baseline"]), color=COLOURS["baseline"], ls="--", lw=1, label="label-blind")
    ax.set_xscale("log")
    ax.set_xlabel("labelled training examples", fontsize=8)
    ax.set_ylabel(curve["metric"], fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7, frameon=False)
    if title:
        ax.set_title(title, fontsize=9)
    return fig


BERT_CURVES = (("val_mlm_acc", "masked LM", 100.0), ("val_nsp_acc", "next sentence", 100.0))


def pretraining_steps_figure(history: Any, scores: Mapping[int, Any], metric: str, baseline: float,
                             title: str = "", *, curves: Any = BERT_CURVES, left_label: str = "held-out accuracy %",
                             logy: bool = False, control: Any = None, control_label: str = "from scratch",
                             zero: str = "from scratch") -> BookFigure:
    """What more pre-training buys, in two panels sharing the x axis (pre-training steps): left, the held-out
    pre-training measures the run logged (``curves``: ``(history key, label, factor)`` each; BERT's masked-LM and
    next-sentence accuracies by default); right, a task's score after fine-tuning each snapshot (``scores``:
    {step: one score per seed}; step 0 is ``zero``, by default the network trained from scratch) -- the mean, the
    band from the lowest to the highest seed, and the label-blind baseline dashed. ``control``: scores (one per
    seed) drawn as a dotted line and band across the panel, e.g. from scratch when step 0 is something else.
    """
    if not scores:
        raise ValueError("pretraining_steps_figure needs the scores of at least one snapshot")
    fig, (left, right) = subplots(1, 2, figsize=(8.0, 2.8))
    for i, (key, label, factor) in enumerate(curves):
        steps, values = history.series(key)
        left.plot(steps, factor * values, "-", color=("#08519c", "#e6550d", "#31a354")[i % 3], label=label)
    for s in scores:
        left.axvline(s, color="#dddddd", lw=0.8, zorder=0)
    left.set_ylabel(left_label, fontsize=8)
    if logy:
        left.set_yscale("log")
    left.legend(fontsize=7, frameon=False)
    _score_panel(right, scores, metric, baseline, control=control, control_label=control_label)
    for ax in (left, right):
        ax.set_xlabel(f"pre-training steps (0: {zero})", fontsize=8)
        ax.tick_params(labelsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def _score_panel(ax: Any, scores: Mapping[Any, Any], metric: str, baseline: float | None, *,
                 series_label: str = "fine-tuned", control: Any = None, control_label: str = "from scratch",
                 baseline_label: str = "label-blind") -> None:
    """A score against x (``scores``: {x: one score per seed}): the mean, the band from the lowest to the highest
    seed, an optional ``control`` (dotted line and band) and the ``baseline`` (dashed)."""
    xs = np.array(sorted(scores), dtype=float)
    runs = [np.asarray(scores[x], dtype=float).ravel() for x in sorted(scores)]
    ax.plot(xs, [r.mean() for r in runs], "o-", color=COLOURS["pre-trained"], ms=4, label=series_label)
    ax.fill_between(xs, [r.min() for r in runs], [r.max() for r in runs], color=COLOURS["pre-trained"], alpha=0.2,
                    lw=0)
    if control is not None:
        c = np.asarray(control, dtype=float)
        ax.axhline(float(c.mean()), color=COLOURS["from scratch"], ls=":", lw=1.5, label=control_label)
        ax.axhspan(float(c.min()), float(c.max()), color=COLOURS["from scratch"], alpha=0.2, lw=0)
    if baseline is not None:
        ax.axhline(float(baseline), color=COLOURS["baseline"], ls="--", lw=1, label=baseline_label)
    ax.set_ylabel(metric, fontsize=8)
    ax.legend(fontsize=7, frameon=False)
    ax.tick_params(labelsize=7)


def score_curves(panels: Mapping[str, Mapping[Any, Any]], xlabel: str, metric: str, baselines: Mapping[str, float],
                 title: str = "", *, series_label: str = "pre-trained", control: Mapping[str, Any] | None = None,
                 control_label: str = "from scratch", baseline_label: str = "label-blind") -> BookFigure:
    """One panel per task: a score against some quantity x (transferred layers, pre-training steps, ...) --
    ``panels``: {task: {x: one score per seed}}, ``baselines``: {task: the label-blind score}, ``control``:
    {task: scores per seed of the control, drawn across the panel}. GPT's Figure 2 in small (chapter 13)."""
    if not panels:
        raise ValueError("score_curves needs at least one panel")
    fig, axes = subplots(1, len(panels), figsize=(4.0 * len(panels), 2.8))
    axes = np.atleast_1d(axes)
    for ax, (task, scores) in zip(axes, panels.items()):
        if not scores:
            raise ValueError(f"panel {task!r} has no scores")
        _score_panel(ax, scores, metric, baselines.get(task), series_label=series_label,
                     control=None if control is None else control.get(task), control_label=control_label,
                     baseline_label=baseline_label)
        ax.set_title(task, fontsize=8)
        ax.set_xlabel(xlabel, fontsize=8)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig

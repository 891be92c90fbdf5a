"""The learning-rate widget: every schedule of the book, its parameters on sliders, and what a run recorded.

``lr_curves(history)`` returns a :class:`~shoulders.viz.View`:

* the **static figure** (always displayed): one small panel per schedule (constant, linear warm-up + decay,
  inverse square root, STLR, cosine with warm-up, one-cycle), each with the learning rate the run recorded
  overlaid (divided by its peak, so it compares with the multipliers);
* the **widget**: a schedule menu over a ``Stack`` of panels, one per schedule, each with sliders for that
  schedule's parameters above a precomputed image. The menu is ``jslink``-ed to the Stack, so it switches
  schedules in the rendered book with no kernel; in a live notebook moving a slider rebuilds the schedule and
  redraws its image.

Schedules come from :mod:`shoulders.train.schedules` (``s.name`` is the factory's name, ``s.params`` its
arguments, so ``factory(**params)`` rebuilds one with a slider's new value).
"""
from __future__ import annotations

import html
import inspect
import math
from typing import Any, Callable, Mapping, Sequence

import ipywidgets as widgets
import numpy as np

from ..train import schedules as S
from .figure import BookFigure, figure_to_image_widget, figure_to_png, subplots
from .stack import StackView, stack_view
from .view import View

__all__ = ["lr_curves", "default_schedules", "recorded_lr", "schedule_steps", "lr_figure", "stage_rates", "SLIDERS"]

MAX_POINTS = 600
"""Points per plotted curve: enough for a smooth line, few enough for small PNGs and fast redraws."""

PANEL_SIZE = (5.6, 2.6)
"""Inches of one widget panel (at 96 dpi: 538 × 250 px, about 25 kB as PNG)."""

PANEL_DPI = 96

HINT = ("<small>Pick a schedule. In a running notebook the sliders change its parameters and redraw the curve; "
        "in the static book the menu works but the sliders need a kernel.</small>")


def _int_slider(name: str, lo: int, hi: int, step: int = 1) -> Callable[[Any, int], widgets.Widget]:
    def make(value: Any, total: int) -> widgets.Widget:
        top = max(hi if hi > 0 else total + hi, int(value), lo + 1)
        return widgets.IntSlider(value=int(value), min=min(lo, int(value)), max=top,
                                 step=max(1, step if step > 0 else total // 200), description=name,
                                 continuous_update=False, style={"description_width": "initial"})
    return make


def _float_slider(name: str, lo: float, hi: float, step: float) -> Callable[[Any, int], widgets.Widget]:
    def make(value: Any, total: int) -> widgets.Widget:
        return widgets.FloatSlider(value=float(value), min=min(lo, float(value)), max=max(hi, float(value)),
                                   step=step, description=name, continuous_update=False,
                                   style={"description_width": "initial"})
    return make


def _log_slider(name: str, base: float, lo: float, hi: float, step: float, fmt: str
                ) -> Callable[[Any, int], widgets.Widget]:
    def make(value: Any, total: int) -> widgets.Widget:
        e = math.log(float(value), base) if float(value) > 0 else lo
        return widgets.FloatLogSlider(value=float(value), base=base, min=min(lo, e), max=max(hi, e), step=step,
                                      description=name, readout_format=fmt, continuous_update=False,
                                      style={"description_width": "initial"})
    return make


SLIDERS: dict[str, Callable[[Any, int], widgets.Widget]] = {
    "warmup": _int_slider("warmup", 1, -1, 0),           # 1 … total−1, step total/200
    "cut_frac": _float_slider("cut_frac", 0.02, 0.9, 0.01),
    "ratio": _log_slider("ratio", 2, 0, 8, 1, ".0f"),     # 1, 2, 4, … 256 (paper: 32)
    "min_ratio": _float_slider("min_ratio", 0.0, 1.0, 0.05),
    "pct_start": _float_slider("pct_start", 0.05, 0.95, 0.05),
    "div_factor": _log_slider("div_factor", 10, 0, 3, 0.1, ".3g"),
    "final_div_factor": _log_slider("final_div_factor", 10, 0, 6, 0.5, ".3g"),
}
"""A slider maker per schedule parameter name: ``make(value, total) -> widget``. Parameters without one
(``total``, ``d_model``) stay fixed: ``total`` is the plotted range."""


def default_schedules(total: int, warmup: int | None = None) -> list[Any]:
    """The six schedules of the book over ``total`` steps, with warm-up ``total // 10`` unless given."""
    total = int(total)
    if total < 2:
        raise ValueError(f"total must be >= 2, got {total}")
    warmup = max(1, total // 10) if warmup is None else int(warmup)
    return [
        S.constant(),
        S.linear_warmup_decay(warmup, total),
        S.inverse_sqrt(warmup),
        S.stlr(total),
        S.cosine_warmup(warmup, total),
        S.one_cycle(total),
    ]


def recorded_lr(history: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{"lr/0": (steps, lrs), ...}``: every param group's learning rate as the run recorded it."""
    if history is None:
        return {}
    if hasattr(history, "lr_keys"):
        keys = list(history.lr_keys())
    else:
        keys = sorted((k for k in history.keys() if k.startswith("lr/")), key=lambda k: int(k.split("/", 1)[1]))
    out = {}
    for k in keys:
        steps, values = history.series(k)
        out[k] = (np.asarray(steps), np.asarray(values, dtype=np.float64))
    return out


def schedule_steps(total: int, max_points: int = MAX_POINTS) -> np.ndarray:
    """The steps ``1 … total`` at which curves are drawn (all of them, or ``max_points`` evenly spaced)."""
    total = int(total)
    if total <= max_points:
        return np.arange(1, total + 1)
    return np.unique(np.round(np.linspace(1, total, max_points)).astype(np.int64))


def _label(schedule: Any) -> str:
    return str(getattr(schedule, "name", type(schedule).__name__))


def _params_text(schedule: Any, skip: Sequence[str] = ("total",)) -> str:
    params = dict(getattr(schedule, "params", {}) or {})
    parts = [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items()
             if k not in skip and v is not None]
    return ", ".join(parts)


def _draw(ax: Any, schedule: Any, ts: np.ndarray, recorded: Mapping[str, tuple[np.ndarray, np.ndarray]],
          legend: bool, logy: bool) -> None:
    """One panel: the schedule's multipliers (line 0), then each recorded group ÷ the run's peak lr."""
    ax.plot(ts, schedule.curve(ts), color="C0", lw=1.8, label="schedule")
    if recorded:
        peak = max((float(np.nanmax(v)) for _, v in recorded.values() if len(v)), default=0.0)
        for i, (key, (steps, values)) in enumerate(recorded.items()):
            ax.plot(steps, values / peak if peak > 0 else values, color="k", ls="--", lw=0.9,
                    alpha=max(0.25, 0.8 - 0.1 * i), label=f"run: lr ÷ peak ({peak:.2g})" if i == 0 else None)
    params = _params_text(schedule)
    ax.set_title(f"{_label(schedule)}\n{params}" if params else _label(schedule), fontsize=8)
    ax.set_xlabel("step", fontsize=8)
    ax.set_ylabel("lr multiplier", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    if logy:
        ax.set_yscale("log")
    if legend:
        ax.legend(fontsize=7, loc="best")


def lr_figure(schedules: Sequence[Any], total: int, history: Any = None, ncols: int = 2,
              logy: bool = False) -> BookFigure:
    """The static small multiples: one panel per schedule, the recorded run overlaid on each."""
    schedules = list(schedules)
    ncols = max(1, min(ncols, len(schedules)))
    nrows = math.ceil(len(schedules) / ncols)
    fig, axes = subplots(nrows, ncols, figsize=(3.4 * ncols, 2.6 * nrows), squeeze=False)
    flat = axes.ravel()
    for ax in flat[len(schedules):]:
        fig.delaxes(ax)
    ts = schedule_steps(total)
    recorded = recorded_lr(history)
    for i, (ax, s) in enumerate(zip(flat, schedules)):
        _draw(ax, s, ts, recorded, legend=(i == 0 and bool(recorded)), logy=logy)
    return fig


def _panel_png(schedule: Any, ts: np.ndarray, recorded: Mapping[str, Any], logy: bool) -> bytes:
    fig, ax = subplots(1, 1, figsize=PANEL_SIZE)
    _draw(ax, schedule, ts, recorded, legend=bool(recorded), logy=logy)
    return figure_to_png(fig, dpi=PANEL_DPI)


def _factory_for(schedule: Any, factories: Mapping[str, Callable[..., Any]] | None) -> Callable[..., Any] | None:
    name = getattr(schedule, "name", None)
    if factories is None:
        fn = getattr(S, name, None) if isinstance(name, str) else None
        return fn if callable(fn) else None
    return factories.get(name) if isinstance(name, str) else None


def _panel(schedule: Any, total: int, ts: np.ndarray, recorded: Mapping[str, Any], logy: bool,
           factories: Mapping[str, Callable[..., Any]] | None) -> widgets.VBox:
    """Sliders for the schedule's parameters above its image; a slider change rebuilds and redraws (kernel)."""
    image = figure_to_image_widget(_panel_png(schedule, ts, recorded, logy))
    status = widgets.HTML("")
    factory = _factory_for(schedule, factories)
    params = dict(getattr(schedule, "params", {}) or {})
    sliders: dict[str, widgets.Widget] = {}
    if factory is not None:
        accepted = set(inspect.signature(factory).parameters)
        sliders = {k: SLIDERS[k](v, total) for k, v in params.items() if k in SLIDERS and k in accepted}
    box = widgets.VBox([widgets.HBox(list(sliders.values()), layout=widgets.Layout(flex_flow="row wrap")),
                        image, status])
    box.schedule = schedule  # the schedule now drawn (updated by the sliders)

    def redraw(_change: Any = None) -> None:
        kwargs = {**params, **{k: w.value for k, w in sliders.items()}}
        kwargs = {k: (int(round(v)) if isinstance(params.get(k), int) and not isinstance(params.get(k), bool) else v)
                  for k, v in kwargs.items()}
        try:
            new = factory(**kwargs)
        except (ValueError, TypeError) as err:
            status.value = f"<small style='color:#b00'>{html.escape(str(err))}</small>"
            return
        status.value = ""
        box.schedule = new
        image.value = _panel_png(new, ts, recorded, logy)

    for w in sliders.values():
        w.observe(redraw, names="value")
    box.redraw = redraw
    return box


def lr_curves(history: Any = None, schedules: Sequence[Any] | Mapping[str, Any] | None = None,
              total: int | None = None, warmup: int | None = None, *, ncols: int = 2, logy: bool = False,
              factories: Mapping[str, Callable[..., Any]] | None = None) -> View:
    """Learning-rate schedules side by side, plus the learning rate a run recorded.

    Args:
        history: a run's :class:`~shoulders.train.History` (its ``lr/0``, ``lr/1``, ... are overlaid, divided
            by the run's peak lr), or ``None``.
        schedules: schedule objects (``curve(ts)``, ``name``, ``params``) or ``{label: schedule}``; default
            :func:`default_schedules` over ``total`` steps.
        total: steps plotted; default: the last step the history recorded (its lr series, else any), else 1000.
        warmup: warm-up of the default schedules (default ``total // 10``).
        logy: log-scale the y axes (shows STLR's ``ratio`` and one-cycle's ``div_factor`` better).
        factories: ``{name: factory}`` used to rebuild a schedule when a slider moves; default the functions
            of :mod:`shoulders.train.schedules`. A schedule without a factory gets no sliders.

    Returns:
        a :class:`~shoulders.viz.View`; ``view.figure`` is the static figure, ``view.widget`` the
        :class:`~shoulders.viz.StackView`; ``view.data`` holds ``schedules``, ``total`` and ``recorded``.
    """
    recorded = recorded_lr(history)
    if total is None:
        series = recorded.values() if recorded else (
            [history.series(k) for k in history.keys()] if history is not None else [])
        last = max((int(np.max(s)) for s, _ in series if len(s)), default=0)
        total = last if last >= 2 else 1000
    total = int(total)
    if schedules is None:
        schedules = default_schedules(total, warmup)
    if isinstance(schedules, Mapping):
        labels, items = [str(k) for k in schedules], list(schedules.values())
    else:
        items = list(schedules)
        labels = [_label(s) for s in items]
    if not items:
        raise ValueError("lr_curves needs at least one schedule")
    figure = lr_figure(items, total, history, ncols=ncols, logy=logy)
    ts = schedule_steps(total)
    panels = [_panel(s, total, ts, recorded, logy, factories) for s in items]
    widget: StackView = stack_view(labels, panels, description="schedule", header=[widgets.HTML(HINT)])
    return View(figure, widget, schedules=items, total=total, recorded=recorded, steps=ts)


def _group_series(stage: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """A stage's recorded rate per layer group (the first optimiser group of each; AdamW's decayed and undecayed
    halves of a layer group share their rate)."""
    recorded = recorded_lr(stage.history)
    keys = list(recorded)
    if len(keys) != len(stage.groups):
        raise ValueError(f"{stage.name}: {len(keys)} recorded learning rates but {len(stage.groups)} group names")
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for key, name in zip(keys, stage.groups):
        out.setdefault(name, recorded[key])
    return out


def _training_from(stage: Any, names: Sequence[str]) -> dict[str, float]:
    """The step from which each layer group trains: under gradual unfreezing (``unfrozen`` in the history) the
    top ``k`` groups train from the step ``k`` was logged; otherwise every group from step 1."""
    if "unfrozen" not in stage.history:
        return {name: 1.0 for name in names}
    steps, counts = stage.history.series("unfrozen")
    start = {}
    for i, name in enumerate(reversed(list(names))):  # the top group first
        later = [s for s, k in zip(steps, counts) if k >= i + 1]
        start[name] = float(later[0]) + 1.0 if later else math.inf  # logged after update s: trains from s + 1
    return start


def _draw_stage(ax: Any, stage: Any, colours: Mapping[str, str]) -> None:
    series = _group_series(stage)
    start = _training_from(stage, list(series))
    for name, (steps, lrs) in series.items():
        frozen = steps < start[name]
        c = colours[name]
        ax.plot(np.where(frozen, steps, np.nan), lrs, color=c, lw=0.9, ls=":", alpha=0.6)
        ax.plot(np.where(frozen, np.nan, steps), lrs, color=c, lw=1.6, label=name)
    ax.set_yscale("log")
    ax.set_title(stage.name, fontsize=8)
    ax.set_xlabel("update", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)


def stage_rates(stages: Sequence[Any]) -> View:
    """What ULMFiT's rates actually were (Howard & Ruder 2018, sec. 3): every layer group's recorded learning rate
    in each training stage -- STLR's slant, the factor 2.6 between groups (equal gaps on the log axis), and, under
    gradual unfreezing, each group joining (a dotted line while it is frozen, solid once it trains).

    ``stages``: objects with ``name``, ``history`` (``lr/i`` per optimiser group, ``unfrozen`` if gradual) and
    ``groups`` (the layer group of each optimiser group), e.g. :class:`shoulders.recipes.ulmfit.Stage`. Returns a
    :class:`View`: the stages side by side, and a widget that shows one stage at a time, larger.
    """
    stages = list(stages)
    if not stages:
        raise ValueError("stage_rates needs at least one stage")
    names = list(dict.fromkeys(name for s in stages for name in _group_series(s)))
    colours = {name: f"C{i % 10}" for i, name in enumerate(names)}
    fig, axes = subplots(1, len(stages), figsize=(3.3 * len(stages), 2.8), squeeze=False)
    for ax, stage in zip(axes[0], stages):
        _draw_stage(ax, stage, colours)
    axes[0][0].set_ylabel("learning rate", fontsize=8)
    handles = {h.get_label(): h for ax in axes[0] for h in ax.get_lines() if not h.get_label().startswith("_")}
    fig.legend(list(handles.values()), list(handles), fontsize=7, loc="outside right upper", frameon=False)
    panels = []
    for stage in stages:
        one, ax = subplots(1, 1, figsize=PANEL_SIZE)
        _draw_stage(ax, stage, colours)
        ax.legend(fontsize=7, loc="best", frameon=False)
        panels.append(figure_to_png(one, dpi=PANEL_DPI))
    widget = stack_view([s.name for s in stages], panels, description="stage", control="toggle")
    return View(fig, widget, stages=[s.name for s in stages], groups=names)

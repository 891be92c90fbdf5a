"""The ELMo layer-weight widget: how each task mixes the biLM's layers, and how that mix moved while it trained.

ELMo gives a downstream task one vector per token, a learned mix of the biLM's layers (Peters et al. 2018, §3.2,
eq. 1): ``ELMo_k = γ · Σ_j softmax(s)_j · h_{k,j}``, with ``j = 0`` the token (character-CNN) layer and ``j = 1, 2``
the two biLSTM layers; every task learns its own ``s`` and ``γ`` (the paper's Figure 2 compares the weights of
two tasks). While the task trains, its model logs ``softmax(s)_j`` and ``γ`` into the run's
:class:`~shoulders.train.History` under ``<prefix>_w0``, ``<prefix>_w1``, ... and ``<prefix>_gamma`` (prefix
``"mix"``; :class:`~shoulders.models.elmo_task.ContextualEncoder` with a second mix at the output of its task
network logs that one as ``mix_out_*``: pass ``prefix="mix_out"``). :class:`shoulders.train.Probe` does the logging:
``callbacks=[Probe(lambda m: m.encoder.mix_logs())]``.

``layer_mix({task: history, ...})`` returns a :class:`~shoulders.viz.View`:

* the **static figure** (always displayed, :func:`layer_mix_figure`): per task, the final weights as bars (value
  written on each, the uniform ``1/L`` dashed, ``γ`` in the title) above the weights' trajectories over the
  training steps, one line per layer;
* the **widget**: toggle buttons over two views, both precomputed images ``jslink``-ed to ``Stack``\\ s, so they
  switch in the rendered book with no kernel. *per task*: a task menu over one panel per task, each a step slider
  over a few logged steps (``steps_shown``; the last, the end of training, first) -- the bars at that step beside
  the trajectories with the step marked, so sliding shows the weights leave uniform for where the task settles.
  *tasks side by side*: the final weights as grouped bars (layers along x, one bar per task), ``γ`` of each task
  in the legend. Below, in a running notebook, a task menu and a slider over every logged step redraw the bars.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import ipywidgets as widgets
import numpy as np
from matplotlib import colormaps

from .figure import DPI, BookFigure, figure_to_image_widget, figure_to_png, subplots
from .stack import StackView, stack_view
from .view import View

__all__ = ["MAX_POINTS", "default_layer_names", "layer_mix", "layer_mix_figure", "mix_trace", "mix_traces",
           "step_figure", "tasks_figure", "trace_points"]

MAX_POINTS = 400
"""Logged steps per plotted trajectory (and per live slider): evenly spaced, the first and the last kept."""

STEP_SIZE = (5.6, 2.4)
"""Inches of one per-step image of the widget (bars | trajectories); at :data:`DPI` 448 × 192 px, ~15 kB."""

SUM_TOLERANCE = 1e-3
"""How far from 1 a step's weights may sum (they are a softmax logged in float32)."""

HINT = ("<small><b>per task</b>: pick a task, then slide through the training steps: the bars are "
        "softmax(s)<sub>j</sub>, the weight of each biLM layer in the task's ELMo vector (dashed: uniform, 1/L), "
        "and γ scales their sum. <b>tasks side by side</b>: the final weights of every task.</small>")

LIVE_TITLE = "Any logged step (needs a running kernel)"


def default_layer_names(n_layers: int) -> tuple[str, ...]:
    """ELMo's three layers as ``("token", "biLSTM 1", "biLSTM 2")``; any other count ``("layer 0", ...)``."""
    if n_layers == 3:
        return ("token", "biLSTM 1", "biLSTM 2")
    return tuple(f"layer {j}" for j in range(n_layers))


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def _checked(steps: Any, weights: Any, gamma: Any, where: str) -> dict[str, np.ndarray]:
    """A trace with its shapes and its softmax rows checked, sorted by step."""
    w = _to_numpy(weights)
    if w.ndim != 2 or 0 in w.shape:
        raise ValueError(f"{where}: weights must be (K steps, L layers) with K, L >= 1, got shape {w.shape}")
    K = w.shape[0]
    s = _to_numpy(steps)
    g = _to_numpy(gamma)
    if s.shape != (K,):
        raise ValueError(f"{where}: steps must be ({K},), one per row of the weights, got shape {s.shape}")
    if g.shape != (K,):
        raise ValueError(f"{where}: gamma must be ({K},), one per row of the weights, got shape {g.shape}")
    for name, a in (("steps", s), ("weights", w), ("gamma", g)):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{where}: {name} contain NaN or infinite values")
    if np.any(s != np.round(s)):
        raise ValueError(f"{where}: steps must be whole numbers")
    sums = w.sum(axis=1)
    bad = np.flatnonzero((np.abs(sums - 1.0) > SUM_TOLERANCE) | np.any(w < -SUM_TOLERANCE, axis=1))
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"{where}: the weights at step {int(s[i])} are {np.round(w[i], 4).tolist()} (sum "
                         f"{sums[i]:.4f}); each step's weights must be softmax(s)_j, non-negative and summing to 1 "
                         f"-- log the softmax of the mix's parameters, not the parameters s_j themselves")
    order = np.argsort(s, kind="stable")
    return {"steps": s[order].astype(np.int64), "weights": w[order], "gamma": g[order]}


def _is_trace(obj: Any) -> bool:
    return isinstance(obj, Mapping) and "weights" in obj and not isinstance(obj["weights"], Mapping) \
        and not hasattr(obj["weights"], "series")


def mix_trace(history: Any, prefix: str = "mix") -> dict[str, np.ndarray]:
    """The layer weights and γ a task's run logged: ``{"steps": (K,), "weights": (K, L), "gamma": (K,)}``.

    Args:
        history: a :class:`~shoulders.train.History` (anything with ``keys()`` and ``series(key) -> (steps,
            values)``) holding ``<prefix>_w0 … <prefix>_w{L-1}`` (softmax(s)_j) and ``<prefix>_gamma``, all
            logged at the same steps; or a dict of that shape (``steps``, ``weights``, ``gamma``; arrays or
            tensors), which is checked and returned as arrays.
        prefix: the mix's name in the history (``"mix_in"``, ``"mix_out"`` for a model with two mixes).

    Raises:
        ValueError: keys missing (the message names them and lists what the history has), series logged at
            different steps, wrong shapes, or weights that are not a softmax (a row not summing to 1).
    """
    if isinstance(history, Mapping) and any(k in history for k in ("steps", "weights", "gamma")):
        missing = [k for k in ("steps", "weights", "gamma") if k not in history]
        if missing:
            raise ValueError(f"a mix trace needs 'steps', 'weights' and 'gamma'; missing {missing}")
        return _checked(history["steps"], history["weights"], history["gamma"], "mix trace")
    if isinstance(history, Mapping) or not (hasattr(history, "series") and hasattr(history, "keys")):
        raise TypeError(f"mix_trace takes a History (keys() and series()) or a dict with 'steps', 'weights' and "
                        f"'gamma', not {type(history).__name__}")
    keys = list(history.keys())
    pattern = re.compile(re.escape(prefix) + r"_w(\d+)")
    found = sorted(int(m.group(1)) for k in keys if (m := pattern.fullmatch(k)))
    n_layers = max(found) + 1 if found else 0
    missing = [f"{prefix}_w{j}" for j in range(max(n_layers, 1)) if j not in found]
    if f"{prefix}_gamma" not in keys:
        missing.append(f"{prefix}_gamma")
    if missing:
        others = sorted({m.group(1) for k in keys if (m := re.fullmatch(r"(.+)_w\d+", k))} - {prefix})
        hint = f"; weights are logged under prefix={others[0]!r}" if len(others) == 1 else (
            f"; weights are logged under the prefixes {others}" if others else "")
        raise ValueError(f"the history has no {', '.join(missing)} (prefix={prefix!r}: {prefix}_w0, {prefix}_w1, "
                         f"... hold the softmax-normalised layer weights, {prefix}_gamma the scale γ); it has "
                         f"{keys}{hint}")
    names = [f"{prefix}_w{j}" for j in range(n_layers)] + [f"{prefix}_gamma"]
    series = [history.series(k) for k in names]
    steps = np.asarray(series[0][0])
    for name, (s, _) in zip(names[1:], series[1:]):
        if not np.array_equal(np.asarray(s), steps):
            raise ValueError(f"{name} was logged at other steps than {names[0]} ({len(s)} against {len(steps)} "
                             f"entries): log a mix's weights and gamma together, every step")
    if len(steps) == 0:
        raise ValueError(f"the history's {prefix} series are empty: nothing was logged yet")
    weights = np.stack([np.asarray(v, dtype=np.float64) for _, v in series[:-1]], axis=1)
    return _checked(steps, weights, series[-1][1], f"history prefix {prefix!r}")


def mix_traces(mixes: Any, prefix: str = "mix") -> dict[str, dict[str, np.ndarray]]:
    """``{task: mix_trace(...)}`` for ``{task: History or trace dict}`` (one History or trace alone: task
    ``"task"``); every task must mix the same number of layers."""
    if _is_trace(mixes) or (hasattr(mixes, "series") and not isinstance(mixes, Mapping)):
        mixes = {"task": mixes}
    if not isinstance(mixes, Mapping):
        raise TypeError(f"mixes must be {{task name: History or trace dict}}, not {type(mixes).__name__}")
    if not mixes:
        raise ValueError("layer_mix needs at least one task: {task name: History or trace dict}")
    traces: dict[str, dict[str, np.ndarray]] = {}
    for task, h in mixes.items():
        try:
            traces[str(task)] = mix_trace(h, prefix)
        except ValueError as err:
            raise ValueError(f"task {task!r}: {err}") from None
    layers = {t: tr["weights"].shape[1] for t, tr in traces.items()}
    if len(set(layers.values())) != 1:
        raise ValueError(f"every task must mix the same layers; layers per task: {layers}")
    return traces


def _names(layer_names: Sequence[str] | None, n_layers: int) -> list[str]:
    names = list(default_layer_names(n_layers) if layer_names is None else map(str, layer_names))
    if len(names) != n_layers:
        raise ValueError(f"{len(names)} layer names {names} for weights over {n_layers} layers")
    return names


def trace_points(n: int, max_points: int = MAX_POINTS) -> np.ndarray:
    """Indices of the ``n`` logged steps to draw: all, or ``max_points`` evenly spaced (first and last kept)."""
    if n <= max_points:
        return np.arange(n)
    return np.unique(np.round(np.linspace(0, n - 1, max_points)).astype(np.int64))


def _top(traces: Mapping[str, Mapping[str, np.ndarray]]) -> float:
    """One y limit for every bar and line, so tasks and steps compare by eye (room left for the values)."""
    peak = max(max(float(tr["weights"].max()), 1.0 / tr["weights"].shape[1]) for tr in traces.values())
    return 1.2 * peak + 0.02


def _layer_colours(n_layers: int) -> list[str]:
    return [f"C{j % 10}" for j in range(n_layers)]


def _values_on_bars(ax: Any, xs: np.ndarray, w: np.ndarray, top: float, fontsize: float) -> None:
    """Each weight written just above its bar."""
    for xi, wi in zip(xs, w):
        ax.text(xi, wi + 0.01 * top, f"{wi:.2f}", ha="center", va="bottom", fontsize=fontsize, zorder=4,
                bbox={"fc": "white", "ec": "none", "pad": 0.3, "alpha": 0.85})


def _weights_axis(ax: Any, names: Sequence[str], top: float, ylabel: str) -> None:
    """The axis of a bar chart of layer weights: layers along x, the uniform 1/L dashed, 0..top."""
    L = len(names)
    ax.axhline(1.0 / L, color="0.4", ls="--", lw=0.9)
    ax.set_xticks(np.arange(L))
    ax.set_xticklabels(names, fontsize=7)
    ax.set_ylim(0, top)
    ax.set_ylabel(ylabel, fontsize=7)
    ax.tick_params(axis="y", labelsize=7)


def _bars(ax: Any, w: np.ndarray, names: Sequence[str], title: str, top: float) -> None:
    """One mix: a bar per layer with its weight written above, the uniform 1/L dashed."""
    x = np.arange(len(w))
    ax.bar(x, w, color=_layer_colours(len(w)), width=0.7)
    _values_on_bars(ax, x, w, top, fontsize=7)
    _weights_axis(ax, names, top, "softmax(s)$_j$")
    ax.set_title(title, fontsize=8)


def _trajectories(ax: Any, trace: Mapping[str, np.ndarray], names: Sequence[str], top: float, legend: bool,
                  mark: int | None = None) -> None:
    """The weights over the training steps, one line per layer (at most MAX_POINTS points each)."""
    idx = trace_points(len(trace["steps"]))
    steps, w = trace["steps"][idx], trace["weights"][idx]
    L = w.shape[1]
    marker = "o" if len(idx) == 1 else None
    for j, colour in enumerate(_layer_colours(L)):
        ax.plot(steps, w[:, j], color=colour, lw=1.3, marker=marker, ms=3, label=names[j])
    ax.axhline(1.0 / L, color="0.4", ls="--", lw=0.9, label="uniform 1/L")
    if mark is not None:
        ax.axvline(mark, color="k", ls=":", lw=1.0)
    ax.set_ylim(0, top)
    ax.set_xlabel("step", fontsize=7)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    if legend:
        ax.legend(fontsize=6, loc="upper left", frameon=False)


def _task_title(task: str, gamma: float, step: int | None = None) -> str:
    head = task if step is None else f"{task}: step {step}"
    return f"{head}\nγ = {gamma:.2f}"


def layer_mix_figure(mixes: Any, layer_names: Sequence[str] | None = None, title: str = "", *,
                     prefix: str = "mix", ncols: int = 4) -> BookFigure:
    """The static figure: per task, the final weights as bars (γ in the title, uniform 1/L dashed) above the
    weights over the training steps; tasks side by side, ``ncols`` to a row.

    ``mixes``: ``{task: History or trace dict}`` (see :func:`mix_trace`). ``layer_names``: one per layer
    (default :func:`default_layer_names`).
    """
    traces = mix_traces(mixes, prefix)
    tasks = list(traces)
    names = _names(layer_names, next(iter(traces.values()))["weights"].shape[1])
    top = _top(traces)
    ncols = max(1, min(ncols, len(tasks)))
    rows = -(-len(tasks) // ncols)
    fig, axes = subplots(2 * rows, ncols, figsize=(2.9 * ncols, 4.6 * rows), squeeze=False)
    for i, task in enumerate(tasks):
        r, c = divmod(i, ncols)
        tr = traces[task]
        _bars(axes[2 * r, c], tr["weights"][-1], names, _task_title(task, float(tr["gamma"][-1])), top)
        _trajectories(axes[2 * r + 1, c], tr, names, top, legend=i == 0)
    for i in range(len(tasks), rows * ncols):
        r, c = divmod(i, ncols)
        fig.delaxes(axes[2 * r, c])
        fig.delaxes(axes[2 * r + 1, c])
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def step_figure(trace: Mapping[str, np.ndarray], index: int, layer_names: Sequence[str], task: str = "",
                top: float | None = None) -> BookFigure:
    """One image of the widget: the weights at logged step ``trace["steps"][index]`` as bars, beside the
    trajectories with that step marked."""
    names = list(layer_names)
    top = _top({task: trace}) if top is None else top
    fig = BookFigure(figsize=STEP_SIZE, layout="constrained")
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": (1.0, 1.3)})
    step = int(trace["steps"][index])
    _bars(left, trace["weights"][index], names, _task_title(task, float(trace["gamma"][index]), step), top)
    _trajectories(right, trace, names, top, legend=True, mark=step)
    right.set_title("during training", fontsize=8)
    return fig


def tasks_figure(traces: Mapping[str, Mapping[str, np.ndarray]], layer_names: Sequence[str],
                 title: str = "") -> BookFigure:
    """The tasks side by side: layers along x, one bar per task (its final weights), γ in the legend."""
    tasks = list(traces)
    names = list(layer_names)
    L, T = len(names), len(tasks)
    top = _top(traces)
    fig, ax = subplots(figsize=(max(3.6, 0.45 * L * T + 1.2) + 1.6, 2.6))
    x = np.arange(L)
    width = 0.8 / T
    palette = colormaps["Dark2"]
    for t, task in enumerate(tasks):
        tr = traces[task]
        w, xs = tr["weights"][-1], x + (t - (T - 1) / 2) * width
        ax.bar(xs, w, width=width * 0.95, color=palette(t % palette.N),
               label=f"{task} (γ = {float(tr['gamma'][-1]):.2f})")
        if L * T <= 24:
            _values_on_bars(ax, xs, w, top, fontsize=6)
    _weights_axis(ax, names, top, "softmax(s)$_j$ at the end")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(title or "final layer weights per task", fontsize=8)
    return fig


def _shown_indices(trace: Mapping[str, np.ndarray], steps_shown: int | Sequence[int], task: str) -> np.ndarray:
    """Indices of the logged steps precomputed for the step slider."""
    steps = trace["steps"]
    if isinstance(steps_shown, (int, np.integer)):
        if steps_shown < 1:
            raise ValueError(f"steps_shown must be >= 1, got {steps_shown}")
        return np.unique(np.round(np.linspace(0, len(steps) - 1, int(steps_shown))).astype(np.int64))
    wanted = sorted({int(s) for s in steps_shown})
    if not wanted:
        raise ValueError("steps_shown: give a number of steps or at least one logged step")
    absent = [s for s in wanted if s not in set(steps.tolist())]
    if absent:
        raise ValueError(f"task {task!r} logged no step {absent}; its steps run {int(steps[0])} … {int(steps[-1])} "
                         f"({len(steps)} logged)")
    return np.searchsorted(steps, wanted)


def _live_box(traces: Mapping[str, Mapping[str, np.ndarray]], names: Sequence[str], top: float,
              dpi: int) -> widgets.VBox:
    """Task menu + a slider over every logged step (at most MAX_POINTS) above one redrawn image (needs a kernel)."""
    tasks = list(traces)

    def options(task: str) -> list[int]:
        steps = traces[task]["steps"]
        return [int(s) for s in steps[trace_points(len(steps))]]

    menu = widgets.Dropdown(options=tasks, value=tasks[0], description="task",
                            layout=widgets.Layout(width="max-content"), style={"description_width": "initial"})
    first = options(tasks[0])
    slider = widgets.SelectionSlider(options=first, value=first[-1], description="step", continuous_update=False,
                                     style={"description_width": "initial"}, layout=widgets.Layout(width="420px"))
    image = widgets.Image(format="png")
    box = widgets.VBox([widgets.HBox([menu, slider], layout=widgets.Layout(flex_flow="row wrap")), image])
    box.shown = {}
    busy = [False]

    def redraw(_change: Any = None) -> None:
        if busy[0]:
            return
        task = menu.value
        tr = traces[task]
        i = int(np.searchsorted(tr["steps"], int(slider.value)))
        image.value = figure_to_png(step_figure(tr, i, names, task, top), dpi=dpi)
        box.shown = {"task": task, "index": i, "step": int(tr["steps"][i]), "weights": tr["weights"][i],
                     "gamma": float(tr["gamma"][i])}

    def change_task(_change: Any = None) -> None:
        busy[0] = True
        try:
            opts = options(menu.value)
            slider.options = opts
            slider.value = opts[-1]
        finally:
            busy[0] = False
        redraw()

    menu.observe(change_task, names="value")
    slider.observe(redraw, names="value")
    box.redraw = redraw
    box.task_menu, box.step_slider, box.image = menu, slider, image
    return box


def layer_mix(mixes: Any, layer_names: Sequence[str] | None = None, title: str = "",
              steps_shown: int | Sequence[int] = 5, *, prefix: str = "mix", dpi: int = DPI, ncols: int = 4,
              live: bool = True) -> View:
    """ELMo's layer weights per task: a static figure plus a kernel-less widget (and a live step slider).

    Args:
        mixes: ``{task name: History or trace dict}``; each History holds ``<prefix>_w0 …`` and
            ``<prefix>_gamma`` (see :func:`mix_trace`). One History or trace alone is task ``"task"``.
        layer_names: one per layer; default ``("token", "biLSTM 1", "biLSTM 2")`` for three layers, else
            ``("layer 0", ...)``.
        title: the static figure's title.
        steps_shown: the logged steps precomputed for each task's step slider: a number (evenly spaced over the
            run, the first and the last included) or the steps themselves (each must be logged by every task).
        prefix: the mix's name in the histories (``"mix_in"``, ``"mix_out"``).
        live: add the kernel-only task menu and slider over every logged step (in a collapsed box).

    Returns:
        a :class:`~shoulders.viz.View`; ``view.figure`` is :func:`layer_mix_figure`, ``view.widget`` a
        :class:`~shoulders.viz.StackView` (toggle ``"per task"`` / ``"tasks side by side"``) with
        ``.task_view`` (the StackView of tasks: ``.control`` the menu, ``.stack`` one panel per task),
        ``.step_views`` (per task, the StackView of its precomputed steps, the end of training selected) and
        ``.live`` (the live box or ``None``); ``view.data`` holds ``traces``, ``layer_names`` and
        ``steps_shown`` (``{task: the steps precomputed}``).
    """
    traces = mix_traces(mixes, prefix)
    names = _names(layer_names, next(iter(traces.values()))["weights"].shape[1])
    figure = layer_mix_figure(traces, names, title, ncols=ncols)
    top = _top(traces)
    step_views: list[StackView] = []
    shown: dict[str, list[int]] = {}
    for task, tr in traces.items():
        idx = _shown_indices(tr, steps_shown, task)
        shown[task] = [int(tr["steps"][i]) for i in idx]
        pngs = [figure_to_png(step_figure(tr, int(i), names, task, top), dpi=dpi) for i in idx]
        step_views.append(stack_view([str(s) for s in shown[task]], pngs, description="step", control="slider",
                                     index=len(pngs) - 1, dpi=dpi))
    task_view = stack_view(list(traces), step_views, description="task", dpi=dpi)
    grouped = figure_to_image_widget(tasks_figure(traces, names), dpi=dpi)
    widget = stack_view(["per task", "tasks side by side"], [task_view, grouped], control="toggle",
                        header=[widgets.HTML(HINT)], dpi=dpi)
    box = None
    if live:
        box = _live_box(traces, names, top, dpi)
        box.redraw()
        widget.children = (*widget.children, widgets.Accordion(children=[box], titles=(LIVE_TITLE,),
                                                               selected_index=None))
    widget.task_view, widget.step_views, widget.live = task_view, step_views, box
    return View(figure, widget, traces=traces, layer_names=names, steps_shown=shown)

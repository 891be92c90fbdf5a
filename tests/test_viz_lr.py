"""shoulders.viz.lr_curves: the static small multiples, the kernel-less Stack, and the live sliders.

Most tests use tiny stand-in schedules and histories with the interface of shoulders.train (``curve``,
``name``, ``params``; ``series``/``keys``), so they test the widget, not the schedules.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from shoulders import viz  # noqa: E402
from shoulders.viz import lr as lr_mod  # noqa: E402


class FakeSchedule:
    def __init__(self, name, fn, **params):
        self.name, self.params, self._fn = name, params, fn

    def __call__(self, t):
        return float(self.curve(np.array([t]))[0])

    def curve(self, ts):
        return self._fn(np.asarray(ts, dtype=np.float64))


def ramp(warmup: int, total: int) -> FakeSchedule:
    if not 0 < warmup < total:
        raise ValueError(f"need 0 < warmup < total, got {warmup}")
    return FakeSchedule("ramp", lambda t: np.minimum(t / warmup, 1.0) * (total - t) / total, warmup=warmup, total=total)


def flat() -> FakeSchedule:
    return FakeSchedule("flat", lambda t: np.full_like(t, 0.5))


def tri(total: int, cut_frac: float = 0.1, ratio: float = 32) -> FakeSchedule:
    cut = total * cut_frac
    fn = lambda t: (1 + np.clip(np.where(t < cut, t / cut, 1 - (t - cut) / (total - cut)), 0, 1) * (ratio - 1)) / ratio  # noqa: E731
    return FakeSchedule("tri", fn, total=total, cut_frac=cut_frac, ratio=ratio)


FACTORIES = {"ramp": ramp, "flat": flat, "tri": tri}


class FakeHistory:
    def __init__(self, data):
        self.data = data

    def keys(self):
        return list(self.data)

    def series(self, key):
        s, v = self.data[key]
        return np.asarray(s), np.asarray(v, dtype=np.float64)

    def last(self, key):
        return self.data[key][1][-1]


def run_history(total=300, groups=2):
    steps = np.arange(1, total + 1)
    base = tri(total).curve(steps) * 3e-4
    data = {"loss": (steps, 1.0 / steps)}
    for g in range(groups):
        data[f"lr/{g}"] = (steps, base / 2.6**g)
    return FakeHistory(data)


def fake_view(history=None, total=300):
    schedules = [flat(), ramp(30, total), tri(total)]
    return viz.lr_curves(history, schedules=schedules, total=total, factories=FACTORIES), schedules


@pytest.fixture(scope="module")
def shared():
    """One view for the read-only tests (rendering is the slow part)."""
    h = run_history(groups=2)
    view, schedules = fake_view(h)
    return view, schedules, h


def test_returns_a_figure_and_a_widget_without_a_kernel(shared):
    view, schedules, _ = shared
    assert isinstance(view, viz.View)
    assert isinstance(view.figure, viz.BookFigure)
    assert isinstance(view.widget, viz.StackView) and isinstance(view.widget, widgets.Widget)
    assert view.data["schedules"] == schedules and view.data["total"] == 300


def test_static_figure_has_one_panel_per_schedule_with_its_curve_and_the_recorded_run(shared):
    view, schedules, h = shared
    axes = view.figure.axes
    assert len(axes) == len(schedules)
    peak = max(h.series("lr/0")[1].max(), h.series("lr/1")[1].max())
    for ax, s in zip(axes, schedules):
        assert len(ax.lines) == 1 + 2  # the schedule, then one line per recorded param group
        x, y = ax.lines[0].get_xdata(), ax.lines[0].get_ydata()
        np.testing.assert_array_equal(x, np.arange(1, 301))
        np.testing.assert_allclose(y, s.curve(x))
        for g, line in enumerate(ax.lines[1:]):
            steps, lrs = h.series(f"lr/{g}")
            np.testing.assert_array_equal(line.get_xdata(), steps)
            np.testing.assert_allclose(line.get_ydata(), lrs / peak)


def test_without_history_only_schedules_and_long_runs_are_subsampled():
    view, schedules = fake_view(None, total=5000)
    for ax, s in zip(view.figure.axes, schedules):
        assert len(ax.lines) == 1
        x = ax.lines[0].get_xdata()
        assert len(x) <= lr_mod.MAX_POINTS and x[0] == 1 and x[-1] == 5000
        np.testing.assert_allclose(ax.lines[0].get_ydata(), s.curve(x))


def test_total_defaults_to_the_recorded_run():
    view = viz.lr_curves(run_history(total=120), schedules=[flat()], factories=FACTORIES)
    assert view.data["total"] == 120
    assert view.figure.axes[0].lines[0].get_xdata()[-1] == 120


def test_widget_is_a_jslinked_stack_with_one_panel_per_schedule(shared):
    view, schedules, _ = shared
    w = view.widget
    assert list(w.control.options) == ["flat", "ramp", "tri"]
    assert len(w.stack.children) == len(schedules)
    assert w.link.source == (w.control, "index") and w.link.target == (w.stack, "selected_index")
    for panel in w.stack.children:
        sliders_box, image, status = panel.children
        assert isinstance(image, widgets.Image) and bytes(image.value).startswith(b"\x89PNG")
    # sliders exactly for the parameters with a slider maker; total stays fixed
    names = [[s.description for s in p.children[0].children] for p in w.stack.children]
    assert names == [[], ["warmup"], ["cut_frac", "ratio"]]


def test_a_labelled_mapping_sets_the_menu():
    view = viz.lr_curves(schedules={"BERT-ish": ramp(10, 100), "const": flat()}, total=100, factories=FACTORIES)
    assert list(view.widget.control.options) == ["BERT-ish", "const"]


def test_moving_a_slider_rebuilds_the_schedule_and_redraws():
    view, _ = fake_view(run_history())
    panel = view.widget.stack.children[1]  # ramp(30, 300)
    (warmup,) = panel.children[0].children
    image = panel.children[1]
    before = bytes(image.value)
    warmup.value = 90
    assert panel.schedule.params == {"warmup": 90, "total": 300}
    assert bytes(image.value) != before
    # an invalid value is reported, not raised, and the last good curve stays
    good = bytes(image.value)
    warmup.max = 400
    warmup.value = 350
    assert "warmup" in panel.children[2].value and bytes(image.value) == good
    assert panel.schedule.params["warmup"] == 90


def test_schedule_without_factory_gets_no_sliders():
    odd = FakeSchedule("mystery", lambda t: t * 0 + 1, warmup=3)
    view = viz.lr_curves(schedules=[odd], total=50, factories={})
    assert view.widget.stack.children[0].children[0].children == ()


def test_with_the_real_schedules():
    pytest.importorskip("shoulders.train.schedules")
    from shoulders.train import schedules as S

    view = viz.lr_curves(total=200)
    names = [s.name for s in view.data["schedules"]]
    assert names == ["constant", "linear_warmup_decay", "inverse_sqrt", "stlr", "cosine_warmup", "one_cycle"]
    assert len(view.figure.axes) == 6 and len(view.widget.stack.children) == 6
    for ax, s in zip(view.figure.axes, view.data["schedules"]):
        x = ax.lines[0].get_xdata()
        np.testing.assert_allclose(ax.lines[0].get_ydata(), [s(int(t)) for t in x])
    # a slider rebuilds with the real factory: getattr(schedules, name)(**params)
    stlr_panel = view.widget.stack.children[3]
    cut = next(w for w in stlr_panel.children[0].children if w.description == "cut_frac")
    cut.value = 0.3
    assert stlr_panel.schedule == S.stlr(200, cut_frac=0.3, ratio=32)


def test_widget_state_stays_small(shared):
    view, _, _ = shared
    total = sum(len(p.children[1].value) for p in view.widget.stack.children)
    assert total < 3 * 40_000, f"{total} bytes of PNG in the widget state"


def test_total_falls_back_to_any_series_when_no_lr_was_recorded():
    h = FakeHistory({"loss": (np.arange(1, 81), np.ones(80))})
    view = viz.lr_curves(h, schedules=[flat()], factories=FACTORIES)
    assert view.data["total"] == 80 and view.data["recorded"] == {}
    assert len(view.figure.axes[0].lines) == 1


class _Stage:
    def __init__(self, name, history, groups):
        self.name, self.history, self.groups = name, history, groups


def test_stage_rates_draws_one_line_per_layer_group_dotted_while_frozen():
    from shoulders.train import History

    h = History()
    h.log(0, unfrozen=1)
    for t in range(1, 11):
        h.log(t, **{"lr/0": 0.1 / 2.6, "lr/1": 0.1 / 2.6, "lr/2": 0.1})  # two optimiser groups of "low", one "top"
        if t == 4:
            h.log(t, unfrozen=2)
    flat = History()
    for t in range(1, 6):
        flat.log(t, **{"lr/0": 0.01})
    view = viz.stage_rates([_Stage("one", flat, ["all"]), _Stage("two", h, ["low", "low", "top"])])
    assert view.data["groups"] == ["all", "low", "top"] and view.data["stages"] == ["one", "two"]
    ax = view.figure.axes[1]
    solid = {ln.get_label(): ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}
    assert set(solid) == {"low", "top"}
    low_x = np.asarray(solid["low"].get_xdata(), dtype=float)
    assert np.isnan(low_x[:4]).all() and not np.isnan(low_x[4:]).any(), "'low' trains from update 5"
    assert not np.isnan(np.asarray(solid["top"].get_xdata(), dtype=float)).any(), "'top' trains from update 1"
    assert isinstance(view.widget, widgets.VBox) and view.widget.labels == ["one", "two"]
    with pytest.raises(ValueError, match="group names"):
        viz.stage_rates([_Stage("bad", h, ["low"])])

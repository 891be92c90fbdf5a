"""shoulders.viz.training_curves: one panel per key, the data plotted is the history's."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from shoulders import viz  # noqa: E402


class FakeHistory:
    """The History interface the figures use: series(key) -> (steps, values), keys(), last(key)."""

    def __init__(self, data: dict[str, tuple[list[int], list[float]]]):
        self.data = data

    def keys(self):
        return list(self.data)

    def series(self, key):
        steps, values = self.data[key]
        return np.asarray(steps, dtype=np.int64), np.asarray(values, dtype=np.float64)

    def last(self, key):
        return self.data[key][1][-1]


def make_history(n: int = 120) -> FakeHistory:
    steps = list(range(1, n + 1))
    rng = np.random.default_rng(0)
    loss = list(5 * np.exp(-np.arange(n) / 30) + 0.2 * rng.random(n))
    lr = [1e-3 * min(1.0, t / 10) for t in steps]
    evals = list(range(10, n + 1, 10))
    data = {"loss": (steps, loss), "lr/0": (steps, lr), "lr/1": (steps, [x / 2.6 for x in lr]),
            "lr/10": (steps, [x / 10 for x in lr]), "val_ppl": (evals, [100 / s for s in evals])}
    return FakeHistory(data)


def test_one_panel_per_key_and_the_plotted_data_is_the_history():
    h = make_history()
    fig = viz.training_curves(h, ("val_ppl",), smooth=None)
    assert isinstance(fig, viz.BookFigure) and len(fig.axes) == 1
    (line,) = fig.axes[0].lines
    steps, values = h.series("val_ppl")
    np.testing.assert_array_equal(line.get_xdata(), steps)
    np.testing.assert_array_equal(line.get_ydata(), values)


def test_dense_losses_get_a_raw_and_a_smoothed_line_lrs_are_never_smoothed():
    from shoulders.train.history import ema

    h = make_history()
    fig = viz.training_curves(h, ("loss", "lr/*", ("loss", "val_ppl")), smooth=0.9)
    assert len(fig.axes) == 3
    raw, smoothed = fig.axes[0].lines
    np.testing.assert_array_equal(raw.get_ydata(), h.series("loss")[1])
    np.testing.assert_allclose(smoothed.get_ydata(), ema(h.series("loss")[1], 0.9))
    lr_lines = fig.axes[1].lines
    assert [ln.get_label() for ln in lr_lines] == ["lr/0", "lr/1", "lr/10"]  # numeric order, unsmoothed
    np.testing.assert_array_equal(lr_lines[2].get_ydata(), h.series("lr/10")[1])
    assert len(fig.axes[2].lines) == 3  # loss raw + EMA, val_ppl


def test_layout_wraps_rows_and_log_axes():
    h = make_history()
    fig = viz.training_curves(h, ("loss", "lr/0", "lr/1", "val_ppl"), ncols=3, logy=["val_ppl"], smooth=0)
    assert len(fig.axes) == 4  # 2 rows x 3, the two empty cells removed
    assert [ax.get_yscale() for ax in fig.axes] == ["linear", "linear", "linear", "log"]
    assert all(len(ax.lines) == 1 for ax in fig.axes)


def test_unknown_key_names_what_the_history_has():
    with pytest.raises(KeyError, match="val_ppl"):
        viz.training_curves(make_history(), ("accuracy",))
    with pytest.raises(KeyError):
        viz.training_curves(make_history(), ("acc*",))


def test_expand_keys():
    h = make_history()
    assert viz.expand_keys(h, "loss") == [["loss"]]
    assert viz.expand_keys(h, ["lr/*", ("val_ppl", "loss")]) == [["lr/0", "lr/1", "lr/10"], ["val_ppl", "loss"]]

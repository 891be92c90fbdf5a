"""shoulders.viz.transfer_bars: chapter 14's table as bars, one panel per task, seeds as dots."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from shoulders import viz  # noqa: E402

ROWS = {
    "SST-2": {"metric": "accuracy %", "baseline": 50.9, "pre-trained": {"score": 76.1, "scores": [75.5, 76.2, 76.6]},
              "from scratch": {"score": 77.0, "scores": [75.6, 77.4, 78.0]}},
    "SNLI": {"metric": "accuracy %", "baseline": 34.3, "pre-trained": {"score": 55.0, "scores": [55.0]},
             "from scratch": {"score": 50.2, "scores": [50.2]}},
}


def test_bars_are_the_means_and_dots_the_seeds():
    fig = viz.transfer_bars(ROWS, title="t")
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 2
    sst = visible[0]
    heights = [p.get_height() for p in sst.patches]
    assert heights == pytest.approx([50.9, 77.0, 76.1])
    dots = np.concatenate([line.get_ydata() for line in sst.lines])
    assert sorted(dots) == sorted([75.5, 76.2, 76.6, 75.6, 77.4, 78.0])
    assert "pre-training -0.9" in sst.get_title()
    assert not visible[1].lines  # one seed: no dots
    assert "pre-training +4.8" in visible[1].get_title()


def test_a_row_that_is_not_compare_s_is_named():
    with pytest.raises(ValueError, match=r"SQuAD: the row lacks \['from scratch'\]"):
        viz.transfer_bars({"SQuAD": {"metric": "F1", "baseline": 5.3, "pre-trained": {"score": 6.8}}})
    with pytest.raises(ValueError, match="at least one task"):
        viz.transfer_bars({})


def test_label_budget_figure_draws_a_mean_line_and_seed_band_per_encoder():
    def row(p, s):
        return {"pre-trained": {"score": sum(p) / 2, "scores": p}, "from scratch": {"score": sum(s) / 2, "scores": s}}

    rows = [row([58.0, 62.0], [50.0, 52.0]), row([74.0, 76.0], [69.0, 71.0])]
    curve = {"metric": "acc", "baseline": 50.9, "budgets": [100, 1000], "rows": rows}
    fig = viz.label_budget_figure(curve, title="t")
    ax = fig.axes[0]
    lines = {line.get_label(): line for line in ax.lines}
    assert list(lines["pre-trained"].get_ydata()) == [60.0, 75.0]
    assert list(lines["from scratch"].get_xdata()) == [100.0, 1000.0]
    assert list(lines["label-blind"].get_ydata()) == [50.9, 50.9]
    assert ax.get_xscale() == "log" and len(ax.collections) == 2  # one seed band per encoder
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == 58.0 and band.max() == 76.0
    with pytest.raises(ValueError, match="one row per budget"):
        viz.label_budget_figure({"metric": "acc", "baseline": 50.0, "budgets": [1, 2], "rows": rows[:1]})


def test_pretraining_steps_figure_draws_the_run_and_the_snapshots_scores():
    from shoulders.train import History

    hist = History()
    for step, mlm, nsp in ((1000, 0.10, 0.55), (2000, 0.20, 0.70)):
        hist.log(step, val_mlm_acc=mlm, val_nsp_acc=nsp)
    fig = viz.pretraining_steps_figure(hist, {0: [50.0, 52.0], 1000: [55.0, 57.0], 2000: [60.0, 64.0]}, "acc", 50.9,
                                       title="t")
    left, right = fig.axes[:2]
    lines = {line.get_label(): line for line in left.lines}
    assert list(lines["masked LM"].get_ydata()) == [10.0, 20.0] and list(lines["next sentence"].get_xdata()) == [
        1000, 2000]
    fine = {line.get_label(): line for line in right.lines}
    assert list(fine["fine-tuned"].get_xdata()) == [0.0, 1000.0, 2000.0]
    assert list(fine["fine-tuned"].get_ydata()) == [51.0, 56.0, 62.0]
    assert list(fine["label-blind"].get_ydata()) == [50.9, 50.9]
    band = right.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == 50.0 and band.max() == 64.0
    with pytest.raises(ValueError, match="at least one snapshot"):
        viz.pretraining_steps_figure(hist, {}, "acc", 50.0)


def test_any_two_encoders_of_a_row_can_be_compared():
    rows = {"SST-5": {"metric": "accuracy %", "baseline": 25.3, "GloVe": {"score": 36.0, "scores": [35.5, 36.8]},
                      "GloVe + ELMo": {"score": 38.0, "scores": [37.5, 38.5]}}}
    fig = viz.transfer_bars(rows, encoders=("GloVe", "GloVe + ELMo"), gain_name="ELMo")
    ax = [a for a in fig.axes if a.get_visible()][0]
    assert [p.get_height() for p in ax.patches] == pytest.approx([25.3, 36.0, 38.0])
    assert "ELMo +2.0" in ax.get_title()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["baseline", "GloVe", "GloVe + ELMo"]
    with pytest.raises(ValueError, match="lacks"):
        viz.transfer_bars(rows)                       # the default pair is not in this row


def test_an_encoder_missing_from_some_budgets_gets_points_only_where_it_ran():
    curve = {"metric": "acc", "baseline": 50.0, "budgets": [100, 1000],
             "rows": [{"a": {"score": 60.0, "scores": [59.0, 61.0]}, "b": {"score": 70.0, "scores": [70.0]}},
                      {"a": {"score": 80.0, "scores": [80.0]}}]}
    fig = viz.label_budget_figure(curve)
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    np.testing.assert_array_equal(lines["a"].get_xdata(), [100, 1000])
    np.testing.assert_array_equal(lines["b"].get_xdata(), [100])
    np.testing.assert_array_equal(lines["b"].get_ydata(), [70.0])


def test_pretraining_steps_figure_takes_any_logged_curve_and_a_control():
    from shoulders.train import History

    hist = History()
    for step, ppl in ((500, 300.0), (1000, 200.0)):
        hist.log(step, val_ppl=ppl)
    fig = viz.pretraining_steps_figure(hist, {0: [55.0], 1000: [60.0, 62.0]}, "acc", 50.0,
                                       curves=(("val_ppl", "WikiText-2", 1.0),), left_label="perplexity", logy=True,
                                       control=[52.0, 54.0], zero="stage 2 alone")
    left, right = fig.axes[:2]
    assert list(left.lines[0].get_ydata()) == [300.0, 200.0] and left.get_yscale() == "log"
    fine = {line.get_label(): line for line in right.lines}
    assert list(fine["from scratch"].get_ydata()) == [53.0, 53.0]
    assert "stage 2 alone" in right.get_xlabel()

"""shoulders.viz.senteval_bars: the small SentEval's table as bars, one panel per task, the majority class dashed."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from shoulders import viz  # noqa: E402
from shoulders.evaluate.senteval import TaskResult  # noqa: E402


def _row(task: str, test: float, majority: float) -> TaskResult:
    return TaskResult(task, test, test, 1e-3, {1e-3: test}, majority, 16, 100, 0.0, 0.0)


RESULTS = {"mean of word2vec vectors": {"sst2": _row("sst2", 67.3, 49.9), "snli": _row("snli", 52.5, 34.3)},
           "PV-DBOW": {"sst2": _row("sst2", 63.4, 49.9), "snli": _row("snli", 46.4, 34.3)}}


def test_a_panel_per_task_a_bar_per_encoder_and_the_majority_dashed():
    fig = viz.senteval_bars(RESULTS, title="t")
    assert [ax.get_title() for ax in fig.axes] == ["sst2 (test %)", "snli (test %)"]
    for ax, task in zip(fig.axes, ("sst2", "snli")):
        assert [p.get_width() for p in ax.patches] == pytest.approx([r[task].test for r in RESULTS.values()])
        (floor,) = ax.lines
        assert floor.get_linestyle() == "--"
        assert floor.get_xdata()[0] == pytest.approx(RESULTS["PV-DBOW"][task].majority)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == list(RESULTS)
    assert [t.get_text() for t in fig.axes[1].get_yticklabels()] == ["", ""]  # names on the first panel only
    assert fig._suptitle.get_text() == "t"


def test_no_results_is_a_clear_error():
    with pytest.raises(ValueError, match="at least one encoder"):
        viz.senteval_bars({})

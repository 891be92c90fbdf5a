"""History: series/last/keys, JSON round trip (NaN included), figure."""
import math

import numpy as np
import pytest

from shoulders.train import History
from shoulders.viz import training_curves


def make():
    h = History()
    for t in range(1, 6):
        h.log(t, loss=1.0 / t, **{"lr/0": 0.1 * t, "lr/1": 0.01 * t})
    h.log(5, val_loss=0.7, acc=float("nan"))
    return h


def test_series_last_keys():
    h = make()
    steps, values = h.series("loss")
    assert steps.dtype == np.int64 and values.dtype == np.float64
    assert steps.tolist() == [1, 2, 3, 4, 5] and values[1] == 0.5
    assert h.last("lr/1") == pytest.approx(0.05) and h.last("val_loss") == 0.7
    assert h.keys() == ["loss", "lr/0", "lr/1", "val_loss", "acc"]
    assert h.lr_keys() == ["lr/0", "lr/1"] and len(h) == 5 and h.last_step() == 5
    with pytest.raises(KeyError, match="has no series 'nope'.*'loss'"):
        h.series("nope")


def test_save_load_round_trip(tmp_path):
    h = make()
    path = h.save(tmp_path / "sub" / "history.json")
    back = History.load(path)
    assert back.keys() == h.keys()
    for key in h.keys():
        s1, v1 = h.series(key)
        s2, v2 = back.series(key)
        assert s1.tolist() == s2.tolist()
        np.testing.assert_array_equal(v1, v2)  # NaN == NaN here
    assert math.isnan(back.last("acc"))
    assert not list(tmp_path.glob("sub/.*"))  # no temporary file left
    with pytest.raises(ValueError, match="history"):
        History.from_state_dict({"format": "something else"})


def test_default_figure_has_loss_and_metric_panels():
    fig = training_curves(make())
    assert [ax.get_title() for ax in fig.axes] == ["loss", "val_loss", "acc"]
    import numpy as np

    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), make().series("loss")[1])  # the raw loss

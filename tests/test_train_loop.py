"""fit(): calling conventions, history keys, lr per group, clipping, evaluation, early stopping, NaN guard."""
import math

import pytest
import torch
from torch import nn

import shoulders as sh
from shoulders.train import Callback, EarlyStopping, TrainingDiverged, fit, load_checkpoint, schedules
from shoulders.viz import LivePlot, training_curves


class Regressor(nn.Module):
    """A tiny MLP: ``model(x, y)`` returns the MSE loss."""

    def __init__(self, d=4, hidden=8, dropout=0.0):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, hidden), nn.Tanh(), nn.Dropout(dropout), nn.Linear(hidden, 1))

    def forward(self, x, y):
        return nn.functional.mse_loss(self.net(x).squeeze(-1), y)


def data(n=32, d=4, batch=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = x.sum(-1) * 3
    return [(x[i:i + batch], y[i:i + batch]) for i in range(0, n, batch)]


def quiet(**kw):
    return dict(progress=False, device="cpu", **kw)


def test_calling_conventions_and_logged_scalars():
    sh.seed(0)
    batches = data()

    class DictModel(Regressor):
        def forward(self, x, y):  # a dict batch arrives as keyword arguments
            loss = super().forward(x, y)
            return {"loss": loss, "mae": (self.net(x).squeeze(-1) - y).abs().mean(), "tokens": x.shape[0],
                    "logits": self.net(x)}  # non-scalars are not logged

    model = DictModel()
    hist = fit(model, [{"x": x, "y": y} for x, y in batches], torch.optim.SGD(model.parameters(), lr=0.01),
               steps=6, **quiet())
    assert hist.keys()[:5] == ["loss", "lr/0", "grad_norm", "time", "epoch"]
    assert "mae" in hist and "logits" not in hist
    steps, tokens = hist.series("tokens")
    assert steps.tolist() == [1, 2, 3, 4, 5, 6] and tokens.tolist() == [8, 16, 24, 32, 40, 48]  # cumulative
    assert hist.series("epoch")[1].tolist() == [0, 0, 0, 0, 1, 1]
    assert len(hist) == 6 and hist.last_step() == 6

    seen = []

    def loss_fn(m, batch):
        seen.append(type(batch))
        x, y = batch
        return m(x, y)

    fit(model, batches, torch.optim.SGD(model.parameters(), lr=0.01), steps=2, loss_fn=loss_fn, **quiet())
    assert seen == [tuple, tuple]

    class TensorModel(nn.Module):  # a bare tensor batch arrives as one argument
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(4))

        def forward(self, x):
            return (x @ self.w).pow(2).mean()

    tm = TensorModel()
    fit(tm, [torch.randn(3, 4)], torch.optim.SGD(tm.parameters(), lr=0.01), steps=2, **quiet())
    assert not torch.equal(tm.w, torch.ones(4))


def test_bad_outputs_and_inputs_are_clear_errors():
    class Bad(nn.Module):
        def __init__(self, out):
            super().__init__()
            self.w = nn.Parameter(torch.ones(2))
            self.out = out

        def forward(self, x):
            return self.out(self.w * x)

    x = [torch.ones(2)]
    for out, err, words in [(lambda v: {"logits": v}, TypeError, "'loss'"), (lambda v: v, TypeError, "scalar"),
                            (lambda v: v.sum().item(), TypeError, "scalar tensor")]:
        m = Bad(out)
        with pytest.raises(err, match=words):
            fit(m, x, torch.optim.SGD(m.parameters(), lr=0.1), steps=1, **quiet())
    m = Bad(lambda v: v.sum())
    with pytest.raises(TypeError, match="one-shot iterator"):
        fit(m, (b for b in x), torch.optim.SGD(m.parameters(), lr=0.1), steps=1, **quiet())
    with pytest.raises(ValueError, match="no batch"):
        fit(m, [], torch.optim.SGD(m.parameters(), lr=0.1), steps=1, **quiet())


def test_history_records_the_lr_of_every_param_group():
    sh.seed(0)
    model = Regressor()
    groups = sh.train.discriminative_lr([model.net[0], model.net[3]], lr=0.1)
    opt = torch.optim.SGD(groups, lr=0.1)
    s = schedules.stlr(20, cut_frac=0.25, ratio=8)
    hist = fit(model, data(), opt, steps=20, schedule=s, **quiet())
    assert hist.lr_keys() == ["lr/0", "lr/1"]
    for i, base in enumerate([0.1 / 2.6, 0.1]):
        steps, lrs = hist.series(f"lr/{i}")
        assert steps.tolist() == list(range(1, 21))
        assert lrs.tolist() == pytest.approx([base * s(t) for t in range(1, 21)], rel=1e-12)
    assert hist.series("lr/1")[1].max() == pytest.approx(0.1)  # peak at t = cut = 5
    assert hist.series("lr/1")[1][4] == pytest.approx(0.1)


class GradNormAfterStep(Callback):
    """The global gradient norm the optimiser actually used (grads are kept until the next step starts)."""

    def __init__(self):
        self.norms = []

    def on_step_end(self, run, logs):
        grads = [p.grad.norm() for p in run.model.parameters() if p.grad is not None]
        self.norms.append(torch.stack(grads).norm().item())


@pytest.mark.parametrize("clip", [None, 0.5])
def test_clipping_bounds_the_gradient_norm(clip):
    sh.seed(0)
    model = Regressor()
    probe = GradNormAfterStep()
    hist = fit(model, data(), torch.optim.SGD(model.parameters(), lr=1e-3), steps=8, clip=clip, callbacks=[probe],
               **quiet())
    before = hist.series("grad_norm")[1]
    assert (before > 0.5).all()  # the raw gradients are large, so clipping has work to do
    if clip is None:
        assert probe.norms == pytest.approx(before.tolist(), rel=1e-5)
    else:
        assert max(probe.norms) <= clip * (1 + 1e-5)
        assert probe.norms == pytest.approx([clip] * 8, rel=1e-4)


def test_evaluation_schedule_mode_and_no_grad():
    sh.seed(0)
    model = Regressor(dropout=0.5)
    calls = []

    def evaluate(m):
        calls.append((m.training, torch.is_grad_enabled()))
        return {"val_loss": m(*data(seed=1)[0]), "const": 1}

    hist = fit(model, data(), torch.optim.SGD(model.parameters(), lr=0.01), steps=10, evaluate=evaluate, eval_every=3,
               **quiet())
    assert hist.series("val_loss")[0].tolist() == [3, 6, 9, 10]  # every 3 and at the end
    assert calls == [(False, False)] * 4
    assert model.training
    fig = training_curves(hist)
    assert [ax.get_title() for ax in fig.axes] == ["loss", "val_loss", "const"]


class Snapshots(Callback):
    def __init__(self):
        self.params = {}

    def on_step_end(self, run, logs):
        self.params[run.step] = {k: v.clone() for k, v in run.model.state_dict().items()}


@pytest.mark.parametrize("mode, values", [("min", [5, 4, 3, 3.5, 3.2, 3.1, 2, 1, 0, 0]),
                                          ("max", [1, 2, 3, 2.5, 2.9, 3.0, 4, 5, 6, 7])])
def test_early_stopping_stops_at_the_right_step_and_restores_best(mode, values):
    sh.seed(0)
    model = Regressor()
    it = iter(values)
    snaps = Snapshots()
    es = EarlyStopping("score", patience=2, mode=mode)
    hist = fit(model, data(), torch.optim.SGD(model.parameters(), lr=0.05), steps=10,
               evaluate=lambda m: {"score": next(it)}, eval_every=1, early_stopping=es, callbacks=[snaps], **quiet())
    # best at step 3; steps 4, 5, 6 do not improve -> wait 3 > patience 2 -> stop after step 6.
    assert len(hist) == 6 and es.stopped_step == 6 and es.best_step == 3 and es.best == 3
    for k, v in model.state_dict().items():
        assert torch.equal(v, snaps.params[3][k])
    assert not torch.equal(snaps.params[6]["net.0.weight"], snaps.params[3]["net.0.weight"])


def test_early_stopping_needs_its_metric():
    model = Regressor()
    with pytest.raises(KeyError, match="score"):
        fit(model, data(), torch.optim.SGD(model.parameters(), lr=0.05), steps=3, evaluate=lambda m: {"other": 1.0},
            eval_every=1, early_stopping=EarlyStopping("score"), **quiet())
    with pytest.raises(ValueError, match="evaluate"):
        fit(model, data(), torch.optim.SGD(model.parameters(), lr=0.05), steps=3, early_stopping=EarlyStopping("score"),
            **quiet())


class NaNAt(Regressor):
    """The loss turns NaN at the k-th forward pass."""

    def __init__(self, k):
        super().__init__()
        self.k, self.calls = k, 0

    def forward(self, x, y):
        self.calls += 1
        loss = super().forward(x, y)
        return loss * float("nan") if self.calls == self.k else loss


def test_nan_guard_stops_with_the_step_and_keeps_the_last_good_checkpoint(tmp_path):
    sh.seed(0)
    model = NaNAt(5)
    snaps = Snapshots()
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    with pytest.raises(TrainingDiverged, match="step 5") as info:
        fit(model, data(), opt, steps=10, checkpoint=tmp_path, checkpoint_every=1, callbacks=[snaps], **quiet())
    err = info.value
    assert err.step == 5 and err.what == "loss" and err.checkpoint == tmp_path / "step-00000004"
    assert str(tmp_path / "step-00000004") in str(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-00000004"]  # nothing written for the bad state
    for k, v in model.state_dict().items():  # the bad update was not applied
        assert torch.equal(v, snaps.params[4][k])
    fresh = Regressor()
    state = load_checkpoint(err.checkpoint, fresh)
    assert state["step"] == 4
    for k, v in fresh.state_dict().items():
        assert torch.equal(v, snaps.params[4][k])


def test_nan_guard_catches_an_infinite_gradient():
    sh.seed(0)
    model = Regressor()
    model.net[0].weight.register_hook(lambda g: g * math.inf)
    before = model.net[3].weight.detach().clone()
    with pytest.raises(TrainingDiverged, match="grad_norm") as info:
        fit(model, data(), torch.optim.SGD(model.parameters(), lr=0.01), steps=3, **quiet())
    assert info.value.step == 1 and info.value.checkpoint is None
    assert torch.equal(model.net[3].weight, before)


def test_callback_stop_and_live_plot_outside_a_notebook():
    class StopAt(Callback):
        def on_step_end(self, run, logs):
            if run.step == 3:
                run.stop("enough")

    model = Regressor()
    hist = fit(model, data(), torch.optim.SGD(model.parameters(), lr=0.01), steps=10,
               evaluate=lambda m: {"v": 0.0}, eval_every=5, callbacks=[StopAt(), LivePlot()], **quiet())
    assert len(hist) == 3 and hist.series("v")[0].tolist() == [3]  # a stop is followed by a final evaluation


class Bag(nn.Module):
    """A bag-of-rows classifier whose table takes sparse or dense gradients (fastText's table A)."""

    def __init__(self, sparse: bool):
        super().__init__()
        torch.manual_seed(0)
        self.table = nn.EmbeddingBag(50, 3, mode="mean", sparse=sparse)

    def forward(self, ids, offsets, y):
        return nn.functional.cross_entropy(self.table(ids, offsets), y)


def test_sparse_gradients_are_measured_clipped_and_applied_like_dense_ones():
    """A row repeated in the batch adds its updates before the norm is taken; clipping scales the sparse values."""
    ids = torch.tensor([1, 2, 2, 7, 1, 1, 9])  # rows 1 and 2 repeat: the uncoalesced values would miscount
    batch = (ids, torch.tensor([0, 3, 5]), torch.tensor([0, 2, 1]))
    runs = {}
    for sparse in (False, True):
        model = Bag(sparse)
        hist = fit(model, [batch], torch.optim.SGD(model.parameters(), lr=0.5), steps=3, clip=0.05, **quiet())
        runs[sparse] = (hist.series("grad_norm")[1], model.table.weight.detach())
    torch.testing.assert_close(torch.as_tensor(runs[True][0]), torch.as_tensor(runs[False][0]))
    assert runs[False][0][0] > 0.05  # the clip was active
    torch.testing.assert_close(runs[True][1], runs[False][1])


class Shuffled:
    """Five batches in a random order per pass, the order drawn by iter() (torch's global RNG, inside fit's lane)."""

    def __init__(self, at_iter: bool):
        g = torch.Generator().manual_seed(3)
        self.xs = [torch.randn(4, 4, generator=g) for _ in range(5)]
        self.draws_at_iter = at_iter
        self.seen: list[int] = []

    def __iter__(self):
        order = torch.randperm(len(self.xs)).tolist()
        return self._pass(order)

    def _pass(self, order):
        for i in order:
            self.seen.append(i)
            yield self.xs[i], self.xs[i].sum(1, keepdim=True)


class Dropped(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))

    def forward(self, x, y):
        return (self.net(x) - y).pow(2).mean()


def test_draws_at_iter_skips_the_per_batch_lane_and_changes_nothing(tmp_path, monkeypatch):
    """Batches that draw only in iter() give the same passes, weights and resume with or without the flag, and the
    data lane is entered once a pass instead of once a batch."""
    from shoulders.train import rng

    entered, active = [], rng.DataRNG.active
    monkeypatch.setattr(rng.DataRNG, "active", lambda self: (entered.append(1), active(self))[1])
    runs = {}
    for at_iter in (False, True):
        data, model = Shuffled(at_iter), Dropped()
        torch.manual_seed(1)  # dropout's training RNG
        entered.clear()
        fit(model, data, torch.optim.SGD(model.parameters(), lr=0.05), steps=12, seed=7, **quiet())
        runs[at_iter] = (data.seen, [p.detach().clone() for p in model.parameters()], len(entered))
    assert runs[True][0] == runs[False][0] and sorted(runs[True][0][:5]) == [0, 1, 2, 3, 4]
    assert all(torch.equal(a, b) for a, b in zip(runs[True][1], runs[False][1]))
    assert runs[True][2] == 3 and runs[False][2] > 12  # three passes begun, against every batch
    data, model = Shuffled(True), Dropped()  # interrupted after 7 of 12 updates, then resumed
    torch.manual_seed(1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    fit(model, data, opt, steps=7, seed=7, checkpoint=tmp_path, **quiet())
    data2, model2 = Shuffled(True), Dropped()
    fit(model2, data2, torch.optim.SGD(model2.parameters(), lr=0.05), steps=12, seed=7, checkpoint=tmp_path, **quiet())
    assert all(torch.equal(a, b) for a, b in zip(model2.parameters(), runs[True][1]))


def test_early_stopping_counts_a_nan_metric_as_no_improvement():
    """A NaN validation metric used to crash the stop message (TypeError: NoneType.__format__)."""
    model = Regressor()
    stop = EarlyStopping("val", patience=1, mode="min")
    with pytest.warns(RuntimeWarning, match="val is nan at step"):
        hist = fit(model, data(), torch.optim.SGD(model.parameters(), lr=0.01), steps=20,
                   evaluate=lambda m: {"val": float("nan")}, eval_every=2, early_stopping=stop, **quiet())
    assert stop.stopped_step == 4 and stop.best is None and len(hist) == 4

"""Resume equivalence: N steps straight == N/2 steps, an interruption, and a resume -- bit for bit.

The model has dropout and the data is shuffled, so the parameters only match when the RNG states *and* the data
position are restored exactly; a control run with a different data seed shows the comparison is sensitive.
"""
import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import shoulders as sh
from shoulders.train import Callback, EarlyStopping, GradualUnfreezing, discriminative_lr, fit, schedules

N = 16  # total steps; 6 batches per epoch, so the half-way point (8) is in the middle of the second epoch


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(5, 16)
        self.mid = nn.Linear(16, 16)
        self.head = nn.Linear(16, 1)
        self.drop = nn.Dropout(0.3)

    def forward(self, x, y):
        h = self.drop(torch.tanh(self.emb(x)))
        h = self.drop(torch.tanh(self.mid(h)))
        return nn.functional.mse_loss(self.head(h).squeeze(-1), y)


def loader():
    g = torch.Generator().manual_seed(123)
    x = torch.randn(48, 5, generator=g)
    return DataLoader(TensorDataset(x, x.sum(-1)), batch_size=8, shuffle=True)


class NumpyShuffled:
    """A plain re-iterable whose order comes from NumPy's global RNG (and a torch draw for good measure)."""

    def __init__(self):
        g = torch.Generator().manual_seed(7)
        self.x = torch.randn(40, 5, generator=g)

    def __iter__(self):
        order = np.random.permutation(len(self.x))
        noise = torch.randn(len(self.x)) * 0.01
        for i in range(0, len(order), 8):
            idx = torch.as_tensor(order[i:i + 8])
            yield self.x[idx], self.x[idx].sum(-1) + noise[idx]


def build(batches_factory, *, seed_value=0):
    sh.seed(seed_value)
    model = Net()
    opt = torch.optim.AdamW(discriminative_lr([model.emb, model.mid, model.head], lr=1e-2), weight_decay=0.1)
    return model, opt, batches_factory()


def kwargs(**kw):
    return dict(schedule=schedules.cosine_warmup(3, N), clip=1.0, progress=False, device="cpu", **kw)


def scramble_rngs():
    torch.manual_seed(999)
    np.random.seed(999)
    import random

    random.seed(999)


def same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


@pytest.mark.parametrize("batches_factory", [loader, NumpyShuffled], ids=["DataLoader-shuffle", "numpy-iterable"])
def test_half_then_resume_equals_straight(tmp_path, batches_factory):
    model, opt, batches = build(batches_factory)
    straight = fit(model, batches, opt, steps=N, **kwargs())

    model_a, opt_a, batches_a = build(batches_factory)
    fit(model_a, batches_a, opt_a, steps=N // 2, checkpoint=tmp_path, **kwargs())
    scramble_rngs()
    model_b, opt_b, batches_b = build(batches_factory, seed_value=5)  # fresh weights, as after a restart
    resumed = fit(model_b, batches_b, opt_b, steps=N, checkpoint=tmp_path, **kwargs())

    assert same(model, model_b)
    assert resumed.series("loss")[1].tolist() == straight.series("loss")[1].tolist()
    assert resumed.series("lr/0")[1].tolist() == straight.series("lr/0")[1].tolist()
    assert resumed.series("epoch")[1].tolist() == straight.series("epoch")[1].tolist()

    # Control: another data seed changes the result, so the equality above is not vacuous.
    model_c, opt_c, batches_c = build(batches_factory)
    fit(model_c, batches_c, opt_c, steps=N, seed=12345, **kwargs())
    assert not same(model, model_c)


class InterruptAt(Callback):
    def __init__(self, step):
        self.step = step

    def on_step_end(self, run, logs):
        if run.step == self.step:
            raise KeyboardInterrupt


def test_keyboard_interrupt_then_resume_equals_straight(tmp_path):
    def callbacks(model):
        return [GradualUnfreezing([model.emb, model.mid, model.head], every=5)]

    def evaluate(m):
        return {"val": m(*next(iter(loader()))).item()}

    common = dict(evaluate=evaluate, eval_every=4, **kwargs())
    model, opt, batches = build(loader)
    es = EarlyStopping("val", patience=100)
    straight = fit(model, batches, opt, steps=N, callbacks=callbacks(model), early_stopping=es, **common)
    assert straight.series("unfrozen")[1].tolist() == [1, 2, 3]

    model_a, opt_a, batches_a = build(loader)
    with pytest.raises(KeyboardInterrupt) as info:
        fit(model_a, batches_a, opt_a, steps=N, checkpoint=tmp_path, checkpoint_every=3,
            callbacks=callbacks(model_a) + [InterruptAt(11)], early_stopping=EarlyStopping("val", patience=100),
            **common)
    assert any("step 9" in note for note in getattr(info.value, "__notes__", ["step 9"]))
    assert [p.name for p in tmp_path.iterdir()] == ["step-00000009"]
    scramble_rngs()
    model_b, opt_b, batches_b = build(loader, seed_value=3)
    es_b = EarlyStopping("val", patience=100)
    resumed = fit(model_b, batches_b, opt_b, steps=N, checkpoint=tmp_path, callbacks=callbacks(model_b),
                  early_stopping=es_b, **common)
    assert same(model, model_b)  # both restored the best weights at the end
    assert es_b.best_step == es.best_step and es_b.best == es.best
    for key in ("loss", "val", "unfrozen", "grad_norm"):
        assert resumed.series(key)[1].tolist() == straight.series(key)[1].tolist(), key


def test_a_finished_run_is_not_trained_again(tmp_path, capsys):
    model, opt, batches = build(loader)
    hist = fit(model, batches, opt, steps=4, checkpoint=tmp_path, **kwargs())
    before = {k: v.clone() for k, v in model.state_dict().items()}
    again = fit(model, batches, opt, steps=4, checkpoint=tmp_path, schedule=schedules.cosine_warmup(3, N),
                clip=1.0, device="cpu")
    assert "nothing to train" in capsys.readouterr().out
    assert again.series("loss")[1].tolist() == hist.series("loss")[1].tolist()
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    more = fit(model, batches, opt, steps=6, checkpoint=tmp_path, **kwargs())  # a larger budget continues
    assert len(more) == 6

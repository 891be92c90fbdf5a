"""Learning-rate schedules against their closed forms (hand-computed values) and torch's OneCycleLR."""
import math

import numpy as np
import pytest
import torch

from shoulders.train import schedules as S


def test_stlr_hand_computed_values():
    # Howard & Ruder (2018) eq. 3 with T=1000, cut_frac=0.1, ratio=32: cut = 100.
    s = S.stlr(1000, cut_frac=0.1, ratio=32)
    expected = {
        1: (1 + 0.01 * 31) / 32,  # p = 1/100                      -> 0.0409375
        50: 16.5 / 32,  # p = 0.5                                   -> 0.515625
        100: 1.0,  # t = cut: p = 1 - 0/900 = 1, the peak
        101: (1 + (1 - 1 / 900) * 31) / 32,  # p = 899/900          -> 0.99892361...
        550: 16.5 / 32,  # p = 1 - 450/900 = 0.5
        1000: 1 / 32,  # p = 0: η_max / ratio
    }
    for t, value in expected.items():
        assert s(t) == pytest.approx(value, rel=1e-12, abs=0), t
    assert s(1) == pytest.approx(0.0409375, rel=1e-12)
    assert s(101) == pytest.approx(0.998923611111, rel=1e-9)
    assert s(5000) == pytest.approx(1 / 32)  # stays at η_max/ratio after T


def test_inverse_sqrt_is_vaswani_eq3():
    d, w = 512, 4000
    s = S.inverse_sqrt(w, d_model=d)
    for t in (1, 100, 3999, 4000, 4001, 10_000, 100_000):
        assert s(t) == pytest.approx(d**-0.5 * min(t**-0.5, t * w**-1.5), rel=1e-12), t
    assert s(4000) == pytest.approx(6.987712429686844e-04, rel=1e-12)  # 1/sqrt(512·4000), the peak
    assert s(1) == pytest.approx(1 / math.sqrt(512) / 4000**1.5, rel=1e-12)
    ts = np.arange(1, 20_001)
    assert int(np.argmax(s.curve(ts))) + 1 == w
    # Without d_model the peak is 1 at t = warmup, same shape.
    n = S.inverse_sqrt(w)
    assert n(w) == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(n.curve(ts), s.curve(ts) / s(w), rtol=1e-12)


@pytest.mark.parametrize("total, pct, div, final",
                         [(100, 0.3, 25.0, 1e4), (37, 0.25, 10.0, 100.0), (1000, 0.45, 25.0, 1e4)])
def test_one_cycle_matches_torch(total, pct, div, final):
    max_lr = 0.1
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=max_lr, momentum=0.9)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=max_lr, total_steps=total, pct_start=pct,
                                                div_factor=div, final_div_factor=final, anneal_strategy="cos")
    torch_lrs = []
    for _ in range(total):
        torch_lrs.append(opt.param_groups[0]["lr"])  # the lr the update uses
        opt.step()
        sched.step()
    ours = max_lr * S.one_cycle(total, pct, div, final).curve(np.arange(1, total + 1))
    np.testing.assert_allclose(ours, torch_lrs, rtol=1e-12, atol=0)


def test_linear_warmup_decay_values():
    s = S.linear_warmup_decay(10, 100)
    assert [s(t) for t in (1, 5, 10)] == pytest.approx([0.1, 0.5, 1.0])
    assert [s(t) for t in (55, 91, 100, 150)] == pytest.approx([0.5, 0.1, 0.0, 0.0])


def test_cosine_warmup_values():
    s = S.cosine_warmup(10, 110)
    assert [s(t) for t in (5, 10, 60, 110, 200)] == pytest.approx([0.5, 1.0, 0.5, 0.0, 0.0], abs=1e-12)
    m = S.cosine_warmup(10, 110, min_ratio=0.1)
    assert [m(60), m(110), m(200)] == pytest.approx([0.55, 0.1, 0.1])
    assert m(35) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi / 4)))


def test_constant():
    assert S.constant().curve(np.arange(1, 6)).tolist() == [1.0] * 5


ALL = [S.constant(), S.linear_warmup_decay(7, 50), S.inverse_sqrt(7), S.inverse_sqrt(7, d_model=64), S.stlr(50),
       S.stlr_cycles(12, 3, 50), S.cosine_warmup(7, 50, 0.2), S.one_cycle(50)]


def test_stlr_cycles_restart_a_triangle_at_each_stage():
    s, one, last = S.stlr_cycles(20, 3, 70), S.stlr(20), S.stlr(30)
    ts = np.arange(1, 21)
    np.testing.assert_array_equal(s.curve(ts), one.curve(ts))        # stage 1
    np.testing.assert_array_equal(s.curve(ts + 20), one.curve(ts))   # stage 2 starts over
    np.testing.assert_array_equal(s.curve(np.arange(41, 71)), last.curve(np.arange(1, 31)))  # the last runs to 70
    assert s(2) == 1.0 and s(22) == 1.0 and s(43) == 1.0             # each stage peaks at its cut
    np.testing.assert_array_equal(S.stlr_cycles(9, 1, 50).curve(np.arange(1, 51)), S.stlr(50).curve(np.arange(1, 51)))
    short = S.stlr_cycles(4, 3, 20)  # stages shorter than 1 / cut_frac peak at their first update
    assert short(1) == short(5) == short(9) == 1.0 and short(2) < 1.0


@pytest.mark.parametrize("s", ALL, ids=[x.name for x in ALL])
def test_rebuild_from_name_and_params_and_curve_equals_call(s):
    ts = np.arange(1, 61)
    rebuilt = getattr(S, s.name)(**s.params)
    np.testing.assert_array_equal(rebuilt.curve(ts), s.curve(ts))
    np.testing.assert_array_equal(s.curve(ts), [s(int(t)) for t in ts])
    assert s.curve(ts.reshape(6, 10)).shape == (6, 10)
    assert s.__doc__ and getattr(S, s.name).__doc__


@pytest.mark.parametrize("bad", [lambda: S.stlr(5, cut_frac=0.1), lambda: S.stlr(100, cut_frac=1.5),
                                 lambda: S.linear_warmup_decay(100, 100), lambda: S.cosine_warmup(5, 50, min_ratio=2),
                                 lambda: S.inverse_sqrt(0), lambda: S.one_cycle(10, pct_start=0.05),
                                 lambda: S.stlr_cycles(10, 3, 20), lambda: S.stlr_cycles(0, 3, 20)])
def test_bad_arguments_are_errors(bad):
    with pytest.raises(ValueError):
        bad()


def test_scheduled_lr_sets_group_lrs_and_restores():
    a, b = torch.nn.Parameter(torch.zeros(1)), torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([{"params": [a], "lr": 0.1}, {"params": [b], "lr": 0.01}])
    sched = S.ScheduledLR(opt, S.stlr(100))
    assert sched.set_step(10) == pytest.approx([0.1, 0.01])
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([0.1, 0.01])
    # A second scheduler on the same optimiser starts from the initial rates, not the current ones.
    sched.set_step(100)
    again = S.ScheduledLR(opt, S.constant())
    assert again.base_lrs == [0.1, 0.01]

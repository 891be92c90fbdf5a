"""Learning-rate schedules as plain functions of the update step.

Every factory returns a :class:`Schedule`: ``s(t)`` is the *multiplier* applied to each param group's base
learning rate before update ``t``, where ``t = 1`` is the first optimiser update. So the optimiser is built with
the peak rate (``η_max`` for STLR, ``max_lr`` for one-cycle) and the schedule shapes it over time; discriminative
learning rates (one base rate per layer group) keep their ratios under every schedule.

``s.curve(ts)`` evaluates a whole array of steps at once (the LR widget uses it), ``s.name`` is the factory's
name and ``s.params`` its arguments, so ``getattr(schedules, s.name)(**s.params)`` rebuilds it.

:class:`ScheduledLR` applies a schedule to an optimiser (the equivalent of ``torch.optim.lr_scheduler.LambdaLR``
with a 1-based step) and has a ``state_dict`` for checkpoints.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import numpy as np
import torch

__all__ = [
    "Schedule",
    "ScheduledLR",
    "constant",
    "cosine_warmup",
    "inverse_sqrt",
    "linear_warmup_decay",
    "one_cycle",
    "stlr",
    "stlr_cycles",
]


@dataclasses.dataclass(frozen=True)
class Schedule:
    """A learning-rate multiplier as a function of the 1-based update step.

    Attributes:
        name: the factory that made it (``"stlr"``, ...).
        params: that factory's keyword arguments, defaults included.
        fn: vectorised ``(ts: float64 (N,)) -> multipliers float64 (N,)``.
    """

    name: str
    params: dict[str, Any]
    fn: Callable[[np.ndarray], np.ndarray] = dataclasses.field(repr=False, compare=False)

    def __call__(self, t: int | float) -> float:
        return float(self.fn(np.asarray([t], dtype=np.float64))[0])

    def curve(self, ts: np.ndarray) -> np.ndarray:
        """Multipliers at every step of ``ts`` (any shape; float64 out, same shape)."""
        ts = np.asarray(ts, dtype=np.float64)
        return self.fn(ts.reshape(-1)).reshape(ts.shape)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.name}({args})"


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


def constant() -> Schedule:
    """The base learning rate at every step (multiplier 1)."""
    return Schedule("constant", {}, lambda t: np.ones_like(t))


def linear_warmup_decay(warmup: int, total: int) -> Schedule:
    """Linear warm-up from 0 to 1 over ``warmup`` steps, then linear decay to 0 at step ``total``.

    BERT (Devlin et al., 2019, §A.2: "learning rate warmup over the first 10,000 steps, and linear decay of the
    learning rate"):

        m(t) = t / warmup                          for t ≤ warmup
        m(t) = (total − t) / (total − warmup)      for warmup < t ≤ total,   0 after.

    (BERT's TensorFlow code decays as 1 − t/total and switches at ``warmup``, a small jump; this continuous
    form is the one Hugging Face's ``get_linear_schedule_with_warmup`` uses, shifted to 1-based steps.)
    """
    warmup, total = int(warmup), int(total)
    _check(0 <= warmup < total, f"need 0 <= warmup < total, got warmup={warmup}, total={total}")

    def fn(t: np.ndarray) -> np.ndarray:
        up = t / warmup if warmup > 0 else np.ones_like(t)
        down = (total - t) / (total - warmup)
        return np.clip(np.where(t <= warmup, up, down), 0.0, None)

    return Schedule("linear_warmup_decay", {"warmup": warmup, "total": total}, fn)


def inverse_sqrt(warmup: int, d_model: int | None = None) -> Schedule:
    """Linear warm-up, then decay with the inverse square root of the step.

    Vaswani et al. (2017), eq. 3: ``lrate = d_model^-0.5 · min(t^-0.5, t · warmup^-1.5)``.

    With ``d_model`` this is eq. 3 exactly -- give the optimiser base lr 1.0 (the paper's Adam has no other
    rate; β₁=0.9, β₂=0.98, ε=1e-9, warmup=4000). Without ``d_model`` the curve is normalised to peak at 1 at
    ``t = warmup``: ``min(sqrt(warmup / t), t / warmup)``, so the optimiser's lr is the peak rate.
    """
    warmup = int(warmup)
    _check(warmup >= 1, f"warmup must be >= 1, got {warmup}")
    _check(d_model is None or int(d_model) >= 1, f"d_model must be a positive int, got {d_model}")
    scale = float(d_model) ** -0.5 if d_model is not None else math.sqrt(warmup)

    def fn(t: np.ndarray) -> np.ndarray:
        t = np.maximum(t, 1.0)
        return scale * np.minimum(t**-0.5, t * warmup**-1.5)

    return Schedule("inverse_sqrt", {"warmup": warmup, "d_model": None if d_model is None else int(d_model)}, fn)


def stlr(total: int, cut_frac: float = 0.1, ratio: float = 32) -> Schedule:
    """Slanted triangular learning rates (Howard & Ruder, 2018, ULMFiT, eq. 3).

        cut = ⌊T · cut_frac⌋
        p   = t / cut                                     if t < cut
              1 − (t − cut) / (cut · (1/cut_frac − 1))    otherwise
        η_t = η_max · (1 + p · (ratio − 1)) / ratio

    A short linear increase to η_max at ``t = cut`` and a long linear decay to η_max/ratio at ``t = T``; the
    optimiser's lr is η_max. The paper uses cut_frac = 0.1, ratio = 32. After T the rate stays at η_max/ratio.
    (``⌊T·cut_frac⌋`` is taken with a 1e-9 tolerance so 0.29·100 gives 29, not 28.)
    """
    total, cut_frac, ratio = int(total), float(cut_frac), float(ratio)
    _check(0 < cut_frac < 1, f"cut_frac must be in (0, 1), got {cut_frac}")
    _check(ratio >= 1, f"ratio must be >= 1, got {ratio}")
    cut = math.floor(total * cut_frac + 1e-9)
    _check(cut >= 1, f"total * cut_frac must be >= 1 (got cut = floor({total} * {cut_frac}) = {cut})")
    params = {"total": total, "cut_frac": cut_frac, "ratio": int(ratio) if ratio.is_integer() else ratio}
    return Schedule("stlr", params, _slanted(cut, cut_frac, ratio))


def _slanted(cut: int, cut_frac: float, ratio: float) -> Callable[[np.ndarray], np.ndarray]:
    """Eq. 3 of ULMFiT with its peak at update ``cut``."""

    def fn(t: np.ndarray) -> np.ndarray:
        p = np.where(t < cut, t / cut, 1.0 - (t - cut) / (cut * (1.0 / cut_frac - 1.0)))
        p = np.clip(p, 0.0, None)
        return (1.0 + p * (ratio - 1.0)) / ratio

    return fn


def stlr_cycles(every: int, stages: int, total: int, cut_frac: float = 0.1, ratio: float = 32) -> Schedule:
    """One slanted triangle (:func:`stlr`) per stage: ``stages - 1`` stages of ``every`` updates, then a last one
    running to ``total``. How the authors' fastai code trains a ULMFiT classifier under gradual unfreezing (one
    ``fit_one_cycle`` per stage, Howard & Ruder 2018, sec. 3.3), so a layer group that joins late still meets a
    peak rate: update ``t = k·every + u`` (``u = 1 ... every``) of an early stage ``k`` gets ``stlr(every)(u)``, an
    update ``t = (stages-1)·every + u`` of the last stage ``stlr(total - (stages-1)·every)(u)``. With ``stages =
    1`` this is :func:`stlr` over ``total``. A stage shorter than ``1 / cut_frac`` updates peaks at its first."""
    every, stages, total = int(every), int(stages), int(total)
    _check(every >= 1 and stages >= 1, f"need every >= 1 and stages >= 1, got every={every}, stages={stages}")
    last = (stages - 1) * every  # updates before the last stage
    _check(last < total, f"{stages} stages of {every} updates need total > {last}, got total={total}")
    cut_frac, ratio = float(cut_frac), float(ratio)
    _check(0 < cut_frac < 1 and ratio >= 1, f"need 0 < cut_frac < 1 and ratio >= 1, got {cut_frac}, {ratio}")
    short = _slanted(max(1, math.floor(every * cut_frac + 1e-9)), cut_frac, ratio)
    long = _slanted(max(1, math.floor((total - last) * cut_frac + 1e-9)), cut_frac, ratio)

    def fn(t: np.ndarray) -> np.ndarray:
        t = np.maximum(t, 1.0)
        return np.where(t > last, long(t - last), short((t - 1.0) % every + 1.0))

    params = {"every": every, "stages": stages, "total": total, "cut_frac": float(cut_frac),
              "ratio": int(ratio) if float(ratio).is_integer() else float(ratio)}
    return Schedule("stlr_cycles", params, fn)


def cosine_warmup(warmup: int, total: int, min_ratio: float = 0.0) -> Schedule:
    """Linear warm-up over ``warmup`` steps, then cosine annealing to ``min_ratio`` at step ``total``.

    GPT (Radford et al., 2018, §4.1: "increased linearly from zero over the first 2000 updates and annealed
    to 0 using a cosine schedule"); the cosine is SGDR's (Loshchilov & Hutter, 2017, eq. 5) without restarts:

        m(t) = t / warmup                                                   for t ≤ warmup
        m(t) = r + (1 − r) · ½ (1 + cos(π (t − warmup) / (total − warmup)))  for warmup < t ≤ total
        m(t) = r after total,   with r = min_ratio.
    """
    warmup, total, min_ratio = int(warmup), int(total), float(min_ratio)
    _check(0 <= warmup < total, f"need 0 <= warmup < total, got warmup={warmup}, total={total}")
    _check(0.0 <= min_ratio <= 1.0, f"min_ratio must be in [0, 1], got {min_ratio}")

    def fn(t: np.ndarray) -> np.ndarray:
        up = t / warmup if warmup > 0 else np.ones_like(t)
        frac = np.clip((t - warmup) / (total - warmup), 0.0, 1.0)
        down = min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + np.cos(np.pi * frac))
        return np.where(t <= warmup, up, down)

    return Schedule("cosine_warmup", {"warmup": warmup, "total": total, "min_ratio": min_ratio}, fn)


def one_cycle(total: int, pct_start: float = 0.3, div_factor: float = 25.0, final_div_factor: float = 1e4) -> Schedule:
    """The 1cycle policy (Smith, 2018; Smith & Topin, 2019), as ``torch.optim.lr_scheduler.OneCycleLR``.

    Cosine from max_lr/div_factor up to max_lr over the first ``pct_start·total`` steps, then cosine down to
    max_lr/(div_factor·final_div_factor) at step ``total``; the optimiser's lr is max_lr. The multipliers equal
    OneCycleLR's (``anneal_strategy="cos"``, two phases) with torch's 0-based step = t − 1; momentum cycling,
    which OneCycleLR also does by default, is not part of a learning-rate schedule.
    """
    total, pct_start = int(total), float(pct_start)
    div_factor, final_div_factor = float(div_factor), float(final_div_factor)
    _check(total >= 2, f"total must be >= 2, got {total}")
    _check(0 < pct_start < 1, f"pct_start must be in (0, 1), got {pct_start}")
    start = 1.0 / div_factor
    end = start / final_div_factor
    up_end = pct_start * total - 1.0  # torch: float(pct_start * total_steps) - 1
    down_end = total - 1.0
    _check(up_end > 0, f"pct_start * total must be > 1 (got {pct_start * total})")

    def cos(a: float, b: float, pct: np.ndarray) -> np.ndarray:
        return b + (a - b) / 2.0 * (np.cos(np.pi * pct) + 1.0)

    def fn(t: np.ndarray) -> np.ndarray:
        s = np.clip(t - 1.0, 0.0, down_end)  # torch's 0-based step
        rising = cos(start, 1.0, s / up_end)
        falling = cos(1.0, end, (s - up_end) / (down_end - up_end))
        return np.where(s <= up_end, rising, falling)

    params = {"total": total, "pct_start": pct_start, "div_factor": div_factor, "final_div_factor": final_div_factor}
    return Schedule("one_cycle", params, fn)


class ScheduledLR:
    """Set each param group's lr to ``base_lr · schedule(t)`` before update ``t`` (1-based).

    The equivalent of ``LambdaLR(optimizer, lambda e: schedule(e + 1))``. The base rates are the groups'
    ``initial_lr`` (recorded the first time, as torch's schedulers do), so a second ``fit`` with the same
    optimiser starts from the intended rates, not from wherever the first schedule ended.
    """

    def __init__(self, optimizer: torch.optim.Optimizer, schedule: Callable[[int], float]):
        self.optimizer = optimizer
        self.schedule = schedule
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs = [float(g["initial_lr"]) for g in optimizer.param_groups]
        self.last_step = 0

    def set_step(self, t: int) -> list[float]:
        """Set the lrs for update ``t``; returns them."""
        mult = float(self.schedule(t))
        lrs = [base * mult for base in self.base_lrs]
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self.last_step = int(t)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        s = self.schedule
        desc = {"name": s.name, "params": dict(s.params)} if isinstance(s, Schedule) else {}
        return {"base_lrs": list(self.base_lrs), "last_step": self.last_step, "schedule": desc}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.base_lrs = [float(x) for x in state["base_lrs"]]
        self.last_step = int(state["last_step"])
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["initial_lr"] = base

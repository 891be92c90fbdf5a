"""What a training run recorded, step by step: the data behind every training-curve figure of the book.

A :class:`History` is a set of named series. Each series is a list of ``(step, value)`` pairs, so the loss
(logged every update) and a validation metric (logged every ``eval_every`` updates) live side by side and
plot against the same step axis. :func:`shoulders.train.fit` writes these keys:

* ``loss`` -- the training loss of each update (averaged over processes under DDP);
* ``lr/0``, ``lr/1``, ... -- the learning rate of every optimiser param group, as used by that update;
* ``grad_norm`` -- the global L2 norm of the gradient before clipping;
* ``time`` -- wall-clock seconds of training so far (continued across resumes);
* ``epoch`` -- the 0-based pass over ``batches`` the update's batch came from;
* ``tokens`` -- cumulative tokens seen, when the model's output dict reports ``tokens`` per batch;
* any other scalar entry of the model's output dict, under its own name;
* every metric returned by ``evaluate(model)``, at the steps it ran.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._atomic import write_text_atomic

FORMAT = "shoulders.history/1"


class History:
    """Named series of ``(step, value)`` pairs, with JSON save/load (figures: :func:`shoulders.viz.training_curves`)."""

    def __init__(self) -> None:
        self._series: dict[str, tuple[list[int], list[float]]] = {}

    # -- writing ---------------------------------------------------------------------------------------------
    def log(self, step: int, **values: float) -> None:
        """Record ``values`` (name -> number) at ``step``."""
        for key, value in values.items():
            steps, vals = self._series.setdefault(key, ([], []))
            steps.append(int(step))
            vals.append(float(value))

    # -- reading ---------------------------------------------------------------------------------------------
    def keys(self) -> list[str]:
        """The series names, in the order they were first logged."""
        return list(self._series)

    def __contains__(self, key: object) -> bool:
        return key in self._series

    def __len__(self) -> int:
        """The number of logged training updates (the length of the ``loss`` series)."""
        return len(self._series.get("loss", ((), ()))[0])

    def _get(self, key: str) -> tuple[list[int], list[float]]:
        try:
            return self._series[key]
        except KeyError:
            raise KeyError(f"history has no series {key!r}; it has {self.keys()}") from None

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, values)`` of one series as arrays: steps int64 ``(N,)``, values float64 ``(N,)``."""
        steps, vals = self._get(key)
        return np.asarray(steps, dtype=np.int64), np.asarray(vals, dtype=np.float64)

    def last(self, key: str) -> float:
        """The most recent value of ``key``."""
        steps, vals = self._get(key)
        if not vals:
            raise KeyError(f"history series {key!r} is empty")
        return vals[-1]

    def last_step(self) -> int:
        """The largest step logged in any series (0 for an empty history)."""
        return max((s[-1] for s, _ in self._series.values() if s), default=0)

    def lr_keys(self) -> list[str]:
        """``["lr/0", "lr/1", ...]``: one per optimiser param group, in group order."""
        return sorted((k for k in self._series if k.startswith("lr/")), key=lambda k: int(k.split("/", 1)[1]))

    def __repr__(self) -> str:
        return f"History({len(self)} steps, keys={self.keys()})"

    # -- persistence -----------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Plain lists and strings only, so it can go into a ``weights_only`` checkpoint or JSON."""
        series = {k: {"steps": list(s), "values": list(v)} for k, (s, v) in self._series.items()}
        return {"format": FORMAT, "series": series}

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> "History":
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            found = state.get("format") if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"not a {FORMAT} history (found {found!r})")
        hist = cls()
        for key, entry in state["series"].items():
            hist._series[str(key)] = ([int(s) for s in entry["steps"]], [float(v) for v in entry["values"]])
        return hist

    def save(self, path: str | os.PathLike) -> Path:
        """Write the history as JSON (atomically: a temporary file, then a rename)."""
        # NaN/inf are written as the JSON extensions NaN/Infinity, which json.load reads back.
        return write_text_atomic(path, json.dumps(self.state_dict()))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "History":
        """Read a history written by :meth:`save`."""
        return cls.from_state_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def ema(values: np.ndarray, beta: float = 0.9) -> np.ndarray:
    """Bias-corrected exponential moving average (as in Adam's first moment), skipping non-finite values."""
    out = np.empty(len(values), dtype=np.float64)
    avg, weight = 0.0, 0.0
    for i, v in enumerate(values):
        if math.isfinite(v):
            avg = beta * avg + (1 - beta) * v
            weight = beta * weight + (1 - beta)
        out[i] = avg / weight if weight > 0 else math.nan
    return out

"""Seconds per call of several variants, the variants taking turns (A, B, A, B, ...) so that a slow minute of the
machine falls on all of them alike: the one timing loop of ``benchmarks/`` (the house rule: ratios against a
reference run in the same process, alternating, median and minimum)."""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping

__all__ = ["alternate"]


def alternate(variants: Mapping[str, Callable[[], object]], repeats: int, warmup: int = 1,
              sync: Callable[[], object] | None = None) -> dict[str, list[float]]:
    """Run every variant ``warmup + repeats`` rounds, in turn within each round; return the ``repeats`` timed
    seconds of each (warm-up rounds dropped). ``sync`` (e.g. a CUDA synchronise) runs before and after each call,
    inside nothing that is timed but the call."""
    if repeats < 1 or warmup < 0:
        raise ValueError(f"need repeats >= 1 and warmup >= 0, got {repeats}, {warmup}")
    times: dict[str, list[float]] = {name: [] for name in variants}
    for r in range(warmup + repeats):
        for name, fn in variants.items():
            if sync is not None:
                sync()
            t0 = time.perf_counter()
            fn()
            if sync is not None:
                sync()
            if r >= warmup:
                times[name].append(time.perf_counter() - t0)
    return times

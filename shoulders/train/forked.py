"""Independent runs side by side in forked CPU processes: a few seeds of a small network at once.

A recurrent network of a few million weights keeps two cores only partly busy: chapter 11's six classifier runs of
a label budget (two networks, three seeds) finish 1.17x sooner two at a time on one thread each than in order on
two threads, and two of its stage-2 language-model runs 1.18x sooner (``benchmarks/parallel_runs.py [--stage 2]``,
2-core CPU, 2026-12-06). So :func:`run_forked` hands independent jobs
to ``workers`` forked processes, each with its share of the threads.

Fork, not spawn: a job is any callable -- a closure over a notebook's data and models -- and a forked child sees
the parent's memory without pickling it; only each job's result comes back. Fork is only safe before CUDA is
initialised and where the platform has it (not on macOS, whose system libraries may hang in a forked child of a
threaded process), so elsewhere, and on one worker, the jobs run in order in this process.
"""
from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

import torch

from ..device import device as default_device
from .rng import get_rng_state, set_rng_state

__all__ = ["fork_context", "run_forked", "run_seeded_runs"]

T = TypeVar("T")
_JOB: Callable[[int], Any] | None = None  # the job of the running call, inherited by its forked workers


def fork_context() -> Any | None:
    """multiprocessing's fork context where the platform has one (Linux, macOS), else ``None``."""
    try:
        return multiprocessing.get_context("fork")
    except ValueError:
        return None


def _run_job(index: int) -> Any:
    assert _JOB is not None, "a forked worker of run_forked lost its job"
    return _JOB(index)


def run_forked(job: Callable[[int], T], n: int, workers: int = 1) -> list[T]:
    """``[job(0), ..., job(n - 1)]``, computed by ``workers`` forked processes at once when that can be done safely
    (CPU only: not once CUDA is initialised; Linux and the like, not macOS), else in order in this process.

    The workers share the threads this process may use (``torch.get_num_threads()``, e.g. one per pytest-xdist
    worker): there are at most that many, each with ``threads // workers``, and each takes the next job as soon as
    it is free, so jobs of different lengths share the workers well. Jobs must not depend on one another
    or on the random state they inherit: a job that needs randomness seeds it itself (its results are then the
    same in a worker as in order here, up to the summation order of fewer threads). What a job changes in memory
    stays in its worker; only its return value (pickled) comes back. A job's exception is raised here; a worker
    that dies (killed, out of memory) raises a ``RuntimeError`` that says so.
    """
    global _JOB
    if workers < 1 or n < 0:
        raise ValueError(f"workers must be >= 1 and n >= 0, got workers={workers}, n={n}")
    context = fork_context()
    workers = min(workers, torch.get_num_threads())  # the threads this process may use are the cores to share
    if workers == 1 or n <= 1 or context is None or sys.platform == "darwin" or torch.cuda.is_initialized():
        return [job(i) for i in range(n)]
    if _JOB is not None:
        raise RuntimeError("run_forked is already running in this process: its jobs cannot fork again")
    threads = max(1, torch.get_num_threads() // workers)
    _JOB = job
    pool = ProcessPoolExecutor(min(workers, n), mp_context=context, initializer=torch.set_num_threads,
                               initargs=(threads,))
    try:
        futures = [pool.submit(_run_job, i) for i in range(n)]
        results: list[T] = []
        for i, future in enumerate(futures):
            try:
                results.append(future.result())
            except BrokenProcessPool as err:
                raise RuntimeError(f"a forked worker died (killed, or out of memory?) before job {i} of {n} came "
                                   "back; with workers=1 the jobs run in this process") from err
        return results
    except BaseException:  # a job's error, or an interrupt: stop the other workers now, not after their jobs
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.terminate()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _JOB = None


def run_seeded_runs(job: Callable[[int], T], n: int, workers: int = 1, *, device: Any = None) -> list[T]:
    """:func:`run_forked` for training runs that each seed themselves and train on ``device`` (default: the book's
    device): forked only when that device is the CPU, and afterwards the random state here is the one the runs in
    order leave behind, wherever they ran -- so what a caller draws next does not depend on ``workers``."""
    on_cpu = (default_device() if device is None else torch.device(device)).type == "cpu"

    def with_state(i: int) -> tuple[T, Any]:
        return job(i), get_rng_state()

    done = run_forked(with_state, n, workers if on_cpu else 1)
    if done:
        set_rng_state(done[-1][1])
    return [result for result, _ in done]

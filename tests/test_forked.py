"""run_forked: independent jobs in forked CPU workers -- in order, errors raised here, a dead worker named."""
from __future__ import annotations

import os
import signal
import sys

import pytest
import torch

from shoulders.train.forked import fork_context, run_forked

pytestmark = pytest.mark.skipif(fork_context() is None or sys.platform == "darwin",
                                reason="run_forked forks only on platforms with a safe fork")


def test_jobs_run_in_forked_workers_and_come_back_in_order(two_threads):
    seen = []

    def job(i):
        seen.append(i)  # a side effect stays in the worker that ran the job
        return i * i, os.getpid(), torch.get_num_threads()

    out = run_forked(job, 6, workers=2)
    assert [r[0] for r in out] == [i * i for i in range(6)]
    pids = {r[1] for r in out}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2, "the jobs must run in at most two forked workers"
    assert {r[2] for r in out} == {1}, "two workers share two threads: one each"
    assert seen == [] and torch.get_num_threads() == 2


def test_one_worker_or_one_thread_runs_in_order_here(two_threads):
    seen = []

    def job(i):
        seen.append(i)
        return os.getpid()

    assert run_forked(job, 3, workers=1) == [os.getpid()] * 3 and seen == [0, 1, 2]
    torch.set_num_threads(1)  # no thread to share: in order, here
    assert run_forked(job, 2, workers=2) == [os.getpid()] * 2 and seen == [0, 1, 2, 0, 1]
    assert run_forked(job, 0, workers=2) == []
    with pytest.raises(ValueError, match="workers must be >= 1"):
        run_forked(job, 2, workers=0)


def test_a_jobs_error_is_raised_here_and_a_dead_worker_is_named(two_threads):
    def fails(i):
        if i == 1:
            raise KeyError(f"job {i} has no data")
        return i

    with pytest.raises(KeyError, match="job 1 has no data"):
        run_forked(fails, 4, workers=2)

    def dies(i):
        if i == 2:
            os.kill(os.getpid(), signal.SIGKILL)  # as the out-of-memory killer would
        return i

    with pytest.raises(RuntimeError, match=r"a forked worker died \(killed, or out of memory\?\) before job"):
        run_forked(dies, 4, workers=2)
    assert run_forked(lambda i: -i, 3, workers=2) == [0, -1, -2], "a failed call leaves nothing behind"

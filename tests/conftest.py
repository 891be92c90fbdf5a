"""Fixtures shared by the unit tests."""
from __future__ import annotations

import contextlib

import pytest
import torch


@contextlib.contextmanager
def _threads(n: int):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture
def one_thread():
    """Tiny models: one thread is fastest, and much faster than two on a loaded machine."""
    with _threads(1):
        yield


@pytest.fixture
def two_threads():
    """Two threads, whatever pytest-xdist left this worker: what forked workers share (shoulders.train.forked)."""
    with _threads(2):
        yield


def pytest_configure(config):
    """Each pytest-xdist worker takes its share of the cores (as the notebook kernels do), not all of them."""
    from shoulders.device import set_threads

    set_threads()


# ----------------------------------------------------------------------------------------- fault-suite tally
# Every fault test adds what it did -- fault_tally.add("data: kill during download", faults=6, runs=7, lost=0) --
# and the totals are printed in pytest's terminal summary. Under pytest-xdist each worker sends its rows home at
# the end (workeroutput) and the controller adds them up.
class FaultTally:
    """Per suite: faults injected, runs (calls made under or after a fault), files lost (must stay 0)."""

    FIELDS = ("faults", "runs", "lost")

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, int]] = {}

    def add(self, suite: str, *, faults: int = 0, runs: int = 0, lost: int = 0) -> None:
        row = self.rows.setdefault(suite, dict.fromkeys(self.FIELDS, 0))
        for field, value in zip(self.FIELDS, (faults, runs, lost)):
            row[field] += int(value)

    def merge(self, rows: dict[str, dict[str, int]]) -> None:
        for suite, row in rows.items():
            self.add(suite, **{f: row.get(f, 0) for f in self.FIELDS})


_FAULT_TALLY = pytest.StashKey[FaultTally]()


def _fault_tally(config: pytest.Config) -> FaultTally:
    if _FAULT_TALLY not in config.stash:
        config.stash[_FAULT_TALLY] = FaultTally()
    return config.stash[_FAULT_TALLY]


@pytest.fixture(scope="session")
def fault_tally(request: pytest.FixtureRequest) -> FaultTally:
    """The session's :class:`FaultTally`: ``fault_tally.add(suite, faults=..., runs=..., lost=...)``."""
    return _fault_tally(request.config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)  # set on a pytest-xdist worker only
    if workeroutput is not None:
        workeroutput["fault_tally"] = _fault_tally(session.config).rows


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # pytest-xdist controller: a worker has finished
    output = getattr(node, "workeroutput", None) or {}
    _fault_tally(node.config).merge(output.get("fault_tally", {}))


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    rows = _fault_tally(config).rows
    if not rows:
        return
    terminalreporter.section("fault suite")
    for suite, row in sorted(rows.items()):
        terminalreporter.write_line(f"{suite}: {row['faults']} faults injected, {row['runs']} runs, "
                                    f"{row['lost']} files lost")
    total = {f: sum(r[f] for r in rows.values()) for f in FaultTally.FIELDS}
    terminalreporter.write_line(f"total: {total['faults']} faults injected, {total['runs']} runs, "
                                f"{total['lost']} files lost")

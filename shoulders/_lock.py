"""One inter-process lock for the whole package: an exclusive advisory lock on a file.

Two notebooks (or two pytest-xdist workers) that need the same pre-trained giant, or that append to the results
ledger at the same moment, take this lock; the second waits until the first is done, then finds its work
already there. POSIX ``flock`` where ``fcntl`` exists, ``msvcrt.locking`` on Windows. The lock belongs to the
open file, so the operating system releases it when the process dies -- a killed run never leaves a stale lock.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["exclusive"]

_WINDOWS_OFFSET = 1 << 30

try:
    import fcntl
    msvcrt = None
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
    import msvcrt  # type: ignore[no-redef]


@contextlib.contextmanager
def exclusive(path: str | os.PathLike, *, wait_message: str | None = None, poll: float = 0.1) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the ``with`` block.

    ``wait_message`` is printed (to stderr) once if another process holds the lock, so a reader knows why the
    cell is waiting. Not re-entrant: taking the same lock again inside the block waits forever.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        _acquire(handle, wait_message, poll)
        try:
            yield
        finally:
            _release(handle)


def _acquire(handle, wait_message: str | None, poll: float) -> None:
    said = False
    while True:
        try:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            else:  # pragma: no cover - Windows: lock one byte far past any data, so other handles can still read
                handle.seek(_WINDOWS_OFFSET)
                msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
            return
        except (BlockingIOError, PermissionError, OSError) as err:
            if fcntl is not None and not isinstance(err, BlockingIOError):
                raise
            if wait_message and not said:
                print(wait_message, file=sys.stderr, flush=True)
                said = True
            time.sleep(poll)


def _release(handle) -> None:
    if fcntl is not None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    else:  # pragma: no cover - Windows
        handle.seek(_WINDOWS_OFFSET)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)

"""Random-number-generator states as checkpointable values, and a separate RNG "lane" for the data.

A checkpoint must restore Python's ``random``, NumPy's global generator, PyTorch's CPU generator and every CUDA
generator, or dropout after a resume draws different masks. The states are converted to tensors and primitive
containers so they load with ``torch.load(..., weights_only=True)``.

:class:`DataRNG` keeps the randomness of *batch production* (a DataLoader's shuffle, a generator calling
``np.random``) apart from the randomness of *training* (dropout): the data code runs with its own Python, NumPy
and torch-CPU states swapped in, seeded per epoch. So the batches of epoch ``e`` depend only on ``(seed, e)``,
and a resumed run can rebuild its position by replaying the epoch's batches without touching the training RNG.
"""
from __future__ import annotations

import random
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np
import torch


def _numpy_to_state(st: tuple) -> dict[str, Any]:
    name, keys, pos, has_gauss, cached = st
    return {"name": str(name), "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)), "pos": int(pos),
            "has_gauss": int(has_gauss), "cached_gaussian": float(cached)}


def _numpy_from_state(d: dict[str, Any]) -> tuple:
    keys = d["keys"].numpy().astype(np.uint32)
    return (d["name"], keys, d["pos"], d["has_gauss"], d["cached_gaussian"])


def _python_to_state(st: tuple) -> dict[str, Any]:
    version, internal, gauss = st
    return {"version": int(version), "internal": torch.tensor(internal, dtype=torch.int64), "gauss": gauss}


def _python_from_state(d: dict[str, Any]) -> tuple:
    return (d["version"], tuple(int(x) for x in d["internal"].tolist()), d["gauss"])


def get_rng_state() -> dict[str, Any]:
    """The global RNG states (python, numpy, torch, cuda), as tensors and primitives."""
    state: dict[str, Any] = {
        "python": _python_to_state(random.getstate()),
        "numpy": _numpy_to_state(np.random.get_state()),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = [s.cpu() for s in torch.cuda.get_rng_state_all()]
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore states from :func:`get_rng_state` (CUDA ones only when the device count matches)."""
    random.setstate(_python_from_state(state["python"]))
    np.random.set_state(_numpy_from_state(state["numpy"]))
    torch.set_rng_state(state["torch"].cpu())
    cuda = state.get("cuda")
    if cuda and torch.cuda.is_available() and torch.cuda.device_count() == len(cuda):
        torch.cuda.set_rng_state_all(cuda)


def epoch_seed(seed: int, epoch: int) -> int:
    """A 32-bit seed for ``(seed, epoch)`` (NumPy's SeedSequence mixing: nearby inputs give unrelated seeds)."""
    return int(np.random.SeedSequence([int(seed) % 2**63, int(epoch)]).generate_state(1)[0])


class DataRNG:
    """A private set of (python, numpy, torch-CPU) RNG states for producing batches.

    ``with lane: ...`` swaps the data states in and the training states out, and back on exit.
    """

    def __init__(self, seed: int):
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        self._python = random.Random(seed).getstate()
        self._numpy = np.random.RandomState(seed).get_state()
        self._torch = torch.Generator().manual_seed(seed).get_state()

    @contextmanager
    def active(self) -> Iterator[None]:
        saved = (random.getstate(), np.random.get_state(), torch.get_rng_state())
        random.setstate(self._python)
        np.random.set_state(self._numpy)
        torch.set_rng_state(self._torch)
        try:
            yield
        finally:
            self._python, self._numpy, self._torch = random.getstate(), np.random.get_state(), torch.get_rng_state()
            random.setstate(saved[0])
            np.random.set_state(saved[1])
            torch.set_rng_state(saved[2])

"""Reproducibility: one call seeds Python, NumPy and PyTorch (all devices).

PyTorch takes seconds to import and the n-gram chapter never needs it, so nothing here imports it: a setting for
PyTorch (its seed, its threads) is applied at once if PyTorch is already loaded, and otherwise the moment it is
first imported (:func:`when_torch_loads`) -- so a chapter that imports PyTorch after ``sh.setup()`` draws exactly
the numbers it drew when ``setup`` imported PyTorch itself.
"""
from __future__ import annotations

import importlib.abc
import os
import random
import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

_pending: dict[str, Callable[[Any], None]] = {}
_lock = threading.Lock()


class _TorchLoader(importlib.abc.Loader):
    """Runs PyTorch's own loader, then the pending settings; everything else is the original loader's."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec):  # noqa: ANN001
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:  # noqa: ANN001
        self._loader.exec_module(module)
        module.__loader__ = module.__spec__.loader = self._loader  # leave no trace of the wrapper
        _run_pending(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _TorchFinder(importlib.abc.MetaPathFinder):
    """On the first ``import torch``, find PyTorch with the other finders and wrap its loader."""

    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001
        if fullname != "torch":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and not isinstance(spec.loader, _TorchLoader):
                    spec.loader = _TorchLoader(spec.loader)
                return spec
        return None


_FINDER = _TorchFinder()


def _run_pending(torch: Any) -> None:
    with _lock:
        todo = list(_pending.values())
        _pending.clear()
        if _FINDER in sys.meta_path:
            sys.meta_path.remove(_FINDER)
    for apply in todo:
        apply(torch)


def when_torch_loads(key: str, apply: Callable[[Any], None]) -> None:
    """Call ``apply(torch)`` now if PyTorch is imported, else right after its first import (a later call with the
    same ``key`` replaces an earlier one that has not run yet). PyTorch is never imported here."""
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "manual_seed"):
        apply(torch)
        return
    with _lock:
        _pending[key] = apply
        if _FINDER not in sys.meta_path:
            sys.meta_path.insert(0, _FINDER)


def torch_loaded() -> bool:
    """Whether PyTorch has been imported in this process."""
    return "torch" in sys.modules


def seed(n: int = 0, deterministic: bool = False) -> int:
    """Seed every random number generator a chapter uses and return ``n``.

    Python's and NumPy's at once; PyTorch's at once if PyTorch is loaded, else as soon as it is imported. With
    ``deterministic=True`` PyTorch is also asked to use deterministic kernels (slower on GPU, and an error is
    raised by any operation that has no deterministic implementation) -- use it for exact-equality checks.
    """
    n = int(n)
    random.seed(n)
    np.random.seed(n % 2**32)

    def seed_torch(torch: Any) -> None:
        torch.manual_seed(n)
        if deterministic:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            torch.use_deterministic_algorithms(True)
            torch.backends.cudnn.benchmark = False
        else:
            torch.use_deterministic_algorithms(False)

    when_torch_loads("seed", seed_torch)
    return n

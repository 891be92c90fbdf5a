"""shoulders -- the helper package of *Standing on the Shoulders of Giants*, an interactive NLP pre-training book.

The public surface is small:

* :func:`device` -- cuda > mps > cpu (override with ``SHOULDERS_DEVICE``);
* :func:`seed` -- seed Python, NumPy and PyTorch;
* :func:`scale` -- ``smoke`` | ``cpu`` | ``full`` (``SHOULDERS_SCALE``);
* :func:`show` -- print a package object's source in the page;
* :func:`setup` -- the first cell of every chapter: seed, sensible CPU threads, and one line naming scale and device.

Subpackages follow the ladder of the book and load on first use: ``shoulders.data`` (dataset registry),
``shoulders.text`` (vocabularies, tokenisers, LM streams), ``shoulders.models``, ``shoulders.train`` (the one
training loop), ``shoulders.viz`` (figures and widgets), ``shoulders.config`` (preset dataclasses).
"""
from __future__ import annotations

import importlib
from typing import Any

from ._scale import SCALES, ScaleError, scale
from ._seed import seed
from ._show import show, source
from .device import DeviceError, device

__version__ = "0.1.0"
__all__ = ["SCALES", "DeviceError", "ScaleError", "device", "scale", "seed", "setup", "show", "source", "__version__"]

_SUBMODULES = {"config", "data", "device", "evaluate", "models", "text", "train", "viz", "heads"}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def setup(seed_value: int = 0, threads: int | None = None, quiet: bool = False) -> dict[str, Any]:
    """Prepare a chapter: seed everything, set CPU threads, and print the scale and device in one line.

    Returns the facts printed (``scale``, ``device``, ``threads``, ``torch``) so a notebook can record them
    next to its results.
    """
    import platform

    import torch

    from .device import set_threads

    facts = {
        "scale": scale(),
        "device": str(device()),
        "threads": set_threads(threads),
        "seed": seed(seed_value),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "shoulders": __version__,
    }
    if not quiet:
        gpu = f" ({torch.cuda.get_device_name(0)})" if facts["device"].startswith("cuda") else ""
        print(
            f"shoulders {__version__} · scale={facts['scale']} · device={facts['device']}{gpu} · "
            f"threads={facts['threads']} · torch {facts['torch']} · python {facts['python']}"
        )
    return facts

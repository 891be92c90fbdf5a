"""shoulders -- the helper package of *Standing on the Shoulders of Giants*, an interactive NLP pre-training book.

The public surface is small:

* :func:`device` -- cuda > mps > cpu (override with ``SHOULDERS_DEVICE``);
* :func:`seed` -- seed Python, NumPy and PyTorch;
* :func:`scale` -- ``smoke`` | ``cpu`` | ``full`` (``SHOULDERS_SCALE``);
* :func:`show` -- print a package object's source in the page;
* :func:`setup` -- the first cell of every chapter: seed, sensible CPU threads, and one line naming scale and device.

Subpackages follow the ladder of the book, bottom to top, and load on first use: ``shoulders.config`` (preset
dataclasses), ``shoulders.data`` (dataset registry and readers), ``shoulders.text`` (vocabularies, tokenisers, LM
streams, task features), ``shoulders.models`` (pure modules), ``shoulders.heads`` (task heads),
``shoulders.train`` (the one training loop), ``shoulders.evaluate`` (metrics and the results ledger),
``shoulders.recipes`` (data + model + loop → a trained artefact), ``shoulders.giants`` (pre-trained models shared
by later chapters), ``shoulders.viz`` (figures and widgets).
"""
from __future__ import annotations

import importlib
import importlib.metadata
import platform
import sys
from typing import Any

from ._scale import SCALES, ScaleError, scale
from ._seed import seed
from ._show import show, source
from .device import DeviceError, accelerator_possible, device, set_threads

__version__ = "0.1.0"
__all__ = ["SCALES", "DeviceError", "ScaleError", "device", "scale", "seed", "setup", "show", "source", "__version__"]

_SUBMODULES = {"config", "data", "device", "evaluate", "giants", "heads", "models", "presets", "recipes", "text",
               "train", "viz"}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _torch_version() -> str:
    torch = sys.modules.get("torch")
    if torch is not None:
        return str(torch.__version__)
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def setup(seed_value: int = 0, threads: int | None = None, quiet: bool = False) -> dict[str, Any]:
    """Prepare a chapter: seed everything, set CPU threads, and print the scale and device in one line.

    Returns the facts printed (``scale``, ``device``, ``threads``, ``torch``) so a notebook can record them
    next to its results.

    PyTorch takes seconds to import and a NumPy-only chapter (the n-grams) never needs it, so ``setup`` imports it
    only to name an accelerator: where one may exist (``SHOULDERS_DEVICE`` names one, a CUDA build of PyTorch
    sees a GPU driver, or Apple silicon; :func:`shoulders.device.accelerator_possible`). Elsewhere the device is
    the CPU, and PyTorch's seed and thread count are set the moment it is first imported -- by the chapter, or
    by a ``shoulders`` module that uses it -- so the numbers a chapter draws do not depend on when that happens.
    """
    if "torch" not in sys.modules and accelerator_possible():
        import torch  # noqa: F401  (only to ask which accelerator is there)
    loaded = "torch" in sys.modules
    facts = {
        "scale": scale(),
        "device": str(device()) if loaded else "cpu",
        "threads": set_threads(threads),
        "seed": seed(seed_value),
        "torch": _torch_version(),
        "python": platform.python_version(),
        "shoulders": __version__,
    }
    if not quiet:
        gpu = f" ({sys.modules['torch'].cuda.get_device_name(0)})" if facts["device"].startswith("cuda") else ""
        print(
            f"shoulders {__version__} · scale={facts['scale']} · device={facts['device']}{gpu} · "
            f"threads={facts['threads']} · torch {facts['torch']}{'' if loaded else ' (loads on first use)'} · "
            f"python {facts['python']}"
        )
    return facts

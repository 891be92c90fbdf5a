"""The one piece of global choice in the package: which *scale* a chapter runs at.

``SHOULDERS_SCALE`` selects it:

* ``smoke`` -- CI: a couple of minutes per notebook on 2 CPU cores, data subsets, the model still learns;
* ``cpu``   -- a reader's laptop: about 15 minutes per chapter;
* ``full``  -- one GPU, paper-shaped settings.

Unset, the scale is ``full`` when a CUDA GPU is present and ``cpu`` otherwise (PyTorch is asked only where a GPU
may be there at all: on a machine without one, choosing the scale does not import it).
"""
from __future__ import annotations

import os

from .device import cuda_possible

SCALES: tuple[str, ...] = ("smoke", "cpu", "full")
ENV_VAR = "SHOULDERS_SCALE"


class ScaleError(ValueError):
    """An unknown scale name (in ``SHOULDERS_SCALE`` or passed explicitly)."""


def check_scale(name: str, *, source: str = "scale") -> str:
    """Return ``name`` normalised to one of :data:`SCALES`, or raise :class:`ScaleError`."""
    value = str(name).strip().lower()
    if value not in SCALES:
        raise ScaleError(
            f"unknown {source} {name!r}: choose one of {', '.join(SCALES)} "
            f"(e.g. `export {ENV_VAR}=smoke` for a quick run, `cpu` for a laptop, `full` for a GPU)"
        )
    return value


def scale() -> str:
    """The current scale: ``SHOULDERS_SCALE`` if set, else ``full`` with CUDA, else ``cpu``."""
    raw = os.environ.get(ENV_VAR, "").strip()
    if raw:
        return check_scale(raw, source=f"{ENV_VAR} value")
    if not cuda_possible():
        return "cpu"
    import torch

    return "full" if torch.cuda.is_available() else "cpu"

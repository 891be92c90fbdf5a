"""Models, one file per family, in the order of the book; each config lives beside its model.

Submodules load on first use: ``shoulders.models.rnnlm.LSTMLM`` works after ``import shoulders``.
"""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def __getattr__(name: str) -> ModuleType:
    if any(info.name == name for info in pkgutil.iter_modules(__path__)):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

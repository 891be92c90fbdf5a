"""Every config with presets, found by walking :mod:`shoulders.models` and :mod:`shoulders.recipes` -- so the
preset tests and ``benchmarks/full_plan.py`` cannot miss a chapter's config."""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator

from . import models, recipes
from .config import Config

__all__ = ["all_configs"]

PACKAGES = (models, recipes)


def all_configs() -> Iterator[type[Config]]:
    """Every concrete config class (one with presets) defined in ``shoulders.models`` or ``shoulders.recipes``,
    in module order."""
    for package in PACKAGES:
        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{info.name}")
    prefixes = tuple(f"{p.__name__}." for p in PACKAGES)
    seen: list[type[Config]] = []
    stack = list(Config.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.presets and cls.__module__.startswith(prefixes) and cls not in seen:
            seen.append(cls)
    return iter(sorted(seen, key=lambda c: (c.__module__, c.__name__)))

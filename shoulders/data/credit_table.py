"""The book's dataset credits table, straight from the registry."""
from __future__ import annotations

from .entry import Dataset
from .lookup import resolve
from .registry import REGISTRY

__all__ = ["credits"]


def credits(datasets: list[str | Dataset] | None = None) -> list[dict[str, str]]:
    """One row per dataset: ``name``, ``title``, ``licence``, ``citation``, ``homepage``.

    ``datasets`` restricts (and orders) the rows, e.g. a chapter's own datasets; default: the whole registry.
    Render with e.g. ``pandas.DataFrame(credits())`` or a Markdown table.
    """
    entries = [resolve(d) for d in datasets] if datasets is not None else list(REGISTRY.values())
    return [
        {
            "name": entry.name,
            "title": entry.title,
            "licence": entry.licence,
            "citation": entry.citation,
            "homepage": entry.homepage,
        }
        for entry in entries
    ]

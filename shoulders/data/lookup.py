"""Finding an entry by name: canonical names, aliases, and a did-you-mean for typos."""
from __future__ import annotations

import difflib

from .entry import Dataset
from .errors import UnknownDatasetError
from .registry import REGISTRY

__all__ = ["info", "names", "resolve"]


def _normal(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(" ", "-")


def _aliases() -> dict[str, str]:
    table = {_normal(entry.name): entry.name for entry in REGISTRY.values()}
    for entry in REGISTRY.values():
        for alias in entry.aliases:
            table.setdefault(_normal(alias), entry.name)
    return table


def names() -> tuple[str, ...]:
    """The registry's canonical dataset names, in the book's order."""
    return tuple(REGISTRY)


def resolve(dataset: str | Dataset) -> Dataset:
    """The entry for ``dataset``: an entry is returned as is; a name may be canonical or an alias, any case.

    Raises :class:`~shoulders.data.errors.UnknownDatasetError` listing the known names (and the closest ones).
    """
    if isinstance(dataset, Dataset):
        return dataset
    if not isinstance(dataset, str):
        raise TypeError(f"expected a dataset name or a Dataset entry, got {type(dataset).__name__}")
    table = _aliases()
    key = _normal(dataset)
    if key in table:
        return REGISTRY[table[key]]
    close = difflib.get_close_matches(key, list(table), n=3, cutoff=0.6)
    suggestion = sorted({table[c] for c in close}, key=list(REGISTRY).index)
    hint = f" Did you mean {' or '.join(repr(s) for s in suggestion)}?" if suggestion else ""
    raise UnknownDatasetError(
        f"unknown dataset {dataset!r}.{hint} Known datasets: {', '.join(names())} "
        "(shoulders.data.info(name) describes one)."
    )


def info(dataset: str | Dataset) -> Dataset:
    """The registry entry (URLs, checksums, files, licence, citation) for a name or alias."""
    return resolve(dataset)

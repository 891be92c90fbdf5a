"""The dataset registry: every entry the book knows, looked up by name -- and :func:`path`, a verified folder by name.

The entries live beside their readers (:mod:`~shoulders.data.corpora`, :mod:`~shoulders.data.parallel`,
:mod:`~shoulders.data.sentiment`, :mod:`~shoulders.data.tasks`); here they are listed in the book's order.
For each dataset the entry records canonical download address(es) with the checksum as its publisher states it
(md5, sha1 or sha256, and who publishes it), size where known, how the download maps to local files, the sha256
of every final local file, licence, citation and a short description. Local layout = the offline mirror's layout
(``shared/data/<name>/``), so ``path("wikitext-2") / "wiki.train.tokens"`` works however the folder was filled.
Sizes and sha256 of local files come from the mirror's ``SOURCE.md`` files (recomputed on the mirror by
``tests/test_data_registry.py``); published checksums come from torchtext, d2l, GluonNLP and Hugging Face
datasets. The ``full``-scale corpora that the mirror does not hold (text8, WikiText-103, IMDb, the SNLI and
SQuAD training sets) say so in ``scales``, and a failure to fetch one names the scale and chapters that need it.

Where a canonical download cannot reproduce the mirror's bytes the entry's ``notes`` say so, and the
download is verified as far as the published facts allow (see :class:`~shoulders.data.entry.Member`).
GitHub-hosted files list the repository's usual address first and a commit-pinned address second.
"""
from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from .corpora import TEXT8, TINY_SHAKESPEARE, WIKITEXT_2, WIKITEXT_103
from .entry import Dataset
from .errors import UnknownDatasetError
from .parallel import MULTI30K, TATOEBA_FRA_ENG
from .provide import provide
from .sentiment import IMDB, SST2_GLUE, SST_TREES
from .tasks import COPA_BALANCED, SNLI, SNLI_TRAIN, SQUAD_V11, SQUAD_V11_TRAIN, WNUT17

__all__ = ["REGISTRY", "credits", "info", "names", "path", "resolve"]

_ENTRIES: tuple[Dataset, ...] = (
    WIKITEXT_2,
    TINY_SHAKESPEARE,
    SST2_GLUE,
    SST_TREES,
    WNUT17,
    SQUAD_V11,
    SNLI,
    MULTI30K,
    TATOEBA_FRA_ENG,
    COPA_BALANCED,
    TEXT8,
    WIKITEXT_103,
    IMDB,
    SNLI_TRAIN,
    SQUAD_V11_TRAIN,
)

#: name -> entry, in the book's order. Read-only: pass your own :class:`Dataset` to ``path()`` instead.
REGISTRY: Mapping[str, Dataset] = MappingProxyType({entry.name: entry for entry in _ENTRIES})


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


def credits(datasets: list[str | Dataset] | None = None) -> list[dict[str, str]]:
    """The book's dataset credits: one row per dataset, ``name``, ``title``, ``licence``, ``citation``, ``homepage``.

    ``datasets`` restricts (and orders) the rows, e.g. a chapter's own datasets; default: the whole registry.
    Render with e.g. ``pandas.DataFrame(credits())`` or a Markdown table.
    """
    entries = [resolve(d) for d in datasets] if datasets is not None else list(REGISTRY.values())
    return [{"name": e.name, "title": e.title, "licence": e.licence, "citation": e.citation, "homepage": e.homepage}
            for e in entries]


def path(dataset: str | Dataset, *, verify: bool | None = None) -> Path:
    """The local folder holding ``dataset``'s files, verified against the registry.

    ``dataset`` is a registry name or alias (``"wikitext-2"``, ``"sst-2"``, ...) or a
    :class:`~shoulders.data.entry.Dataset` entry. The folder comes from the cache (``SHOULDERS_DATA``, see
    :func:`~shoulders.data.local.cache_root`), else the read-only mirror ``SHOULDERS_DATA_MIRROR``, else a
    download (:func:`~shoulders.data.provide.provide`); every failure is a
    :class:`~shoulders.data.errors.DatasetError` saying what to do. A cached copy is checked against the stamp
    written when it was verified: by default every file's size and sha256 (a few milliseconds for the book's
    datasets; only the size for a dataset over :data:`~shoulders.data.local.FULL_CHECK_BYTES`, e.g.
    WikiText-103); ``verify=True`` always re-hashes, ``verify=False`` compares sizes only. A copy that no longer
    matches is fetched again (with a warning). Processes asking for the same dataset at once take turns.

    Example: ``train = (path("wikitext-2") / "wiki.train.tokens").read_text(encoding="utf-8")``.
    """
    return provide(resolve(dataset), verify=verify)

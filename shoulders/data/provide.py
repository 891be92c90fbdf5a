"""A verified local folder for one registry entry -- cache, else mirror, else download -- and the readers' access.

:func:`provide` does the work behind :func:`shoulders.data.path` for an entry (``path`` adds the lookup by name);
the dataset readers call it through :func:`folder` / :func:`local_file`, which also accept an explicit ``root``.

1. **Cache hit**: ``<cache root>/<name>/`` with a stamp that matches the registry and the files' sizes.
   A folder without a (matching) stamp is re-hashed in full; if every file checks out it is adopted.
2. **Mirror**: ``SHOULDERS_DATA_MIRROR/<name>/`` -- each file copied, hashed and compared.
3. **Download**: each canonical URL with pooch, checksum verified, archives extracted safely, results verified.

Steps 2 and 3 build the folder inside a temporary folder next to the cache and rename it into place only
when complete and verified, so a failure -- offline, HTTP error, cut-off transfer, checksum mismatch,
unsafe archive -- leaves nothing behind but raises a :class:`~shoulders.data.errors.DatasetError` saying what
to do. The mirror is only ever read (:func:`~shoulders.data.mirror.refuse_overlap`).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path

from .entry import Dataset, LocalFile
from .errors import ENV_MIRROR, CacheError, DatasetError
from .local import ENV_CACHE, FileRecord, cache_root, full_check, quick_check, read_stamp, write_stamp
from .mirror import fill_from_mirror, mirror_root, refuse_overlap
from .remote import fill_from_downloads

__all__ = ["Root", "folder", "local_file", "provide"]

Root = str | os.PathLike | None

_STALE_S = 24 * 3600  # temporary folders older than this were left by a killed process


def _temp_prefix(entry: Dataset) -> str:
    return f".{entry.name}.tmp-"


def _sweep_stale(root: Path, entry: Dataset) -> None:
    """Remove temporary folders a killed process left behind (old enough not to be in use)."""
    now = time.time()
    for stale in root.glob(_temp_prefix(entry) + "*"):
        try:
            if now - stale.stat().st_mtime > _STALE_S:
                shutil.rmtree(stale, ignore_errors=True)
        except OSError:
            pass


def _existing(entry: Dataset, place: Path, verify: bool) -> bool:
    """True if ``place`` is a good copy (stamping it if needed); False if it is ours but bad (then removed)."""
    if not place.is_dir():
        raise CacheError(f"{entry.name}: {place} exists but is not a folder. Remove it and call again.")
    if not verify and quick_check(entry, place):
        return True
    stamp = read_stamp(place)
    records, problems = full_check(entry, place)
    if not problems:
        write_stamp(entry, place, records, source=(stamp or {}).get("source", "found in the cache"))
        return True
    if stamp is None:
        raise CacheError(
            f"{entry.name}: {place} holds files that do not match the registry ({'; '.join(problems)}). "
            "It was not made by shoulders, so it is left alone: delete it (or put the right files there) and call "
            "again.")
    warnings.warn(f"{entry.name}: the cached copy in {place} no longer matches the registry "
                  f"({'; '.join(problems)}); fetching it again.", stacklevel=4)
    shutil.rmtree(place)
    return False


def _fill(entry: Dataset, root: Path, build: Path, scratch: Path) -> tuple[dict[str, FileRecord], str]:
    mirror = mirror_root()
    if mirror is not None:
        records = fill_from_mirror(entry, mirror, build)
        if records is not None:
            return records, f"mirror {mirror}"
    scratch.mkdir()
    try:
        return fill_from_downloads(entry, build, scratch, root), "download"
    except DatasetError as err:
        if mirror is not None and err.args:
            err.args = (f"{err.args[0]} (Note: {ENV_MIRROR}={str(mirror)!r} has no '{entry.name}' folder.)",)
        raise


def _publish(entry: Dataset, build: Path, place: Path) -> None:
    """Rename the finished folder into place; if another process got there first, keep theirs."""
    try:
        build.rename(place)
    except OSError as err:
        if place.is_dir() and quick_check(entry, place):
            return
        raise CacheError(f"{entry.name}: could not move the finished folder to {place}: {err}") from err


def provide(entry: Dataset, *, verify: bool = False) -> Path:
    """The local folder holding ``entry``'s files, verified against the entry (see :func:`shoulders.data.path`).

    ``verify=True`` re-hashes every cached file instead of trusting the stamp and sizes. Raises
    :class:`~shoulders.data.errors.MirrorError` if the cache root and ``SHOULDERS_DATA_MIRROR`` overlap.
    """
    root = cache_root()
    refuse_overlap(root)
    target = root / entry.name
    try:
        if target.exists() and _existing(entry, target, verify):
            return target
        root.mkdir(parents=True, exist_ok=True)
        _sweep_stale(root, entry)
        work = Path(tempfile.mkdtemp(dir=root, prefix=_temp_prefix(entry)))
    except OSError as err:
        raise CacheError(f"{entry.name}: cannot use the cache folder {root}: {err}. Set {ENV_CACHE} to a "
                         "writable folder.") from err
    try:
        build = work / entry.name
        build.mkdir()
        records, source = _fill(entry, root, build, work / "download")
        write_stamp(entry, build, records, source)
        _publish(entry, build, target)
    except OSError as err:
        raise CacheError(f"{entry.name}: could not write to {work}: {err}. Check free space and permissions, "
                         f"or set {ENV_CACHE} to another folder.") from err
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def folder(entry: Dataset, root: Root = None) -> Path:
    """A reader's folder for ``entry``: ``root`` when given (it must be a folder), else :func:`provide`."""
    if root is None:
        return provide(entry)
    given = Path(root)
    if not given.is_dir():
        raise FileNotFoundError(f"{entry.name}: root={str(given)!r} is not a folder")
    return given


def local_file(entry: Dataset, file: LocalFile, root: Root = None) -> Path:
    """The path of one of ``entry``'s files in its :func:`folder`; a missing file raises
    :class:`FileNotFoundError` listing the files the entry expects."""
    found = folder(entry, root) / file.name
    if not found.is_file():
        raise FileNotFoundError(f"{entry.name}: {found} is missing (expected files: "
                                f"{', '.join(f.name for f in entry.files)})")
    return found

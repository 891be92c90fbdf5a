"""``path(name)``: a verified local folder for a dataset -- cache, else mirror, else download.

1. **Cache hit**: ``<cache root>/<name>/`` with a stamp that matches the registry and the files' sizes.
   A folder without a (matching) stamp is re-hashed in full; if every file checks out it is adopted.
2. **Mirror**: ``SHOULDERS_DATA_MIRROR/<name>/`` -- each file copied, hashed and compared.
3. **Download**: each canonical URL with pooch, checksum verified, archives extracted safely, results verified.

Steps 2 and 3 build the folder inside a temporary folder next to the cache and rename it into place only
when complete and verified, so a failure -- offline, HTTP error, cut-off transfer, checksum mismatch,
unsafe archive -- leaves nothing behind but raises a :class:`~shoulders.data.errors.DatasetError` saying what
to do.
"""
from __future__ import annotations

import shutil
import tempfile
import time
import warnings
from pathlib import Path

from .advice import ENV_MIRROR
from .assemble import fill_from_downloads
from .cache import ENV_CACHE, cache_root, full_check, quick_check, read_stamp, write_stamp
from .entry import Dataset
from .errors import CacheError, DatasetError
from .lookup import resolve
from .mirror import fill_from_mirror, mirror_root
from .verify import FileRecord

__all__ = ["path"]

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


def _existing(entry: Dataset, folder: Path, verify: bool) -> bool:
    """True if ``folder`` is a good copy (stamping it if needed); False if it is ours but bad (then removed)."""
    if not folder.is_dir():
        raise CacheError(f"{entry.name}: {folder} exists but is not a folder. Remove it and call again.")
    if not verify and quick_check(entry, folder):
        return True
    stamp = read_stamp(folder)
    records, problems = full_check(entry, folder)
    if not problems:
        write_stamp(entry, folder, records, source=(stamp or {}).get("source", "found in the cache"))
        return True
    if stamp is None:
        raise CacheError(
            f"{entry.name}: {folder} holds files that do not match the registry ({'; '.join(problems)}). "
            "It was not made by shoulders, so it is left alone: delete it (or put the right files there) and call "
            "again.")
    warnings.warn(f"{entry.name}: the cached copy in {folder} no longer matches the registry "
                  f"({'; '.join(problems)}); fetching it again.", stacklevel=3)
    shutil.rmtree(folder)
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


def _publish(entry: Dataset, build: Path, folder: Path) -> None:
    """Rename the finished folder into place; if another process got there first, keep theirs."""
    try:
        build.rename(folder)
    except OSError as err:
        if folder.is_dir() and quick_check(entry, folder):
            return
        raise CacheError(f"{entry.name}: could not move the finished folder to {folder}: {err}") from err


def path(dataset: str | Dataset, *, verify: bool = False) -> Path:
    """The local folder holding ``dataset``'s files, verified against the registry.

    ``dataset`` is a registry name or alias (``"wikitext-2"``, ``"sst-2"``, ...) or a
    :class:`~shoulders.data.entry.Dataset` entry. ``verify=True`` re-hashes every cached file instead of
    trusting the stamp and sizes. The cache root is ``SHOULDERS_DATA`` (see :func:`cache_root`).

    Example: ``train = (path("wikitext-2") / "wiki.train.tokens").read_text(encoding="utf-8")``.
    """
    entry = resolve(dataset)
    root = cache_root()
    folder = root / entry.name
    try:
        if folder.exists() and _existing(entry, folder, verify):
            return folder
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
        _publish(entry, build, folder)
    except OSError as err:
        raise CacheError(f"{entry.name}: could not write to {work}: {err}. Check free space and permissions, "
                         f"or set {ENV_CACHE} to another folder.") from err
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder

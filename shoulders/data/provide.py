"""A verified local folder for one registry entry -- cache, else mirror, else download -- and the readers' access.

:func:`provide` does the work behind :func:`shoulders.data.path` for an entry (``path`` adds the lookup by name);
the dataset readers call it through :func:`folder` / :func:`local_file`, which also accept an explicit ``root``.

1. **Cache hit**: ``<cache root>/<name>/`` with a stamp that matches the registry and the files -- their sizes,
   and by default their sha256 (:func:`~shoulders.data.local.stamp_matches`). This check only reads.
2. Otherwise, **under the dataset's lock** (:func:`shoulders._lock.exclusive` on ``<cache root>/.<name>.lock``;
   a second process waits, saying so, then finds the work done): a folder without a (matching) stamp is re-hashed
   in full and adopted if every file checks out; a stamped copy that no longer matches is moved aside in one
   rename and deleted; a folder shoulders did not make is left alone (:class:`CacheError`). Temporary folders
   that killed processes left behind are deleted (holding the lock, nobody else can be using them).
3. **Mirror**: ``SHOULDERS_DATA_MIRROR/<name>/`` -- each file copied, hashed and compared.
4. **Download**: each canonical URL with pooch, checksum verified, archives extracted safely, results verified.

Steps 3 and 4 build the folder inside a temporary folder next to the cache and rename it into place only
when complete and verified, so a failure -- offline, HTTP error, cut-off transfer, checksum mismatch,
unsafe archive, a process killed at any moment -- leaves nothing partial at ``<cache root>/<name>/`` and
raises a :class:`~shoulders.data.errors.DatasetError` naming the real cause: a mirror file that cannot be read
is a :class:`~shoulders.data.errors.MirrorError` naming that file, a cache that cannot be written a
:class:`~shoulders.data.errors.CacheError` naming the cache folder. The mirror is only ever read
(:func:`~shoulders.data.mirror.refuse_overlap`). A cache that cannot be written but already holds a good copy
(e.g. a classroom's shared read-only cache) is used as it is.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import warnings
from pathlib import Path

from .._lock import exclusive
from .entry import Dataset, LocalFile
from .errors import ENV_MIRROR, CacheError, DatasetError
from .local import (
    ENV_CACHE, STAMP, FileRecord, cache_origin, cache_root, full_check, read_stamp, stamp_matches, write_stamp,
)
from .mirror import fill_from_mirror, mirror_root, refuse_overlap
from .remote import fill_from_downloads

__all__ = ["Root", "folder", "local_file", "lock_path", "provide"]

Root = str | os.PathLike | None


def _temp_prefix(entry: Dataset) -> str:
    return f".{entry.name}.tmp-"


def lock_path(root: Path, entry: Dataset) -> Path:
    """The lock file that serialises filling and repairing ``entry``'s folder in the cache ``root``."""
    return root / f".{entry.name}.lock"


def _sweep(root: Path, entry: Dataset, place: Path) -> None:
    """Delete what killed processes left behind: ``entry``'s temporary folders in ``root`` and half-written stamps
    in ``place``. Only called holding the dataset's lock, so no living process is using any of them."""
    for stale in root.glob(_temp_prefix(entry) + "*"):
        shutil.rmtree(stale, ignore_errors=True)
    if place.is_dir() and not place.is_symlink():
        for torn in place.glob(f".{STAMP}.*.tmp"):
            torn.unlink(missing_ok=True)


def _discard(root: Path, entry: Dataset, place: Path) -> None:
    """Remove ``place`` atomically: one rename into a temporary folder (nobody sees it half-deleted), then delete."""
    aside = Path(tempfile.mkdtemp(dir=root, prefix=_temp_prefix(entry)))
    os.rename(place, aside / entry.name)
    shutil.rmtree(aside, ignore_errors=True)


def _settle(entry: Dataset, root: Path, place: Path, verify: bool | None) -> bool:
    """Holding the lock: True if ``place`` is a good copy (stamping it if needed); False if there is none now
    (absent, or ours but bad -- then discarded). A folder shoulders did not make that fails is left alone."""
    if not (place.exists() or place.is_symlink()):
        return False
    if stamp_matches(entry, place, full=verify):
        return True  # another process repaired it while this one waited
    if not place.is_dir():
        raise CacheError(f"{entry.name}: {place} exists but is not a folder. Remove it and call again.")
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
                  f"({'; '.join(problems)}); fetching it again.", stacklevel=6)
    _discard(root, entry, place)
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
        if place.is_dir() and stamp_matches(entry, place, full=False):
            return
        raise CacheError(f"{entry.name}: could not move the finished folder to {place}: {err}") from err


def _read_only(entry: Dataset, root: Path, place: Path, err: OSError) -> Path:
    """The cache cannot be written (no lock, no folder): use a good copy already there, else say so."""
    with contextlib.suppress(OSError):
        if place.is_dir() and not full_check(entry, place)[1]:
            return place
    raise CacheError(f"{entry.name}: cannot write to the cache folder {root} ({cache_origin()}): "
                     f"{err.strerror or err}. Set {ENV_CACHE} to a writable folder.") from err


def _build(entry: Dataset, root: Path, place: Path, verify: bool | None) -> Path:
    """Holding the lock: settle what is at ``place``, else build the folder from the mirror or downloads."""
    try:
        _sweep(root, entry, place)
        if _settle(entry, root, place, verify):
            return place
    except OSError as err:
        raise CacheError(f"{entry.name}: cannot check or replace the cached copy {place} ({cache_origin()}): "
                         f"{err}. Fix its permissions, or delete it and call again.") from err
    try:
        work = Path(tempfile.mkdtemp(dir=root, prefix=_temp_prefix(entry)))
    except OSError as err:
        raise CacheError(f"{entry.name}: cannot write to the cache folder {root} ({cache_origin()}): {err}. "
                         f"Set {ENV_CACHE} to a writable folder.") from err
    try:
        build = work / entry.name
        build.mkdir()
        records, source = _fill(entry, root, build, work / "download")
        write_stamp(entry, build, records, source)
        _publish(entry, build, place)
    except OSError as err:
        raise CacheError(f"{entry.name}: could not write to {work} in the cache folder ({cache_origin()}): {err}. "
                         f"Check free space and permissions, or set {ENV_CACHE} to another folder.") from err
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return place


def provide(entry: Dataset, *, verify: bool | None = None) -> Path:
    """The local folder holding ``entry``'s files, verified against the entry (see :func:`shoulders.data.path`).

    ``verify=None`` (default) re-hashes every cached file against its stamp when the dataset is at most
    :data:`~shoulders.data.local.FULL_CHECK_BYTES` (every dataset the book reads at ``smoke`` and ``cpu``), else
    compares sizes; ``verify=True`` always re-hashes; ``verify=False`` only compares sizes (a same-size change
    then goes unnoticed). Raises :class:`~shoulders.data.errors.MirrorError` if the cache root and
    ``SHOULDERS_DATA_MIRROR`` overlap. Processes asking for the same dataset at once take turns.
    """
    root = cache_root()
    place = root / entry.name
    refuse_overlap(root, place)
    if stamp_matches(entry, place, full=verify):
        return place
    with contextlib.ExitStack() as stack:
        try:
            root.mkdir(parents=True, exist_ok=True)
            stack.enter_context(exclusive(lock_path(root, entry), wait_message=(
                f"{entry.name}: another process is preparing {place}; waiting for it to finish ...")))
        except OSError as err:
            return _read_only(entry, root, place, err)
        return _build(entry, root, place, verify)


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

"""The local side: where datasets live, how a file is checked, and the stamp that marks a folder as verified.

The cache root is ``SHOULDERS_DATA`` if set; else ``<checkout>/data`` when the package runs from a source
checkout (a folder above the package holding ``pyproject.toml`` and ``book/``); else the user cache folder
(``platformdirs.user_cache_dir("shoulders")``). Dataset ``name`` lives in ``<root>/<name>/``.

``SHOULDERS_DATA`` set to an empty (or blank) string counts as unset; set to a file it is refused
(:class:`~shoulders.data.errors.CacheError` naming the variable); a missing folder is created when first needed.

A folder is only ever put in place complete (built in a temporary folder, then renamed), with a stamp file
recording each file's size and sha256 and a fingerprint of the registry facts it was checked against. Each
``path()`` call compares the files with the stamp: sizes always, and by default every file's sha256 too
(:func:`stamp_matches`; a dataset of more than :data:`FULL_CHECK_BYTES` gets the size check only unless
``verify=True``). A missing or disagreeing stamp triggers a full check against the registry.
A file is checked against its registry facts (:class:`~shoulders.data.entry.LocalFile`): the pinned sha256, or
the sha256 of its gunzipped content, or -- where no sha256 is pinned -- its size and published checksum.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .._atomic import write_text_atomic
from .entry import Check, Dataset, LocalFile
from .errors import CacheError, ChecksumError

__all__ = [
    "CHUNK", "ENV_CACHE", "FULL_CHECK_BYTES", "STAMP", "FileRecord", "HashingCopy", "accepts", "cache_origin",
    "cache_root", "check_file", "checkout_root", "copy_hashing", "file_digest", "fingerprint", "full_check",
    "gzip_content_sha256", "measure", "quick_check", "read_stamp", "stamp_matches", "write_stamp",
]

ENV_CACHE = "SHOULDERS_DATA"
STAMP = ".shoulders-stamp.json"
_STAMP_FORMAT = 1
CHUNK = 1 << 20
#: A dataset of at most this many bytes is re-hashed on every ``path()`` call by default (the book's mirrored
#: datasets, 0.2-13 MB, take 0.2-36 ms each); a larger one (WikiText-103) gets the size check unless verify=True.
FULL_CHECK_BYTES = 128 * 2**20


# ------------------------------------------------------------------------------------------------- hashing
def file_digest(path: Path, algorithm: str = "sha256") -> str:
    """Hex digest of a file (``md5``, ``sha1`` or ``sha256``)."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def gzip_content_sha256(path: Path) -> str:
    """sha256 of a gzip file's decompressed content."""
    digest = hashlib.sha256()
    with gzip.open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class HashingCopy:
    """The result of :func:`copy_hashing`: bytes copied, and the sha256 of the bytes written."""

    size: int
    sha256: str


def copy_hashing(source: BinaryIO, target: BinaryIO, *, limit: int | None = None) -> HashingCopy:
    """Copy ``source`` to ``target`` and hash the bytes on the way.

    With ``limit``, stop after ``limit + 1`` bytes: a caller that expects ``limit`` bytes then sees too many
    and can refuse the file without writing an oversized (e.g. zip-bomb) member to disk.
    """
    digest = hashlib.sha256()
    size = 0
    while True:
        want = CHUNK if limit is None else min(CHUNK, limit + 1 - size)
        if want <= 0:
            break
        block = source.read(want)
        if not block:
            break
        digest.update(block)
        target.write(block)
        size += len(block)
    return HashingCopy(size, digest.hexdigest())


# --------------------------------------------------------------------------------------- checking one file
@dataclass(frozen=True)
class FileRecord:
    """What a file on disk is: its size and sha256 (what the cache stamp records)."""

    size: int
    sha256: str


def measure(path: Path) -> FileRecord:
    """Size and sha256 of ``path``."""
    return FileRecord(path.stat().st_size, file_digest(path))


def _content_sha256(path: Path) -> str | None:
    try:
        return gzip_content_sha256(path)
    except (OSError, EOFError, zlib.error):  # gzip.BadGzipFile is an OSError
        return None


def _unpinned_mismatch(local: LocalFile, path: Path, size: int) -> tuple[str, str, str] | None:
    """For a file without a pinned sha256: ``(algorithm, expected, actual)`` of the first stated fact that
    ``path`` (of ``size`` bytes) fails -- ``"size"``, then the published checksum -- or ``None``."""
    if local.size is not None and size != local.size:
        return "size", str(local.size), str(size)
    if local.published is not None:
        actual = file_digest(path, local.published.algorithm)
        if actual != local.published.value:
            return local.published.algorithm, local.published.value, actual
    return None


def accepts(local: LocalFile, path: Path, record: FileRecord | None = None) -> bool:
    """Whether the file at ``path`` is an acceptable copy of ``local`` (any source).

    Accepted: the pinned sha256; or, for a ``.gz`` with ``content_sha256``, a different gzip of the same
    content; or, when no sha256 is pinned, the right size and published checksum (where stated).
    """
    record = record or measure(path)
    if local.sha256 is None:
        return _unpinned_mismatch(local, path, record.size) is None
    if record.sha256 == local.sha256:
        return True
    return local.content_sha256 is not None and _content_sha256(path) == local.content_sha256


def check_file(dataset: str, local: LocalFile, path: Path, *, mode: Check, origin: str) -> FileRecord:
    """Measure ``path`` and compare it with ``local`` the way ``mode`` says; raise :class:`ChecksumError` if off.

    ``origin`` says where the bytes came from (a URL, an archive member), for the error message.
    """
    record = measure(path)
    what = f"{dataset}: {local.name} ({origin})"
    if mode == "archive":
        return record
    if mode == "content":
        actual = _content_sha256(path) or "(not a readable gzip file)"
        if actual != local.content_sha256:
            raise ChecksumError(
                f"{what}: sha256 of the uncompressed content is {actual}, expected {local.content_sha256}",
                file=str(path), algorithm="sha256", expected=local.content_sha256 or "", actual=actual)
        return record
    if local.sha256 is not None and record.sha256 != local.sha256:
        raise ChecksumError(
            f"{what}: sha256 is {record.sha256}, expected {local.sha256} ({record.size:,} bytes"
            + (f", expected {local.size:,}" if local.size is not None else "") + ")",
            file=str(path), algorithm="sha256", expected=local.sha256, actual=record.sha256)
    mismatch = _unpinned_mismatch(local, path, record.size) if local.sha256 is None else None
    if mismatch is not None:
        algorithm, expected, actual = mismatch
        source = local.published.source if local.published is not None else ""
        detail = (f"{int(actual):,} bytes, expected exactly {int(expected):,} (no checksum is published; the size "
                  "is the check)" if algorithm == "size" else
                  f"{algorithm} {actual}, expected {expected} (published by {source or 'the registry'})")
        raise ChecksumError(f"{what}: {detail}", file=str(path), algorithm=algorithm, expected=expected,
                            actual=actual)
    return record


# ---------------------------------------------------------------------------------------------- the cache
def checkout_root() -> Path | None:
    """The source checkout this package runs from (a folder with ``pyproject.toml`` and ``book/``), if any."""
    package = Path(__file__).resolve().parent.parent
    for folder in package.parents:
        if (folder / "pyproject.toml").is_file() and (folder / "book").is_dir():
            return folder
    return None


def cache_root() -> Path:
    """The folder holding one sub-folder per dataset (not created here).

    ``SHOULDERS_DATA`` if set (an empty or blank value counts as unset); a value naming a file raises
    :class:`~shoulders.data.errors.CacheError` naming the variable.
    """
    configured = os.environ.get(ENV_CACHE, "").strip()
    if configured:
        root = Path(configured).expanduser()
        if root.exists() and not root.is_dir():
            raise CacheError(f"{ENV_CACHE}={configured!r} names a file, not a folder. Point it at a folder for the "
                             "dataset cache (it is created if missing), or unset it to use the default.")
        return root
    checkout = checkout_root()
    if checkout is not None:
        return checkout / "data"
    import platformdirs

    return Path(platformdirs.user_cache_dir("shoulders"))


def cache_origin() -> str:
    """Where the cache root comes from, for messages: ``SHOULDERS_DATA='...'`` or ``the default``."""
    configured = os.environ.get(ENV_CACHE, "").strip()
    return f"{ENV_CACHE}={configured!r}" if configured else f"the default; set {ENV_CACHE} to choose another"


def fingerprint(entry: Dataset) -> str:
    """A digest of the registry facts a folder is checked against (changes when the entry's files change)."""
    facts = [[f.name, f.size, f.sha256, f.content_sha256] + ([str(f.published)] if f.published else [])
             for f in entry.files]
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()


def read_stamp(folder: Path) -> dict | None:
    """The parsed stamp of ``folder``, or ``None`` if absent or unreadable."""
    try:
        stamp = json.loads((folder / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) and stamp.get("format") == _STAMP_FORMAT else None


def quick_check(entry: Dataset, folder: Path, stamp: dict | None = None) -> bool:
    """True if ``folder``'s stamp (read unless given) matches the entry and every file still has the stamped size."""
    stamp = read_stamp(folder) if stamp is None else stamp
    if stamp is None or stamp.get("fingerprint") != fingerprint(entry):
        return False
    files = stamp.get("files")
    if not isinstance(files, dict) or set(files) != {f.name for f in entry.files}:
        return False
    for local in entry.files:
        try:
            if (folder / local.name).stat().st_size != files[local.name]["size"]:
                return False
        except (OSError, KeyError, TypeError):
            return False
    return True


def stamp_matches(entry: Dataset, folder: Path, *, full: bool | None = None) -> bool:
    """True if ``folder`` is a stamped copy of ``entry`` whose files are still what the stamp records.

    Sizes are always compared; ``full=True`` also re-hashes every file against the stamp's sha256, ``full=False``
    does not, ``full=None`` (the default) re-hashes a dataset of at most :data:`FULL_CHECK_BYTES`. Only reads:
    any doubt (no stamp, a file gone or changed, an unreadable file) is ``False``.
    """
    try:
        stamp = read_stamp(folder)
        if stamp is None or not quick_check(entry, folder, stamp):
            return False
        files = stamp["files"]
        if full is None:
            full = sum(int(files[f.name]["size"]) for f in entry.files) <= FULL_CHECK_BYTES
        return not full or all((folder / f.name).is_file() and file_digest(folder / f.name) == files[f.name]["sha256"]
                               for f in entry.files)
    except (OSError, KeyError, TypeError, ValueError):
        return False


def full_check(entry: Dataset, folder: Path) -> tuple[dict[str, FileRecord], list[str]]:
    """Re-hash every file of ``folder``: the records, and a list of problems (empty when all are acceptable)."""
    records: dict[str, FileRecord] = {}
    problems: list[str] = []
    for local in entry.files:
        file = folder / local.name
        if not file.is_file():
            problems.append(f"{local.name} is missing")
            continue
        record = measure(file)
        records[local.name] = record
        if not accepts(local, file, record):
            expected = local.sha256 or (f"size {local.size:,}" if local.size is not None else str(local.published))
            problems.append(f"{local.name} has sha256 {record.sha256} ({record.size:,} bytes), expected {expected}")
    return records, problems


def write_stamp(entry: Dataset, folder: Path, records: dict[str, FileRecord], source: str) -> None:
    """Write ``folder``'s stamp atomically (temporary file + rename)."""
    stamp = {
        "format": _STAMP_FORMAT,
        "dataset": entry.name,
        "fingerprint": fingerprint(entry),
        "source": source,
        "files": {name: {"size": r.size, "sha256": r.sha256} for name, r in sorted(records.items())},
    }
    write_text_atomic(folder / STAMP, json.dumps(stamp, indent=1) + "\n")

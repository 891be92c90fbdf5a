"""What can go wrong when a dataset is looked up, copied from a mirror, downloaded or unpacked -- and what to do.

Every failure of :func:`shoulders.data.path` is a :class:`DatasetError`; the message names the dataset, what
went wrong and what to do about it (:func:`what_to_do`: point ``SHOULDERS_DATA_MIRROR`` at an offline copy, or
download by hand to the place the package looks). Catch the base class unless you mean to treat one case
differently.
"""
from __future__ import annotations

from pathlib import Path

from .._scale import ENV_VAR as ENV_SCALE
from .._scale import SCALES
from .entry import Dataset, Download

__all__ = [
    "ENV_MIRROR",
    "MANUAL_FOLDER",
    "ArchiveError",
    "CacheError",
    "ChecksumError",
    "DatasetError",
    "DownloadError",
    "MirrorChecksumError",
    "MirrorError",
    "UnknownDatasetError",
    "manual_path",
    "scope",
    "what_to_do",
]

ENV_MIRROR = "SHOULDERS_DATA_MIRROR"
MANUAL_FOLDER = "downloads"  # <cache root>/downloads/<filename>: files downloaded by hand are picked up here


class DatasetError(RuntimeError):
    """Base class: a dataset could not be made available as a verified local folder."""


class UnknownDatasetError(DatasetError, LookupError):
    """The name is not in the registry (the message lists the known names and the closest matches)."""


class DownloadError(DatasetError):
    """The bytes could not be fetched: offline, connection refused, an HTTP error status, or a cut-off transfer."""


class ChecksumError(DatasetError):
    """Bytes were obtained but differ from the registry (wrong size, checksum or member hash).

    ``file`` is the offending file (or URL), ``algorithm`` / ``expected`` / ``actual`` the facts compared.
    """

    def __init__(self, message: str, *, file: str = "", algorithm: str = "", expected: str = "", actual: str = ""):
        super().__init__(message)
        self.file = file
        self.algorithm = algorithm
        self.expected = expected
        self.actual = actual


class MirrorError(DatasetError):
    """The folder named by ``SHOULDERS_DATA_MIRROR`` is unusable for this dataset (missing folder or file)."""


class MirrorChecksumError(MirrorError, ChecksumError):
    """A file in the mirror differs from the registry's sha256 (the message names the mirror file)."""


class ArchiveError(DatasetError):
    """A downloaded archive is unreadable, lacks a member, or has a member that could escape its folder."""


class CacheError(DatasetError):
    """The cache folder holds files the registry cannot vouch for, or cannot be written."""


# ------------------------------------------------------------------------------------------------ what to do
def manual_path(root: Path, download: Download) -> Path:
    """Where a by-hand download of ``download`` is looked for (and never written by this package)."""
    return root / MANUAL_FOLDER / download.filename


def scope(entry: Dataset) -> str:
    """Who needs ``entry``, for a dataset not needed at every scale ("" otherwise): e.g. ``imdb is needed only at
    SHOULDERS_SCALE=full (chapter 11, ULMFiT); it is not in the offline mirror, ...``."""
    if not entry.only_at_some_scales:
        return ""
    at = " or ".join(f"{ENV_SCALE}={s}" for s in entry.scales)
    other = " and ".join(s for s in SCALES if s not in entry.scales)
    chapters = f" ({entry.needed_by})" if entry.needed_by else ""
    where = ("it is not in the offline mirror, so an offline machine needs a copy made on a connected one"
             if not entry.mirrored else "it is in the offline mirror")
    return f"{entry.name} is needed only at {at}{chapters}; {where} (at {other} no chapter reads it)."


def what_to_do(entry: Dataset, root: Path, downloads: tuple[Download, ...] | None = None) -> str:
    """Advice: point ``SHOULDERS_DATA_MIRROR`` at an offline copy, or download by hand to the right place
    (preceded by :func:`scope` for a dataset only some scales need)."""
    downloads = entry.downloads if downloads is None else downloads
    mirror = (f"set {ENV_MIRROR} to a folder laid out like the book's shared/data (one sub-folder per dataset, "
              f"here '{entry.name}/'), e.g. `export {ENV_MIRROR}=/path/to/shared/data`")
    if not entry.mirrored:
        mirror += f" (the standard mirror does not include {entry.name})"
    manual = "; ".join(f"download {d.url} and save it as {manual_path(root, d)}" for d in downloads)
    advice = f"To fix: {mirror}; or, on a connected machine, {manual}; then call path({entry.name!r}) again."
    return f"{scope(entry)} {advice}" if entry.only_at_some_scales else advice

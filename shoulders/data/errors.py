"""What can go wrong when a dataset is looked up, copied from a mirror, downloaded or unpacked.

Every failure of :func:`shoulders.data.path` is a :class:`DatasetError`; the message names the dataset, what
went wrong and what to do about it. Catch the base class unless you mean to treat one case differently.
"""
from __future__ import annotations

__all__ = [
    "ArchiveError",
    "CacheError",
    "ChecksumError",
    "DatasetError",
    "DownloadError",
    "MirrorChecksumError",
    "MirrorError",
    "UnknownDatasetError",
]


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

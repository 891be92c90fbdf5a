"""The book's datasets: a registry of facts and a verified local folder for each.

>>> import shoulders.data as data
>>> data.names()[:2]
('wikitext-2', 'tiny-shakespeare')

* :func:`path` -- a verified local folder: cache, else the mirror ``SHOULDERS_DATA_MIRROR``, else a download;
* :func:`info` -- the registry entry (URLs, published checksums, files with sha256, licence, citation);
* :func:`names`, :func:`credits`, :func:`cache_root`.

Every failure is a :class:`DatasetError` whose message says what to do. The registry itself is
:data:`REGISTRY` in ``shoulders/data/registry.py``; to use a dataset the registry does not know, build a
:class:`Dataset` and pass it to :func:`path`.
"""
from __future__ import annotations

from .cache import cache_root
from .credit_table import credits
from .entry import Checksum, Citation, Dataset, Download, LocalFile, Member
from .errors import (
    ArchiveError,
    CacheError,
    ChecksumError,
    DatasetError,
    DownloadError,
    MirrorChecksumError,
    MirrorError,
    UnknownDatasetError,
)
from .lookup import info, names
from .provide import path
from .registry import REGISTRY

__all__ = [
    "REGISTRY",
    "ArchiveError",
    "CacheError",
    "Checksum",
    "ChecksumError",
    "Citation",
    "Dataset",
    "DatasetError",
    "Download",
    "DownloadError",
    "LocalFile",
    "Member",
    "MirrorChecksumError",
    "MirrorError",
    "UnknownDatasetError",
    "cache_root",
    "credits",
    "info",
    "names",
    "path",
]

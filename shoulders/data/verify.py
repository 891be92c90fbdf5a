"""Checking one local file against its registry facts (size, sha256, or sha256 of the gunzipped content)."""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

from .entry import Check, LocalFile
from .errors import ChecksumError
from .hashing import file_digest, gzip_content_sha256

__all__ = ["FileRecord", "accepts", "check_file", "measure"]


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


def accepts(local: LocalFile, path: Path, record: FileRecord | None = None) -> bool:
    """Whether the file at ``path`` is an acceptable copy of ``local`` (any source).

    Accepted: the pinned sha256; or, for a ``.gz`` with ``content_sha256``, a different gzip of the same
    content; or, when no sha256 is pinned, the right size.
    """
    record = record or measure(path)
    if local.sha256 is None:
        return local.size is None or record.size == local.size
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
    if local.sha256 is None and local.size is not None and record.size != local.size:
        raise ChecksumError(
            f"{what}: {record.size:,} bytes, expected exactly {local.size:,} (no checksum is published; "
            "the size is the check)",
            file=str(path), algorithm="size", expected=str(local.size), actual=str(record.size))
    return record

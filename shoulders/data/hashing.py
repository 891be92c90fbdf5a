"""Hashing files and streams, and copying while hashing (one read per byte)."""
from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

__all__ = ["CHUNK", "HashingCopy", "copy_hashing", "file_digest", "gzip_content_sha256"]

CHUNK = 1 << 20


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

"""Filling a dataset folder from an offline mirror (``SHOULDERS_DATA_MIRROR``, laid out like ``shared/data``).

Each mirror file is copied and hashed in one pass and must equal the registry's sha256 (or size, where no
sha256 is pinned); a mismatch names the mirror file with the expected and actual digests.
"""
from __future__ import annotations

import os
from pathlib import Path

from .advice import ENV_MIRROR
from .entry import Dataset
from .errors import MirrorChecksumError, MirrorError
from .hashing import copy_hashing
from .verify import FileRecord

__all__ = ["fill_from_mirror", "mirror_root"]


def mirror_root() -> Path | None:
    """The mirror folder named by ``SHOULDERS_DATA_MIRROR`` (``None`` when unset); it must exist."""
    configured = os.environ.get(ENV_MIRROR, "").strip()
    if not configured:
        return None
    root = Path(configured).expanduser()
    if not root.is_dir():
        raise MirrorError(f"{ENV_MIRROR}={configured!r} is not a folder. Point it at a copy of the book's "
                          "shared/data folder (one sub-folder per dataset), or unset it to download instead.")
    return root


def fill_from_mirror(entry: Dataset, mirror: Path, workdir: Path) -> dict[str, FileRecord] | None:
    """Copy ``entry``'s files from ``mirror/<name>/`` into ``workdir``, verifying each.

    Returns the file records, or ``None`` if the mirror has no folder for this dataset.
    """
    source = mirror / entry.name
    if not source.is_dir():
        return None
    records: dict[str, FileRecord] = {}
    for local in entry.files:
        original = source / local.name
        if not original.is_file():
            raise MirrorError(f"{entry.name}: the mirror lacks {original} ({ENV_MIRROR}={str(mirror)!r}). "
                              f"Restore that file, or unset {ENV_MIRROR} to download {entry.name} instead.")
        target = workdir / local.name
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(original, "rb") as src, open(target, "xb") as dst:
            copied = copy_hashing(src, dst)
        if local.sha256 is not None and copied.sha256 != local.sha256:
            size = f"{local.size:,} bytes" if local.size is not None else "size not pinned"
            raise MirrorChecksumError(
                f"{entry.name}: mirror file {original} is corrupt: sha256 {copied.sha256} "
                f"({copied.size:,} bytes), expected {local.sha256} ({size}). Replace it with a good "
                f"copy, or unset {ENV_MIRROR} to download {entry.name} from {entry.downloads[0].url}.",
                file=str(original), algorithm="sha256", expected=local.sha256, actual=copied.sha256)
        if local.sha256 is None and local.size is not None and copied.size != local.size:
            raise MirrorChecksumError(
                f"{entry.name}: mirror file {original} has {copied.size:,} bytes, expected {local.size:,}.",
                file=str(original), algorithm="size", expected=str(local.size), actual=str(copied.size))
        records[local.name] = FileRecord(copied.size, copied.sha256)
    return records

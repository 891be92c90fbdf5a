"""The offline mirror (``SHOULDERS_DATA_MIRROR``, laid out like the book's ``shared/data``): read, never written.

A dataset folder is filled from ``<mirror>/<name>/`` by copying each file and hashing it in the same pass; every
file must equal the registry's sha256 (or, where none is pinned, its size and published checksum), and a
mismatch names the mirror file with the expected and actual digests.

Nothing is ever written, renamed or deleted inside the mirror: the cache (``SHOULDERS_DATA``) is where stamps
are written and bad copies removed, so :func:`refuse_overlap` refuses a cache root that is the mirror, lies
inside it, or holds it.
"""
from __future__ import annotations

import os
from pathlib import Path

from .entry import Dataset
from .errors import ENV_MIRROR, MirrorChecksumError, MirrorError
from .local import ENV_CACHE, FileRecord, copy_hashing, file_digest

__all__ = ["fill_from_mirror", "mirror_folder", "mirror_root", "refuse_overlap"]


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


def mirror_folder(name: str) -> Path | None:
    """``<mirror>/<name>/`` when ``SHOULDERS_DATA_MIRROR`` is set and holds a folder for dataset ``name`` (its
    canonical name, e.g. ``"wikitext-2"``), else ``None`` -- e.g. to read a mirrored dataset in place in tests."""
    root = mirror_root()
    folder = None if root is None else root / name
    return folder if folder is not None and folder.is_dir() else None


def refuse_overlap(cache: Path) -> None:
    """Raise :class:`MirrorError` if the cache root ``cache`` and the mirror are one folder or one holds the other.

    The cache is written (stamps, temporary folders) and cleaned (a stale copy is deleted), so a cache inside
    the mirror -- or around it -- could change the mirror; the package refuses to run that way.
    """
    configured = os.environ.get(ENV_MIRROR, "").strip()
    if not configured:
        return
    mirror = Path(configured).expanduser().resolve()
    root = cache.expanduser().resolve()
    if root == mirror:
        how = "are the same folder"
    elif mirror in root.parents:
        how = "overlap: the cache lies inside the mirror"
    elif root in mirror.parents:
        how = "overlap: the mirror lies inside the cache"
    else:
        return
    origin = f"{ENV_CACHE}={os.environ[ENV_CACHE]!r}" if os.environ.get(ENV_CACHE, "").strip() else "the default"
    raise MirrorError(
        f"the dataset cache {root} ({origin}) and the read-only mirror {ENV_MIRROR}={configured!r} {how}. "
        f"shoulders writes stamps into its cache and deletes stale copies there, and never writes to a mirror: "
        f"set {ENV_CACHE} to a folder outside the mirror (e.g. `export {ENV_CACHE}=$HOME/.cache/shoulders`), "
        f"and keep {ENV_MIRROR} pointing at the read-only copy.")


def fill_from_mirror(entry: Dataset, mirror: Path, workdir: Path) -> dict[str, FileRecord] | None:
    """Copy ``entry``'s files from ``mirror/<name>/`` into ``workdir``, verifying each (the mirror is only read).

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
        published = local.published if local.sha256 is None else None
        if published is not None and (actual := file_digest(target, published.algorithm)) != published.value:
            raise MirrorChecksumError(
                f"{entry.name}: mirror file {original} has {published.algorithm} {actual}, expected "
                f"{published.value} (published by {published.source or 'the registry'}).",
                file=str(original), algorithm=published.algorithm, expected=published.value, actual=actual)
        records[local.name] = FileRecord(copied.size, copied.sha256)
    return records

"""The offline mirror (``SHOULDERS_DATA_MIRROR``, laid out like the book's ``shared/data``): read, never written.

A dataset folder is filled from ``<mirror>/<name>/`` by copying each file and hashing it in the same pass; every
file must equal the registry's sha256 (or, where none is pinned, its size and published checksum), and a
mismatch names the mirror file with the expected and actual digests.

Nothing is ever written, renamed or deleted inside the mirror: the cache (``SHOULDERS_DATA``) is where stamps
are written and bad copies removed, so :func:`refuse_overlap` refuses a cache root that is the mirror, lies
inside it, or holds it -- compared after resolving links and relative paths -- and a dataset folder in the cache
that is a link into the mirror. A mirror file that cannot be read raises :class:`MirrorError` naming that file
(never an error about the cache). ``SHOULDERS_DATA_MIRROR`` set to an empty (or blank) string counts as unset.
"""
from __future__ import annotations

import os
from pathlib import Path

from .entry import Dataset
from .errors import ENV_MIRROR, MirrorChecksumError, MirrorError
from .local import ENV_CACHE, FileRecord, cache_origin, copy_hashing, file_digest

__all__ = ["fill_from_mirror", "mirror_folder", "mirror_root", "refuse_overlap"]


def mirror_root() -> Path | None:
    """The mirror folder named by ``SHOULDERS_DATA_MIRROR`` (``None`` when unset); it must exist."""
    configured = os.environ.get(ENV_MIRROR, "").strip()
    if not configured:
        return None
    root = Path(configured).expanduser()
    try:
        usable = root.is_dir()
        what = "names a file, not a folder" if not usable and root.exists() else "is not a folder (it does not exist)"
    except OSError as err:
        usable, what = False, f"cannot be read ({err.strerror or err})"
    if not usable:
        raise MirrorError(f"{ENV_MIRROR}={configured!r} {what}. Point it at a copy of the book's shared/data "
                          "folder (one sub-folder per dataset), or unset it to download instead.")
    return root


def mirror_folder(name: str) -> Path | None:
    """``<mirror>/<name>/`` when ``SHOULDERS_DATA_MIRROR`` is set and holds a folder for dataset ``name`` (its
    canonical name, e.g. ``"wikitext-2"``), else ``None`` -- e.g. to read a mirrored dataset in place in tests."""
    root = mirror_root()
    folder = None if root is None else root / name
    return folder if folder is not None and folder.is_dir() else None


def _overlap(root: Path, mirror: Path) -> str | None:
    if root == mirror:
        return "are the same folder"
    if mirror in root.parents:
        return "overlap: the cache lies inside the mirror"
    if root in mirror.parents:
        return "overlap: the mirror lies inside the cache"
    return None


def refuse_overlap(cache: Path, folder: Path | None = None) -> None:
    """Raise :class:`MirrorError` if the cache root ``cache`` and the mirror are one folder or one holds the other
    (after resolving links and relative paths), or if the dataset folder ``folder`` in the cache resolves into
    the mirror (e.g. a link to the mirror's copy).

    The cache is written (stamps, temporary folders) and cleaned (a stale copy is deleted), so a cache inside
    the mirror -- or around it -- could change the mirror; the package refuses to run that way.
    """
    configured = os.environ.get(ENV_MIRROR, "").strip()
    if not configured:
        return
    mirror = Path(configured).expanduser().resolve()
    root = cache.expanduser().resolve()
    how = _overlap(root, mirror)
    place = root
    if how is None and folder is not None:
        place = folder.expanduser().resolve()
        if place == mirror or mirror in place.parents:
            how = f"overlap: the cache's folder {folder} is a link into the mirror"
    if how is None:
        return
    raise MirrorError(
        f"the dataset cache {place} ({cache_origin()}) and the read-only mirror {ENV_MIRROR}={configured!r} {how}. "
        f"shoulders writes stamps into its cache and deletes stale copies there, and never writes to a mirror: "
        f"set {ENV_CACHE} to a folder outside the mirror (e.g. `export {ENV_CACHE}=$HOME/.cache/shoulders`), "
        f"remove any link from the cache into the mirror, and keep {ENV_MIRROR} pointing at the read-only copy.")


class _MirrorReader:
    """A mirror file opened for reading: a failed read is a :class:`MirrorError` naming the file."""

    def __init__(self, entry: Dataset, path: Path, mirror: Path) -> None:
        self.entry, self.path = entry, path
        try:
            regular = path.is_file()  # never open a fifo or a device: that could block forever
            what = "" if regular else "has something else than a file at" if path.exists() else "lacks"
            if regular:
                self.handle = open(path, "rb")
        except OSError as err:
            raise self.error(err) from err
        if not regular:
            raise MirrorError(f"{entry.name}: the mirror {what} {path} ({ENV_MIRROR}={str(mirror)!r}). Restore that "
                              f"file, or unset {ENV_MIRROR} to download {entry.name} instead.")

    def error(self, err: OSError) -> MirrorError:
        return MirrorError(f"{self.entry.name}: cannot read the mirror file {self.path} ({err.strerror or err}). "
                           f"Fix its permissions or replace it with a good copy, or unset {ENV_MIRROR} to download "
                           f"{self.entry.name} instead.")

    def read(self, size: int = -1) -> bytes:
        try:
            return self.handle.read(size)
        except OSError as err:
            raise self.error(err) from err

    def __enter__(self) -> _MirrorReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()


def fill_from_mirror(entry: Dataset, mirror: Path, workdir: Path) -> dict[str, FileRecord] | None:
    """Copy ``entry``'s files from ``mirror/<name>/`` into ``workdir``, verifying each (the mirror is only read).

    Returns the file records, or ``None`` if the mirror has no folder for this dataset.
    """
    source = mirror / entry.name
    try:
        if not source.is_dir():
            return None
    except OSError as err:
        raise MirrorError(f"{entry.name}: cannot read the mirror folder {source} ({err.strerror or err}). Fix its "
                          f"permissions, or unset {ENV_MIRROR} to download {entry.name} instead.") from err
    records: dict[str, FileRecord] = {}
    for local in entry.files:
        original = source / local.name
        reader = _MirrorReader(entry, original, mirror)  # raises MirrorError naming the file if missing or unreadable
        target = workdir / local.name
        with reader:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "xb") as dst:  # an OSError writing here is the cache's (the caller says so)
                copied = copy_hashing(reader, dst)  # type: ignore[arg-type]
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


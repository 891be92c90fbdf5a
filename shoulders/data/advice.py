"""The "what to do" sentence every failure message ends with."""
from __future__ import annotations

from pathlib import Path

from .entry import Dataset, Download

__all__ = ["ENV_MIRROR", "MANUAL_FOLDER", "manual_path", "what_to_do"]

ENV_MIRROR = "SHOULDERS_DATA_MIRROR"
MANUAL_FOLDER = "downloads"  # <cache root>/downloads/<filename>: files downloaded by hand are picked up here


def manual_path(root: Path, download: Download) -> Path:
    """Where a by-hand download of ``download`` is looked for (and never written by this package)."""
    return root / MANUAL_FOLDER / download.filename


def what_to_do(entry: Dataset, root: Path, downloads: tuple[Download, ...] | None = None) -> str:
    """Advice: point ``SHOULDERS_DATA_MIRROR`` at an offline copy, or download by hand to the right place."""
    downloads = entry.downloads if downloads is None else downloads
    mirror = (f"set {ENV_MIRROR} to a folder laid out like the book's shared/data (one sub-folder per dataset, "
              f"here '{entry.name}/'), e.g. `export {ENV_MIRROR}=/path/to/shared/data`")
    if not entry.mirrored:
        mirror += f" (the standard mirror does not include {entry.name})"
    manual = "; ".join(f"download {d.url} and save it as {manual_path(root, d)}" for d in downloads)
    return f"To fix: {mirror}; or, on a connected machine, {manual}; then call path({entry.name!r}) again."

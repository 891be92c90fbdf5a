"""Where datasets live locally, and the stamp that marks a folder as complete and verified.

The cache root is ``SHOULDERS_DATA`` if set; else ``<checkout>/data`` when the package runs from a source
checkout (a folder above the package holding ``pyproject.toml`` and ``book/``); else the user cache folder
(``platformdirs.user_cache_dir("shoulders")``). Dataset ``name`` lives in ``<root>/<name>/``.

A folder is only ever put in place complete (built in a temporary folder, then renamed), with a stamp file
recording each file's size and sha256 and a fingerprint of the registry facts it was checked against. Each
``path()`` call compares sizes with the stamp (cheap); a missing or disagreeing stamp triggers a full re-hash.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .._atomic import write_text_atomic
from .entry import Dataset
from .verify import FileRecord, accepts, measure

__all__ = [
    "ENV_CACHE",
    "STAMP",
    "cache_root",
    "checkout_root",
    "fingerprint",
    "full_check",
    "quick_check",
    "read_stamp",
    "write_stamp",
]

ENV_CACHE = "SHOULDERS_DATA"
STAMP = ".shoulders-stamp.json"
_STAMP_FORMAT = 1


def checkout_root() -> Path | None:
    """The source checkout this package runs from (a folder with ``pyproject.toml`` and ``book/``), if any."""
    package = Path(__file__).resolve().parent.parent
    for folder in package.parents:
        if (folder / "pyproject.toml").is_file() and (folder / "book").is_dir():
            return folder
    return None


def cache_root() -> Path:
    """The folder holding one sub-folder per dataset (not created here)."""
    configured = os.environ.get(ENV_CACHE, "").strip()
    if configured:
        return Path(configured).expanduser()
    checkout = checkout_root()
    if checkout is not None:
        return checkout / "data"
    import platformdirs

    return Path(platformdirs.user_cache_dir("shoulders"))


def fingerprint(entry: Dataset) -> str:
    """A digest of the registry facts a folder is checked against (changes when the entry's files change)."""
    facts = [[f.name, f.size, f.sha256, f.content_sha256] for f in entry.files]
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()


def read_stamp(folder: Path) -> dict | None:
    """The parsed stamp of ``folder``, or ``None`` if absent or unreadable."""
    try:
        stamp = json.loads((folder / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) and stamp.get("format") == _STAMP_FORMAT else None


def quick_check(entry: Dataset, folder: Path) -> bool:
    """True if ``folder``'s stamp matches the entry and every file still has the stamped size."""
    stamp = read_stamp(folder)
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
            problems.append(f"{local.name} has sha256 {record.sha256} ({record.size:,} bytes), "
                            f"expected {local.sha256 or 'size ' + format(local.size, ',')}")
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

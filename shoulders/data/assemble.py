"""Building a dataset folder from its canonical downloads: fetch, verify, extract, verify the results."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from .advice import what_to_do
from .entry import Check, Dataset, Download
from .errors import ChecksumError
from .extract import extract
from .fetch import fetch
from .verify import FileRecord, check_file

__all__ = ["fill_from_downloads"]


def _checks(entry: Dataset) -> dict[str, tuple[Check, str, Download]]:
    """local name -> (how to verify it, where it came from, its download)."""
    table: dict[str, tuple[Check, str, Download]] = {}
    for download in entry.downloads:
        if download.keep_as:
            table[download.keep_as] = ("exact", download.url, download)
        for member in download.members:
            table[member.target] = (member.check, f"member {member.source!r} of {download.url}", download)
    return table


def _explained(err: ChecksumError, entry: Dataset, download: Download, root: Path) -> ChecksumError:
    """``err`` (a produced file differs from the registry) with the likely cause and what to do."""
    why = ("The download matched its published checksum, so the registry's facts for this file are out of date: "
           "please report it." if download.checksum is not None else
           "No checksum is published for that address, so the file there may have changed since the registry "
           "was written.")
    return ChecksumError(f"{err}. Nothing was kept. {why} {what_to_do(entry, root)}", file=err.file,
                         algorithm=err.algorithm, expected=err.expected, actual=err.actual)


def fill_from_downloads(entry: Dataset, folder: Path, scratch: Path, root: Path) -> dict[str, FileRecord]:
    """Download (or take by-hand copies of) every file of ``entry``, unpack into ``folder``, verify all.

    ``scratch`` holds downloads while they are unpacked; both folders belong to the caller, who removes them
    if anything fails. Returns the records of the final files.
    """
    files = {f.name: f for f in entry.files}
    for download in entry.downloads:
        got = fetch(entry, download, scratch, root)
        if download.format != "file":
            try:
                extract(entry.name, got, download, folder, files)
            except ChecksumError as err:
                raise _explained(err, entry, download, root) from err
        if download.keep_as:
            kept = folder / download.keep_as
            kept.parent.mkdir(parents=True, exist_ok=True)
            if got.parent == scratch:
                os.replace(got, kept)
            else:
                shutil.copyfile(got, kept)
        elif got.parent == scratch:
            got.unlink()
    records: dict[str, FileRecord] = {}
    for name, (mode, origin, download) in _checks(entry).items():
        try:
            records[name] = check_file(entry.name, files[name], folder / name, mode=mode, origin=origin)
        except ChecksumError as err:
            raise _explained(err, entry, download, root) from err
    return records

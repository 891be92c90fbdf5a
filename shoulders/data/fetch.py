"""Getting one canonical download onto disk, verified: a by-hand copy if present, else pooch over HTTP.

Transfer and progress bar are pooch's (:class:`pooch.HTTPDownloader` with tqdm); size and published
checksum are checked here, so a failure says exactly which file, which algorithm and which digests.
The file is written into the caller's temporary build folder, which the caller deletes on any failure.
"""
from __future__ import annotations

import re
from pathlib import Path

from .advice import manual_path, what_to_do
from .entry import Dataset, Download
from .errors import ChecksumError, DownloadError
from .hashing import file_digest

__all__ = ["fetch", "http_get", "verify_download"]

TIMEOUT_S = 60
CHUNK = 1 << 16


def _reason(err: Exception) -> str:
    """The short cause inside requests' long connection-error text (e.g. "[Errno 111] Connection refused")."""
    found = re.search(r"\[Errno -?\d+\][^'\")]*", str(err))
    return found.group(0).strip() if found else type(err).__name__


def http_get(entry: Dataset, url: str, target: Path) -> None:
    """Download ``url`` to ``target`` with pooch and a tqdm progress bar; raise :class:`DownloadError` on failure."""
    import pooch
    import requests
    from tqdm.auto import tqdm

    # Our own tqdm bar (pooch fills in the total and updates it) so it is closed even when the transfer fails.
    progress = tqdm(total=0, unit="B", unit_scale=True, desc=f"{entry.name}: {target.name}", leave=True)
    downloader = pooch.HTTPDownloader(progressbar=progress, chunk_size=CHUNK, timeout=TIMEOUT_S)
    try:
        downloader(url, str(target), None)
    except requests.exceptions.HTTPError as err:
        status = err.response.status_code if err.response is not None else "error"
        raise DownloadError(f"{entry.name}: {url} answered HTTP {status}") from err
    except requests.exceptions.ConnectionError as err:
        raise DownloadError(f"{entry.name}: could not connect to {url} (offline, or the server is down: "
                            f"{_reason(err)})") from err
    except requests.exceptions.RequestException as err:
        raise DownloadError(f"{entry.name}: the download of {url} failed or was cut off: "
                            f"{type(err).__name__}: {err}") from err
    finally:
        progress.close()


def verify_download(entry: Dataset, download: Download, file: Path, origin: str) -> None:
    """Check ``file`` against the download's size and published checksum (where they are known)."""
    size = file.stat().st_size
    if download.size is not None and size != download.size:
        raise ChecksumError(
            f"{entry.name}: {origin} gave {size:,} bytes, expected {download.size:,} "
            "(a cut-off transfer, or the file at that address has changed)",
            file=origin, algorithm="size", expected=str(download.size), actual=str(size))
    if download.checksum is not None:
        expected = download.checksum
        actual = file_digest(file, expected.algorithm)
        if actual != expected.value:
            raise ChecksumError(
                f"{entry.name}: {origin} has {expected.algorithm} {actual}, expected {expected.value} "
                f"(published by {expected.source or 'the registry'}); the file is corrupt or has changed",
                file=origin, algorithm=expected.algorithm, expected=expected.value, actual=actual)


def fetch(entry: Dataset, download: Download, workdir: Path, root: Path) -> Path:
    """A verified local copy of ``download``: ``<root>/downloads/<filename>`` if the user put one there,
    else downloaded into ``workdir`` from each of ``download.urls`` in turn.

    Raises :class:`DownloadError` (nothing fetched) or :class:`ChecksumError` (wrong bytes), with advice.
    """
    manual = manual_path(root, download)
    if manual.is_file():
        try:
            verify_download(entry, download, manual, origin=f"the file {manual}")
        except ChecksumError as err:
            raise ChecksumError(f"{err} Delete or replace {manual} (downloaded by hand from {download.url}).",
                                file=err.file, algorithm=err.algorithm, expected=err.expected,
                                actual=err.actual) from err
        return manual
    failures: list[DownloadError | ChecksumError] = []
    for url in download.urls:
        target = workdir / download.filename
        try:
            http_get(entry, url, target)
            verify_download(entry, download, target, origin=url)
            return target
        except (DownloadError, ChecksumError) as err:
            target.unlink(missing_ok=True)
            failures.append(err)
    detail = " | ".join(str(f) for f in failures)
    advice = what_to_do(entry, root, (download,))
    checksum = next((f for f in failures if isinstance(f, ChecksumError)), None)
    if checksum is not None:
        raise ChecksumError(f"{detail}. Nothing was kept. {advice}", file=checksum.file,
                            algorithm=checksum.algorithm, expected=checksum.expected, actual=checksum.actual)
    raise DownloadError(f"{detail}. Nothing was kept. {advice}")

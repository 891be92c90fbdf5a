"""The remote side: getting a dataset's canonical downloads onto disk, unpacking them safely, checking the results.

* **Fetch** -- a by-hand copy in ``<cache root>/downloads/`` if present, else pooch over HTTP (its
  :class:`pooch.HTTPDownloader` with a tqdm bar); size and published checksum are checked here, so a failure says
  exactly which file, which algorithm and which digests. Files go into the caller's temporary build folder,
  which the caller deletes on any failure. A server that does not answer is given ``SHOULDERS_DOWNLOAD_TIMEOUT``
  seconds (default 60) per address, and a line on stderr says so after a few seconds without a byte.
* **Extract** -- only the listed members, only into the target folder. An archive is refused as a whole
  (before anything is written) if any member name is absolute, has a drive letter or a ``..`` component, or if
  any member is a link (tar symlink/hardlink, zip symlink) or a device. Members are copied by hand -- never with
  ``extract``/``extractall`` -- to the local names the registry gives, so nothing can land outside the folder
  whatever the archive says.
* **Assemble** -- :func:`fill_from_downloads` runs both for every download of an entry and verifies each
  resulting file against the registry.
"""
from __future__ import annotations

import gzip
import math
import os
import re
import shutil
import stat
import sys
import tarfile
import threading
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from .entry import Check, Dataset, Download, LocalFile, Member
from .errors import ENV_MIRROR, ArchiveError, CacheError, ChecksumError, DownloadError, manual_path, what_to_do
from .local import FileRecord, check_file, copy_hashing, file_digest

__all__ = [
    "ENV_TIMEOUT", "TIMEOUT_S", "download_timeout", "extract", "fetch", "fill_from_downloads", "http_get",
    "unsafe_reason", "verify_download",
]

ENV_TIMEOUT = "SHOULDERS_DOWNLOAD_TIMEOUT"
TIMEOUT_S = 60.0  # seconds to wait for a server to connect or to send the next bytes (per address)
NOTICE_S = 5.0  # after this long without a byte, say on stderr what is happening
CHUNK = 1 << 16


# --------------------------------------------------------------------------------------------------- fetch
def _reason(err: Exception) -> str:
    """The short cause inside requests' long connection-error text (e.g. "[Errno 111] Connection refused")."""
    found = re.search(r"\[Errno -?\d+\][^'\")]*", str(err))
    return found.group(0).strip() if found else type(err).__name__


def download_timeout() -> float:
    """Seconds to wait for a server to connect or to send more bytes: ``SHOULDERS_DOWNLOAD_TIMEOUT`` if set (an
    empty value counts as unset), else :data:`TIMEOUT_S`. A value that is not a positive number of seconds raises
    :class:`DownloadError` naming the variable."""
    raw = os.environ.get(ENV_TIMEOUT, "").strip()
    if not raw:
        return TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise DownloadError(f"{ENV_TIMEOUT}={raw!r} is not a usable timeout: give the seconds to wait for a server "
                            f"to answer, a number above 0 (e.g. `export {ENV_TIMEOUT}=20`), or unset it for the "
                            f"default of {TIMEOUT_S:g} s.")
    return value


def _timeout_origin() -> str:
    configured = os.environ.get(ENV_TIMEOUT, "").strip()
    return f"{ENV_TIMEOUT}={configured}" if configured else f"the default; set {ENV_TIMEOUT} to change it"


def http_get(entry: Dataset, url: str, target: Path) -> None:
    """Download ``url`` to ``target`` with pooch and a tqdm progress bar; raise :class:`DownloadError` on failure.

    The server gets :func:`download_timeout` seconds to connect and to send each next block; if no byte has come
    after ``min(5 s, timeout / 2)``, a line on stderr names the URL and the wait.
    """
    timeout = download_timeout()
    import pooch
    import requests
    from tqdm.auto import tqdm

    # Our own tqdm bar (pooch fills in the total and updates it) so it is closed even when the transfer fails.
    progress = tqdm(total=0, unit="B", unit_scale=True, desc=f"{entry.name}: {target.name}", leave=True)
    downloader = pooch.HTTPDownloader(progressbar=progress, chunk_size=CHUNK, timeout=timeout)
    delay = min(NOTICE_S, timeout / 2)

    def notice() -> None:
        if progress.n == 0:
            print(f"{entry.name}: no answer yet from {url} after {delay:g} s; waiting up to {timeout:g} s "
                  f"({_timeout_origin()}). Offline? Set {ENV_MIRROR} to an offline copy instead.",
                  file=sys.stderr, flush=True)

    watch = threading.Timer(delay, notice)
    watch.daemon = True
    watch.start()
    try:
        downloader(url, str(target), None)
    except requests.exceptions.HTTPError as err:
        status = err.response.status_code if err.response is not None else "error"
        raise DownloadError(f"{entry.name}: {url} answered HTTP {status}") from err
    except (requests.exceptions.Timeout, requests.exceptions.ConnectionError) as err:
        if isinstance(err, requests.exceptions.Timeout) or "timed out" in str(err):
            raise DownloadError(f"{entry.name}: no answer from {url} within {timeout:g} s "
                                f"({_timeout_origin()}); the network or the server is not responding") from err
        raise DownloadError(f"{entry.name}: could not connect to {url} (offline, or the server is down: "
                            f"{_reason(err)})") from err
    except requests.exceptions.RequestException as err:
        raise DownloadError(f"{entry.name}: the download of {url} failed or was cut off: "
                            f"{type(err).__name__}: {err}") from err
    finally:
        watch.cancel()
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
            with open(manual, "rb") as handle:  # unreadable: say so here, not later as a cache-write problem
                handle.read(1)
            verify_download(entry, download, manual, origin=f"the file {manual}")
        except OSError as err:
            raise CacheError(f"{entry.name}: cannot read the by-hand download {manual} ({err.strerror or err}). "
                             "Fix its permissions, or delete it to download again.") from err
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


# ------------------------------------------------------------------------------------------------- extract
def unsafe_reason(name: str) -> str | None:
    """Why the member name ``name`` could escape the folder it is extracted into (``None``: it cannot)."""
    posix = name.replace("\\", "/")
    if posix.startswith("/"):
        return "absolute path"
    if len(posix) >= 2 and posix[1] == ":":
        return "drive-letter path"
    if ".." in PurePosixPath(posix).parts:
        return "'..' component"
    return None


def _zip_problems(archive: zipfile.ZipFile) -> list[str]:
    problems = []
    for info in archive.infolist():
        reason = unsafe_reason(info.filename)
        if reason is None and stat.S_ISLNK(info.external_attr >> 16):
            reason = "symbolic link"
        if reason:
            problems.append(f"{info.filename!r} ({reason})")
    return problems


def _tar_problems(archive: tarfile.TarFile) -> list[str]:
    problems = []
    for info in archive.getmembers():
        reason = unsafe_reason(info.name)
        if reason is None and info.issym():
            reason = f"symbolic link to {info.linkname!r}"
        if reason is None and info.islnk():
            reason = f"hard link to {info.linkname!r}"
        if reason is None and not (info.isfile() or info.isdir()):
            reason = "device, fifo or other special file"
        if reason:
            problems.append(f"{info.name!r} ({reason})")
    return problems


def _write(dataset: str, source: BinaryIO, target: Path, member: Member, local: LocalFile) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    limit = local.size if (member.check == "exact" and not member.gzip and local.size is not None) else None
    with open(target, "xb") as out:
        if member.gzip:
            with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as packed:
                copy_hashing(source, packed)
            return
        copied = copy_hashing(source, out, limit=limit)
    if limit is not None and copied.size > limit:
        raise ChecksumError(f"{dataset}: archive member {member.source!r} is larger than the expected "
                            f"{limit:,} bytes of {local.name}", file=member.source, algorithm="size",
                            expected=str(limit), actual=f">{limit}")


def _refuse(dataset: str, archive: Path, problems: list[str]) -> None:
    if problems:
        shown = ", ".join(problems[:5]) + (f" and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise ArchiveError(f"{dataset}: refusing to extract {archive.name}: member(s) that could escape the "
                           f"target folder: {shown}. Nothing was extracted; the archive may be corrupt or "
                           "tampered with.")


def _missing(dataset: str, archive: Path, member: Member, names: list[str]) -> ArchiveError:
    sample = ", ".join(names[:8]) + (" ..." if len(names) > 8 else "")
    return ArchiveError(f"{dataset}: {archive.name} has no file member {member.source!r} (it holds: {sample})")


def _extract_zip(dataset: str, path: Path, download: Download, folder: Path, files: Mapping[str, LocalFile]) -> None:
    try:
        with zipfile.ZipFile(path) as archive:
            _refuse(dataset, path, _zip_problems(archive))
            for member in download.members:
                try:
                    info = archive.getinfo(member.source)
                except KeyError:
                    info = None
                if info is None or info.is_dir():
                    raise _missing(dataset, path, member, archive.namelist())
                with archive.open(info) as source:
                    _write(dataset, source, folder / member.target, member, files[member.target])
    except (zipfile.BadZipFile, zlib.error, EOFError) as err:
        raise ArchiveError(f"{dataset}: {path.name} is not a readable zip archive ({err})") from err


def _extract_tar(dataset: str, path: Path, download: Download, folder: Path, files: Mapping[str, LocalFile]) -> None:
    try:
        with tarfile.open(path, "r:*") as archive:
            _refuse(dataset, path, _tar_problems(archive))
            for member in download.members:
                try:
                    info = archive.getmember(member.source)
                except KeyError:
                    info = None
                source = archive.extractfile(info) if info is not None and info.isfile() else None
                if source is None:
                    raise _missing(dataset, path, member, archive.getnames())
                with source:
                    _write(dataset, source, folder / member.target, member, files[member.target])
    except (tarfile.TarError, zlib.error, EOFError) as err:
        raise ArchiveError(f"{dataset}: {path.name} is not a readable tar archive ({err})") from err


def _extract_gzip(dataset: str, path: Path, download: Download, folder: Path, files: Mapping[str, LocalFile]) -> None:
    member = download.members[0]
    try:
        with gzip.open(path, "rb") as source:
            _write(dataset, source, folder / member.target, member, files[member.target])
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        raise ArchiveError(f"{dataset}: {path.name} is not a readable gzip file ({err})") from err


def extract(dataset: str, archive: Path, download: Download, folder: Path, files: Mapping[str, LocalFile]) -> None:
    """Write ``download``'s members from ``archive`` into ``folder`` under their local names.

    ``files`` maps local names to their registry facts (used to cap a member's size). Raises
    :class:`ArchiveError` for unreadable or unsafe archives and missing members.
    """
    if download.format == "zip":
        _extract_zip(dataset, archive, download, folder, files)
    elif download.format == "tar":
        _extract_tar(dataset, archive, download, folder, files)
    elif download.format == "gzip":
        _extract_gzip(dataset, archive, download, folder, files)
    else:
        raise ValueError(f"{dataset}: {download.format!r} is not an archive format")


# ------------------------------------------------------------------------------------------------ assemble
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

"""Safe extraction: only the listed members, only into the target folder, and suspicious archives refused.

An archive is refused as a whole (before anything is written) if any member name is absolute, has a drive
letter or a ``..`` component, or if any member is a link (tar symlink/hardlink, zip symlink) or a device.
Members are then copied by hand -- never with ``extract``/``extractall`` -- to the local names the registry
gives, so nothing can land outside the folder whatever the archive says.
"""
from __future__ import annotations

import gzip
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from .entry import Download, LocalFile, Member
from .errors import ArchiveError, ChecksumError
from .hashing import copy_hashing

__all__ = ["extract", "unsafe_reason"]


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

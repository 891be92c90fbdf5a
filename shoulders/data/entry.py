"""The shape of a registry entry: a dataset, its local files, where to download it and whom to credit.

An entry describes the *final local folder* (``files``: relative names with size and sha256 -- the same layout
as the offline mirror ``shared/data/<name>/``) and how each canonical download produces those files
(``downloads``: URL, published checksum, and either "keep the file as X" or "take archive member A as X").
All classes are frozen dataclasses, so entries can be shared and hashed; tests build their own entries
(pointing at a local server) and pass them to :func:`shoulders.data.path` without touching the registry.
The entries themselves live beside their readers (:mod:`~shoulders.data.corpora`, :mod:`~shoulders.data.tasks`,
:mod:`~shoulders.data.sentiment`); :mod:`~shoulders.data.registry` lists them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .._scale import SCALES

__all__ = ["Citation", "Checksum", "Dataset", "Download", "LocalFile", "Member"]

HashAlgorithm = Literal["md5", "sha1", "sha256"]
Format = Literal["file", "zip", "tar", "gzip"]
Check = Literal["exact", "content", "archive"]

_HEX_LENGTH = {"md5": 32, "sha1": 40, "sha256": 64}
_HEX = re.compile(r"^[0-9a-f]+$")


def _check_hex(value: str, algorithm: str, what: str) -> None:
    if algorithm not in _HEX_LENGTH:
        raise ValueError(f"{what}: unknown hash algorithm {algorithm!r} (use one of {', '.join(_HEX_LENGTH)})")
    if len(value) != _HEX_LENGTH[algorithm] or not _HEX.match(value):
        raise ValueError(f"{what}: {value!r} is not a lower-case hex {algorithm} digest")


@dataclass(frozen=True)
class Citation:
    """A work to cite: who, when, what, where."""

    authors: str
    year: int
    title: str
    venue: str
    url: str = ""

    def __str__(self) -> str:
        text = f"{self.authors}. {self.year}. {self.title}. {self.venue}."
        return f"{text} {self.url}" if self.url else text


@dataclass(frozen=True)
class Checksum:
    """A checksum as its publisher states it (``algorithm`` is ``md5``, ``sha1`` or ``sha256``)."""

    algorithm: HashAlgorithm
    value: str
    source: str = ""  # who publishes it, e.g. "torchtext datasets/wikitext2.py"

    def __post_init__(self) -> None:
        _check_hex(self.value, self.algorithm, "Checksum")

    def __str__(self) -> str:
        return f"{self.algorithm}:{self.value}"


@dataclass(frozen=True)
class LocalFile:
    """One file of the final local folder (``name`` is relative, ``/``-separated).

    ``sha256`` and ``size`` are those of the mirror's file (``shared/data/<dataset>/<name>``); ``sha256=None``
    means no sha256 is pinned (then ``size`` and ``published`` are checked, where known). ``content_sha256`` is
    the sha256 of a ``.gz`` file's decompressed content, for files a download rebuilds by gzipping (bytes differ,
    text equal). ``published`` is a checksum of this very file as someone publishes it (e.g. GluonNLP's sha1 of
    each WikiText member). A file with none of these facts is vouched for only by its download's published
    checksum, which :class:`Dataset` then requires.
    """

    name: str
    size: int | None
    sha256: str | None
    content_sha256: str | None = None
    published: Checksum | None = None

    def __post_init__(self) -> None:
        if not self.name or self.name.startswith("/") or ".." in self.name.split("/") or "\\" in self.name:
            raise ValueError(f"LocalFile: {self.name!r} must be a relative '/'-separated path inside the folder")
        for value in (self.sha256, self.content_sha256):
            if value is not None:
                _check_hex(value, "sha256", f"LocalFile {self.name!r}")

    @property
    def pinned(self) -> bool:
        """Whether the registry states any fact this file can be checked against on its own."""
        return self.sha256 is not None or self.size is not None or self.published is not None


@dataclass(frozen=True)
class Member:
    """How one archive member becomes a local file.

    ``check`` says how the result is verified: ``exact`` -- equal to the local file's sha256 (or its size when
    no sha256 is pinned); ``content`` -- the member was gzipped into the local file, so its *uncompressed*
    sha256 must equal ``LocalFile.content_sha256``; ``archive`` -- this source's member is not known to be
    byte-identical to the mirror's file, so only the archive's published checksum vouches for it.
    """

    source: str  # path inside the archive ("" for the single stream of a .gz)
    target: str  # LocalFile.name
    gzip: bool = False  # gzip the member into ``target`` (deterministically: mtime 0, no file name)
    check: Check = "exact"


@dataclass(frozen=True)
class Download:
    """One canonical download and how it maps to local files.

    ``urls`` are tried in order (the first is the canonical address, the rest are mirrors of the same bytes).
    ``checksum`` is the published checksum used to verify the download (``None``: none is published -- the
    resulting local files' pinned sha256, or ``size``, then carry the verification); ``also_published`` lists
    further published checksums of the same file, for the record. ``format`` is ``file`` (kept as
    ``keep_as``), ``zip``/``tar`` (``members`` extracted; ``keep_as`` optionally keeps the archive too) or
    ``gzip`` (the single decompressed stream is ``members[0]``).
    """

    urls: tuple[str, ...]
    filename: str  # the downloaded file's name (also the name to save a manual download under)
    format: Format
    checksum: Checksum | None = None
    size: int | None = None
    members: tuple[Member, ...] = ()
    keep_as: str | None = None
    also_published: tuple[Checksum, ...] = ()

    def __post_init__(self) -> None:
        if not self.urls:
            raise ValueError(f"Download {self.filename!r}: give at least one URL")
        if "/" in self.filename or "\\" in self.filename or self.filename in ("", ".", ".."):
            raise ValueError(f"Download: filename {self.filename!r} must be a plain file name")
        if self.format == "file" and (self.keep_as is None or self.members):
            raise ValueError(f"Download {self.filename!r}: format 'file' needs keep_as and no members")
        if self.format != "file" and not self.members:
            raise ValueError(f"Download {self.filename!r}: format {self.format!r} needs members")

    @property
    def url(self) -> str:
        """The canonical address (the first of ``urls``)."""
        return self.urls[0]

    def targets(self) -> tuple[str, ...]:
        """The local file names this download produces."""
        kept = (self.keep_as,) if self.keep_as else ()
        return kept + tuple(m.target for m in self.members)


@dataclass(frozen=True)
class Dataset:
    """A registry entry. ``path(entry)`` fills ``<cache>/<name>/`` with exactly ``files``.

    ``mirrored`` says whether the offline mirror (``SHOULDERS_DATA_MIRROR``) is expected to hold it;
    ``scales`` lists the scales (``SHOULDERS_SCALE``) at which some chapter needs it, and ``needed_by`` names
    those chapters -- both for the message a missing dataset raises; ``notes`` records how a download differs
    from the mirror, if it does.
    """

    name: str
    title: str
    description: str
    homepage: str
    licence: str
    citations: tuple[Citation, ...]
    files: tuple[LocalFile, ...]
    downloads: tuple[Download, ...]
    aliases: tuple[str, ...] = ()
    mirrored: bool = True
    scales: tuple[str, ...] = SCALES
    needed_by: str = ""
    notes: str = ""

    def __post_init__(self) -> None:
        if not re.match(r"^[a-z0-9][a-z0-9.\-]*$", self.name):
            raise ValueError(f"Dataset name {self.name!r}: use lower-case letters, digits, '.', '-'")
        if not self.scales or not set(self.scales) <= set(SCALES):
            raise ValueError(f"Dataset {self.name!r}: scales {self.scales!r} must be some of {SCALES}")
        names = [f.name for f in self.files]
        if len(set(names)) != len(names):
            raise ValueError(f"Dataset {self.name!r}: duplicate local file names")
        produced = [t for d in self.downloads for t in d.targets()]
        if sorted(produced) != sorted(names):
            raise ValueError(
                f"Dataset {self.name!r}: downloads must produce each local file exactly once "
                f"(files {sorted(names)}, downloads produce {sorted(produced)})"
            )
        by_name = {f.name: f for f in self.files}
        for download in self.downloads:
            for target in download.targets():
                if not by_name[target].pinned and download.checksum is None:
                    raise ValueError(f"Dataset {self.name!r}: nothing vouches for {target!r} (give its size, "
                                     "sha256 or published checksum, or a published checksum of its download)")
            for member in download.members:
                if member.check == "content" and by_name[member.target].content_sha256 is None:
                    raise ValueError(f"Dataset {self.name!r}: {member.target!r} is checked by content "
                                     "but has no content_sha256")

    @property
    def only_at_some_scales(self) -> bool:
        """True when no chapter needs this dataset at some scale (e.g. the ``full``-only corpora)."""
        return set(self.scales) != set(SCALES)

    def file(self, name: str) -> LocalFile:
        """The local file called ``name``."""
        for item in self.files:
            if item.name == name:
                return item
        raise KeyError(f"{self.name}: no local file {name!r} (files: {', '.join(f.name for f in self.files)})")

    @property
    def citation(self) -> str:
        """All citations as one string (``; ``-separated)."""
        return "; ".join(str(c) for c in self.citations)

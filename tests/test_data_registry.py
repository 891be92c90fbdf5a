"""Tests for ``shoulders.data``: registry facts, cache / mirror / download, and every failure path.

Downloads come from a local HTTP server on 127.0.0.1 (ephemeral port) serving in-memory files; test entries
point at it and are passed to ``path()`` directly, so the global registry is never touched. Tests against the
real offline mirror run when ``SHOULDERS_DATA_MIRROR`` names it (CI: ``../shared/data``), and skip otherwise.
The mirror is read-only: tests with the cache and the mirror in one folder check that nothing there changes.
"""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import os
import re
import socket
import stat
import tarfile
import threading
import time
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import shoulders.data as data
from shoulders.data import (
    ArchiveError,
    CacheError,
    Checksum,
    ChecksumError,
    Citation,
    Dataset,
    DatasetError,
    Download,
    DownloadError,
    LocalFile,
    Member,
    MirrorChecksumError,
    MirrorError,
    UnknownDatasetError,
)

MIRROR = data.mirror_root()  # the package's own lookup: SHOULDERS_DATA_MIRROR, read before any test unsets it
needs_mirror = pytest.mark.skipif(MIRROR is None, reason="no offline mirror: set SHOULDERS_DATA_MIRROR to the "
                                  "book's shared/data folder to check the registry against it")


# --------------------------------------------------------------------------------------------------- helpers
def sha256(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()


def local(name: str, blob: bytes) -> LocalFile:
    return LocalFile(name, len(blob), sha256(blob))


def make_zip(members: dict[str, bytes], links: dict[str, str] | None = None, compress: bool = True) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED) as archive:
        for name, blob in members.items():
            archive.writestr(name, blob)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return buffer.getvalue()


def make_tar(members: dict[str, bytes], specials: list[tarfile.TarInfo] = ()) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, blob in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            archive.addfile(info, io.BytesIO(blob))
        for info in specials:
            archive.addfile(info)
    return buffer.getvalue()


def entry(name: str, files: list[LocalFile], *downloads: Download) -> Dataset:
    return Dataset(
        name=name, title=f"test {name}", description="a test entry", homepage="http://127.0.0.1/",
        licence="test", citations=(Citation("A. Author", 2024, "A Title", "Nowhere"),),
        files=tuple(files), downloads=downloads, mirrored=False,
    )


def is_lock(path: Path) -> bool:
    """A dataset's lock file ``<cache root>/.<name>.lock``: empty, left in place on purpose (deleting a lock file
    while another process waits on it would let a third take the lock at the same time)."""
    return path.name.startswith(".") and path.name.endswith(".lock") and path.is_file() and path.stat().st_size == 0


def leftovers(root: Path) -> list[str]:
    """Everything in the cache root (recursively) but the lock files: must be empty after a failure."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if not is_lock(p)) if root.exists() else []


def listing(root: Path) -> list[str]:
    """The names in the cache root, lock files left out."""
    return sorted(p.name for p in root.iterdir() if not is_lock(p))


# ---------------------------------------------------------------------------------------------- the server
class _Site:
    """What the server serves: ``files`` normally, ``cut`` with a Content-Length longer than the body, ``slow`` in
    blocks of ``(blob, block size, seconds between blocks)`` -- for killing a client mid-transfer."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.cut: dict[str, bytes] = {}
        self.slow: dict[str, tuple[bytes, int, float]] = {}
        self.requests: list[str] = []


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        site: _Site = self.server.site  # type: ignore[attr-defined]
        site.requests.append(self.path)
        if self.path in site.files:
            body = site.files[self.path]
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path in site.cut:
            body = site.cut[self.path]
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body) * 2))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True
        elif self.path in site.slow:
            body, block, pause = site.slow[self.path]
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                for start in range(0, len(body), block):
                    self.wfile.write(body[start:start + block])
                    self.wfile.flush()
                    time.sleep(pause)
            except OSError:  # the client was killed mid-transfer
                self.close_connection = True
        else:
            self.send_error(404, "Not Found")

    def log_message(self, *args: object) -> None:
        pass


class Server:
    def __init__(self) -> None:
        self.site = _Site()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.site = self.site  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)
        self.thread.start()
        self.running = True

    def url(self, route: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{route}"

    def serve(self, route: str, blob: bytes) -> str:
        self.site.files[route] = blob
        return self.url(route)

    def serve_cut(self, route: str, blob: bytes) -> str:
        self.site.cut[route] = blob
        return self.url(route)

    def serve_slow(self, route: str, blob: bytes, block: int, pause: float) -> str:
        self.site.slow[route] = (blob, block, pause)
        return self.url(route)

    def stop(self) -> None:
        if self.running:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.thread.join(timeout=5)
            self.running = False


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server()
    yield running
    running.stop()


@pytest.fixture
def dead_url() -> Iterator[str]:
    """A URL on 127.0.0.1 whose port is bound but not listening: connecting is refused at once."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/data.zip"
    sock.close()


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A URL on 127.0.0.1 whose server accepts connections (the kernel completes them) and never answers."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/data.zip"
    sock.close()


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache root per test, and no mirror unless a test sets one."""
    root = tmp_path / "cache"
    monkeypatch.setenv("SHOULDERS_DATA", str(root))
    monkeypatch.delenv("SHOULDERS_DATA_MIRROR", raising=False)
    return root


A, B, C = b"alpha\n" * 100, b"beta\n" * 200, b"gamma\n" * 50


# ------------------------------------------------------------------------------------------- success paths
def test_zip_download_extracts_verifies_and_then_hits_cache_offline(server: Server, cache: Path) -> None:
    blob = make_zip({"pkg/a.txt": A, "pkg/b.txt": B, "pkg/unused.txt": C})
    url = server.serve("/pkg.zip", blob)
    ds = entry("zipped", [local("a.txt", A), local("sub/b.txt", B)], Download(
        urls=(url,), filename="pkg.zip", format="zip", checksum=Checksum("sha256", sha256(blob)),
        size=len(blob), members=(Member("pkg/a.txt", "a.txt"), Member("pkg/b.txt", "sub/b.txt"))))

    folder = data.path(ds)
    assert folder == cache / "zipped"
    assert (folder / "a.txt").read_bytes() == A and (folder / "sub" / "b.txt").read_bytes() == B
    assert not (folder / "unused.txt").exists() and not (folder / "pkg.zip").exists()
    assert listing(cache) == ["zipped"]  # no temp folder, no download left over
    assert server.site.requests == ["/pkg.zip"]

    server.stop()  # second call: cache hit, no network
    assert data.path(ds) == folder
    assert data.path(ds, verify=True) == folder


def test_tar_gz_download_with_md5(server: Server) -> None:
    blob = make_tar({"./train.de": A, "./train.en": B, "._train.de": b"macOS junk"})
    url = server.serve("/training.tar.gz", blob)
    ds = entry("tarred", [local("train.de", A), local("train.en", B)], Download(
        urls=(url,), filename="training.tar.gz", format="tar",
        checksum=Checksum("md5", hashlib.md5(blob).hexdigest()),
        members=(Member("./train.de", "train.de"), Member("./train.en", "train.en"))))
    folder = data.path(ds)
    assert (folder / "train.de").read_bytes() == A and (folder / "train.en").read_bytes() == B


def test_plain_file_kept_in_subfolder_with_sha1_and_second_url_as_fallback(server: Server) -> None:
    url = server.serve("/input.txt", A)
    ds = entry("plain", [local("raw/input.txt", A)], Download(
        urls=(server.url("/gone.txt"), url), filename="input.txt", format="file",
        checksum=Checksum("sha1", hashlib.sha1(A).hexdigest()), keep_as="raw/input.txt"))
    assert (data.path(ds) / "raw" / "input.txt").read_bytes() == A
    assert server.site.requests == ["/gone.txt", "/input.txt"]


def test_regzipped_member_is_checked_by_content(server: Server) -> None:
    """The SNLI case: the zip has .jsonl, the mirror has .jsonl.gz; a download gzips (different bytes)."""
    mirror_gz = gzip.compress(A, mtime=123456)  # stands in for the mirror's gzip: same content, other bytes
    blob = make_zip({"snli_1.0/dev.jsonl": A})
    url = server.serve("/snli.zip", blob)
    ds = entry("regz", [LocalFile("dev.jsonl.gz", len(mirror_gz), sha256(mirror_gz), content_sha256=sha256(A))],
               Download(urls=(url,), filename="snli.zip", format="zip",
                        members=(Member("snli_1.0/dev.jsonl", "dev.jsonl.gz", gzip=True, check="content"),)))
    folder = data.path(ds)
    assert gzip.decompress((folder / "dev.jsonl.gz").read_bytes()) == A
    assert data.path(ds, verify=True) == folder  # the full re-check accepts it by content too


def test_manual_download_is_picked_up_without_network(dead_url: str, cache: Path) -> None:
    blob = make_zip({"a.txt": A})
    manual = cache / "downloads" / "data.zip"
    manual.parent.mkdir(parents=True)
    manual.write_bytes(blob)
    ds = entry("byhand", [local("a.txt", A)], Download(
        urls=(dead_url,), filename="data.zip", format="zip", checksum=Checksum("sha256", sha256(blob)),
        members=(Member("a.txt", "a.txt"),)))
    assert (data.path(ds) / "a.txt").read_bytes() == A
    assert manual.read_bytes() == blob  # read, never moved or changed


def test_mirror_is_copied_and_verified_without_network(tmp_path: Path, dead_url: str, cache: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "mirrored" / "sub").mkdir(parents=True)
    (mirror / "mirrored" / "a.txt").write_bytes(A)
    (mirror / "mirrored" / "sub" / "b.txt").write_bytes(B)
    (mirror / "mirrored" / "SOURCE.md").write_text("not a data file")
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(mirror))
    ds = entry("mirrored", [local("a.txt", A), local("sub/b.txt", B)],
               Download(urls=(dead_url,), filename="data.zip", format="zip",
                        members=(Member("a.txt", "a.txt"), Member("b.txt", "sub/b.txt"))))
    folder = data.path(ds)
    assert (folder / "sub" / "b.txt").read_bytes() == B
    assert not (folder / "SOURCE.md").exists()
    assert listing(cache) == ["mirrored"]


# ---------------------------------------------------------------------------------------- download failures
def test_http_404(server: Server, cache: Path) -> None:
    ds = entry("missing", [local("a.txt", A)], Download(
        urls=(server.url("/nope.txt"),), filename="a.txt", format="file", keep_as="a.txt"))
    with pytest.raises(DownloadError, match=r"missing: .*HTTP 404") as err:
        data.path(ds)
    assert "SHOULDERS_DATA_MIRROR" in str(err.value) and str(cache / "downloads" / "a.txt") in str(err.value)
    assert leftovers(cache) == []


def test_transfer_cut_off_before_content_length(server: Server, cache: Path) -> None:
    blob = make_zip({"a.txt": A})
    url = server.serve_cut("/cut.zip", blob)
    ds = entry("cutoff", [local("a.txt", A)], Download(
        urls=(url,), filename="cut.zip", format="zip", members=(Member("a.txt", "a.txt"),)))
    with pytest.raises(DownloadError, match=r"cutoff: the download of .*cut\.zip failed or was cut off"):
        data.path(ds)
    assert leftovers(cache) == []


@pytest.mark.parametrize("size_known", [True, False], ids=["size-known", "size-unknown"])
def test_truncated_file_is_refused(server: Server, cache: Path, size_known: bool) -> None:
    blob = make_zip({"a.txt": A})
    url = server.serve("/short.zip", blob[: len(blob) // 2])  # served in full, but only half the file
    ds = entry("short", [local("a.txt", A)], Download(
        urls=(url,), filename="short.zip", format="zip", checksum=Checksum("sha256", sha256(blob)),
        size=len(blob) if size_known else None, members=(Member("a.txt", "a.txt"),)))
    expected = (rf"gave {len(blob) // 2:,} bytes, expected {len(blob):,}" if size_known
                else "sha256 [0-9a-f]{64}, expected")
    with pytest.raises(ChecksumError, match=expected) as err:
        data.path(ds)
    assert "Nothing was kept" in str(err.value)
    assert leftovers(cache) == []


def test_checksum_mismatch_names_algorithm_and_digests(server: Server, cache: Path) -> None:
    good, bad = make_zip({"a.txt": A}), make_zip({"a.txt": B})
    url = server.serve("/wrong.zip", bad)
    ds = entry("wrong", [local("a.txt", A)], Download(
        urls=(url,), filename="wrong.zip", format="zip", checksum=Checksum("md5", hashlib.md5(good).hexdigest()),
        members=(Member("a.txt", "a.txt"),)))
    with pytest.raises(ChecksumError) as err:
        data.path(ds)
    assert err.value.algorithm == "md5"
    assert err.value.expected == hashlib.md5(good).hexdigest() and err.value.actual == hashlib.md5(bad).hexdigest()
    assert err.value.expected in str(err.value) and err.value.actual in str(err.value) and url in str(err.value)
    assert leftovers(cache) == []


def test_member_differing_from_registry_is_refused(server: Server, cache: Path) -> None:
    blob = make_zip({"a.txt": A[:-1] + b"!"})  # as its publisher says, but not what the registry pins (same size)
    url = server.serve("/pinned.zip", blob)
    ds = entry("pinned", [local("a.txt", A)], Download(
        urls=(url,), filename="pinned.zip", format="zip", checksum=Checksum("sha256", sha256(blob)),
        members=(Member("a.txt", "a.txt"),)))
    with pytest.raises(ChecksumError, match=r"pinned: a\.txt \(member 'a\.txt' of .*\): sha256 .*out of\s+date"):
        data.path(ds)
    assert leftovers(cache) == []


def test_offline_without_mirror_says_what_to_do(dead_url: str, cache: Path) -> None:
    ds = entry("offline", [local("a.txt", A)], Download(
        urls=(dead_url,), filename="data.zip", format="zip", members=(Member("a.txt", "a.txt"),)))
    with pytest.raises(DownloadError) as err:
        data.path(ds)
    message = str(err.value)
    assert "offline" in message and "Connection refused" in message
    assert "SHOULDERS_DATA_MIRROR" in message and str(cache / "downloads" / "data.zip") in message
    assert leftovers(cache) == []


def test_a_server_that_never_answers_times_out_and_says_so(silent_url: str, cache: Path, capfd: pytest.CaptureFixture,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A network that accepts and never answers used to take 60 s per address, silently. The wait is now set by
    SHOULDERS_DOWNLOAD_TIMEOUT, a line on stderr names the URL after min(5 s, timeout / 2), the error says why."""
    monkeypatch.setenv("SHOULDERS_DOWNLOAD_TIMEOUT", "1")
    second = silent_url.replace("/data.zip", "/copy/data.zip")
    ds = entry("silent", [local("a.txt", A)], Download(
        urls=(silent_url, second), filename="data.zip", format="zip", members=(Member("a.txt", "a.txt"),)))
    with pytest.raises(DownloadError) as err:
        data.path(ds)
    message = str(err.value)
    for url in (silent_url, second):
        assert f"silent: no answer from {url} within 1 s (SHOULDERS_DOWNLOAD_TIMEOUT=1)" in message, message
    said = capfd.readouterr().err  # one line per address, half-way through its wait
    assert any(f"silent: no answer yet from {url} after 0.5 s; waiting up to 1 s (SHOULDERS_DOWNLOAD_TIMEOUT=1)"
               in said for url in (silent_url, second)), said
    assert leftovers(cache) == []


# ------------------------------------------------------------------------------------------ mirror failures
def test_corrupt_mirror_file_is_named(tmp_path: Path, dead_url: str, cache: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "corrupt").mkdir(parents=True)
    (mirror / "corrupt" / "a.txt").write_bytes(A)
    (mirror / "corrupt" / "b.txt").write_bytes(B + b"tampered")
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(mirror))
    ds = entry("corrupt", [local("a.txt", A), local("b.txt", B)], Download(
        urls=(dead_url,), filename="data.zip", format="zip", members=(Member("a", "a.txt"), Member("b", "b.txt"))))
    with pytest.raises(MirrorChecksumError) as err:
        data.path(ds)
    assert isinstance(err.value, MirrorError) and isinstance(err.value, ChecksumError)
    message = str(err.value)
    assert str(mirror / "corrupt" / "b.txt") in message
    assert sha256(B) in message and sha256(B + b"tampered") in message
    assert leftovers(cache) == []


def test_mirror_missing_file_and_bad_mirror_setting(tmp_path: Path, dead_url: str, cache: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = tmp_path / "mirror"
    (mirror / "partial").mkdir(parents=True)
    (mirror / "partial" / "a.txt").write_bytes(A)
    ds = entry("partial", [local("a.txt", A), local("b.txt", B)], Download(
        urls=(dead_url,), filename="data.zip", format="zip", members=(Member("a", "a.txt"), Member("b", "b.txt"))))
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(mirror))
    with pytest.raises(MirrorError, match=re.escape(str(mirror / "partial" / "b.txt"))):
        data.path(ds)
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(tmp_path / "no-such-folder"))
    with pytest.raises(MirrorError, match="is not a folder"):
        data.path(ds)
    assert leftovers(cache) == []


def test_mirror_without_the_dataset_falls_back_to_download(tmp_path: Path, server: Server,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mirror").mkdir()
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(tmp_path / "mirror"))
    ds = entry("fallback", [local("a.txt", A)], Download(
        urls=(server.serve("/a.txt", A),), filename="a.txt", format="file", keep_as="a.txt"))
    assert (data.path(ds) / "a.txt").read_bytes() == A


# ------------------------------------------------------------------------------------ the mirror is read-only
def _snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` with its bytes (``None`` for a folder): any write, rename or delete shows."""
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


OVERLAPS = ["same folder", "cache inside mirror", "mirror inside cache", "cache is a link to the mirror",
            "relative cache path", "mirror given with a trailing slash", "dataset folder links into the mirror"]


@pytest.mark.parametrize("layout", OVERLAPS)
def test_mirror_is_never_written_even_when_it_overlaps_the_cache(tmp_path: Path, dead_url: str, layout: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """With SHOULDERS_DATA and SHOULDERS_DATA_MIRROR on one folder, path() used to write its stamp into the mirror's
    dataset folder -- and to delete a folder there whose (older) stamp disagreed. Any overlap is now refused, also
    when it only shows after resolving a link or a relative path, and when a dataset folder in the cache is a link
    to the mirror's copy (that one used to get a stamp written into the mirror)."""
    mirror = tmp_path / "outer" / "shared" if layout == "mirror inside cache" else tmp_path / "shared"
    (mirror / "good").mkdir(parents=True)
    (mirror / "good" / "a.txt").write_bytes(A)
    (mirror / "stale").mkdir()
    (mirror / "stale" / "a.txt").write_bytes(B)  # not what the entry says, under a stamp as an older run wrote it
    (mirror / "stale" / ".shoulders-stamp.json").write_text(
        '{"format": 1, "dataset": "stale", "fingerprint": "0", "source": "an older run", "files": {}}\n')
    monkeypatch.chdir(tmp_path)
    root = {"same folder": str(mirror), "cache inside mirror": str(mirror / "cache"),
            "mirror inside cache": str(mirror.parent), "cache is a link to the mirror": str(tmp_path / "link"),
            "relative cache path": "shared", "mirror given with a trailing slash": str(mirror),
            "dataset folder links into the mirror": str(tmp_path / "cache")}[layout]
    if layout == "cache is a link to the mirror":
        (tmp_path / "link").symlink_to(mirror, target_is_directory=True)
    if layout == "dataset folder links into the mirror":
        for name in ("good", "stale"):
            (tmp_path / "cache").mkdir(exist_ok=True)
            (tmp_path / "cache" / name).symlink_to(mirror / name, target_is_directory=True)
    monkeypatch.setenv("SHOULDERS_DATA", root)
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(mirror) + ("/" if "trailing slash" in layout else ""))
    before = _snapshot(tmp_path)
    for name in ("good", "stale"):
        ds = entry(name, [local("a.txt", A)], Download(urls=(dead_url,), filename="a.txt", format="file",
                                                       keep_as="a.txt"))
        with pytest.raises(MirrorError, match="read-only mirror") as err:
            data.path(ds)
        assert "SHOULDERS_DATA" in str(err.value) and "outside the mirror" in str(err.value)
    assert _snapshot(tmp_path) == before

    monkeypatch.setenv("SHOULDERS_DATA", str(tmp_path / "apart"))  # apart, the mirror is read and left as it was
    good = entry("good", [local("a.txt", A)], Download(urls=(dead_url,), filename="a.txt", format="file",
                                                       keep_as="a.txt"))
    assert (data.path(good) / "a.txt").read_bytes() == A
    assert {k: v for k, v in _snapshot(tmp_path).items() if not k.startswith("apart")} == before


def test_unreadable_mirror_file_is_blamed_on_the_mirror(tmp_path: Path, dead_url: str, cache: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A mirror file that cannot be read used to be reported as a cache that cannot be written ("could not write
    to ...: Permission denied ... set SHOULDERS_DATA to another folder"). It is a MirrorError naming the file."""
    mirror = tmp_path / "mirror"
    (mirror / "locked").mkdir(parents=True)
    (mirror / "locked" / "a.txt").write_bytes(A)
    (mirror / "locked" / "b.txt").write_bytes(B)
    bad = mirror / "locked" / "b.txt"
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(mirror))
    unreadable(bad, monkeypatch)
    ds = entry("locked", [local("a.txt", A), local("b.txt", B)], Download(
        urls=(dead_url,), filename="data.zip", format="zip", members=(Member("a", "a.txt"), Member("b", "b.txt"))))
    with pytest.raises(MirrorError) as err:
        data.path(ds)
    message = str(err.value)
    assert not isinstance(err.value, CacheError) and "SHOULDERS_DATA=" not in message, message
    assert f"cannot read the mirror file {bad} (Permission denied)" in message and "SHOULDERS_DATA_MIRROR" in message
    assert leftovers(cache) == []


def unreadable(file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``file`` unreadable to the package: chmod 000, or -- as root, who reads it anyway -- make opening it
    fail as it would (``PermissionError``) for the mirror's reader."""
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        file.chmod(0)
        return
    import shoulders.data.mirror as mirror_module

    real_open = open

    def guarded_open(path, *args, **kwargs):
        if Path(path) == file:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(mirror_module, "open", guarded_open, raising=False)


# ---------------------------------------------------------------------------------------- published checksums
def test_published_checksum_of_an_unpinned_file_is_checked(server: Server, cache: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A file with no pinned sha256 or size (WikiText-103's members) is checked against its published sha1."""
    published = LocalFile("a.txt", None, None, published=Checksum("sha1", hashlib.sha1(A).hexdigest(), "a publisher"))

    def zipped(name: str, blob: bytes) -> Dataset:
        return entry(name, [published], Download(urls=(server.serve(f"/{name}.zip", blob),), filename="p.zip",
                                                 format="zip", members=(Member("a.txt", "a.txt"),)))

    folder = data.path(zipped("pub-good", make_zip({"a.txt": A})))
    assert (folder / "a.txt").read_bytes() == A and data.path(zipped("pub-good", b""), verify=True) == folder
    with pytest.raises(ChecksumError, match=r"pub-bad: a\.txt .*sha1 [0-9a-f]{40}, expected .*a publisher") as err:
        data.path(zipped("pub-bad", make_zip({"a.txt": B})))
    assert err.value.algorithm == "sha1" and err.value.actual == hashlib.sha1(B).hexdigest()
    assert leftovers(cache) == ["pub-good", "pub-good/.shoulders-stamp.json", "pub-good/a.txt"]

    (tmp_path / "mirror" / "pub-mirror").mkdir(parents=True)
    (tmp_path / "mirror" / "pub-mirror" / "a.txt").write_bytes(B)
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(tmp_path / "mirror"))
    with pytest.raises(MirrorChecksumError, match="sha1"):
        data.path(zipped("pub-mirror", make_zip({"a.txt": A})))


# ------------------------------------------------------------------------------------ the full-scale corpora
@pytest.mark.parametrize("name", [n for n in data.names() if data.info(n).scales == ("full",)])
def test_full_only_dataset_offline_names_the_scale_that_needs_it(name: str, dead_url: str, cache: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    ds = data.info(name)
    offline = dataclasses.replace(ds, downloads=tuple(dataclasses.replace(d, urls=(dead_url,)) for d in ds.downloads))
    (tmp_path / "mirror").mkdir()
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(tmp_path / "mirror"))  # a mirror that lacks it, as the book's does
    with pytest.raises(DownloadError) as err:
        data.path(offline)
    message = str(err.value)
    assert (f"{name} is needed only at SHOULDERS_SCALE=full ({ds.needed_by}); it is not in the offline mirror"
            in message), message
    assert "Connection refused" in message and str(cache / "downloads" / ds.downloads[0].filename) in message
    assert f"has no '{name}' folder" in message
    assert leftovers(cache) == []


# ------------------------------------------------------------------------------------------- unsafe archives
@pytest.mark.parametrize("evil", ["../evil.txt", "sub/../../evil.txt", "ABSOLUTE", "..\\evil.txt", "link",
                                  "C:/evil.txt", "C:evil.txt"])
def test_zip_with_escaping_member_is_refused(server: Server, cache: Path, tmp_path: Path, evil: str,
                                             fault_tally) -> None:
    fault_tally.add("data: hostile archives", faults=1, runs=1)
    members = {"a.txt": A}
    links = {}
    if evil == "link":
        links["evil.txt"] = "../../../evil-target"
    else:
        members[str(tmp_path / "evil.txt") if evil == "ABSOLUTE" else evil] = b"pwned"
    url = server.serve("/evil.zip", make_zip(members, links))
    ds = entry("evilzip", [local("a.txt", A)], Download(
        urls=(url,), filename="evil.zip", format="zip", members=(Member("a.txt", "a.txt"),)))
    with pytest.raises(ArchiveError, match="evilzip: refusing to extract evil.zip"):
        data.path(ds)
    assert not [p for p in tmp_path.rglob("evil*")]
    assert leftovers(cache) == []


def _tar_special(kind: str, tmp_path: Path) -> tuple[dict[str, bytes], list[tarfile.TarInfo]]:
    if kind == "absolute":
        return {str(tmp_path / "evil.txt"): b"pwned"}, []
    if kind == "dotdot":
        return {"../../evil.txt": b"pwned"}, []
    info = tarfile.TarInfo("evil.txt")
    if kind in ("fifo", "device"):
        info.type = tarfile.FIFOTYPE if kind == "fifo" else tarfile.CHRTYPE
        return {}, [info]
    info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
    info.linkname = str(tmp_path / "evil-target") if kind == "symlink" else "../../evil-target"
    return {}, [info]


@pytest.mark.parametrize("kind", ["absolute", "dotdot", "symlink", "hardlink", "fifo", "device"])
def test_tar_with_escaping_member_is_refused(server: Server, cache: Path, tmp_path: Path, kind: str,
                                             fault_tally) -> None:
    fault_tally.add("data: hostile archives", faults=1, runs=1)
    extra, specials = _tar_special(kind, tmp_path)
    blob = make_tar({"a.txt": A, **extra}, specials)
    url = server.serve("/evil.tar.gz", blob)
    ds = entry("eviltar", [local("a.txt", A)], Download(
        urls=(url,), filename="evil.tar.gz", format="tar", checksum=Checksum("sha256", sha256(blob)),
        members=(Member("a.txt", "a.txt"),)))
    with pytest.raises(ArchiveError, match="eviltar: refusing to extract evil.tar.gz"):
        data.path(ds)
    assert not [p for p in tmp_path.rglob("evil*")]
    assert leftovers(cache) == []


def test_oversized_member_is_refused_before_it_is_written(server: Server, cache: Path, fault_tally) -> None:
    """A zip bomb: 20 MB of zeros (20 kB compressed) where the registry expects 600 bytes. Extraction stops one
    byte past the expected size; nothing is kept."""
    fault_tally.add("data: hostile archives", faults=1, runs=1)
    url = server.serve("/bomb.zip", make_zip({"a.txt": bytes(20 * 2**20)}))
    ds = entry("bomb", [local("a.txt", A)], Download(
        urls=(url,), filename="bomb.zip", format="zip", members=(Member("a.txt", "a.txt"),)))
    with pytest.raises(ChecksumError, match=r"bomb: archive member 'a\.txt' is larger than the expected 600 bytes"):
        data.path(ds)
    assert leftovers(cache) == []


def test_missing_member_and_unreadable_archive(server: Server, cache: Path, fault_tally) -> None:
    fault_tally.add("data: hostile archives", faults=2, runs=2)
    url = server.serve("/other.zip", make_zip({"b.txt": B}))
    ds = entry("nomember", [local("a.txt", A)], Download(
        urls=(url,), filename="other.zip", format="zip", members=(Member("a.txt", "a.txt"),)))
    with pytest.raises(ArchiveError, match=r"has no file member 'a\.txt' \(it holds: b\.txt\)"):
        data.path(ds)
    url = server.serve("/page.zip", b"<html>a login page, not a zip</html>")
    ds = entry("notzip", [local("a.txt", A)], Download(
        urls=(url,), filename="page.zip", format="zip", members=(Member("a.txt", "a.txt"),)))
    with pytest.raises(ArchiveError, match="not a readable zip archive"):
        data.path(ds)
    assert leftovers(cache) == []


# ---------------------------------------------------------------------------------------------- the cache
def test_cache_repairs_its_own_folder_but_leaves_foreign_ones_alone(server: Server, cache: Path) -> None:
    url = server.serve("/a.txt", A)
    ds = entry("repair", [local("a.txt", A)], Download(urls=(url,), filename="a.txt", format="file", keep_as="a.txt"))
    folder = data.path(ds)
    (folder / "a.txt").write_bytes(b"edited")  # size changes: stamp disagrees, re-hash fails, ours: re-fetch
    with pytest.warns(UserWarning, match="no longer matches"):
        assert (data.path(ds) / "a.txt").read_bytes() == A
    assert len(server.site.requests) == 2

    server.stop()
    (folder / ".shoulders-stamp.json").unlink()  # a correct folder without a stamp is adopted
    assert data.path(ds) == folder and (folder / ".shoulders-stamp.json").is_file()

    (folder / ".shoulders-stamp.json").unlink()  # a wrong folder without a stamp is not ours: error, untouched
    (folder / "a.txt").write_bytes(b"user's own file")
    with pytest.raises(CacheError, match="not made by shoulders"):
        data.path(ds)
    assert (folder / "a.txt").read_bytes() == b"user's own file"


def test_cache_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SHOULDERS_DATA", str(tmp_path / "elsewhere"))
    assert data.cache_root() == tmp_path / "elsewhere"
    monkeypatch.delenv("SHOULDERS_DATA")
    checkout = Path(data.__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "book").is_dir():
        assert data.cache_root() == checkout / "data"


# ------------------------------------------------------------------------------------------- the registry
def test_unknown_name_lists_names_and_suggests() -> None:
    with pytest.raises(UnknownDatasetError) as err:
        data.path("wikitxt-2")
    assert isinstance(err.value, LookupError) and isinstance(err.value, DatasetError)
    assert "Did you mean 'wikitext-2'?" in str(err.value)
    assert all(name in str(err.value) for name in data.names())
    with pytest.raises(UnknownDatasetError, match="Known datasets"):
        data.info("no-such-thing-at-all")


def test_names_aliases_and_credits() -> None:
    assert data.names() == ("wikitext-2", "tiny-shakespeare", "sst2-glue", "sst-trees", "wnut17", "squad-v1.1",
                            "snli", "multi30k", "tatoeba-fra-eng", "copa-balanced", "text8", "wikitext-103", "imdb",
                            "snli-train", "squad-v1.1-train")
    assert data.info("SST-2").name == "sst2-glue" and data.info("squad").name == "squad-v1.1"
    assert data.info("WikiText2").name == "wikitext-2" and data.info(data.info("snli")) is data.info("snli")
    rows = data.credits()
    assert [r["name"] for r in rows] == list(data.names())
    for row in rows:
        assert set(row) == {"name", "title", "licence", "citation", "homepage"} and all(row.values())
        assert re.search(r"\. (19|20)\d\d\. ", row["citation"]), row["citation"]
    assert [r["name"] for r in data.credits(["snli", "sst-2"])] == ["snli", "sst2-glue"]


def test_registry_entries_are_well_formed() -> None:
    text8 = data.info("text8")
    assert not text8.mirrored and text8.files[0].sha256 is None and text8.files[0].size == 100_000_000
    assert text8.downloads[0].size == 31_344_016  # and GluonNLP's published sha1s of the zip and of its member
    assert str(text8.downloads[0].checksum) == "sha1:6c70299b93b7e1f927b42cd8f6ac1a31547c7a2e"
    assert str(text8.files[0].published) == "sha1:0dc3edebc970dcc96137e7deda4d9995af9d93de"
    full_only = [n for n in data.names() if data.info(n).scales == ("full",)]
    assert full_only == ["text8", "wikitext-103", "imdb", "snli-train", "squad-v1.1-train"]
    for name in full_only:  # not mirrored, and the error when missing names the chapters that need them
        assert not data.info(name).mirrored and "chapter" in data.info(name).needed_by
    assert all(data.info(n).scales == ("smoke", "cpu", "full") for n in data.names() if n not in full_only)
    for ds in data.REGISTRY.values():
        assert ds.downloads and ds.citations and ds.licence and ds.homepage.startswith("http")
        for download in ds.downloads:
            assert all(u.startswith(("http://", "https://")) for u in download.urls)
            if ds.mirrored:  # every mirrored file is pinned, so every download is verifiable somehow
                assert all(ds.file(t).sha256 for t in download.targets())
    with pytest.raises(ValueError, match="exactly once"):
        entry("broken", [local("a.txt", A)], Download(urls=("http://x/",), filename="b", format="file", keep_as="b"))
    with pytest.raises(ValueError, match="relative"):
        LocalFile("../a.txt", 1, sha256(A))
    with pytest.raises(ValueError, match="nothing vouches"):  # no fact about the file, no checksum of its download
        entry("unvouched", [LocalFile("a.txt", None, None)], Download(urls=("http://x/",), filename="a.zip",
                                                                     format="zip", members=(Member("a", "a.txt"),)))
    with pytest.raises(ValueError, match="scales"):
        dataclasses.replace(entry("scaled", [local("a.txt", A)], Download(
            urls=("http://x/",), filename="a", format="file", keep_as="a.txt")), scales=("huge",))


# -------------------------------------------------------------------------------------- the real mirror
def _source_md_sha256(folder: Path) -> dict[str, tuple[int, str]]:
    """The ``| `file` | bytes | `sha256` |`` rows of a mirror folder's SOURCE.md."""
    rows = re.findall(r"^\| `([^`]+)` \| ([\d,]+) \| `([0-9a-f]{64})` \|", (folder / "SOURCE.md").read_text(),
                      flags=re.MULTILINE)
    return {name: (int(size.replace(",", "")), digest) for name, size, digest in rows}


@needs_mirror
@pytest.mark.parametrize("name", [n for n in data.names() if data.info(n).mirrored])
def test_registry_facts_equal_the_mirror(name: str) -> None:
    ds = data.info(name)
    folder = MIRROR / name
    on_disk = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != "SOURCE.md"}
    assert on_disk == {f.name for f in ds.files}
    assert _source_md_sha256(folder) == {f.name: (f.size, f.sha256) for f in ds.files}
    for item in ds.files:
        blob = (folder / item.name).read_bytes()
        assert (len(blob), sha256(blob)) == (item.size, item.sha256), item.name
        if item.content_sha256:
            assert sha256(gzip.decompress(blob)) == item.content_sha256, item.name
        if item.published:  # e.g. GluonNLP's sha1 of each WikiText-2 member: the mirror's file is that file
            assert hashlib.new(item.published.algorithm, blob).hexdigest() == item.published.value, item.name


@needs_mirror
def test_wikitext2_from_the_mirror(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(MIRROR))
    folder = data.path("wikitext-2")
    assert folder == cache / "wikitext-2"
    with open(folder / "wiki.train.tokens", "rb") as handle:
        assert sum(1 for _ in handle) == 36_718
    monkeypatch.delenv("SHOULDERS_DATA_MIRROR")
    assert data.path("wikitext") == folder  # cache hit, no mirror needed


def _archive_from_mirror(ds: Dataset, download: Download) -> bytes:
    """Rebuild a download's archive from the mirror's files (members as the registry maps them)."""
    members = {}
    for member in download.members:
        blob = (MIRROR / ds.name / member.target).read_bytes()
        members[member.source] = gzip.decompress(blob) if member.gzip else blob
    return make_zip(members, compress=False) if download.format == "zip" else make_tar(members)


@needs_mirror
def test_download_paths_rebuild_the_mirror_layout(server: Server, cache: Path) -> None:
    """Serve each download as the registry describes it -- the mirror's own file where the mirror keeps the
    download itself (its published checksum then checked for real), else an archive rebuilt from the mirror
    (checksum unknown, dropped) -- and check ``path()`` produces the mirror's layout from it."""
    for name in data.names():
        ds = data.info(name)
        if not ds.mirrored:
            continue
        downloads = []
        for i, download in enumerate(ds.downloads):
            route = f"/{name}/{i}/{download.filename}"
            if download.keep_as:
                served = server.serve(route, (MIRROR / name / download.keep_as).read_bytes())
                downloads.append(dataclasses.replace(download, urls=(served,)))
            else:
                served = server.serve(route, _archive_from_mirror(ds, download))
                downloads.append(dataclasses.replace(download, urls=(served,), checksum=None, size=None))
        folder = data.path(dataclasses.replace(ds, downloads=tuple(downloads)))
        for item in ds.files:
            produced = (folder / item.name).read_bytes()
            if item.content_sha256:
                assert sha256(gzip.decompress(produced)) == item.content_sha256
            else:
                assert sha256(produced) == item.sha256, (name, item.name)
    assert listing(cache) == sorted(n for n in data.names() if data.info(n).mirrored)

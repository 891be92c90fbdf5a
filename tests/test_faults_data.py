"""The data layer's fault suite: what ``shoulders.data.path`` promises, checked by injecting faults, and counted.

Promises (each test names the one it checks, and adds what it did to the ``fault_tally`` printed in the summary):

1. **Kill at any moment** -- mid-download, mid-extract, mid-copy from the mirror, while writing a stamp, while
   publishing, while repairing -- and nothing partial is visible: ``<cache>/<name>/`` is absent, still what it
   was before the call, or complete; the next call finds it or rebuilds it and deletes what the killed process
   left behind (temporary folders, half-written stamps). Kills are real ``SIGKILL``s of forked processes, at
   random moments (a fixed seed per test: a failure can be replayed).
2. **Nothing a reader owns is lost**: the mirror and by-hand downloads are never changed; a folder shoulders did
   not make is never deleted. ``lost`` counts files changed or missing there, and must stay 0.
3. **Concurrent readers and repairers** of one dataset all get the right bytes: they take turns on the
   dataset's lock, also when the process holding it is killed.
4. **Corrupt bytes**: a cached file changed -- even with its size kept -- is noticed and fetched again (by
   default every file is re-hashed against its stamp); a corrupt stamp is re-checked; a corrupt, missing or
   unreadable mirror file is a ``MirrorError`` naming that file, never a complaint about the cache.
5. **Hostile environment values** (``SHOULDERS_DATA``, ``SHOULDERS_DATA_MIRROR``, ``SHOULDERS_DOWNLOAD_TIMEOUT``):
   each a clear error naming the variable; an empty value counts as unset.

Hostile archives (path traversal, links, absolute and drive-letter names, devices, a zip bomb) are tested in
tests/test_data_registry.py and counted in the same tally. Everything runs on 127.0.0.1 and tmp folders.
"""
from __future__ import annotations

import gzip
import json
import multiprocessing as mp
import os
import random
import re
import shutil
import signal
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from test_data_registry import (  # the local HTTP server and entry helpers shared with the registry tests
    A,
    B,
    Server,
    dead_url,  # noqa: F401 (a fixture)
    leftovers,
    local,
    make_zip,
    server,  # noqa: F401 (a fixture)
    sha256,
    unreadable,
)
from test_data_registry import entry as make_entry

import shoulders._lock
import shoulders.data as data
import shoulders.data.mirror
import shoulders.data.remote
from shoulders.data import CacheError, Dataset, Download, DownloadError, LocalFile, Member, MirrorChecksumError, \
    MirrorError
from shoulders.data.local import STAMP

FORK = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
pytestmark = pytest.mark.skipif(FORK is None, reason="the fault suite kills forked processes (POSIX only)")

RUN_S = 60  # a forked call that has not finished after this long is a hang: the test fails (never reached)


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache root per test, no mirror, and the default download timeout."""
    root = tmp_path / "cache"
    monkeypatch.setenv("SHOULDERS_DATA", str(root))
    monkeypatch.delenv("SHOULDERS_DATA_MIRROR", raising=False)
    monkeypatch.delenv("SHOULDERS_DOWNLOAD_TIMEOUT", raising=False)
    return root


# ----------------------------------------------------------------------------------------------- the data
def blobs(seed: int) -> dict[str, bytes]:
    """Three files (one in a sub-folder) of mixed content, 40-200 kB: several blocks to be killed between."""
    rng = random.Random(seed)
    return {"a.txt": (b"alpha beta gamma\n" * 6000)[: rng.randrange(100_000, 200_000)],
            "sub/b.bin": rng.randbytes(rng.randrange(40_000, 80_000)),
            "c.txt": bytes(rng.choice(b"acgt\n") for _ in range(rng.randrange(50_000, 90_000)))}


def dataset(name: str, files: dict[str, bytes], download: Download | None = None) -> Dataset:
    download = download or Download(urls=("http://127.0.0.1:9/unused.zip",), filename="unused.zip", format="zip",
                                    members=tuple(Member(n, n) for n in files))
    return make_entry(name, [local(n, b) for n, b in files.items()], download)


def make_mirror(root: Path, ds: Dataset, files: dict[str, bytes]) -> dict[str, bytes]:
    """Lay out ``<root>/<name>/`` like the book's mirror (with a SOURCE.md); return its snapshot."""
    for name, blob in files.items():
        (root / ds.name / name).parent.mkdir(parents=True, exist_ok=True)
        (root / ds.name / name).write_bytes(blob)
    (root / ds.name / "SOURCE.md").write_text("where these files come from\n")
    return snapshot(root)


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder``: a file's bytes, ``None`` for anything else (a folder, a fifo)."""
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob("*"))}


def changed(before: dict[str, bytes | None], folder: Path) -> int:
    """Files of ``before`` (a :func:`snapshot`) now missing or different, plus files added: what was lost."""
    after = snapshot(folder)
    return sum(after.get(k) != v for k, v in before.items()) + len(set(after) - set(before))


def state(ds: Dataset, place: Path) -> dict[str, bytes] | None:
    """The dataset folder's files as a reader would see them (``None``: no folder)."""
    if not place.exists():
        return None
    return {f.name: (place / f.name).read_bytes() for f in ds.files if (place / f.name).is_file()}


def recover(ds: Dataset, files: dict[str, bytes], cache: Path, **kwargs: object) -> int:
    """The call after a fault: it must give every file right and leave nothing behind but the folder (and the
    lock file). Returns the number of files it got wrong (counted as lost, must be 0)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "the cached copy ... no longer matches": expected after some faults
        folder = data.path(ds, **kwargs)
    wrong = sum(unpacked(folder / n) != unpacked_blob(n, b) for n, b in files.items())
    expected = sorted([ds.name, f"{ds.name}/{STAMP}"] + [f"{ds.name}/{n}" for n in files] +
                      [f"{ds.name}/{n.rsplit('/', 1)[0]}" for n in files if "/" in n])
    kept = [k for k in leftovers(cache) if not k.startswith("downloads")]
    assert kept == expected, f"left behind: {sorted(set(kept) - set(expected))}"
    return wrong


def unpacked_blob(name: str, blob: bytes) -> bytes:
    """A ``.gz`` file's content (a gzip made by a download may differ from the mirror's in its header bytes)."""
    return gzip.decompress(blob) if name.endswith(".gz") else blob


def unpacked(path: Path) -> bytes:
    return unpacked_blob(path.name, path.read_bytes())


# ------------------------------------------------------------------------------------- forked processes
def _child(ds: Dataset, conn, arm: Callable[[], None] | None, gate) -> None:
    """In a forked process: arm a fault, wait for the others, call path(), send back the files' sha256."""
    warnings.simplefilter("ignore")
    try:
        if arm is not None:
            arm()
        if gate is not None:
            gate.wait(RUN_S)
        folder = data.path(ds)
        conn.send(("ok", {f.name: sha256((folder / f.name).read_bytes()) for f in ds.files}))
    except BaseException as err:  # noqa: BLE001 (everything goes back to the test)
        conn.send(("error", f"{type(err).__name__}: {err}"))
    finally:
        conn.close()


class Call:
    """``data.path(ds)`` in a forked process (optionally armed with a fault); :meth:`result` after it ends."""

    def __init__(self, ds: Dataset, arm: Callable[[], None] | None = None, gate=None) -> None:
        self.receive, send = FORK.Pipe(duplex=False)
        self.process = FORK.Process(target=_child, args=(ds, send, arm, gate), daemon=True)
        self.process.start()
        send.close()

    def kill(self) -> None:
        if self.process.is_alive():
            os.kill(self.process.pid, signal.SIGKILL)

    def result(self) -> tuple[str, object]:
        """``("ok", {file: sha256})``, ``("error", message)`` or ``("killed", None)``."""
        self.process.join(RUN_S)
        assert self.process.exitcode is not None, "a forked path() call hung"
        if self.process.exitcode == -signal.SIGKILL:
            return "killed", None
        assert self.receive.poll(5), f"no result, exit code {self.process.exitcode}"
        return self.receive.recv()


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def die_after_bytes(module: object, limit: int, once=None) -> Callable[[], None]:
    """A fault: in the child, ``module.copy_hashing`` (the loop that writes every copied or extracted byte) dies by
    SIGKILL once ``limit`` bytes are written -- the bytes before it flushed to disk, as a crash would leave them.
    With ``once`` (a shared ``multiprocessing.Value``), only the first of several armed processes to get there dies."""
    def arm() -> None:
        original = module.copy_hashing
        left = [limit]

        class Dying:
            def __init__(self, target) -> None:
                self.target = target

            def write(self, block) -> int:
                if len(block) >= left[0] and (once is None or not once.value):
                    self.target.write(block[: left[0]])
                    self.target.flush()
                    if once is not None:
                        once.value = 1
                    die()
                left[0] -= len(block)
                return self.target.write(block)

        def copy_hashing(source, target, *, limit=None):
            return original(source, Dying(target), limit=limit)

        module.copy_hashing = copy_hashing
    return arm


def die_on(owner: object, name: str, when: Callable[..., bool] = lambda *a, **k: True) -> Callable[[], None]:
    """A fault: in the child, calling ``owner.name`` with arguments that satisfy ``when`` dies by SIGKILL first."""
    def arm() -> None:
        original = getattr(owner, name)

        def dying(*args, **kwargs):
            if when(*args, **kwargs):
                die()
            return original(*args, **kwargs)

        setattr(owner, name, dying)
    return arm


# ------------------------------------------------------------------------------- 1-2: kills, nothing partial
def test_kill_during_download_leaves_nothing_partial(server: Server, cache: Path,  # noqa: F811 (a fixture)
                                                      fault_tally) -> None:
    """Promise 1: a process SIGKILLed at a random moment of a download (the server sends 16 kB every 10 ms, and
    the kill comes 0-0.25 s after the request arrives: mid-transfer, or later in extract, verify or publish)."""
    rng = random.Random(18_001)
    files = blobs(1)
    archive = make_zip(files, compress=False)
    url = server.serve_slow("/slow.zip", archive, block=16_384, pause=0.01)
    ds = dataset("downloaded", files, Download(urls=(url,), filename="slow.zip", format="zip",
                                               checksum=None, members=tuple(Member(n, n) for n in files)))
    faults = runs = lost = 0
    for _ in range(6):
        asked = len(server.site.requests)
        call = Call(ds)
        deadline = time.monotonic() + RUN_S
        while len(server.site.requests) == asked and call.process.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(rng.uniform(0, 0.25))
        call.kill()
        outcome, _ = call.result()
        runs += 1
        faults += outcome == "killed"
        assert outcome in ("killed", "ok"), outcome
        seen = state(ds, cache / ds.name)
        assert seen is None or seen == files, "a partial folder is visible after the kill"
        lost += recover(ds, files, cache)  # the next call finds it or rebuilds it (and sweeps what was left)
        runs += 1
        shutil.rmtree(cache / ds.name)  # the next round starts from an empty cache again
    fault_tally.add("data: kill during download", faults=faults, runs=runs, lost=lost)
    assert faults >= 1 and lost == 0


def test_kill_during_extract_leaves_nothing_partial(cache: Path, fault_tally) -> None:
    """Promise 1 and 2: killed after a random number of bytes extracted from a by-hand download (plain members
    and one gzipped on the way, as SNLI's are); the by-hand archive is never changed."""
    rng = random.Random(18_002)
    files = blobs(2)
    plain = {n: b for n, b in files.items() if n != "c.txt"}
    members = tuple(Member(n, n) for n in plain) + (Member("c.txt", "c.txt.gz", gzip=True, check="content"),)
    archive = make_zip(files)
    packed = gzip.compress(files["c.txt"], mtime=0)
    ds = make_entry("extracted", [local(n, b) for n, b in plain.items()] + [
        LocalFile("c.txt.gz", len(packed), sha256(packed), content_sha256=sha256(files["c.txt"]))], Download(
        urls=("http://127.0.0.1:9/data.zip",), filename="data.zip", format="zip", members=members))
    expected = {**plain, "c.txt.gz": packed}
    (cache / "downloads").mkdir(parents=True)
    (cache / "downloads" / "data.zip").write_bytes(archive)
    manual = snapshot(cache / "downloads")
    total = sum(len(b) for b in files.values())
    faults = runs = lost = 0
    for _ in range(6):
        outcome, _ = Call(ds, die_after_bytes(shoulders.data.remote, rng.randrange(total))).result()
        runs += 1
        faults += outcome == "killed"
        assert outcome == "killed", outcome
        assert state(ds, cache / ds.name) is None, "a partial folder is visible after the kill"
        lost += changed(manual, cache / "downloads")
    lost += recover(ds, expected, cache) + changed(manual, cache / "downloads")
    fault_tally.add("data: kill during extract", faults=faults, runs=runs + 1, lost=lost)
    assert lost == 0


CACHE_WRITE_KILLS = ["mirror copy", "stamp write", "publish", "repair: after moving the bad copy aside",
                     "repair: mirror copy", "adopting an unstamped copy: stamp write"]


def test_kill_during_cache_write_leaves_nothing_partial(tmp_path: Path, cache: Path,
                                                        monkeypatch: pytest.MonkeyPatch, fault_tally) -> None:
    """Promise 1 and 2: killed while the cache is written -- copying from the mirror (a random byte), writing the
    stamp, renaming the finished folder into place, repairing a damaged copy, stamping a copy found unstamped.
    After each kill the folder is absent, as it was, or complete; the next call repairs; the mirror is untouched."""
    rng = random.Random(18_003)
    files = blobs(3)
    ds = dataset("written", files)
    mirror = make_mirror(tmp_path / "mirror", ds, files)
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(tmp_path / "mirror"))
    place = cache / ds.name
    total = sum(len(b) for b in files.values())
    faults = runs = lost = 0
    for round_ in range(12):
        kind = CACHE_WRITE_KILLS[round_ % len(CACHE_WRITE_KILLS)]
        if kind.startswith(("repair", "adopting")):  # a good copy first, then the damage the call must handle
            recover(ds, files, cache)
            if kind.startswith("repair"):
                victim = place / rng.choice(sorted(files))
                victim.write_bytes(victim.read_bytes()[:-rng.randrange(1, 100)])
            else:
                (place / STAMP).unlink()
        before = state(ds, place)
        arm = {"mirror copy": die_after_bytes(shoulders.data.mirror, rng.randrange(total)),
               "stamp write": die_on(os, "replace", lambda src, dst, *a, **k: Path(dst).name == STAMP),
               "publish": die_on(Path, "rename", lambda self, target: Path(target) == place),
               "repair: after moving the bad copy aside": die_on(shutil, "rmtree"),
               "repair: mirror copy": die_after_bytes(shoulders.data.mirror, rng.randrange(total)),
               "adopting an unstamped copy: stamp write":
                   die_on(os, "replace", lambda src, dst, *a, **k: Path(dst).name == STAMP)}[kind]
        outcome, _ = Call(ds, arm).result()
        runs += 1
        faults += outcome == "killed"
        assert outcome == "killed", (kind, outcome)
        seen = state(ds, place)
        assert seen is None or seen == before or seen == files, f"{kind}: a partial folder is visible"
        lost += recover(ds, files, cache) + changed(mirror, tmp_path / "mirror")
        runs += 1
        shutil.rmtree(place)
    fault_tally.add("data: kill during cache write", faults=faults, runs=runs, lost=lost)
    assert lost == 0


# ---------------------------------------------------------------------------- 3: concurrent readers/repairers
DAMAGE = ["empty cache", "truncated file", "same-size byte flip", "stamp deleted", "stale temporary folders",
          "lock holder killed"]


def damage(kind: str, ds: Dataset, files: dict[str, bytes], cache: Path, rng: random.Random) -> None:
    place = cache / ds.name
    if kind == "empty cache":
        return
    recover(ds, files, cache)
    victim = place / rng.choice(sorted(files))
    if kind == "truncated file":
        victim.write_bytes(victim.read_bytes()[: -rng.randrange(1, 1000)])
    elif kind == "same-size byte flip":
        blob = bytearray(victim.read_bytes())
        blob[rng.randrange(len(blob))] ^= 0x20
        victim.write_bytes(bytes(blob))
    elif kind == "stamp deleted":
        (place / STAMP).unlink()
    elif kind == "stale temporary folders":  # what killed processes leave: half a build, a copy moved aside
        for suffix in ("a1b2c3", "d4e5f6"):
            (cache / f".{ds.name}.tmp-{suffix}" / ds.name).mkdir(parents=True)
            (cache / f".{ds.name}.tmp-{suffix}" / ds.name / "a.txt").write_bytes(b"half")
        victim.unlink()
    elif kind == "lock holder killed":
        victim.write_bytes(b"")


def test_concurrent_repairers_all_get_the_right_bytes(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                     fault_tally) -> None:
    """Promise 3 (issue 18, item 7): 4-6 processes released at once on a damaged (or empty) cache all succeed --
    they used to fail 15 times in 96 with "[Errno 2]" and advice to choose a writable folder. In the last kind
    of round the process that holds the lock dies while copying from the mirror; the others take over."""
    rng = random.Random(18_004)
    files = blobs(4)
    ds = dataset("shared", files)
    mirror = make_mirror(tmp_path / "mirror", ds, files)
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(tmp_path / "mirror"))
    right = {n: sha256(b) for n, b in files.items()}
    faults = runs = lost = 0
    failures: list[str] = []
    for round_ in range(12):
        kind = DAMAGE[round_ % len(DAMAGE)]
        damage(kind, ds, files, cache, rng)
        n = 4 + round_ % 3
        gate = FORK.Barrier(n)
        once = FORK.Value("i", 0)  # every process armed: whichever copies first (holding the lock) dies
        arm = die_after_bytes(shoulders.data.mirror, rng.randrange(1000, 100_000), once)
        calls = [Call(ds, arm if kind == "lock holder killed" else None, gate) for _ in range(n)]
        for call in calls:
            outcome, got = call.result()
            runs += 1
            if outcome == "killed":
                faults += 1
            elif outcome != "ok" or got != right:
                failures.append(f"{kind}: {outcome}: {str(got)[:300]}")
        faults += kind != "empty cache"
        lost += recover(ds, files, cache) + changed(mirror, tmp_path / "mirror")
        shutil.rmtree(cache / ds.name)
    fault_tally.add("data: concurrent readers/repairers", faults=faults, runs=runs, lost=lost)
    assert failures == [] and lost == 0


# ---------------------------------------------------------------------------------------- 4: corrupt bytes
def test_cache_byte_flips_are_noticed_by_default(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                 fault_tally) -> None:
    """Promise 4 (issue 18, item 8): a same-size byte flip in a stamped cache file used to be returned silently
    unless verify=True. By default every file is re-hashed against its stamp (the book's datasets: 0.2-36 ms
    each), so a flip is noticed, reported and fetched again. ``verify=False`` -- sizes only -- still misses it."""
    rng = random.Random(18_005)
    files = blobs(5)
    ds = dataset("flipped", files)
    mirror = make_mirror(tmp_path / "mirror", ds, files)
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(tmp_path / "mirror"))
    place = data.path(ds)
    faults = lost = 0
    for _ in range(10):
        name = rng.choice(sorted(files))
        blob = bytearray(files[name])
        blob[rng.randrange(len(blob))] ^= 1 << rng.randrange(8)
        (place / name).write_bytes(bytes(blob))
        faults += 1
        assert (data.path(ds, verify=False) / name).read_bytes() == bytes(blob)  # the documented trade-off
        with pytest.warns(UserWarning, match=f"flipped: the cached copy in .* no longer matches .*{name}"):
            assert (data.path(ds) / name).read_bytes() == files[name]
        lost += changed(mirror, tmp_path / "mirror")
    fault_tally.add("data: corrupt cache bytes", faults=faults, runs=2 * faults, lost=lost)
    assert lost == 0


STAMPS = {"garbage": b"\x00\xffnot json", "truncated json": b'{"format": 1, "dataset": "stamped", "fingerp',
          "a list": b"[1, 2, 3]", "wrong sizes": None, "wrong sha256": None, "empty": b"", "a folder": None}


def test_corrupt_stamps_are_checked_again(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch,
                                          fault_tally) -> None:
    """Promise 4: a stamp that is garbage, truncated, of the wrong shape or with wrong facts never crashes and never
    vouches for a file: the files are re-hashed against the registry and, being right, adopted with a new stamp."""
    files = blobs(6)
    ds = dataset("stamped", files)
    mirror = make_mirror(tmp_path / "mirror", ds, files)
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(tmp_path / "mirror"))
    place = data.path(ds)
    good = json.loads((place / STAMP).read_text())
    lost = 0
    for kind, blob in STAMPS.items():
        stamp = place / STAMP
        stamp.unlink()
        if kind == "a folder":
            stamp.mkdir()
            (stamp / "x").write_text("?")
        elif blob is None:
            bad = json.loads(json.dumps(good))
            field = "size" if kind == "wrong sizes" else "sha256"
            bad["files"]["a.txt"][field] = 1 if field == "size" else "0" * 64
            stamp.write_text(json.dumps(bad))
        else:
            stamp.write_bytes(blob)
        if kind == "a folder":  # not a stamp shoulders wrote: left alone, and the error says what is wrong
            with pytest.raises(CacheError, match="not made by shoulders|cannot check"):
                data.path(ds)
            shutil.rmtree(stamp)
        lost += recover(ds, files, cache) + changed(mirror, tmp_path / "mirror")
        assert json.loads((place / STAMP).read_text())["files"] == good["files"], kind
    fault_tally.add("data: corrupt stamps", faults=len(STAMPS), runs=len(STAMPS), lost=lost)
    assert lost == 0


MIRROR_FAULTS = ["byte flip", "truncated", "extended", "empty", "missing", "a folder instead", "a fifo instead",
                 "unreadable"]


@pytest.mark.parametrize("fault", MIRROR_FAULTS)
def test_corrupt_or_unreadable_mirror_file_is_named(fault: str, tmp_path: Path, cache: Path,
                                                    monkeypatch: pytest.MonkeyPatch, fault_tally) -> None:
    """Promise 4 (issue 18, item 7): whatever is wrong with a mirror file, the error is a MirrorError naming that
    file and what to do -- never a CacheError about a folder that cannot be written. The cache keeps nothing,
    the mirror is left exactly as it was."""
    files = blobs(7)
    ds = dataset("mirrored", files)
    make_mirror(tmp_path / "mirror", ds, files)
    bad = tmp_path / "mirror" / ds.name / "sub" / "b.bin"
    blob = files["sub/b.bin"]
    if fault == "byte flip":
        bad.write_bytes(blob[:100] + bytes([blob[100] ^ 4]) + blob[101:])
    elif fault in ("truncated", "extended", "empty"):
        bad.write_bytes({"truncated": blob[:-1], "extended": blob + b"\n", "empty": b""}[fault])
    elif fault in ("missing", "a folder instead", "a fifo instead"):
        bad.unlink()
        if fault == "a folder instead":
            bad.mkdir()
        elif fault == "a fifo instead":  # opening it to read would wait forever for a writer
            os.mkfifo(bad)
    else:
        unreadable(bad, monkeypatch)
    before = snapshot(tmp_path / "mirror")
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(tmp_path / "mirror"))
    with pytest.raises(MirrorError) as err:
        data.path(ds)
    message = str(err.value)
    assert str(bad) in message and "SHOULDERS_DATA_MIRROR" in message, message
    assert not isinstance(err.value, CacheError) and "writable" not in message, message
    if fault in ("byte flip", "truncated", "extended", "empty"):
        assert isinstance(err.value, MirrorChecksumError) and sha256(blob) in message
    lost = changed(before, tmp_path / "mirror")
    fault_tally.add("data: corrupt mirror files", faults=1, runs=1, lost=lost)
    assert lost == 0 and leftovers(cache) == []


# ------------------------------------------------------------------------------- 5: hostile environment values
def test_cache_setting_that_is_a_file_or_under_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      fault_tally) -> None:
    """Promise 5: SHOULDERS_DATA naming a file, or a folder under a file: a CacheError naming the variable."""
    files = {"a.txt": A}
    ds = dataset("envcache", files)
    make_mirror(tmp_path / "mirror", ds, files)
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(tmp_path / "mirror"))
    (tmp_path / "a-file").write_text("not a folder")
    for setting in (tmp_path / "a-file", tmp_path / "a-file" / "cache"):
        monkeypatch.setenv("SHOULDERS_DATA", str(setting))
        with pytest.raises(CacheError, match=re.escape(f"SHOULDERS_DATA='{setting}'")) as err:
            data.path(ds)
        assert "folder" in str(err.value)
    assert (tmp_path / "a-file").read_text() == "not a folder"
    fault_tally.add("data: hostile environment", faults=2, runs=2)


def test_cache_setting_missing_folder_is_created_and_empty_means_unset(tmp_path: Path,
                                                                       dead_url: str,  # noqa: F811 (a fixture)
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       fault_tally) -> None:
    """Promise 5: a missing cache folder is created (parents too); an empty or blank SHOULDERS_DATA counts as
    unset (the default cache), as does an empty SHOULDERS_DATA_MIRROR (no mirror: download)."""
    files = {"a.txt": A}
    ds = dataset("envmissing", files, Download(urls=(dead_url,), filename="a.zip", format="zip",
                                               members=(Member("a.txt", "a.txt"),)))
    make_mirror(tmp_path / "mirror", ds, files)
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(tmp_path / "mirror"))
    monkeypatch.setenv("SHOULDERS_DATA", str(tmp_path / "not" / "yet" / "there"))
    assert (data.path(ds) / "a.txt").read_bytes() == A
    monkeypatch.delenv("SHOULDERS_DATA")
    default = data.cache_root()
    for blank in ("", "   "):
        monkeypatch.setenv("SHOULDERS_DATA", blank)
        assert data.cache_root() == default
    monkeypatch.setenv("SHOULDERS_DATA", str(tmp_path / "cache"))
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", " ")
    assert data.mirror_root() is None
    with pytest.raises(DownloadError, match="could not connect") as err:  # no mirror: the (dead) download is tried
        data.path(ds)
    assert "has no 'envmissing' folder" not in str(err.value)
    fault_tally.add("data: hostile environment", faults=4, runs=4)


def test_unwritable_cache_is_named_and_a_good_copy_there_is_still_used(tmp_path: Path, cache: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       fault_tally) -> None:
    """Promise 5 (issue 18, item 7): a cache folder that cannot be written is a CacheError naming that folder and
    the variable. Running as root (who may write anywhere) the refusal is simulated: creating the lock file fails
    with EACCES, as it would. A read-only cache that already holds a good copy is used as it is."""
    files = {"a.txt": A, "b.txt": B}
    ds = dataset("readonly", files)
    make_mirror(tmp_path / "mirror", ds, files)
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(tmp_path / "mirror"))
    cache.mkdir()
    as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    real_open = open
    blocked = [True]

    def refuse(path, *args, **kwargs):
        if blocked[0] and Path(path).parent == cache:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    def block(on: bool) -> None:
        blocked[0] = on
        if not as_root:
            for folder in (cache, cache / ds.name):
                if folder.is_dir():
                    folder.chmod(0o555 if on else 0o755)

    if as_root:
        monkeypatch.setattr(shoulders._lock, "open", refuse, raising=False)
    try:
        block(True)
        with pytest.raises(CacheError) as err:
            data.path(ds)
        message = str(err.value)
        assert f"cannot write to the cache folder {cache} (SHOULDERS_DATA='{cache}')" in message, message
        assert "Permission denied" in message and "Set SHOULDERS_DATA to a writable folder" in message

        block(False)
        folder = data.path(ds)
        (folder / STAMP).unlink()  # a good copy, unstamped, in a cache that cannot be written now
        block(True)
        assert data.path(ds) == folder and (folder / "b.txt").read_bytes() == B
    finally:
        block(False)
    fault_tally.add("data: hostile environment", faults=2, runs=2)


@pytest.mark.parametrize("setting", ["a file", "missing", "read-only mirror"])
def test_mirror_setting(setting: str, tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch,
                        fault_tally) -> None:
    """Promise 5: SHOULDERS_DATA_MIRROR naming a file or a missing folder: a MirrorError naming the variable. A
    mirror the user cannot write is what a mirror should be: it works."""
    files = {"a.txt": A}
    ds = dataset("envmirror", files)
    mirror = tmp_path / "mirror"
    make_mirror(mirror, ds, files)
    value = {"a file": mirror / ds.name / "a.txt", "missing": tmp_path / "nowhere", "read-only mirror": mirror}[setting]
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(value))
    fault_tally.add("data: hostile environment", faults=1, runs=1)
    if setting == "read-only mirror":
        for folder in (mirror / ds.name, mirror):
            folder.chmod(0o555)
        try:
            assert (data.path(ds) / "a.txt").read_bytes() == A
        finally:
            for folder in (mirror, mirror / ds.name):
                folder.chmod(0o755)
        return
    why = "names a file, not a folder" if setting == "a file" else "is not a folder (it does not exist)"
    with pytest.raises(MirrorError, match=re.escape(f"SHOULDERS_DATA_MIRROR='{value}' {why}")):
        data.path(ds)
    assert leftovers(cache) == []


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan", "inf", "1e400", "10s"])
def test_download_timeout_setting_is_validated(value: str, server: Server,  # noqa: F811 (a fixture)
                                               cache: Path,
                                               monkeypatch: pytest.MonkeyPatch, fault_tally) -> None:
    """Promise 5 (issue 18, item 8): SHOULDERS_DOWNLOAD_TIMEOUT must be a positive number of seconds; anything else
    is a DownloadError naming the variable and the value (empty counts as unset; a good value is used)."""
    url = server.serve("/a.txt", A)
    ds = make_entry("timed", [local("a.txt", A)], Download(urls=(url,), filename="a.txt", format="file",
                                                          keep_as="a.txt"))
    monkeypatch.setenv("SHOULDERS_DOWNLOAD_TIMEOUT", value)
    with pytest.raises(DownloadError, match=f"SHOULDERS_DOWNLOAD_TIMEOUT='{value}' is not a usable timeout"):
        data.path(ds)
    assert leftovers(cache) == []
    for good in ("", " 2.5 "):
        monkeypatch.setenv("SHOULDERS_DOWNLOAD_TIMEOUT", good)
        assert shoulders.data.remote.download_timeout() == (2.5 if good.strip() else 60)
    assert (data.path(ds) / "a.txt").read_bytes() == A
    fault_tally.add("data: hostile environment", faults=1, runs=2)

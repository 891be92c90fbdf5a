"""Training fault suite: what fit promises when things go wrong, each promise tested with injected faults.

* Killed at any moment (SIGKILL in a step, in a checkpoint write, between the two), a run leaves only complete
  checkpoints -- every ``step-*`` folder loads and passes its checksums -- and resuming after every kill ends with
  weights bit-identical to a run that was never interrupted.
* A flipped byte or a truncation anywhere in a checkpoint is refused (CheckpointError), and nothing is changed.
* A checkpoint whose state hides code (a pickled class) is refused; nothing is unpickled.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from shoulders.train import CheckpointError, load_checkpoint
from shoulders.train.checkpoint import checkpoints, write_sums

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import train_kill_worker as worker  # noqa: E402


def run_worker(root: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(HERE / "train_kill_worker.py"), str(root), str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def newest_step(root: Path) -> int:
    found = checkpoints(root)
    return found[-1][0] if found else 0


def assert_only_complete_checkpoints(root: Path) -> int:
    """Every step-* folder is whole (its checksums hold and it loads); returns how many there are."""
    found = checkpoints(root)
    for _, folder in found:
        load_checkpoint(folder, worker.Net())  # raises CheckpointError on anything partial or damaged
    return len(found)


def test_sigkill_at_random_moments_leaves_only_whole_checkpoints_and_resumes_bit_exact(tmp_path, fault_tally):
    reference = tmp_path / "reference.safetensors"
    proc = run_worker(tmp_path / "straight", reference)
    assert proc.wait(timeout=180) == 0, proc.stderr.read().decode()[-2000:]
    rng = random.Random(0)
    root, out = tmp_path / "killed", tmp_path / "resumed.safetensors"
    kills = 0
    while kills < 6:
        before = newest_step(root)
        proc = run_worker(root, out)
        while proc.poll() is None and newest_step(root) == before:  # wait until it is training
            time.sleep(0.01)
        if proc.poll() is not None:
            break  # it finished before it could be killed
        time.sleep(rng.uniform(0.0, 0.08))
        proc.send_signal(signal.SIGKILL)
        rc = proc.wait(timeout=60)
        assert rc in (0, -signal.SIGKILL), proc.stderr.read().decode()[-2000:]
        assert assert_only_complete_checkpoints(root) >= 1
        if out.exists():
            break  # the run reached its end (OUT is written whole, then renamed) before the signal landed
        kills += 1
    assert kills >= 1, "no kill landed while the run was training"
    if not out.exists():
        proc = run_worker(root, out)
        assert proc.wait(timeout=180) == 0, proc.stderr.read().decode()[-2000:]
    a, b = load_file(reference), load_file(out)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), "resumed weights differ"
    fault_tally.add("training: SIGKILL mid-run", faults=kills, runs=kills + 1, lost=0)


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_damaged_checkpoint_bytes_are_refused_and_nothing_changes(tmp_path, damage, fault_tally):
    worker.main(str(tmp_path / "run"), str(tmp_path / "w.safetensors"))
    folder = checkpoints(tmp_path / "run")[-1][1]
    rng = random.Random(1)
    faults = 0
    for name in ("model.safetensors", "state.pt", "SHA256SUMS"):
        file = folder / name
        original = file.read_bytes()
        blob = bytearray(original)
        if damage == "flip":
            i = rng.randrange(len(blob))
            blob[i] ^= 1 << rng.randrange(8)
        else:
            blob = blob[: len(blob) // 2]
        file.write_bytes(bytes(blob))
        model = worker.Net()
        before = {k: v.clone() for k, v in model.state_dict().items()}
        with pytest.raises(CheckpointError):
            load_checkpoint(folder, model)
        assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items()), "a refused load changed weights"
        file.write_bytes(original)
        faults += 1
    load_checkpoint(folder, worker.Net())  # restored: loads again
    fault_tally.add(f"training: {damage} checkpoint bytes", faults=faults, runs=faults, lost=0)


def test_a_checkpoint_that_hides_code_is_refused_even_with_matching_checksums(tmp_path, fault_tally):
    worker.main(str(tmp_path / "run"), str(tmp_path / "w.safetensors"))
    folder = checkpoints(tmp_path / "run")[-1][1]
    state = torch.load(folder / "state.pt", weights_only=True)
    marker = tmp_path / "pwned"
    state["payload"] = os.system  # unpickling this would import and keep a callable
    torch.save(state, folder / "state.pt")
    write_sums(folder)
    with pytest.raises(CheckpointError, match="only tensors and plain containers"):
        load_checkpoint(folder, worker.Net())
    assert not marker.exists()
    fault_tally.add("training: hostile pickle", faults=1, runs=1, lost=0)


def test_hostile_environment_values_are_named_before_anything_runs(tmp_path, monkeypatch, fault_tally):
    """Every SHOULDERS_* variable outside the data layer (whose own suite covers SHOULDERS_DATA/_MIRROR): a bad
    value is an error naming the variable, raised before any work -- never a crash deep inside, never ignored."""
    import shoulders as sh
    from shoulders.device import ThreadsError, set_threads
    from shoulders.evaluate.ledger import LedgerError
    from shoulders.giants import GiantError

    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    cases = [
        ("SHOULDERS_SCALE", "huge", lambda: sh.scale(), sh.ScaleError),
        ("SHOULDERS_SCALE", "FULL; rm -rf /", lambda: sh.scale(), sh.ScaleError),
        ("SHOULDERS_DEVICE", "gpu0", lambda: sh.device(), sh.DeviceError),
        ("SHOULDERS_DEVICE", "cuda:7", lambda: sh.device(), sh.DeviceError),
        ("SHOULDERS_THREADS", "abc", lambda: set_threads(), ThreadsError),
        ("SHOULDERS_THREADS", "-1", lambda: set_threads(), ThreadsError),
        ("SHOULDERS_THREADS", "0", lambda: set_threads(), ThreadsError),
        ("SHOULDERS_GIANTS", str(a_file), lambda: sh.giants.root(), GiantError),
        ("SHOULDERS_GIANTS", str(a_file / "below"), lambda: sh.giants.cached("bert", scale="smoke"), GiantError),
        ("SHOULDERS_LEDGER", str(a_file / "ledger.jsonl"),
         lambda: sh.evaluate.record("m", 1.0, model="x", task="t", split="s", chapter="c"), LedgerError),
    ]
    for name, value, call, error in cases:
        monkeypatch.setenv(name, value)
        with pytest.raises(error, match=name):
            call()
        monkeypatch.delenv(name)
    assert a_file.read_text() == "not a folder"
    fault_tally.add("environment: hostile SHOULDERS_* values", faults=len(cases), runs=len(cases), lost=0)

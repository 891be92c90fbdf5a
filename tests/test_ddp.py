"""fit under torchrun: 2 CPU processes (gloo) each see half of every global batch and end with the parameters of
one process trained on the whole global batches."""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import shoulders as sh

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import ddp_worker  # noqa: E402  (the script the processes run; its model and data are the reference's too)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SHOULDERS_DEVICE": "cpu", "PYTHONUNBUFFERED": "1"}
    if sys.platform.startswith("linux"):
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
           "--master_addr", "127.0.0.1", "--master_port", str(free_port()), str(HERE / "ddp_worker.py"), str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"torchrun failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return out


def reference():
    """One process, global batches of 8 (= the two ranks' batches of 4 together)."""
    model, opt = ddp_worker.build()
    loader = torch.utils.data.DataLoader(ddp_worker.dataset(), batch_size=2 * ddp_worker.PER_RANK, shuffle=False)
    hist = ddp_worker.train(model, opt, loader)
    return model, hist


def test_each_rank_sees_half_of_every_global_batch(ddp_run):
    ref, _ = reference()
    for kind in ("loader", "strided"):
        seen = [json.loads((ddp_run / f"{kind}-seen-rank{r}.json").read_text()) for r in (0, 1)]
        assert len(seen[0]) == len(seen[1]) == ddp_worker.STEPS
        for step, (a, b, whole) in enumerate(zip(seen[0], seen[1], ref.seen)):
            assert len(a) == len(b) == ddp_worker.PER_RANK
            assert not set(a) & set(b), (kind, step)
            assert sorted(a + b) == sorted(whole), (kind, step)


def test_ddp_parameters_equal_one_process_on_the_global_batches(ddp_run):
    ref, ref_hist = reference()
    expected = ref.state_dict()
    for kind in ("loader", "strided", "resumed"):
        for r in (0, 1):
            got = load_file(ddp_run / f"{kind}-rank{r}.safetensors")
            for name, value in expected.items():
                torch.testing.assert_close(got[name], value, rtol=1e-5, atol=1e-6, msg=f"{kind} rank {r}: {name}")
    # The logged loss is the mean over ranks: the loss of the global batch.
    hist = sh.train.History.load(ddp_run / "history-rank0.json")
    torch.testing.assert_close(torch.tensor(hist.series("loss")[1]), torch.tensor(ref_hist.series("loss")[1]),
                               rtol=1e-5, atol=1e-6)
    # The run moved the weights, so the comparison above is not of two untouched initialisations.
    init, _ = ddp_worker.build()
    assert not torch.allclose(init.net[0].weight, expected["net.0.weight"])


def test_rank0_writes_the_checkpoint_and_each_rank_its_rng(ddp_run):
    folders = sorted(p.name for p in (ddp_run / "ckpt").iterdir())
    assert folders == [f"step-{ddp_worker.STEPS:08d}"]
    files = sorted(p.name for p in (ddp_run / "ckpt" / folders[0]).iterdir())
    assert files == ["SHA256SUMS", "model.safetensors", "rng-1.pt", "state.pt"]
    state = torch.load(ddp_run / "ckpt" / folders[0] / "state.pt", weights_only=True)
    assert state["world_size"] == 2 and state["step"] == ddp_worker.STEPS

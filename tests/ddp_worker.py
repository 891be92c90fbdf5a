"""Launched by tests/test_ddp.py under ``python -m torch.distributed.run --nproc_per_node 2``.

Each process trains with :func:`shoulders.train.fit` (which joins the gloo process group from torchrun's
environment) and writes what it ended with under the output folder given as the only argument:

* ``loader-rank{r}.safetensors`` / ``loader-seen-rank{r}.json``: a DataLoader of per-process batches of 4,
  re-sharded with a DistributedSampler;
* ``strided-rank{r}.safetensors`` / ``strided-seen-rank{r}.json``: a plain list of batches of 4, rank-strided;
* ``history-rank{r}.json``: the loader run's history;
* ``resumed-rank{r}.safetensors``: the loader run again, as STEPS // 2 steps + a resume, checkpoints in ``ckpt/``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import shoulders as sh
from shoulders.train import fit, schedules

STEPS = 10  # 64 samples in global batches of 8: 8 updates an epoch, so the run crosses an epoch boundary
PER_RANK = 4


class Net(nn.Module):
    """``model(idx, x, y)`` -> MSE loss; records which samples each forward pass saw."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
        self.seen: list[list[int]] = []

    def forward(self, idx, x, y):
        self.seen.append(idx.tolist())
        return nn.functional.mse_loss(self.net(x).squeeze(-1), y)


def dataset() -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 4, generator=g)
    return TensorDataset(torch.arange(64), x, torch.sin(x.sum(-1)))


def build():
    sh.seed(0)
    model = Net()
    return model, torch.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.01)


def train(model, opt, batches, steps=STEPS, **kw):
    return fit(model, batches, opt, steps=steps, schedule=schedules.cosine_warmup(2, STEPS), clip=0.5,
               progress=False, device="cpu", **kw)


def main(out: Path) -> None:
    torch.set_num_threads(1)
    model, opt = build()
    hist = train(model, opt, DataLoader(dataset(), batch_size=PER_RANK, shuffle=False))
    rank = torch.distributed.get_rank()  # fit joined the process group
    save_file(dict(model.state_dict()), str(out / f"loader-rank{rank}.safetensors"))
    (out / f"loader-seen-rank{rank}.json").write_text(json.dumps(model.seen))
    hist.save(out / f"history-rank{rank}.json")

    model, opt = build()
    ds = dataset()
    batches = [tuple(t[i:i + PER_RANK] for t in ds.tensors) for i in range(0, 64, PER_RANK)]
    train(model, opt, batches)
    save_file(dict(model.state_dict()), str(out / f"strided-rank{rank}.safetensors"))
    (out / f"strided-seen-rank{rank}.json").write_text(json.dumps(model.seen))

    model, opt = build()
    train(model, opt, DataLoader(dataset(), batch_size=PER_RANK, shuffle=False), steps=STEPS // 2,
          checkpoint=out / "ckpt")
    model, opt = build()
    train(model, opt, DataLoader(dataset(), batch_size=PER_RANK, shuffle=False), checkpoint=out / "ckpt")
    save_file(dict(model.state_dict()), str(out / f"resumed-rank{rank}.safetensors"))
    sh.train.distributed.cleanup()


if __name__ == "__main__":
    main(Path(sys.argv[1]))

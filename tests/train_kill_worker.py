"""Trained by tests/test_faults_training.py and killed at random moments: ``python train_kill_worker.py ROOT OUT``.

Trains a small dropout network on shuffled batches for ``STEPS`` updates with a checkpoint after every update in
ROOT (resuming from it when it holds one), and writes the final weights to OUT when it gets to the end.
"""
from __future__ import annotations

import os
import sys
import time

import torch
from safetensors.torch import save_file
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import shoulders as sh
from shoulders.train import Callback, fit

STEPS = 30


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 32)
        self.b = nn.Linear(32, 1)
        self.drop = nn.Dropout(0.2)

    def forward(self, x, y):
        return nn.functional.mse_loss(self.b(self.drop(torch.tanh(self.a(x)))).squeeze(-1), y)


class Slow(Callback):
    """A few milliseconds a step, so a kill lands anywhere: in a step, in a save, between the two."""

    def on_step_end(self, run, logs):
        time.sleep(0.004)


def main(root: str, out: str) -> None:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    sh.seed(0)
    model = Net()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 6, generator=g)
    batches = DataLoader(TensorDataset(x, x.sum(-1)), batch_size=8, shuffle=True)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    fit(model, batches, opt, steps=STEPS, checkpoint=root, checkpoint_every=1, callbacks=[Slow()], progress=False,
        device="cpu", seed=5)
    partial = f"{out}.partial"  # written whole, then renamed: a kill during the save leaves no OUT
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, partial)
    os.replace(partial, out)
    torch.set_num_threads(threads)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

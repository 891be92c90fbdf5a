"""Preset health: every preset (smoke, cpu, full) of every chapter config builds its model and takes one
optimisation step through the book's training loop on a tiny batch on CPU, so no preset rots unseen."""
from __future__ import annotations

import pytest
import torch

import shoulders as sh
from shoulders.presets import all_configs

CASES = [(cls, s) for cls in all_configs() for s in sh.SCALES]


def test_configs_are_discovered():
    names = {cls.__name__ for cls, _ in CASES}
    assert "LSTMLMConfig" in names


@pytest.mark.parametrize("cls, scale", CASES, ids=[f"{c.__name__}-{s}" for c, s in CASES])
def test_preset_builds_and_takes_one_step(cls, scale):
    cfg = cls.preset(scale)
    assert cfg.scale == scale
    if not hasattr(cfg, "build"):  # hyper-parameters only (BertFinetuningConfig): the preset builds, no model to step
        return
    sh.seed(0)
    model = cfg.build()
    batch = cfg.example_batch()
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    hist = sh.train.fit(model, [batch], opt, steps=1, progress=False, device="cpu")
    loss = hist.last("loss")
    assert loss == loss and abs(loss) < float("inf"), f"{cls.__name__}[{scale}] gave a non-finite loss"
    changed = [k for k, v in model.state_dict().items() if not torch.equal(v, before[k])]
    assert changed, f"{cls.__name__}[{scale}]: one optimisation step changed no parameter"

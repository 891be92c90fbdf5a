"""A giant small enough for tests: a linear regressor "pre-trained" in five steps, with a two-word WordPiece.

Imported by tests/test_giants.py and run as a script by its two-process race test (``python tiny_giant.py OUT``
loads the giant and writes the sha256 of its weights file to OUT). Its recipe appends the process id to the file
named by ``TINY_GIANT_LOG`` (if set) each time it really trains, so a test can count trainings.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from typing import ClassVar

import torch
from torch import nn

import shoulders as sh
from shoulders.config import Config
from shoulders.recipes.artefact import Artefact
from shoulders.text.wordpiece import WordPiece


@dataclasses.dataclass
class TinyConfig(Config):
    width: int = 4
    steps: int = 5
    pause: float = 0.0  # seconds the recipe sleeps (the race test makes the two processes overlap)
    snapshots: tuple[int, ...] = ()  # steps whose weights the giant keeps
    presets: ClassVar = {s: {} for s in sh.SCALES}


class TinyModel(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.linear = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (self.linear(x).squeeze(-1) - y).square().mean()


def build(cfg: TinyConfig, tok: WordPiece) -> TinyModel:
    return TinyModel(cfg.width)


def train(cfg: TinyConfig, *, device=None, progress=True, **hints) -> Artefact:
    log = os.environ.get("TINY_GIANT_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
    time.sleep(cfg.pause)
    model = build(cfg, None)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16, cfg.width, generator=g)
    batches = [(x, x.sum(1))]
    snapshots = sh.train.Snapshots(cfg.snapshots)
    hist = sh.train.fit(model, batches, torch.optim.SGD(model.parameters(), lr=0.1), steps=cfg.steps,
                        progress=False, device=device or "cpu", callbacks=[snapshots])
    tok = WordPiece(WordPiece.SPECIALS + ("a", "b", "##b"))
    return Artefact(model=model, history=hist, tokenizer=tok, metrics={"final_loss": hist.last("loss")},
                    facts={"what": "a test giant"}, snapshots=snapshots.states)


TINY = sh.giants.Giant(name="tiny-test", title="A tiny test giant", chapter="tests", config=TinyConfig, train=train,
                       build=build, tokenizer=WordPiece, data=("wikitext-2",), minutes={"smoke": 0.01})
sh.giants.register(TINY, replace=True)


if __name__ == "__main__":  # the race test: load (train or wait) and report the weights' sha256
    loaded = sh.giants.load("tiny-test", TinyConfig.preset("smoke", pause=1.5), progress=False)
    card = loaded.card["files"]["model.safetensors"]["sha256"]
    with open(sys.argv[1], "w") as f:
        f.write(f"{card} {loaded.trained}\n")

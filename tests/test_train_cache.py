"""load_or_train: the first call trains and caches, the second loads without training."""
import dataclasses

import torch
from torch import nn

import shoulders as sh
from shoulders.train import History, fit, load_or_train
from shoulders.train.cache import cache_key, models_root


@dataclasses.dataclass
class Cfg:
    steps: int = 3
    lr: float = 0.1


def test_trains_once_then_loads(tmp_path):
    calls = []

    def train_fn(model):
        calls.append(1)
        return fit(model, [torch.randn(4, 2)], torch.optim.SGD(model.parameters(), lr=0.1), steps=3,
                   loss_fn=lambda m, x: m(x).pow(2).mean(), progress=False, device="cpu")

    sh.seed(0)
    first = nn.Linear(2, 1)
    hist = load_or_train("toy", first, train_fn, root=tmp_path, config=Cfg())
    second = nn.Linear(2, 1)
    again = load_or_train("toy", second, train_fn, root=tmp_path, config=Cfg())
    assert calls == [1]
    assert torch.equal(first.weight, second.weight) and torch.equal(first.bias, second.bias)
    assert isinstance(again, History) and again.series("loss")[1].tolist() == hist.series("loss")[1].tolist()
    entry = tmp_path / cache_key("toy", Cfg())
    assert sorted(p.name for p in entry.iterdir()) == ["config.json", "history.json", "model.safetensors"]
    load_or_train("toy", nn.Linear(2, 1), train_fn, root=tmp_path, config=Cfg(lr=0.2))  # another config trains
    assert calls == [1, 1]
    assert len([p for p in tmp_path.iterdir()]) == 2


def test_key_and_default_root(monkeypatch, tmp_path):
    assert cache_key("m", {"a": 1, "b": 2}, "cpu") == cache_key("m", {"b": 2, "a": 1}, "cpu")
    assert cache_key("m", {"a": 1}, "cpu") != cache_key("m", {"a": 1}, "smoke")
    assert cache_key("m", {"a": 1}, "cpu").startswith("m-cpu-")
    monkeypatch.setenv("SHOULDERS_DATA", str(tmp_path))
    assert models_root() == tmp_path / "models"

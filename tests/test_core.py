"""shoulders' core: scale, device, seed, show, config presets."""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
import pytest
import torch

import shoulders as sh
from shoulders.config import Config, ConfigError
from shoulders.device import autocast_dtype


@pytest.mark.parametrize("value", ["smoke", "cpu", "full", " SMOKE "])
def test_scale_from_env(monkeypatch, value):
    monkeypatch.setenv("SHOULDERS_SCALE", value)
    assert sh.scale() == value.strip().lower()


def test_unknown_scale_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("SHOULDERS_SCALE", "huge")
    with pytest.raises(sh.ScaleError, match=r"'huge'.*smoke, cpu, full"):
        sh.scale()


def test_unset_scale_follows_cuda(monkeypatch):
    monkeypatch.delenv("SHOULDERS_SCALE", raising=False)
    assert sh.scale() == ("full" if torch.cuda.is_available() else "cpu")


def test_device_default_and_override(monkeypatch):
    monkeypatch.delenv("SHOULDERS_DEVICE", raising=False)
    expected = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
    assert sh.device().type == expected
    monkeypatch.setenv("SHOULDERS_DEVICE", "cpu")
    assert sh.device() == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_device_override_to_missing_hardware_is_an_error(monkeypatch):
    monkeypatch.setenv("SHOULDERS_DEVICE", "cuda")
    with pytest.raises(sh.DeviceError, match="no cuda device"):
        sh.device()
    monkeypatch.setenv("SHOULDERS_DEVICE", "tpu-please")
    with pytest.raises(sh.DeviceError, match="not a device name"):
        sh.device()


def test_seed_makes_every_generator_repeat():
    def draw():
        import random

        return random.random(), float(np.random.rand()), torch.rand(3)

    sh.seed(7)
    a = draw()
    sh.seed(7)
    b = draw()
    assert a[0] == b[0] and a[1] == b[1] and torch.equal(a[2], b[2])
    sh.seed(8)
    assert not torch.equal(draw()[2], a[2])


def test_seed_deterministic_flag_round_trips():
    sh.seed(0, deterministic=True)
    assert torch.are_deterministic_algorithms_enabled()
    sh.seed(0)
    assert not torch.are_deterministic_algorithms_enabled()


def test_show_prints_package_source(capsys):
    sh.show(sh.seed)
    out = capsys.readouterr().out
    assert "def seed(" in out and "torch.manual_seed" in out
    with pytest.raises(TypeError, match="cannot show"):
        sh.source(3)


def test_setup_reports_scale_and_device(monkeypatch, capsys):
    monkeypatch.setenv("SHOULDERS_SCALE", "smoke")
    monkeypatch.setenv("SHOULDERS_DEVICE", "cpu")
    facts = sh.setup(seed_value=3)
    line = capsys.readouterr().out
    assert facts["scale"] == "smoke" and facts["device"] == "cpu" and facts["threads"] >= 1
    assert "scale=smoke" in line and "device=cpu" in line


@dataclasses.dataclass
class _DemoConfig(Config):
    width: int = 8
    lr: float = 1e-3
    presets: ClassVar = {"smoke": {"width": 2}, "cpu": {"width": 16}, "full": {"width": 64, "lr": 3e-4}}

    def validate(self) -> None:
        if self.width <= 0:
            raise ConfigError(f"width must be positive, got {self.width}")


def test_config_presets_overrides_and_errors(monkeypatch):
    assert _DemoConfig.preset("smoke").width == 2
    full = _DemoConfig.preset("full")
    assert (full.width, full.lr, full.scale) == (64, 3e-4, "full")
    assert _DemoConfig.preset("cpu", lr=0.5).lr == 0.5
    monkeypatch.setenv("SHOULDERS_SCALE", "smoke")
    assert _DemoConfig.preset().width == 2
    with pytest.raises(ConfigError, match="no field.*'widht'"):
        _DemoConfig.preset("cpu", widht=3)
    with pytest.raises(ConfigError, match="width must be positive"):
        _DemoConfig.preset("cpu", width=0)
    with pytest.raises(sh.ScaleError):
        _DemoConfig.preset("laptop")
    assert full.replace(width=5).width == 5 and full.replace(width=5).scale == "full"


def test_threads_default_shares_the_cores_between_xdist_workers(monkeypatch):
    import os

    from shoulders.device import ThreadsError, set_threads

    before = torch.get_num_threads()
    try:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        monkeypatch.delenv("SHOULDERS_THREADS", raising=False)
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "1")
        assert set_threads() == cores
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(2 * cores))
        assert set_threads() == 1 == torch.get_num_threads()  # never zero
        monkeypatch.setenv("SHOULDERS_THREADS", "1")
        assert set_threads() == 1
        assert set_threads(cores) == cores  # an explicit argument wins
        monkeypatch.setenv("SHOULDERS_THREADS", "100000")  # segfaulted in OpenMP: capped at the cores, with a warning
        with pytest.warns(RuntimeWarning, match=f"SHOULDERS_THREADS=100000 .* using {cores}"):
            assert set_threads() == cores == torch.get_num_threads()
        for bad in ("many", "0", "-1", "2.5", "1e9"):  # 0 and -1 used to become 1 silently
            monkeypatch.setenv("SHOULDERS_THREADS", bad)
            with pytest.raises(ThreadsError, match="SHOULDERS_THREADS must be a whole number"):
                set_threads()
        monkeypatch.setenv("SHOULDERS_THREADS", "  ")  # blank: unset
        assert set_threads() >= 1
        with pytest.raises(ThreadsError, match=r"set_threads\(n\) must be a whole number .* got 0"):
            set_threads(0)
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("native, want", [(True, torch.bfloat16), (False, None)])
def test_autocast_is_bf16_only_where_the_gpu_has_it(monkeypatch, native, want):
    """A T4 (Colab's free GPU) reports bf16 'supported' through slow emulation: train it in fp32 instead."""
    calls = []

    def fake(including_emulation=True):
        calls.append(including_emulation)
        return native or including_emulation  # emulation always "works"

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", fake)
    assert autocast_dtype("cuda") is want
    assert calls == [False]
    assert autocast_dtype("cpu") is None


def test_page_presets_are_per_scale_and_not_fields(monkeypatch):
    @dataclasses.dataclass
    class Page(Config):
        lr: float = 1.0
        presets: ClassVar = {"smoke": {}, "cpu": {}, "full": {}}
        page_presets: ClassVar = {"smoke": {"margin": 0.02}, "cpu": {"margin": 0.05}, "full": {"margin": 0.05}}

    assert Page.preset("smoke").page == {"margin": 0.02} and Page.preset("cpu").page["margin"] == 0.05
    assert "margin" not in dataclasses.asdict(Page.preset("cpu"))  # a threshold never changes what trains
    monkeypatch.setenv("SHOULDERS_SCALE", "cpu")
    assert Page().page == {"margin": 0.05}  # built by hand: the current scale

    @dataclasses.dataclass
    class Partial(Config):
        presets: ClassVar = {"smoke": {}, "cpu": {}, "full": {}}
        page_presets: ClassVar = {"smoke": {"margin": 0.02}}

    with pytest.raises(ConfigError, match="page preset"):
        Partial.preset("cpu").page

"""Where tensors live: ``cuda`` > ``mps`` > ``cpu``, overridable with ``SHOULDERS_DEVICE``.

Also the few facts the training loop needs about a device: the autocast dtype (bf16 on CUDA, none elsewhere),
how many CPU threads to use, and whether DataLoader workers may fork. PyTorch is imported by the functions that
need it, not by this module: :func:`accelerator_possible` tells, without importing it, whether there is any
device to ask PyTorch about.
"""
from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from ._seed import when_torch_loads

if TYPE_CHECKING:
    import torch

ENV_VAR = "SHOULDERS_DEVICE"
_GPU_NODES = ("/dev/nvidia0", "/dev/nvidiactl", "/dev/dxg", "/dev/kfd")  # NVIDIA, WSL2, ROCm


class DeviceError(RuntimeError):
    """The requested device does not exist on this machine."""


def cuda_possible() -> bool:
    """Whether ``torch.cuda.is_available()`` could be True here, read without importing PyTorch: the installed
    PyTorch is a CUDA (or ROCm) build, ``CUDA_VISIBLE_DEVICES`` does not hide every GPU, and the machine shows a
    GPU driver. False means certainly not; True means "ask PyTorch" (:func:`device` does)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return False
    lib = Path(next(iter(spec.submodule_search_locations))) / "lib"
    if not (any(lib.glob("*torch_cuda*")) or any(lib.glob("*torch_hip*"))):
        return False  # a CPU-only build
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    return any(os.path.exists(node) for node in _GPU_NODES) or shutil.which("nvidia-smi") is not None


def accelerator_possible() -> bool:
    """Whether :func:`device` could be anything but the CPU (``SHOULDERS_DEVICE`` names one, a CUDA GPU may be
    there, or this is Apple silicon), read without importing PyTorch."""
    wanted = os.environ.get(ENV_VAR, "").strip().lower()
    if wanted:
        return wanted != "cpu"
    return (sys.platform == "darwin" and platform.machine() == "arm64") or cuda_possible()


def _available(kind: str) -> bool:
    import torch

    if kind == "cpu":
        return True
    if kind == "cuda":
        return torch.cuda.is_available()
    if kind == "mps":
        return bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()
    return False


def device() -> torch.device:
    """The device chapters train on.

    ``SHOULDERS_DEVICE`` (``cpu``, ``cuda``, ``cuda:1``, ``mps``) overrides the automatic choice; asking for a
    device this machine lacks is an error rather than a silent fallback, so a reported number always names
    the hardware it came from. Imports PyTorch.
    """
    import torch

    wanted = os.environ.get(ENV_VAR, "").strip().lower()
    if wanted:
        try:
            dev = torch.device(wanted)
        except RuntimeError as err:
            raise DeviceError(f"{ENV_VAR}={wanted!r} is not a device name (try cpu, cuda, cuda:0 or mps)") from err
        if not _available(dev.type):
            raise DeviceError(
                f"{ENV_VAR}={wanted!r} but this machine has no {dev.type} device; "
                f"unset {ENV_VAR} to choose automatically"
            )
        if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
            raise DeviceError(f"{ENV_VAR}={wanted!r} but only {torch.cuda.device_count()} CUDA device(s) exist")
        return dev
    for kind in ("cuda", "mps"):
        if _available(kind):
            return torch.device(kind)
    return torch.device("cpu")


def autocast_dtype(dev: torch.device | str | None = None) -> torch.dtype | None:
    """bf16 on a CUDA GPU whose hardware has it (Ampere and later), else ``None`` (train in fp32).

    ``torch.cuda.is_bf16_supported()`` also says yes on older GPUs (a T4, Colab's free GPU) where bf16 is only
    emulated -- slower than fp32 there -- so emulation does not count.
    """
    import torch

    dev = torch.device(dev) if dev is not None else device()
    if dev.type == "cuda" and torch.cuda.is_bf16_supported(including_emulation=False):
        return torch.bfloat16
    return None


def dataloader_workers() -> int:
    """0 where forking worker processes is unsafe or pointless (notebook kernels on macOS/Windows), else 2."""
    if sys.platform in ("darwin", "win32"):
        return 0
    return min(2, os.cpu_count() or 1)


def available_cores() -> int:
    """The cores this process may use (``os.sched_getaffinity``: a container's real grant), else ``os.cpu_count``."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


class ThreadsError(ValueError):
    """A thread count (``SHOULDERS_THREADS`` or ``set_threads(n)``) that is not a whole number of at least 1."""


def set_threads(n: int | None = None) -> int:
    """Use ``n`` intra-op CPU threads (default: a fair share of the cores this process may use) and return it.

    A training loop in a notebook kernel was seen pinned at 100% *system* CPU when PyTorch's threads outnumbered
    the cores it actually got, so the default avoids oversubscription: ``SHOULDERS_THREADS`` if set, else the
    cores of ``os.sched_getaffinity`` (the real grant of a container) divided by the number of pytest-xdist
    workers sharing them (``PYTEST_XDIST_WORKER_COUNT``, inherited by the notebook kernels nbval starts).
    A count that is not a whole number of at least 1 is a :class:`ThreadsError` naming where it came from; more
    threads than the cores the process may use are capped at that many, with a warning (tens of thousands of
    threads crash OpenMP). PyTorch gets the number at once if it is loaded, else when it is first imported.
    """
    cores = available_cores()
    source = "set_threads(n)"
    if n is None and os.environ.get("SHOULDERS_THREADS", "").strip():
        raw, source = os.environ["SHOULDERS_THREADS"].strip(), "SHOULDERS_THREADS"
        try:
            n = int(raw)
        except ValueError:
            raise ThreadsError(f"SHOULDERS_THREADS must be a whole number of CPU threads from 1 to {cores} (the "
                               f"cores this process may use), got {raw!r}; unset it for the default") from None
    if n is None:
        n = cores
        try:
            n //= max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
        except ValueError:
            pass
        n = max(1, n)
    elif isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ThreadsError(f"{source} must be a whole number of CPU threads of at least 1, got {n!r}")
    elif n > cores:
        warnings.warn(f"{source}={n} asks for more threads than the {cores} core(s) this process may use; "
                      f"using {cores}", RuntimeWarning, stacklevel=2)
        n = cores
    when_torch_loads("threads", lambda torch: torch.set_num_threads(n))
    return n

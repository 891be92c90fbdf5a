"""Reproducibility: one call seeds Python, NumPy and PyTorch (all devices)."""
from __future__ import annotations

import os
import random

import numpy as np
import torch


def seed(n: int = 0, deterministic: bool = False) -> int:
    """Seed every random number generator a chapter uses and return ``n``.

    With ``deterministic=True`` PyTorch is also asked to use deterministic kernels (slower on GPU, and an error
    is raised by any operation that has no deterministic implementation) -- use it for exact-equality checks.
    """
    n = int(n)
    random.seed(n)
    np.random.seed(n % 2**32)
    torch.manual_seed(n)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark = False
    else:
        torch.use_deterministic_algorithms(False)
    return n

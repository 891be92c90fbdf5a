"""Fixtures shared by the unit tests."""
from __future__ import annotations

import pytest
import torch


@pytest.fixture
def one_thread():
    """Tiny models: one thread is fastest, and much faster than two on a loaded machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def pytest_configure(config):
    """Each pytest-xdist worker takes its share of the cores (as the notebook kernels do), not all of them."""
    from shoulders.device import set_threads

    set_threads()

"""The n-gram chapter is NumPy only: ``import shoulders``, ``sh.setup()`` and the n-gram models must not import
PyTorch (seconds of start-up for nothing). PyTorch still gets the seed and threads ``setup`` chose when something
imports it later. Each check runs in a fresh interpreter, where nothing has imported PyTorch yet."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from shoulders.device import accelerator_possible

ROOT = Path(__file__).resolve().parents[1]

SEQUENCE = """
import sys, tempfile
from pathlib import Path
import shoulders as sh
facts = sh.setup(seed_value=5)
from shoulders.models import ngram
counts = ngram.count_ngrams([["the", "cat", "sat", "<eos>"], ["a", "cat", "<eos>"]], order=3)
lm = ngram.NGramLM(counts, n=3, smoothing="mkn", discounts=(0.5, 1.0, 1.5))
ppl = lm.perplexity([["the", "cat", "<eos>"]])
path = ngram.write_arpa(lm, Path(tempfile.mkdtemp()) / "lm.arpa")
assert abs(ngram.load_arpa(path).perplexity([["the", "cat", "<eos>"]]) / ppl - 1) < 1e-12
loaded = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
assert not loaded, f"torch was imported: {loaded[:5]}"
assert facts["device"] == "cpu" and "loads on first use" not in facts["torch"]
import torch  # imported later, by the chapter: seeded and threaded as setup asked
assert torch.get_num_threads() == facts["threads"], (torch.get_num_threads(), facts["threads"])
first = torch.rand(3)
torch.manual_seed(5)
assert torch.equal(first, torch.rand(3)), "torch was not seeded on import"
print("torch-free", facts["threads"])
"""


def run(env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-c", SEQUENCE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.stdout


def test_ngram_chapter_sequence_does_not_import_torch():
    env = {**os.environ, "SHOULDERS_SCALE": "smoke", "SHOULDERS_DEVICE": "cpu", "SHOULDERS_THREADS": "1"}
    out = run(env)
    assert "torch-free 1" in out and "device=cpu" in out and "loads on first use" in out


@pytest.mark.skipif(accelerator_possible(), reason="this machine may have an accelerator: setup() imports torch to "
                    "name it (by design; set SHOULDERS_DEVICE=cpu to avoid that)")
def test_unset_scale_and_device_do_not_import_torch_on_a_cpu_machine():
    env = {k: v for k, v in os.environ.items() if k not in ("SHOULDERS_SCALE", "SHOULDERS_DEVICE")}
    out = run(env)
    assert "scale=cpu" in out and "torch-free" in out

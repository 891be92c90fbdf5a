"""A tokenizer learned from a corpus once per machine and kept under ``<data cache>/tokenizers/<name>/``: what
BERT's WordPiece (chapter 14) and GPT's byte-level BPE (chapter 13) share. Two processes asking at once: the first
learns and saves, the second waits for it and reads (a lock per name)."""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from .._lock import exclusive
from ..data import cache_root

__all__ = ["learned_once"]

T = TypeVar("T")


def learned_once(name: str, filename: str, load: Callable[[Path], T], learn: Callable[[], T]) -> tuple[T, float]:
    """The tokenizer saved as ``<cache>/tokenizers/<name>/<filename>`` (``load(path)``), else ``learn()``'s, saved
    there with its ``save(path)``; and the seconds spent learning (0.0 when it came from the cache)."""
    folder = cache_root() / "tokenizers" / name
    with exclusive(folder.with_suffix(".lock"), wait_message=f"waiting for another process to learn {name}"):
        if (folder / filename).exists():
            return load(folder / filename), 0.0
        t0 = time.perf_counter()
        tok = learn()
        seconds = time.perf_counter() - t0
        tok.save(folder / filename)
        return tok, seconds

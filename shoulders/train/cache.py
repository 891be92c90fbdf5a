"""Train once, load afterwards: :func:`load_or_train` caches a trained model's weights and history.

Chapters use it for models that later chapters build on (and for long runs a reader should not repeat): the
first call trains and saves, every later call -- same name, same config, same scale -- loads in seconds.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Mapping

from torch import nn

from .._scale import scale as current_scale
from .checkpoint import load_weights, write_weights
from .errors import CheckpointError
from .history import History

HISTORY = "history.json"
CONFIG = "config.json"


def models_root() -> Path:
    """Where trained models are cached: ``<shoulders.data.cache_root()>/models``.

    That is ``$SHOULDERS_DATA/models``, else ``data/models`` in a checkout of the book, else the user cache dir.
    """
    from ..data import cache_root

    return Path(cache_root()) / "models"


def _config_dict(config: Any) -> Any:
    if config is None:
        return {}
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dataclasses.asdict(config)
    if isinstance(config, Mapping):
        return dict(config)
    raise TypeError(f"config must be a dict or a dataclass, got {type(config).__name__}")


def cache_key(name: str, config: Any = None, scale: str | None = None) -> str:
    """``<name>-<scale>-<12 hex digits of sha256(config as sorted JSON)>``."""
    scale = scale or current_scale()
    blob = json.dumps(_config_dict(config), sort_keys=True, default=str)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return f"{safe}-{scale}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"


def load_or_train(
    name: str,
    model: nn.Module,
    train_fn: Callable[[nn.Module], History],
    *,
    root: str | os.PathLike | None = None,
    config: Any = None,
) -> History:
    """Load ``model``'s cached weights and return the cached history, or train it with ``train_fn`` and cache it.

    The cache entry is ``root/<name>-<scale>-<hash of config>/`` (``root`` defaults to :func:`models_root`)
    holding ``model.safetensors``, ``history.json`` and ``config.json``; it is written atomically (a temporary
    folder renamed into place), so an interrupted training leaves no half entry. A change of ``config``
    (a dict or a dataclass such as a chapter's preset) or of the scale trains anew.

    Args:
        name: the model's name in the cache (e.g. ``"ch03-lstm-lm"``).
        model: built the same way as the cached one; its weights are replaced on a cache hit.
        train_fn: ``train_fn(model) -> History``, typically a call to :func:`~shoulders.train.fit`.
        config: what determines the trained weights (hyperparameters, data sizes).
    """
    root = Path(root) if root is not None else models_root()
    key = cache_key(name, config)
    folder = root / key
    if (folder / "model.safetensors").exists() and (folder / HISTORY).exists():
        try:
            load_weights(folder / "model.safetensors", model)
        except CheckpointError as err:
            raise CheckpointError(f"{err} (cache entry {folder}: delete it to train anew)") from err
        return History.load(folder / HISTORY)
    history = train_fn(model)
    if not isinstance(history, History):
        raise TypeError(f"train_fn must return the History of its fit(...) call, got {type(history).__name__}")
    tmp = root / f".tmp-{key}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    write_weights(tmp, model, history.last_step())
    history.save(tmp / HISTORY)
    (tmp / CONFIG).write_text(json.dumps({"name": name, "scale": current_scale(), "config": _config_dict(config)},
                                         sort_keys=True, indent=1, default=str), encoding="utf-8")
    if folder.exists():  # an incomplete entry (no history): replace it
        shutil.rmtree(folder)
    os.replace(tmp, folder)
    return history

"""Hugging Face checkpoint folders, read and written the same way for every model family the book maps
(:mod:`shoulders.models.bert_hf`, :mod:`shoulders.models.gpt_hf`): ``config.json`` + ``model.safetensors`` (or a
legacy ``pytorch_model.bin``, read with ``weights_only=True``), single-file checkpoints only."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import torch
from safetensors.torch import load_file, save_file

__all__ = ["read_config", "read_weights", "write_folder"]


def read_config(folder: str | Path) -> dict[str, Any]:
    """``folder``'s ``config.json`` as a dict."""
    path = Path(folder) / "config.json"
    if not path.exists():
        raise FileNotFoundError(f"{folder} has no config.json (is it a Hugging Face model folder?)")
    return json.loads(path.read_text(encoding="utf-8"))


def read_weights(folder: str | Path, family: str) -> dict[str, torch.Tensor]:
    """The state dict of the checkpoint in ``folder`` (``family``, e.g. "BERT", names it in errors)."""
    folder = Path(folder)
    if (folder / "model.safetensors").exists():
        return load_file(str(folder / "model.safetensors"))
    if (folder / "pytorch_model.bin").exists():
        return torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    if (folder / "model.safetensors.index.json").exists() or (folder / "pytorch_model.bin.index.json").exists():
        raise FileNotFoundError(f"{folder} holds a sharded checkpoint; only single-file {family} checkpoints are read")
    raise FileNotFoundError(f"{folder} has no model.safetensors or pytorch_model.bin")


def write_folder(folder: str | Path, config: Mapping[str, Any], state: Mapping[str, torch.Tensor]) -> Path:
    """Write ``config.json`` and ``model.safetensors`` (``state``: no two entries sharing memory) into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(dict(config), indent=2) + "\n", encoding="utf-8")
    save_file({k: v.contiguous() for k, v in state.items()}, str(folder / "model.safetensors"),
              metadata={"format": "pt"})
    return folder

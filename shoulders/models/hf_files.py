"""Hugging Face checkpoint folders, read and written the same way for every model family the book maps
(:mod:`shoulders.models.bert_hf`, :mod:`shoulders.models.gpt_hf`): ``config.json`` + ``model.safetensors`` (or a
legacy ``pytorch_model.bin``, read with ``weights_only=True``), single-file checkpoints only."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import torch
from safetensors.torch import load_file, save_file

__all__ = ["LoadResult", "match_names", "read_config", "read_weights", "write_folder"]


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


class LoadResult(NamedTuple):
    """Names (Hugging Face's) that the state dict lacked, and names in it that fit nowhere."""

    missing: list[str]
    unexpected: list[str]


def match_names(model_name: str, wanted: Sequence[str], given: Iterable[str], strict: bool,
                known: Iterable[str] = ()) -> LoadResult:
    """The ``wanted`` names missing from ``given`` (in order) and the ``given`` names that are neither wanted nor
    ``known`` (aliases a loader reads or ignores), sorted; with ``strict`` either kind raises a ``KeyError``
    naming them all -- before a loader copies anything."""
    given = set(given)
    missing = [t for t in wanted if t not in given]
    unexpected = sorted(given - set(wanted) - set(known))
    if strict and (missing or unexpected):
        raise KeyError(f"the state dict does not fit {model_name}: missing {missing or 'nothing'}, "
                       f"unexpected {unexpected or 'nothing'}")
    return LoadResult(missing, unexpected)

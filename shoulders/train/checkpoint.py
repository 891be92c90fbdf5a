"""Checkpoints that survive interruptions and never unpickle code.

A run's checkpoint folder (``fit(..., checkpoint=DIR)``) holds one sub-folder per saved step::

    DIR/step-00000400/model.safetensors   the weights (safetensors: tensors only)
    DIR/step-00000400/state.pt            step, optimiser, scheduler, RNG, data position, history, callbacks
                                          (tensors and plain containers; read with torch.load(weights_only=True))
    DIR/step-00000400/rng-1.pt ...        under DDP: the RNG state of ranks 1, 2, ...
    DIR/step-00000400/SHA256SUMS          the sha256 of every other file, checked before a resume reads them

A save writes everything into ``DIR/.tmp-step-00000400/``, flushes it to disk, and then renames the folder to
``step-00000400`` -- a single atomic rename -- before deleting older steps. An interruption at any moment
leaves either the previous checkpoint or the new one complete, never a half-written folder with a
``step-*`` name. The newest ``step-*`` folder is the one a resume reads. A byte flipped on disk afterwards (a
failing drive, a bad copy) is caught by the checksums, not loaded into the model.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..data.local import file_digest
from .errors import CheckpointError

FORMAT = "shoulders.checkpoint/1"
WEIGHTS = "model.safetensors"
STATE = "state.pt"
SUMS = "SHA256SUMS"
_STEP_DIR = re.compile(r"^step-(\d+)$")
_MAX_NAMES = 20


def step_dir(root: str | os.PathLike, step: int) -> Path:
    return Path(root) / f"step-{int(step):08d}"


def tmp_dir(root: str | os.PathLike, step: int) -> Path:
    return Path(root) / f".tmp-step-{int(step):08d}"


def checkpoints(root: str | os.PathLike) -> list[tuple[int, Path]]:
    """Complete checkpoints under ``root`` as ``(step, folder)``, oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = []
    for child in root.iterdir():
        m = _STEP_DIR.match(child.name)
        if m and child.is_dir():
            found.append((int(m.group(1)), child))
    return sorted(found)


def check_writable(root: str | os.PathLike) -> None:
    """Make sure checkpoints can be written under ``root`` (creating it), before any training is spent on them."""
    root = Path(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        what = "is a file, not a folder" if root.exists() and not root.is_dir() else f"cannot be written ({err})"
        raise CheckpointError(f"checkpoint={str(root)!r} {what}: choose a folder you can write to. Nothing was "
                              "trained yet.") from err


def set_aside(root: str | os.PathLike, after: int) -> list[Path]:
    """Rename the checkpoints of steps after ``after`` to ``diverged-step-*`` (kept for a look, never loaded by a
    resume, never deleted); returns their new paths."""
    moved = []
    for step, folder in checkpoints(root):
        if step > after:
            target = folder.with_name(f"diverged-{folder.name}")
            n = 1
            while target.exists():
                target = folder.with_name(f"diverged-{folder.name}-{n}")
                n += 1
            os.replace(folder, target)
            moved.append(target)
    return moved


def latest_checkpoint(root: str | os.PathLike) -> Path | None:
    """The newest checkpoint folder under ``root`` (or ``None``)."""
    found = checkpoints(root)
    return found[-1][1] if found else None


def _resolve(path: str | os.PathLike) -> Path:
    """A checkpoint folder from a run folder, a step folder, or a ``model.safetensors`` file."""
    path = Path(path)
    if path.is_file():
        return path.parent
    if (path / WEIGHTS).exists() or (path / STATE).exists():
        return path
    latest = latest_checkpoint(path)
    if latest is None:
        raise CheckpointError(f"no checkpoint in {path}: expected {WEIGHTS} there or step-* folders holding one")
    return latest


def _fsync(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # directories cannot be opened on Windows
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- weights ---------------------------------------------------------------------------------------------------
def _dedupe(state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """Tensors to write and ``{alias: kept_name}`` for tied weights (safetensors refuses shared memory)."""
    out: dict[str, torch.Tensor] = {}
    aliases: dict[str, str] = {}
    seen: dict[tuple, str] = {}
    storages: set[tuple] = set()
    for name, t in state.items():
        if not isinstance(t, torch.Tensor):
            raise CheckpointError(f"state_dict entry {name!r} is a {type(t).__name__}, not a tensor; "
                                  "cannot write it to safetensors")
        t = t.detach()
        storage = (t.device, t.untyped_storage().data_ptr()) if t.numel() else None
        ident = (storage, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)
        if storage is not None and ident in seen:
            aliases[name] = seen[ident]
            continue
        if storage is not None:
            seen[ident] = name
        shared = storage is not None and storage in storages
        if storage is not None:
            storages.add(storage)
        t = t.to("cpu")
        out[name] = t.clone() if shared or not t.is_contiguous() or t.data_ptr() == 0 else t
        if not out[name].is_contiguous():
            out[name] = out[name].contiguous()
    return out, aliases


def write_weights(folder: Path, model: nn.Module | dict[str, torch.Tensor], step: int, name: str = WEIGHTS) -> Path:
    """Write ``model``'s weights (a module or a ``state_dict``) as ``folder / name`` in safetensors, tied weights
    once (their aliases in the metadata), with the step."""
    from safetensors.torch import save_file

    tensors, aliases = _dedupe(model if isinstance(model, dict) else model.state_dict())
    path = folder / name
    save_file(tensors, str(path), metadata={"format": FORMAT, "step": str(int(step)), "aliases": json.dumps(aliases)})
    return path


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:_MAX_NAMES])
    return shown + (f", ... and {len(names) - _MAX_NAMES} more" if len(names) > _MAX_NAMES else "")


def read_weights(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The tensors and metadata of a ``model.safetensors`` file (CheckpointError if unreadable)."""
    from safetensors import safe_open

    if not path.exists():
        raise CheckpointError(f"{path} is missing: the checkpoint folder {path.parent} is incomplete. Nothing was "
                              f"changed; move that folder away to start afresh (or to resume from an older one).")
    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            meta = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as err:  # safetensors raises its own SafetensorError, OSError, ...
        raise CheckpointError(
            f"{path} cannot be read ({type(err).__name__}: {err}); the file is truncated or corrupt. "
            f"Nothing was changed or deleted: move the folder {path.parent} away to start afresh "
            f"(or to resume from an older checkpoint)."
        ) from err
    return tensors, meta


def load_weights(path: str | os.PathLike, model: nn.Module) -> dict[str, str]:
    """Load ``model.safetensors`` (from a file, a checkpoint folder or a run folder) into ``model``.

    Every name and shape is checked first; a checkpoint of a different model raises :class:`CheckpointError`
    listing the missing, unexpected and mis-shaped names, and ``model`` is left unchanged.
    Returns the file's metadata.
    """
    path = Path(path)
    file = path if path.is_file() else _resolve(path) / WEIGHTS
    tensors, meta = read_weights(file)
    _load_into(model, tensors, meta, file)
    return meta


def _load_into(model: nn.Module, tensors: dict[str, torch.Tensor], meta: dict[str, str], file: Path) -> None:
    aliases = json.loads(meta.get("aliases", "{}"))
    expected = model.state_dict()
    # Tied weights are stored once: fill every alias from the file's metadata or from the model's own ties.
    full = dict(tensors)
    for alias, kept in aliases.items():
        if kept in tensors:
            full.setdefault(alias, tensors[kept])
    ties: dict[tuple, str] = {}
    for name, t in expected.items():
        if isinstance(t, torch.Tensor) and t.numel():
            ident = (t.device, t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape))
            if ident in ties and name not in full and ties[ident] in full:
                full[name] = full[ties[ident]]
            ties.setdefault(ident, name)
    missing = [n for n in expected if n not in full]
    unexpected = [n for n in full if n not in expected]
    shapes = [f"{n}: checkpoint {tuple(full[n].shape)} vs model {tuple(expected[n].shape)}"
              for n in expected if n in full and tuple(full[n].shape) != tuple(expected[n].shape)]
    if missing or unexpected or shapes:
        parts = []
        if missing:
            parts.append(f"missing from the checkpoint: {_names(missing)}")
        if unexpected:
            parts.append(f"in the checkpoint but not in the model: {_names(unexpected)}")
        if shapes:
            parts.append(f"shape differs: {_names(shapes)}")
        raise CheckpointError(
            f"{file} was written by a different model ({type(model).__name__} does not match). "
            + "; ".join(parts)
            + ". The model was not changed. Build the model the checkpoint came from, or use a new checkpoint folder."
        )
    model.load_state_dict({n: full[n] for n in expected}, strict=True)


# -- state -----------------------------------------------------------------------------------------------------
def write_state(folder: Path, state: dict[str, Any], name: str = STATE) -> Path:
    path = folder / name
    torch.save(state, path)
    return path


def read_state(path: str | os.PathLike, name: str = STATE) -> dict[str, Any]:
    """The training state of a checkpoint folder (or run folder), loaded with ``weights_only=True``."""
    folder = _resolve(path)
    file = folder / name
    if not file.exists():
        raise CheckpointError(f"{file} is missing: the checkpoint folder {folder} is incomplete. Nothing was changed; "
                              f"move that folder away to start afresh (or to resume from an older one).")
    try:
        state = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as err:
        raise CheckpointError(
            f"{file} cannot be read ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); it is "
            f"truncated, corrupt, or not a shoulders checkpoint (only tensors and plain containers are accepted). "
            f"Nothing was changed or deleted: move the folder {folder} away to start afresh "
            f"(or to resume from an older checkpoint)."
        ) from err
    if name == STATE and (not isinstance(state, dict) or state.get("format") != FORMAT or "step" not in state):
        raise CheckpointError(f"{file} is not a {FORMAT} training state. Nothing was changed; move the folder "
                              f"{folder} away to start afresh.")
    return state


# -- saving ----------------------------------------------------------------------------------------------------
def begin(root: str | os.PathLike, step: int) -> Path:
    """Create the temporary folder of a save (removing leftovers of an interrupted one)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for child in root.iterdir():
        if child.name.startswith((".tmp-step-", ".old-step-")) and child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
    tmp = tmp_dir(root, step)
    tmp.mkdir()
    return tmp


def write_sums(folder: Path) -> Path:
    """``SHA256SUMS`` (``<hex>  <name>`` lines, as ``sha256sum`` writes them) of every file of ``folder``."""
    lines = [f"{file_digest(f)}  {f.name}\n" for f in sorted(folder.iterdir()) if f.is_file() and f.name != SUMS]
    path = folder / SUMS
    path.write_text("".join(lines), encoding="utf-8")
    return path


def check_sums(folder: Path) -> None:
    """Every file listed in ``folder/SHA256SUMS`` must have its sha256 (a checkpoint written before checksums
    existed, without the file, is accepted as it is)."""
    sums = folder / SUMS
    if not sums.exists():
        return
    try:
        lines = sums.read_text(encoding="utf-8").splitlines()
        listed = [line.partition("  ") for line in lines]
        if not listed or any(len(d) != 64 or not sep or "/" in n for d, sep, n in listed):
            raise ValueError("not '<sha256>  <name>' lines")
    except (UnicodeDecodeError, ValueError) as err:
        raise CheckpointError(f"{sums} is damaged ({err}): the checkpoint folder {folder} cannot be trusted. Nothing "
                              "was loaded or changed; move the folder away to resume from an older one.") from None
    for digest, _, name in listed:
        file = folder / name
        if not file.is_file():
            raise CheckpointError(f"{file} is missing (listed in {sums}): the checkpoint folder {folder} is "
                                  "incomplete. Nothing was changed; move the folder away to resume from an older one.")
        if file_digest(file) != digest:
            raise CheckpointError(
                f"{file} is truncated, corrupt or altered: it does not match its checksum in {sums} (it changed on "
                f"disk after it was written). Nothing was loaded or changed; move the folder {folder} away to resume "
                "from an older checkpoint (or start afresh).")


def commit(root: str | os.PathLike, step: int, keep: int = 1, protect: int | None = None) -> Path:
    """Checksum and flush the temporary folder, rename it into place atomically, then drop all but the ``keep``
    newest -- and the checkpoint of step ``protect``, which is kept too (the last one with a sane loss)."""
    root = Path(root)
    tmp, final = tmp_dir(root, step), step_dir(root, step)
    write_sums(tmp)
    for f in tmp.iterdir():
        _fsync(f)
    _fsync(tmp)
    if final.exists():  # re-saving the same step (e.g. after early stopping): replace it, old copy last
        old = root / f".old-{final.name}"
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, final)
    _fsync(root)
    for old_step, folder in checkpoints(root)[:-keep] if keep > 0 else []:
        if old_step != protect:
            _remove(folder)
    return final


def _remove(folder: Path) -> None:
    """Delete a checkpoint folder so that no half-deleted ``step-*`` folder can ever be seen: first an atomic
    rename to a hidden name (a kill after it leaves a leftover that :func:`begin` sweeps away), then the files."""
    hidden = folder.with_name(f".old-{folder.name}")
    shutil.rmtree(hidden, ignore_errors=True)
    os.replace(folder, hidden)
    shutil.rmtree(hidden, ignore_errors=True)


def save_checkpoint(root: str | os.PathLike, step: int, model: nn.Module, state: dict[str, Any], keep: int = 1) -> Path:
    """Write ``model``'s weights and ``state`` as ``root/step-XXXXXXXX`` atomically; returns that folder."""
    tmp = begin(root, step)
    write_weights(tmp, model, step)
    write_state(tmp, {"format": FORMAT, **state, "step": int(step)})
    return commit(root, step, keep)


def load_checkpoint(path: str | os.PathLike, model: nn.Module,
                    optimizer: torch.optim.Optimizer | None = None) -> dict[str, Any]:
    """Load weights (and the optimiser state, if given) from a checkpoint; returns the saved training state.

    ``path`` is a run folder (its newest checkpoint is used), a ``step-*`` folder, or a ``model.safetensors``.
    Everything is read and checked before anything is changed.
    """
    folder = _resolve(path)
    check_sums(folder)
    state = read_state(folder)
    file = folder / WEIGHTS
    if optimizer is not None and "optimizer" in state:
        _check_optimizer(optimizer, state["optimizer"], folder / STATE)
    tensors, meta = read_weights(file)
    if meta.get("step") is not None and int(meta["step"]) != int(state["step"]):
        raise CheckpointError(f"{file} is from step {meta['step']} but {folder / STATE} from step {state['step']}: "
                              f"the files of {folder} do not belong together. Move the folder away to start afresh.")
    _load_into(model, tensors, meta, file)
    if optimizer is not None and "optimizer" in state:
        optimizer.load_state_dict(state["optimizer"])
    return state


def _check_optimizer(optimizer: torch.optim.Optimizer, saved: dict[str, Any], file: Path) -> None:
    groups = optimizer.param_groups
    saved_groups = saved.get("param_groups", [])
    sizes = [len(g["params"]) for g in groups]
    if sizes != [len(s["params"]) for s in saved_groups]:
        raise CheckpointError(
            f"{file}: the optimiser state has {len(saved_groups)} param group(s) of sizes "
            f"{[len(s['params']) for s in saved_groups]} but the optimiser has {len(groups)} of sizes "
            f"{[len(g['params']) for g in groups]}. Build the optimiser the same way as for the checkpointed run, "
            f"or use a new checkpoint folder."
        )

"""Giants on disk: trained once, cached, loaded by every later page, exported and imported with a model card.

One folder per giant, scale and config, ``<data cache>/giants/<name>-<scale>-<hash of the config>/``::

    model.safetensors   the weights (safetensors: tensors only, nothing unpickled)
    snapshot-<step>.safetensors   the weights part-way through training, where the recipe kept some
    config.json         the giant's name, the scale and the recipe config that trained it
    history.json        what the training run recorded (shoulders.train.History)
    vocab.txt           the tokenizer, where the giant has one
    README.md           the model card, for people
    card.json           the model card, for programs: data, steps, scale, wall time, machine, metrics, and the
                        size and sha256 of every other file

The cache folder *is* the export format: :func:`export` copies it after checking every checksum, and
:func:`import_folder` checks them again before copying a folder (from a colleague, a mirror or a download) into
the cache, so the imported weights are bit-identical. A folder appears in the cache only complete (written
under a temporary name, then renamed); two processes that need the same giant take one lock
(:func:`shoulders._lock.exclusive`): the first trains, the second waits and loads.

The hash covers every field of the config, so changing a preset retrains its giant. A field added to a config
later is declared with :func:`shoulders.config.late_field`: it is hashed only when set away from its default, so
giants people have already trained keep their keys (BERT's ``norm_first``, a lever of chapter 14b, is one).
"""
from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Mapping

from torch import nn

from .._atomic import write_text_atomic
from .._lock import exclusive
from .._scale import check_scale
from .._scale import scale as current_scale
from .._seed import seed
from ..config import key_fields
from ..data import Checksum, Dataset, Download, LocalFile, cache_root, credits
from ..data import path as data_path
from ..data.local import file_digest
from ..evaluate.ledger import machine
from ..train.checkpoint import load_weights, write_weights
from ..train.history import History
from .catalogue import Giant, get

__all__ = ["CARD", "FORMAT", "GiantError", "Loaded", "cached", "export", "import_folder", "key", "load",
           "published_entry", "root", "snapshot_file", "verify"]

FORMAT = "shoulders.giant/1"
WEIGHTS, CONFIG, HISTORY, README, CARD = "model.safetensors", "config.json", "history.json", "README.md", "card.json"
ENV_ROOT = "SHOULDERS_GIANTS"


class GiantError(RuntimeError):
    """A giant's folder is missing, incomplete, corrupt or not what it claims to be."""


@dataclasses.dataclass
class Loaded:
    """A giant ready to use: the model (on the CPU, in eval mode), its tokenizer, history and card."""

    name: str
    scale: str
    config: Any
    model: nn.Module
    tokenizer: Any
    history: History
    card: dict[str, Any]
    folder: Path
    seconds: float  # how long load() took (training included when it trained)
    trained: bool  # whether this call trained it

    @property
    def metrics(self) -> dict[str, float]:
        """The metrics the recipe measured at the end of training (from the card)."""
        return dict(self.card.get("metrics", {}))

    @property
    def snapshot_steps(self) -> list[int]:
        """The steps at which the recipe kept a copy of the weights (the final ones are ``model``)."""
        return [int(s) for s in self.card.get("snapshots", [])]

    def snapshot(self, step: int) -> nn.Module:
        """The model as it was after ``step`` updates (a new module on the CPU, in eval mode)."""
        if int(step) not in self.snapshot_steps:
            raise GiantError(f"giant {self.name!r} has no snapshot at step {step}; it has {self.snapshot_steps} "
                             f"and the final weights (step {self.card.get('steps')})")
        return _built(get(self.name), self.config, self.tokenizer, self.folder, snapshot_file(int(step))).eval()


def snapshot_file(step: int) -> str:
    """The file name of the snapshot after ``step`` updates."""
    return f"snapshot-{int(step):08d}.safetensors"


def root() -> Path:
    """Where giants are cached: ``SHOULDERS_GIANTS`` if set (blank: unset), else ``<data cache root>/giants``.
    A path that exists but is not a folder is a :class:`GiantError` naming the variable."""
    env = os.environ.get(ENV_ROOT, "").strip()
    folder = Path(env).expanduser() if env else Path(cache_root()) / "giants"
    blocked = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        source = f"{ENV_ROOT}={env!r}" if env else "the giants folder"
        raise GiantError(f"{source} cannot hold giants: {blocked} is a file, not a folder. Point it at a folder "
                         "you can write to.")
    return folder


def _config_dict(cfg: Any) -> dict[str, Any]:
    """The config a giant's cache key hashes and its metadata keeps: every field as a JSON value, except a
    :func:`~shoulders.config.late_field` at its default."""
    return json.loads(json.dumps(key_fields(cfg), sort_keys=True, default=str))


def key(giant: Giant | str, cfg: Any = None, scale: str | None = None) -> str:
    """``<name>-<scale>-<12 hex digits of sha256(format, name, scale, config[, base's key])>``: the cache folder's
    name (a giant with a :attr:`~shoulders.giants.catalogue.Giant.base` hashes the base's key too)."""
    giant = get(giant)
    scale, cfg = _scale_and_config(giant, cfg, scale)
    return _key(giant.name, scale, _config_dict(cfg), _base_key(giant, scale))


def _base_key(giant: Giant, scale: str) -> str | None:
    """The cache key of the giant ``giant`` continues from (its preset at ``scale``), or ``None``."""
    return key(giant.base, scale=scale) if giant.base is not None else None


def _key(name: str, scale: str, config: Mapping[str, Any], base: str | None = None) -> str:
    identity = {"format": FORMAT, "name": name, "scale": scale, "config": config}
    if base is not None:
        identity["base"] = base
    blob = json.dumps(identity, sort_keys=True)
    return f"{name}-{scale}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"


def _scale_and_config(giant: Giant, cfg: Any, scale: str | None) -> tuple[str, Any]:
    if cfg is None:
        scale = check_scale(scale) if scale is not None else current_scale()
        return scale, giant.config.preset(scale)
    if not isinstance(cfg, giant.config):
        raise TypeError(f"giant {giant.name!r} is trained from a {giant.config.__name__}, got {type(cfg).__name__}")
    scale = check_scale(scale or getattr(cfg, "scale", None) or current_scale())
    return scale, cfg


def cached(name: Giant | str, cfg: Any = None, scale: str | None = None) -> Path | None:
    """The cache folder of the giant for ``cfg`` (default: the preset of ``scale``), or ``None`` if not cached."""
    folder = root() / key(name, cfg, scale)
    return folder if (folder / CARD).is_file() else None


def load(name: Giant | str, cfg: Any = None, *, scale: str | None = None, device: Any = None,
         progress: bool = True, download: bool = False, verify_files: bool = False, **hints: Any) -> Loaded:
    """The giant ``name`` trained with ``cfg`` (default: the preset of the current scale): from the cache, else
    trained now through its recipe (once; a progress bar shows the ETA) and cached.

    Args:
        device: where training runs (default :func:`shoulders.device`); the returned model is on the CPU.
        download: if not cached, fetch the giant's published export for this scale (a registry entry; the
            offline mirror ``SHOULDERS_DATA_MIRROR`` works the same way) instead of training it. Only the
            preset config has a published export.
        verify_files: check every file's sha256 against the card before loading (always done on import/export).
        hints: passed to the recipe when it trains (e.g. ``data=`` a page has prepared already); they must be
            what the recipe would compute itself.
    """
    giant = get(name)
    scale, cfg = _scale_and_config(giant, cfg, scale)
    folder = root() / _key(giant.name, scale, _config_dict(cfg), _base_key(giant, scale))
    t0 = time.perf_counter()
    trained = False
    if not (folder / CARD).is_file():
        with exclusive(folder.with_name(folder.name + ".lock"),
                       wait_message=f"giant {giant.name!r} ({scale}): another process is preparing it; waiting"):
            if not (folder / CARD).is_file():  # nobody else made it while we waited
                if download:
                    _download(giant, scale, cfg, folder)
                else:
                    _train(giant, cfg, scale, folder, device, progress, hints)
                    trained = True
    loaded = _read(giant, cfg, scale, folder, verify_files)
    loaded.seconds, loaded.trained = time.perf_counter() - t0, trained
    return loaded


def _train(giant: Giant, cfg: Any, scale: str, folder: Path, device: Any, progress: bool,
           hints: Mapping[str, Any]) -> None:
    minutes = giant.minutes.get(scale)
    about = f"about {minutes:g} min on {'one GPU' if scale == 'full' else '2 CPU cores'}, " if minutes else ""
    print(f"giant {giant.name!r} is not cached at scale={scale}: training it now ({about}once; later calls load it "
          f"from {folder})", file=sys.stderr, flush=True)
    if giant.base is not None:  # the giant it continues from: cached, or trained first (and timed on its own card)
        hints = {**hints, "base": load(giant.base, scale=scale, device=device, progress=progress)}
    t0 = time.perf_counter()
    seed(0)  # a giant is a function of its recipe, config and scale -- not of what the page ran before
    art = giant.train(cfg, device=device, progress=progress, **hints)
    write(giant, cfg, scale, art, folder, wall_time_s=time.perf_counter() - t0)


def write(giant: Giant, cfg: Any, scale: str, art: Any, folder: Path, wall_time_s: float) -> Path:
    """Write a recipe's :class:`~shoulders.recipes.artefact.Artefact` as the giant's folder (atomically)."""
    folder = Path(folder)
    tmp = folder.with_name(f".tmp-{folder.name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        write_weights(tmp, art.model, art.history.last_step())
        snapshots = sorted(art.snapshots)
        for step in snapshots:
            write_weights(tmp, art.snapshots[step], step, name=snapshot_file(step))
        art.history.save(tmp / HISTORY)
        config = {"format": FORMAT, "name": giant.name, "scale": scale, "config_class": giant.config.__name__,
                  "config": _config_dict(cfg)}
        if giant.base is not None:
            config["base"] = _base_key(giant, scale)
        write_text_atomic(tmp / CONFIG, json.dumps(config, sort_keys=True, indent=1))
        if giant.tokenizer is not None:
            art.tokenizer.save(tmp / giant.tokenizer_file)
        card = {
            "format": FORMAT, "name": giant.name, "title": giant.title, "chapter": giant.chapter, "scale": scale,
            "config": config["config"], "steps": art.history.last_step(), "wall_time_s": round(wall_time_s, 1),
            "machine": machine(), "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "parameters": sum(p.numel() for p in art.model.parameters()),
            "metrics": {k: float(v) for k, v in art.metrics.items()}, "facts": dict(art.facts),
            "snapshots": [int(s) for s in snapshots], **({"base": config["base"]} if "base" in config else {}),
            "data": credits(list(giant.data)) if giant.data else [],
        }
        write_text_atomic(tmp / README, model_card(card))
        for f in tmp.iterdir():
            os.chmod(f, 0o644)  # as readable as the data (safetensors writes its file private)
        card["files"] = {p.name: {"size": p.stat().st_size, "sha256": file_digest(p)}
                         for p in sorted(tmp.iterdir()) if p.is_file()}
        write_text_atomic(tmp / CARD, json.dumps(card, indent=1, default=str))  # last: marks the folder complete
        if folder.exists():  # an incomplete leftover (no card): replace it
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def _read(giant: Giant, cfg: Any, scale: str, folder: Path, verify_files: bool) -> Loaded:
    card = _card(folder)
    if verify_files:
        verify(folder)
    tok = giant.tokenizer.load(folder / giant.tokenizer_file) if giant.tokenizer is not None else None
    model = _built(giant, cfg, tok, folder, WEIGHTS)
    return Loaded(giant.name, scale, cfg, model.eval(), tok, History.load(folder / HISTORY), card, folder, 0.0, False)


def _built(giant: Giant, cfg: Any, tok: Any, folder: Path, weights: str) -> nn.Module:
    """The giant's untrained model with the weights of ``folder / weights`` loaded into it."""
    model = giant.build(cfg, tok)
    try:
        load_weights(folder / weights, model)
    except Exception as err:
        raise GiantError(f"giant {giant.name!r}: cannot load {folder / weights} ({err}); delete {folder} to train "
                         "it again, or import a good copy") from err
    return model


def _card(folder: Path) -> dict[str, Any]:
    try:
        card = json.loads((Path(folder) / CARD).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise GiantError(f"{folder} is not a giant's folder: {CARD} is missing or unreadable ({err})") from err
    if not isinstance(card, dict) or card.get("format") != FORMAT or not isinstance(card.get("files"), dict):
        raise GiantError(f"{folder / CARD} is not a {FORMAT} model card")
    return card


def verify(folder: str | os.PathLike) -> dict[str, Any]:
    """Check that ``folder`` holds exactly the files its card lists (hidden files aside), each with the card's size
    and sha256; returns the card. A missing, extra, truncated or altered file is a :class:`GiantError` naming it."""
    folder = Path(folder)
    card = _card(folder)
    listed = card["files"]
    # hidden files are not the giant's (a data-cache stamp when the folder came through shoulders.data.path)
    present = {p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")} - {CARD}
    if set(listed) != present:
        missing, extra = sorted(set(listed) - present), sorted(present - set(listed))
        raise GiantError(f"{folder}: the card lists {sorted(listed)}; missing {missing}, not on the card {extra}")
    for name, fact in listed.items():
        p = folder / name
        if p.stat().st_size != fact["size"] or file_digest(p) != fact["sha256"]:
            raise GiantError(f"{p} does not match its model card (size {p.stat().st_size} vs {fact['size']}, "
                             "or sha256): the file is truncated or altered; use a good copy")
    return card


def export(name: Giant | str, dest: str | os.PathLike, cfg: Any = None, *, scale: str | None = None,
           **load_kwargs: Any) -> Path:
    """Copy the giant's folder (trained first if it is not cached) to ``dest`` -- a new or empty folder -- after
    checking every file against its card; returns ``dest``."""
    loaded = load(name, cfg, scale=scale, **load_kwargs)
    verify(loaded.folder)
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty: export into a new or empty folder")
    dest.mkdir(parents=True, exist_ok=True)
    for p in sorted(loaded.folder.iterdir()):
        if p.is_file():
            shutil.copy2(p, dest / p.name)
    verify(dest)
    return dest


def import_folder(src: str | os.PathLike) -> Path:
    """Put an exported giant folder into the cache (after checking every file against its card); returns the
    cache folder. Importing a giant that is cached already checks that the two are identical."""
    src = Path(src)
    card, folder = _importable(src)
    with exclusive(folder.with_name(folder.name + ".lock")):
        _install(src, card, folder)
    return folder


def _importable(src: Path) -> tuple[dict[str, Any], Path]:
    """The card of an exported folder (every file checked) and the cache folder it belongs in."""
    card = verify(src)
    config = json.loads((src / CONFIG).read_text(encoding="utf-8"))
    giant = get(config["name"])
    if config.get("format") != FORMAT or config["config"] != card["config"] or card["name"] != giant.name:
        raise GiantError(f"{src}: {CONFIG} and {CARD} disagree about what was trained")
    base = _base_key(giant, config["scale"])
    if config.get("base") != base:
        raise GiantError(f"{src}: this {giant.name!r} continued from {config.get('base')}, but the book's "
                         f"{giant.name!r} continues from {base}")
    return card, root() / _key(giant.name, config["scale"], config["config"], base)


def _install(src: Path, card: dict[str, Any], folder: Path) -> None:
    """Copy a checked export into the cache folder, atomically; the caller holds the folder's lock."""
    if (folder / CARD).is_file():
        if _card(folder)["files"] != card["files"]:
            raise GiantError(f"{folder} already holds a different {card['name']!r} trained with the same config "
                             f"(another run); move it away to import {src}")
        return
    tmp = folder.with_name(f".tmp-{folder.name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        for name in list(card["files"]) + [CARD]:
            shutil.copy2(src / name, tmp / name)
        verify(tmp)
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def published_entry(folder: str | os.PathLike, base_url: str, homepage: str = "") -> Dataset:
    """A data-registry entry for an exported giant served as plain files under ``base_url`` (``base_url/NAME``
    for each file of the card, ``card.json`` included), so :func:`load` with ``download=True`` fetches it through
    the same checksum-verified path as a dataset (and an offline mirror folder works the same way)."""
    folder = Path(folder)
    card = verify(folder)
    files = {**card["files"], CARD: {"size": (folder / CARD).stat().st_size, "sha256": file_digest(folder / CARD)}}
    base = base_url.rstrip("/")
    return Dataset(
        name=f"giant-{card['name']}-{card['scale']}", title=card["title"],
        description=f"An export of the {card['name']!r} giant ({card['scale']} scale) of the book.",
        homepage=homepage or base_url, licence="MIT (weights trained by the book's code); data: see the card",
        citations=(), mirrored=False,
        files=tuple(LocalFile(n, f["size"], f["sha256"]) for n, f in files.items()),
        downloads=tuple(Download(urls=(f"{base}/{n}",), filename=n, format="file", size=f["size"], keep_as=n,
                                 checksum=Checksum("sha256", f["sha256"], "the giant's model card"))
                        for n, f in files.items()),
    )


def _download(giant: Giant, scale: str, cfg: Any, folder: Path) -> None:
    """Fetch the published export into ``folder`` (the caller holds its lock)."""
    entry = giant.published.get(scale)
    if entry is None:
        raise GiantError(f"giant {giant.name!r} has no published export at scale={scale}; call load() without "
                         "download=True to train it (or import a folder with import_folder)")
    if _config_dict(cfg) != _config_dict(giant.config.preset(scale)):
        raise GiantError(f"the published {giant.name!r} was trained with the {scale} preset; this config differs")
    src = Path(data_path(entry))
    card, target = _importable(src)
    if target != folder:
        raise GiantError(f"the published {giant.name!r} ({src}) is not the giant asked for (its cache key differs)")
    _install(src, card, folder)


def model_card(card: Mapping[str, Any]) -> str:
    """The human-readable model card (``README.md``) of a giant."""
    lines = [f"# {card['title']}", "", f"A giant of *Standing on the Shoulders of Giants*, chapter {card['chapter']}: "
             f"`shoulders.giants.load({card['name']!r})` at scale `{card['scale']}`.", "",
             f"- parameters: {card['parameters']:,}", f"- training updates: {card['steps']:,}"
             + (f" (snapshots kept after {', '.join(f'{s:,}' for s in card['snapshots'])})" if card.get("snapshots")
                else ""),
             f"- wall time: {card['wall_time_s']:,.0f} s on {card['machine']}", f"- created: {card['created']}"]
    if card.get("base"):
        lines.append(f"- continues from the giant `{card['base']}` (its updates and wall time not counted above)")
    lines.append("")
    if card.get("metrics"):
        lines += ["## Measured at the end of training", ""]
        lines += [f"- {k}: {v:.4g}" for k, v in card["metrics"].items()] + [""]
    if card.get("facts"):
        lines += ["## Facts", ""] + [f"- {k}: {v}" for k, v in card["facts"].items()] + [""]
    lines += ["## Training data", ""]
    lines += [f"- {d['title']} ({d['licence']}): {d['citation']}" for d in card.get("data", [])] or ["- (none)"]
    lines += ["", "## Config", "", "```json", json.dumps(card["config"], indent=1, sort_keys=True), "```", ""]
    return "\n".join(lines)

"""The results ledger: every chapter records its headline numbers here, and pages read each other's only here.

One call per result::

    sh.evaluate.record("perplexity", 141.2, model="NNLM", task="wikitext-2", split="test", chapter="02_nnlm",
                       seeds=[0, 1, 2], values=[140.8, 141.5, 141.3], wall_time_s=812.0, higher_is_better=False)

appends one line to ``ledger.jsonl`` in the data cache (:func:`shoulders.data.cache_root`; ``SHOULDERS_LEDGER``
or ``path=`` name another file). A line is one JSON object of schema ``shoulders.ledger/1``:

====================  ========================================================================================
``schema``            ``"shoulders.ledger/1"``
``time``              when it was recorded, ISO 8601 in UTC
``metric``            what was measured (``"perplexity"``, ``"accuracy"``, ``"bleu"`` ...)
``value``             the number: one run's, or the mean over ``seeds``
``values``            the value of each seed (same order as ``seeds``), or null
``spread``            e.g. the standard deviation over seeds, or null
``higher_is_better``  which way is better (perplexity: false)
``model``             the model, as the page names it
``task``              the dataset / task (``"wikitext-2"``, ``"sst-2"``, ``"squad-1.1"``)
``split``             ``"valid"``, ``"test"``, ``"dev"`` ...
``chapter``           the page that recorded it (``"02_nnlm"``)
``scale``             ``smoke`` | ``cpu`` | ``full`` (default: the current :func:`shoulders.scale`)
``seeds``             the seeds behind ``value``, a non-empty list of ints
``wall_time_s``       training + evaluation time in seconds, or null
``machine``           ``{"description": ..., "platform", "cpu", "device", "accelerator", "threads", "torch", "python"}``
``notes``             free text, or null
``extra``             any further keyword arguments of :func:`record` (JSON values)
====================  ========================================================================================

Two notebooks may record at once: a writer holds the package's lock (:func:`shoulders._lock.exclusive`: ``flock``
on the ledger file itself, ``msvcrt.locking`` on Windows), writes its whole line with one ``write`` and fsyncs it.
A line torn by a killed writer is skipped by :func:`read` with a warning naming its line number, and the next
writer starts on a fresh line. The closing chapter draws the book's results ladder from :func:`read`;
:func:`latest` fetches one number; :func:`table` renders entries as Markdown.
"""
from __future__ import annotations

import datetime
import json
import math
import numbers
import os
import platform
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

import torch

from .._lock import exclusive
from .._scale import SCALES
from .._scale import scale as current_scale
from ..data import cache_root
from ..device import device as current_device

__all__ = ["ENV_VAR", "FIELDS", "SCHEMA", "LedgerError", "LedgerWarning", "latest", "ledger_path", "machine",
           "machine_facts", "read", "record", "table"]

SCHEMA = "shoulders.ledger/1"
ENV_VAR = "SHOULDERS_LEDGER"
FILENAME = "ledger.jsonl"
FIELDS = ("schema", "time", "metric", "value", "values", "spread", "higher_is_better", "model", "task", "split",
          "chapter", "scale", "seeds", "wall_time_s", "machine", "notes", "extra")
_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation


class LedgerError(RuntimeError):
    """The ledger file cannot be written where it was asked for (the message names the path and the variable)."""


class LedgerWarning(UserWarning):
    """A ledger line that could not be read (torn by a killed writer, edited by hand, or of another schema)."""


def ledger_path(path: str | os.PathLike | None = None) -> Path:
    """The ledger file: ``path``, else ``SHOULDERS_LEDGER``, else ``<cache root>/ledger.jsonl``; a folder means
    the ``ledger.jsonl`` inside it."""
    if path is None:
        path = os.environ.get(ENV_VAR, "").strip() or cache_root() / FILENAME
    p = Path(path).expanduser()
    return p / FILENAME if p.is_dir() else p


@lru_cache(maxsize=1)
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def machine_facts() -> dict[str, Any]:
    """What a number was measured on: platform, CPU model, the device chapters train on (:func:`shoulders.device`)
    and its name, PyTorch's intra-op thread count, the torch and Python versions, and the one-line
    ``description`` of :func:`machine`."""
    dev = current_device()
    accelerator = (torch.cuda.get_device_name(dev) if dev.type == "cuda"
                   else "Apple MPS" if dev.type == "mps" else None)
    facts = {"platform": f"{platform.system()} {platform.machine()}", "cpu": _cpu_model(), "device": str(dev),
             "accelerator": accelerator, "threads": torch.get_num_threads(), "torch": torch.__version__,
             "python": platform.python_version()}
    facts["description"] = (f"{accelerator or facts['cpu']} · {facts['threads']} threads · torch {facts['torch']} · "
                            f"{facts['platform']}")
    return facts


def machine() -> str:
    """This machine in one line, e.g. ``"NVIDIA H200 · 16 threads · torch 2.5.1 · Linux x86_64"`` (the GPU when
    chapters train on one, else the CPU model)."""
    return machine_facts()["description"]


# -- validation: one function for writing and reading ---------------------------------------------------------------
def _fail(field: str, want: str, got: Any) -> ValueError:
    return ValueError(f"ledger field {field!r} must be {want}, got {got!r}")


def _text(v: Any, field: str, optional: bool = False) -> str | None:
    if optional and v is None:
        return None
    if not isinstance(v, str) or not v.strip():
        raise _fail(field, "a non-empty string", v)
    return v


def _number(v: Any, field: str, optional: bool = False, nonnegative: bool = False) -> float | None:
    if optional and v is None:
        return None
    if isinstance(v, torch.Tensor) and v.numel() == 1:
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)) \
            or (nonnegative and float(v) < 0):
        raise _fail(field, "a finite non-negative number" if nonnegative else "a finite number", v)
    return float(v)


def _validate(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The entry ``raw`` describes, normalised (floats, lists, a machine dict), or a ValueError naming the field."""
    unknown = set(raw) - set(FIELDS)
    if unknown:
        raise ValueError(f"unknown ledger fields {sorted(unknown)}; the schema {SCHEMA} has {list(FIELDS)}")
    if raw.get("schema") != SCHEMA:
        raise _fail("schema", repr(SCHEMA), raw.get("schema"))
    stamp = _text(raw.get("time"), "time")
    try:
        if datetime.datetime.fromisoformat(stamp).utcoffset() is None:
            raise ValueError
    except ValueError:
        raise _fail("time", "an ISO 8601 time with a UTC offset", stamp) from None
    entry: dict[str, Any] = {"schema": SCHEMA, "time": stamp, "metric": _text(raw.get("metric"), "metric"),
                             "value": _number(raw.get("value"), "value")}
    seeds = raw.get("seeds")
    seeds = [seeds] if isinstance(seeds, numbers.Integral) and not isinstance(seeds, bool) else seeds
    if isinstance(seeds, (str, bytes, Mapping)) or not isinstance(seeds, Iterable):
        raise _fail("seeds", "a non-empty list of ints", seeds)
    seeds = list(seeds)
    if not seeds or not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in seeds):
        raise _fail("seeds", "a non-empty list of ints", seeds)
    values = raw.get("values")
    if values is not None:
        values = [_number(v, "values") for v in _as_list(values)]
        if len(values) != len(seeds):
            raise _fail("values", f"one number per seed ({len(seeds)} seeds)", values)
    entry["values"] = values
    entry["spread"] = _number(raw.get("spread"), "spread", optional=True, nonnegative=True)
    if not isinstance(raw.get("higher_is_better"), bool):
        raise _fail("higher_is_better", "True or False", raw.get("higher_is_better"))
    entry["higher_is_better"] = raw["higher_is_better"]
    for field in ("model", "task", "split", "chapter"):
        entry[field] = _text(raw.get(field), field)
    if raw.get("scale") not in SCALES:
        raise _fail("scale", f"one of {', '.join(SCALES)}", raw.get("scale"))
    entry["scale"] = raw["scale"]
    entry["seeds"] = [int(s) for s in seeds]
    entry["wall_time_s"] = _number(raw.get("wall_time_s"), "wall_time_s", optional=True, nonnegative=True)
    machine = raw.get("machine")
    machine = {"description": machine} if isinstance(machine, str) else machine
    if not isinstance(machine, Mapping) or not isinstance(machine.get("description"), str) \
            or not machine["description"].strip():
        raise _fail("machine", "a non-empty string or a dict with a 'description'", machine)
    entry["machine"] = dict(machine)
    entry["notes"] = _text(raw.get("notes"), "notes", optional=True)
    extra = raw.get("extra") or {}
    if not isinstance(extra, Mapping) or set(extra) & set(FIELDS):
        raise _fail("extra", f"a dict of further facts, none named like a schema field {list(FIELDS)}", extra)
    entry["extra"] = dict(extra)
    try:
        json.dumps(entry, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ValueError(f"ledger fields 'machine' and 'extra' must hold plain JSON values: {err}") from None
    return entry


def _as_list(x: Any) -> list:
    return x.tolist() if hasattr(x, "tolist") else list(x)


# -- the file: locked appends, tolerant reads ------------------------------------------------------------------------
def _append(path: Path, line: str) -> None:
    """Append one line under the ledger's lock, in one ``write``, then fsync. A torn last line (no newline, its
    writer was killed) is ended first, so it cannot swallow this one."""
    data = line.encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and not path.is_file():
            raise IsADirectoryError(f"{path} is not a file")
    except OSError as err:
        source = f"{ENV_VAR}={os.environ[ENV_VAR]!r}" if os.environ.get(ENV_VAR, "").strip() else "the ledger path"
        raise LedgerError(f"cannot write the results ledger at {path} ({err.strerror or err}): {source} must name a "
                          "file (or a folder to hold ledger.jsonl) in a folder you can write to") from None
    with exclusive(path):  # flock on the ledger file itself (created if missing); released if this process dies
        fd = os.open(path, os.O_RDWR | os.O_APPEND | _BINARY)
        try:
            size = os.fstat(fd).st_size
            if size:
                os.lseek(fd, size - 1, os.SEEK_SET)
                if os.read(fd, 1) != b"\n":
                    data = b"\n" + data
            view = memoryview(data)
            while view:  # one write; a short one (disk nearly full) is continued, still under the lock
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)


def record(metric: str, value: float, *, model: str, task: str, split: str, chapter: str,
           seeds: Iterable[int] | int = (0,), values: Iterable[float] | None = None, wall_time_s: float | None = None,
           scale: str | None = None, machine: str | Mapping[str, Any] | None = None, higher_is_better: bool = True,
           spread: float | None = None, notes: str | None = None, path: str | os.PathLike | None = None,
           **extra: Any) -> dict[str, Any]:
    """Append one result to the ledger and return the entry written (see the module docstring for the fields).

    ``value`` is one run's number, or the mean over ``seeds`` with the per-seed ``values`` beside it; ``scale``
    defaults to :func:`shoulders.scale`, ``machine`` to :func:`machine_facts`. Further keyword arguments
    (JSON values) go to the entry's ``extra``. A field that breaks the schema is a ValueError naming it, and
    nothing is written.
    """
    entry = _validate({
        "schema": SCHEMA, "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds"),
        "metric": metric, "value": value, "values": None if values is None else _as_list(values), "spread": spread,
        "higher_is_better": higher_is_better, "model": model, "task": task, "split": split, "chapter": chapter,
        "scale": current_scale() if scale is None else scale, "seeds": seeds, "wall_time_s": wall_time_s,
        "machine": machine_facts() if machine is None else machine, "notes": notes, "extra": extra})
    _append(ledger_path(path), json.dumps(entry, ensure_ascii=False, allow_nan=False) + "\n")
    return entry


def _matches(entry: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    missing = object()
    for field, want in filters.items():
        got = entry[field] if field in entry else entry["extra"].get(field, missing)
        if got != (list(want) if isinstance(want, tuple) else want):
            return False
    return True


def read(path: str | os.PathLike | None = None, **filters: Any) -> list[dict[str, Any]]:
    """The ledger's entries, oldest first, keeping those whose fields equal every filter (``metric=``,
    ``task=``, ``scale=``, ``chapter=`` ..., or a key of ``extra``). No ledger yet: ``[]``. A line that is not a
    valid entry (torn by a killed writer, edited by hand) is skipped with a :class:`LedgerWarning` naming it."""
    p = ledger_path(path)
    if not p.is_file():
        return []
    with exclusive(p):  # not while a writer is half-way through its line
        text = p.read_bytes().decode("utf-8", errors="replace")
    entries = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
            entry = _validate(raw)
        except ValueError as err:  # json.JSONDecodeError is a ValueError
            warnings.warn(f"{p}, line {number}: skipped an unreadable ledger entry ({err})", LedgerWarning,
                          stacklevel=2)
            continue
        if _matches(entry, filters):
            entries.append(entry)
    return entries


def latest(metric: str, *, model: str, task: str, split: str, scale: str | None = None,
           path: str | os.PathLike | None = None) -> dict[str, Any]:
    """The newest entry (by ``time``; a tie goes to the later line) for ``metric`` of ``model`` on ``task`` /
    ``split`` at ``scale`` (default: the current :func:`shoulders.scale`). None: a LookupError that says what
    was looked for and what the ledger holds for ``task``."""
    scale = current_scale() if scale is None else scale
    wanted = {"metric": metric, "model": model, "task": task, "split": split, "scale": scale}
    task_entries = read(path, task=task)
    found = [(datetime.datetime.fromisoformat(e["time"]), i, e) for i, e in enumerate(task_entries)
             if _matches(e, wanted)]
    if found:
        return max(found, key=lambda t: t[:2])[2]
    have = sorted({f"{e['metric']} of {e['model']!r} on {e['split']} at {e['scale']} ({e['chapter']})"
                   for e in task_entries})
    looked = ", ".join(f"{k}={v!r}" for k, v in wanted.items())
    held = f"for task {task!r} it has: {'; '.join(have)}" if have else f"it has nothing for task {task!r}"
    raise LookupError(f"no ledger entry with {looked} in {ledger_path(path)}; {held}. Run the chapter that "
                      "records it first (at this scale).")


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{seconds / 60:.1f} min" if seconds < 3600 else f"{seconds / 3600:.2f} h"


def table(entries: Iterable[Mapping[str, Any]]) -> str:
    """A Markdown table of ``entries`` (from :func:`read`), one row each: metric, value (± spread), model, task,
    split, scale, seeds, wall time, machine."""
    rows = ["| metric | value | model | task | split | scale | seeds | wall time | machine |",
            "|---|---:|---|---|---|---|---|---:|---|"]
    for e in entries:
        value = f"{e['value']:.4g}" + (f" ± {e['spread']:.2g}" if e.get("spread") is not None else "")
        cells = [e["metric"], value, e["model"], e["task"], e["split"], e["scale"],
                 ", ".join(str(s) for s in e["seeds"]), _duration(e.get("wall_time_s")), e["machine"]["description"]]
        rows.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)

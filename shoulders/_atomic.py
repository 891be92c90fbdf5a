"""Write a small text file atomically: a temporary file in the same folder, then one rename.

A reader (or a crash half-way) sees either the old file or the complete new one, never a torn one. Used for
every small metadata file the package writes: vocabularies, training histories, dataset stamps.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_text_atomic(path: str | os.PathLike, text: str, *, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (readable like any data file, mode 0644) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding=encoding, newline="\n") as out:
            out.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes the file private; these files are as readable as the data
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path

"""The word-vector test sets that ship inside the gensim wheel (``gensim/test/test_data/``), and their readers.

* ``questions-words`` -- Mikolov et al. (2013a, "Efficient Estimation of Word Representations in Vector Space",
  sec. 4.1, Table 1): 19,544 analogy questions "a is to b as c is to d" in 14 sections, 8,869 semantic and
  10,675 syntactic (the sections whose name starts with ``gram``);
* ``wordsim353`` -- Finkelstein et al. (2001), 353 word pairs rated for relatedness from 0 to 10;
* ``simlex999`` -- Hill, Reichart & Korhonen (2015), 999 pairs rated for similarity (not relatedness).

The scorers that use them are in :mod:`shoulders.evaluate.words`. These files come with a Python package, not
from the dataset registry, so they need no download, cache or mirror.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

__all__ = ["GENSIM_TEST_FILES", "gensim_test_file", "read_analogies", "read_similarity"]

GENSIM_TEST_FILES = {"questions-words": "questions-words.txt", "wordsim353": "wordsim353.tsv",
                     "simlex999": "simlex999.txt"}


def gensim_test_file(name: str) -> Path:
    """The path of one of gensim's bundled evaluation files: ``questions-words``, ``wordsim353``, ``simlex999``."""
    if name not in GENSIM_TEST_FILES:
        raise ValueError(f"unknown evaluation set {name!r}; choose one of {sorted(GENSIM_TEST_FILES)}")
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"the {name} file ships inside the gensim wheel: pip install gensim "
                                  "(it is one of shoulders' dependencies)")
    path = Path(list(spec.submodule_search_locations)[0]) / "test" / "test_data" / GENSIM_TEST_FILES[name]
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from this gensim installation")
    return path


def _resolve(source: str | os.PathLike) -> Path:
    """A name of :data:`GENSIM_TEST_FILES` -> gensim's copy; anything else is a file path."""
    return gensim_test_file(source) if isinstance(source, str) and source in GENSIM_TEST_FILES else Path(source)


def read_analogies(path: str | os.PathLike | None = None) -> list[tuple[str, tuple[str, str, str, str]]]:
    """``(section, (a, b, c, d))`` for every question of a questions-words file: a file path, or the name
    ``"questions-words"`` (``None``, the default: gensim's copy). A line ``: name`` opens a section."""
    text = _resolve("questions-words" if path is None else path).read_text(encoding="utf-8")
    out, section = [], ""
    for line in text.splitlines():
        if line.startswith(":"):
            section = line[1:].strip()
        elif line.strip():
            parts = line.split()
            if len(parts) != 4:
                raise ValueError(f"an analogy line needs 4 words, got {line!r}")
            out.append((section, tuple(parts)))
    return out


def read_similarity(path: str | os.PathLike) -> list[tuple[str, str, float]]:
    """``(word1, word2, score)`` of a tab/space-separated similarity file (a path, or the name ``"wordsim353"``
    or ``"simlex999"`` for gensim's copy); ``#`` lines are comments."""
    out = []
    for line in _resolve(path).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        a, b, s = line.split("\t") if "\t" in line else line.split()
        out.append((a, b, float(s)))
    return out

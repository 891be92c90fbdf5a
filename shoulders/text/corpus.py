"""Readers for the book's plain-text corpora: WikiText-2 (word LMs), Tiny Shakespeare (char LMs) and Multi30k
(translation).

Each takes an optional ``root`` folder; without it the folder comes from ``shoulders.data.path(name)``
(cache, mirror or download -- see the data registry).
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["EOS", "MULTI30K_SPLITS", "WIKITEXT2_SPLITS", "multi30k", "tiny_shakespeare", "wikitext2"]

EOS = "<eos>"
WIKITEXT2_SPLITS = {"train": "wiki.train.tokens", "valid": "wiki.valid.tokens", "test": "wiki.test.tokens"}
MULTI30K_SPLITS = {"train": "train", "valid": "val", "test": "test_2016_flickr"}


def _folder(name: str, root: str | os.PathLike | None) -> Path:
    if root is not None:
        folder = Path(root)
        if not folder.is_dir():
            raise FileNotFoundError(f"{name}: root={str(folder)!r} is not a folder")
        return folder
    try:
        from shoulders.data import path as data_path
    except ImportError as err:
        raise RuntimeError(f"shoulders.data.path is unavailable ({err}); pass root= the folder that holds "
                           f"the {name} files") from err
    return Path(data_path(name))


def _read(folder: Path, filename: str, name: str) -> str:
    file = folder / filename
    if not file.is_file():
        raise FileNotFoundError(f"{name}: {file} is missing (expected files: "
                                f"{', '.join(WIKITEXT2_SPLITS.values()) if name == 'wikitext-2' else filename})")
    return file.read_text(encoding="utf-8")


def wikitext2(split: str = "train", root: str | os.PathLike | None = None, eos: str | None = EOS) -> list[list[str]]:
    """WikiText-2 (Merity et al. 2016, tokenised v1) as lines of tokens.

    The LM convention of the paper and of pytorch/examples: every line of the file -- empty ones included --
    is split on whitespace and ends with ``eos``. That gives exactly 2,088,628 / 217,646 / 245,569 tokens for
    ``train`` / ``valid`` / ``test`` (36,718 / 3,760 / 4,358 lines) and a 33,278-word vocabulary (the corpus
    already contains ``<unk>``). ``eos=None`` returns the bare whitespace tokens (empty lines stay ``[]``).
    """
    if split not in WIKITEXT2_SPLITS:
        raise ValueError(f"split must be one of {sorted(WIKITEXT2_SPLITS)}, got {split!r}")
    text = _read(_folder("wikitext-2", root), WIKITEXT2_SPLITS[split], "wikitext-2")
    lines = text.split("\n")  # only "\n": str.splitlines would also split on \x1c, \u2028, ...
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line does not start a new one
    tail = [] if eos is None else [eos]
    return [line.split() + tail for line in lines]


def tiny_shakespeare(root: str | os.PathLike | None = None) -> str:
    """Tiny Shakespeare (Karpathy 2015, ``input.txt``, ~1.1M characters) as one string."""
    return _read(_folder("tiny-shakespeare", root), "input.txt", "tiny-shakespeare")


def multi30k(split: str = "train", lang: str = "en", root: str | os.PathLike | None = None) -> list[str]:
    """Multi30k Task 1 (Elliott et al. 2016): the ``lang`` ("en" or "de") side of ``split`` as raw sentences.

    ``train`` / ``valid`` / ``test`` are the 29,000 / 1,014 / 1,000 image descriptions of the authors' current
    files (``test`` is the 2016 Flickr test set); line ``i`` of the English and the German file translate each
    other. Sentences keep their case and punctuation; tokenise them yourself (e.g. :func:`simple_words`).
    """
    import gzip

    if split not in MULTI30K_SPLITS:
        raise ValueError(f"split must be one of {sorted(MULTI30K_SPLITS)}, got {split!r}")
    if lang not in ("en", "de"):
        raise ValueError(f"lang must be 'en' or 'de', got {lang!r}")
    file = _folder("multi30k", root) / f"{MULTI30K_SPLITS[split]}.{lang}.gz"
    if not file.is_file():
        raise FileNotFoundError(f"multi30k: {file} is missing")
    with gzip.open(file, "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.strip() for line in lines]

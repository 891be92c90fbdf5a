"""ARPA back-off language model files (Doug Paul's format, as written by SRILM and KenLM).

    \\data\\
    ngram 1=<number of unigrams>
    ngram 2=<number of bigrams>
    ...

    \\1-grams:
    <log10 p(w)>        <w>         [<log10 bow(w)>]
    ...
    \\2-grams:
    <log10 p(w2 | w1)>  <w1> <w2>   [<log10 bow(w1 w2)>]
    ...
    \\end\\

A score is read as in :class:`~.ngram_backoff.BackoffLM`: the longest stored n-gram, times the backoff weights of
the longer contexts; a missing weight is log10 1 = 0. A backoff weight is written for every entry that is the
context (prefix) of an entry of the next order. ``-99`` stands for log10 0 (e.g. ``<s>``, never predicted).
Interpolated models are stored with the interpolation folded into the probabilities (SRILM's and KenLM's way).
By default values are written with Python's shortest round-trip repr, so reading back scores identically;
``precision=7`` writes the usual 7 significant digits.
"""
from __future__ import annotations

import gc
import os
import re
from itertools import chain
from pathlib import Path

import numpy as np

from ..text import Vocab
from .ngram_backoff import BackoffLM
from .ngram_counts import rows_to_words

__all__ = ["LOG10_ZERO", "read_arpa", "write_arpa"]

LOG10_ZERO = -99.0
_NGRAM = re.compile(r"^ngram\s+(\d+)\s*=\s*(\d+)$")
_SECTION = re.compile(r"^\\(\d+)-grams:$")


def _fmt(values: np.ndarray, precision: int | None) -> list[str]:
    with np.errstate(divide="ignore"):
        lg = np.log10(values)
    lg = np.where(np.isfinite(lg), lg, LOG10_ZERO).tolist()
    if precision is None:
        return list(map(repr, lg))
    return list(map(f"{{:.{int(precision)}g}}".format, lg))


def write_arpa(lm: BackoffLM, path: str | os.PathLike, precision: int | None = None) -> Path:
    """Write ``lm`` (a :class:`BackoffLM`) to ``path`` in ARPA format (log10 probabilities and backoff weights);
    returns the path."""
    if lm._unseen_bow != 1.0:
        raise ValueError(f"{lm.name}: a backoff weight for contexts never seen cannot be written in ARPA")
    path = Path(path)
    V, n, itos = len(lm.vocab), lm.n, np.array(lm.vocab.tokens, dtype=object)
    bad = next((t for t in lm.vocab.tokens if not t or len(t.split()) != 1 or t != t.strip()), None)
    if bad is not None:
        raise ValueError(f"ARPA separates words by whitespace: the token {bad!r} cannot be written")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\\data\\\n")
        for k, size in enumerate(lm.sizes, 1):
            f.write(f"ngram {k}={size}\n")
        for k in range(1, n + 1):
            f.write(f"\n\\{k}-grams:\n")
            words = rows_to_words(lm._keys[:k], V)
            text = itos[words[:, 0]]
            for i in range(1, k):
                text = text + " " + itos[words[:, i]]
            probs = _fmt(lm._prob[k - 1], precision)
            if k < n:
                is_ctx = lm._bow[k - 1] != 1.0  # a weight that matters, or ...
                is_ctx[lm._keys[k] // V] = True  # ... the context of an entry of the next order
                bows = _fmt(lm._bow[k - 1], precision)
                f.writelines(f"{p}\t{w}\t{b}\n" if c else f"{p}\t{w}\n"
                             for p, w, b, c in zip(probs, text.tolist(), bows, is_ctx.tolist()))
            else:
                f.writelines(f"{p}\t{w}\n" for p, w in zip(probs, text.tolist()))
        f.write("\n\\end\\\n")
    return path


def _is_marker(ln: str) -> bool:
    return ln[:1] == "\\" and (ln == "\\end\\" or bool(_SECTION.match(ln)))


def _floats(values: list[str], path: Path, k: int) -> np.ndarray:
    try:
        out = np.array(values, dtype=np.float64) if values else np.zeros(0)
    except ValueError:
        bad = next(v for v in values if not _is_float(v))
        raise ValueError(f"{path}: not a number in the {k}-grams: {bad!r}") from None
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{path}: non-finite value in the {k}-grams")
    return out


def _is_float(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False


def _parse(path: Path) -> list[tuple[np.ndarray, list[list[str]], np.ndarray]]:
    """Sections of an ARPA file: per order k, (log10 p, words per entry, log10 bow (0 when absent)).

    Checks the header counts against the sections. The cyclic garbage collector is paused meanwhile: millions of
    small lists would otherwise trigger ever longer collections (7x slower).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_lines(path)
    finally:
        if enabled:
            gc.enable()


def _parse_lines(path: Path) -> list[tuple[np.ndarray, list[list[str]], np.ndarray]]:
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines) and lines[i].strip() != "\\data\\":
        i += 1
    if i == len(lines):
        raise ValueError(f"{path}: not an ARPA file (no \\data\\ line)")
    i += 1
    header: list[int] = []
    while i < len(lines):
        ln = lines[i].strip()
        if ln:
            m = _NGRAM.match(ln)
            if not m:
                break
            if int(m.group(1)) != len(header) + 1:
                raise ValueError(f"{path}: header lines must be ngram 1=, ngram 2=, ... in order; got {ln!r}")
            header.append(int(m.group(2)))
        i += 1
    if not header:
        raise ValueError(f"{path}: the \\data\\ section lists no 'ngram k=count' lines")
    sections = []
    while True:
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i >= len(lines):
            raise ValueError(f"{path}: truncated ARPA file (no \\end\\)")
        ln = lines[i].strip()
        if ln == "\\end\\":
            break
        k = len(sections) + 1
        m = _SECTION.match(ln)
        if not m or int(m.group(1)) != k:
            raise ValueError(f"{path}: expected \\{k}-grams: or \\end\\, got {ln!r}")
        start = i = i + 1
        i = next((j for j in range(start, len(lines)) if lines[j][:1] == "\\" and _is_marker(lines[j].strip())),
                 len(lines))
        parts = [p for p in (ln.split() for ln in lines[start:i]) if p]
        sizes = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
        wrong = np.flatnonzero((sizes != k + 1) & (sizes != k + 2))
        if len(wrong):
            raise ValueError(f"{path}: a {k}-gram line needs log10 p, {k} words and an optional backoff weight; "
                             f"got {' '.join(parts[int(wrong[0])])!r}")
        if k > len(header) or len(parts) != header[k - 1]:
            raise ValueError(f"{path}: header says ngram {k}={header[k - 1] if k <= len(header) else 0} but the "
                             f"section has {len(parts)} entries")
        logp = _floats([p[0] for p in parts], path, k)
        bow = np.zeros(len(parts))
        has = np.flatnonzero(sizes == k + 2)
        bow[has] = _floats([parts[j][-1] for j in has.tolist()], path, k)
        sections.append((logp, [p[1: k + 1] for p in parts], bow))
    if len(sections) != len(header):
        raise ValueError(f"{path}: header lists {len(header)} orders but the file has {len(sections)} sections")
    return sections


def _to_prob(log10) -> np.ndarray:
    a = np.asarray(log10, dtype=np.float64)
    return np.where(a <= LOG10_ZERO, 0.0, 10.0 ** a)


def read_arpa(path: str | os.PathLike, unk: str = "<unk>", bos: str = "<s>", eos: str = "<eos>") -> BackoffLM:
    """Load an ARPA file as a :class:`BackoffLM` that scores exactly what the file says.

    The vocabulary is the unigram section in file order (so a file written by :func:`write_arpa` keeps the
    original ids); ``unk`` becomes its unknown-word fallback when present.
    """
    path = Path(path)
    sections = _parse(path)
    tokens = [w[0] for w in sections[0][1]]
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"{path}: duplicate unigrams")
    vocab = Vocab(tokens, unk=unk if unk in tokens else None)
    stoi, V, n = vocab.stoi, len(tokens), len(sections)
    keys = [np.arange(V, dtype=np.int64)]
    probs = [_to_prob(sections[0][0])]
    bows_raw = [np.asarray(sections[0][2], dtype=np.float64)]
    for k in range(2, n + 1):
        logp, words, bow = sections[k - 1]
        try:
            ids = np.fromiter(map(stoi.__getitem__, chain.from_iterable(words)), dtype=np.int64,
                              count=k * len(words)).reshape(len(words), k)
        except KeyError as err:
            raise ValueError(f"{path}: word {err.args[0]!r} of a {k}-gram is not among the unigrams") from None
        r = ids[:, 0]
        for i in range(1, k - 1):  # walk the prefix down the tables of orders 2 .. k-1
            key = r * V + ids[:, i]
            at = np.minimum(np.searchsorted(keys[i], key), max(len(keys[i]) - 1, 0))
            miss = np.flatnonzero(keys[i][at] != key) if len(keys[i]) else np.arange(len(key))
            if len(miss):
                ws = words[int(miss[0])]
                raise ValueError(f"{path}: the {k}-gram {' '.join(ws)!r} has no entry for its context "
                                 f"{' '.join(ws[: i + 1])!r}")
            r = at
        key = r * V + ids[:, -1]
        order = np.argsort(key, kind="stable")
        key = key[order]
        if np.any(key[1:] == key[:-1]):
            raise ValueError(f"{path}: duplicate {k}-grams")
        keys.append(key)
        probs.append(_to_prob(np.asarray(logp)[order]))
        bows_raw.append(np.asarray(bow, dtype=np.float64)[order])
    bows = [_to_prob(b) for b in bows_raw[: n - 1]]
    return BackoffLM(vocab, keys, probs, bows, bos=bos, eos=eos, name=f"arpa:{path.name}")

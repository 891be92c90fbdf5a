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

Sentences are KenLM's and SRILM's: one ``<s>`` before the words, ``</s>`` after them. Our lines end in their own
end token (``<eos>`` in WikiText), so :func:`write_arpa` writes the model's ``eos`` as ``</s>`` and
:func:`read_arpa` reads ``</s>`` back as ``eos``: a file we write scores ``<s> w_1 .. w_T </s>`` in KenLM exactly as
our scorer scores the line ``w_1 .. w_T <eos>``, and a file from ``lmplz`` scores our lines directly.

Writing is vectorised: every line of a block of rows is laid out in one uint8 matrix (number, tab, words, tab,
weight, newline; unused bytes 0) that is flattened and stripped of its zeros, and numbers are turned into decimal
digits by integer arithmetic (:func:`format_decimals`) -- no Python string per line.
"""
from __future__ import annotations

import gc
import os
import re
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import chain
from pathlib import Path

import numpy as np

from ..text.vocab import Vocab
from .ngram_backoff import BackoffLM
from .ngram_counts import rows_to_words

__all__ = ["LOG10_ZERO", "SENTENCE_END", "format_decimals", "read_arpa", "write_arpa"]

LOG10_ZERO = -99.0
SENTENCE_END = "</s>"
_NGRAM = re.compile(r"^ngram\s+(\d+)\s*=\s*(\d+)$")
_SECTION = re.compile(r"^\\(\d+)-grams:$")
_BLOCK = 1 << 17  # rows laid out at a time (a few tens of MB of matrix)
_P10 = 10 ** np.arange(19, dtype=np.int64)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = 134217729.0 * a  # 2**27 + 1: Veltkamp's split into two 26-bit halves
    hi = c - (c - a)
    return hi, a - hi


_P10F = 10.0 ** np.arange(23)


def _scaled(a: np.ndarray, p: np.ndarray) -> np.ndarray:
    """rint(a * 10**p) as int64 (a > 0, a * 10**p < 2**63).

    For 0 <= p <= 22, 10**p is a float64 exactly and the product is taken exactly (Dekker's two-product: the
    rounded product plus its rounding error), so the result is the correctly rounded integer. Otherwise (tiny or
    huge values) in two float factors, correct to a unit or two.
    """
    exact = (p >= 0) & (p <= 22)
    s = _P10F[np.clip(p, 0, 22)] * exact  # 0 where not exact: those rows are done below
    prod = a * s
    ah, al = _split(a)
    sh, sl = _split(s)
    err = ((ah * sh - prod) + ah * sl + al * sh) + al * sl  # a * s = prod + err exactly
    base = np.rint(prod)
    q = np.rint((prod - base) + err)
    q += base
    q = q.astype(np.int64)  # base and the correction are both integers: exact below 2**53 ...
    big = exact & (base >= 2.0**53)  # ... above it, add the correction in int64
    if big.any():
        q[big] = base[big].astype(np.int64) + np.rint((prod[big] - base[big]) + err[big]).astype(np.int64)
    odd = np.flatnonzero(~exact)
    if len(odd):
        h = p[odd] // 2
        q[odd] = np.rint(a[odd] * np.power(10.0, h) * np.power(10.0, p[odd] - h)).astype(np.int64)
    return q


def format_decimals(x: np.ndarray, digits: int = 17) -> np.ndarray:
    """Decimal text of every value of ``x`` with ``digits`` significant digits, as an (R, W) uint8 matrix of ASCII
    codes padded with zeros (drop the zeros to get the strings): ``-2.4289184``, ``-99``, ``0``, ``-3.2e-07``.

    Fixed notation for 1e-5 <= |x| < 1000, else ``d.ddde-XX`` (Python's style); trailing zeros are dropped. The
    digits are ``rint(|x| * 10**(digits - 1 - e))``, the product taken exactly where 10**(digits - 1 - e) is a
    float64 (|x| >= 1e-6 at 17 digits): there the text is correctly rounded, and 17 digits read back to exactly
    ``x``; smaller or larger values come within a unit or two in the last place. ``digits=7`` is SRILM's.
    Vectorised: the rows that share a decimal exponent share one layout, filled by two slice assignments.
    """
    if not 1 <= digits <= 17:
        raise ValueError(f"digits must be in 1..17, got {digits}")
    x = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError("cannot write a non-finite number")
    R, sig = len(x), int(digits)
    a = np.abs(x)
    zero = a == 0
    a[zero] = 1.0
    e = np.floor(np.log10(a)).astype(np.int64)
    q = _scaled(a, sig - 1 - e)
    for _ in range(2):  # log10 may be one off near powers of ten, and rounding may carry into a new digit
        hi, lo = q >= _P10[sig], q < _P10[sig - 1]
        if not (hi.any() or lo.any()):
            break
        fix = np.flatnonzero(hi | lo)
        e[fix] += hi[fix].astype(np.int64) - lo[fix]
        q[fix] = _scaled(a[fix], sig - 1 - e[fix])
    q[q >= _P10[sig]] = _P10[sig - 1]
    q[zero], e[zero] = 0, 0
    dig = np.empty((R, sig), dtype=np.uint8)  # decimal digits of q, most significant first
    parts = [(q // _P10[9]).astype(np.uint32), (q % _P10[9]).astype(np.uint32)] if sig > 9 else [q.astype(np.uint32)]
    widths = [sig - 9, 9] if sig > 9 else [sig]
    i = 0
    for part, w in zip(parts, widths):  # uint32 and scalar divisors: numpy's fast integer division
        for j in range(w - 1, -1, -1):
            t = part // np.uint32(10 ** j)
            dig[:, i] = t - np.uint32(10) * (t // np.uint32(10))
            i += 1
    # last digit to keep (trailing zeros dropped); most values keep all of them
    last = np.full(R, sig - 1, dtype=np.int64)
    some = np.flatnonzero(dig[:, sig - 1] == 0)
    if len(some):
        nz = dig[some, ::-1] != 0
        last[some] = np.where(nz.any(axis=1), sig - 1 - np.argmax(nz, axis=1), 0)
    # columns: sign | powers 2, 1, 0 | "." | F fraction digits | "e" sign 3 exponent digits
    F = sig + 4
    W = 1 + 3 + 1 + F + 5
    out = np.zeros((R, W), dtype=np.uint8)
    out[:, 0] = np.where(np.signbit(x) & ~zero, ord("-"), 0)
    code = dig + np.uint8(48)
    dot_col = np.full(R, 4, dtype=np.int64)  # column of the last kept character (for dropping trailing zeros)
    e_min = int(e.min()) if R else 0
    for ev in (np.flatnonzero(np.bincount(e - e_min)) + e_min).tolist():
        rows = np.flatnonzero(e == ev)
        if -5 <= ev <= 2:  # fixed: digits of powers ev .. ev - sig + 1
            if ev >= 0:
                m = min(ev + 1, sig)  # integer digits that are significant; the others are zeros
                out[rows, 3 - ev:4 - ev + m - 1] = code[rows, :m]
                out[rows, 4 - ev + m - 1:4] = 48
                if sig > ev + 1:
                    out[rows, 5:5 + sig - 1 - ev] = code[rows, ev + 1:]
            else:
                out[rows, 3] = 48
                out[rows, 5:4 - ev] = 48
                out[rows, 4 - ev:4 - ev + sig] = code[rows]
            out[rows, 4] = ord(".")
            dot_col[rows] = 4 + last[rows] - ev  # last kept digit's column (<= 3: in the integer part)
        else:  # scientific: d.ddd e-XX
            out[rows, 3] = code[rows, 0]
            out[rows, 4] = ord(".")
            out[rows, 5:5 + sig - 1] = code[rows, 1:]
            ex = abs(ev)
            out[rows, 5 + F] = ord("e")
            out[rows, 6 + F] = ord("-") if ev < 0 else ord("+")
            out[rows, 7 + F:10 + F] = [48 + ex // 100 if ex >= 100 else 0, 48 + ex // 10 % 10, 48 + ex % 10]
            dot_col[rows] = 4 + last[rows]
    cols = np.arange(5, 5 + F, dtype=np.int64)
    out[:, 5:5 + F] *= cols[None, :] <= dot_col[:, None]  # drop trailing zeros
    out[:, 4] *= dot_col > 4  # ... and the "." when nothing follows it
    # leave out the columns no row uses (exponents, long fractions)
    sci = (e < -5) | (e > 2)
    width = W if sci.any() else int(dot_col.max(initial=4)) + 1
    return out[:, :width]


def _log10(values: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        lg = np.log10(values)
    return np.where(np.isfinite(lg), lg, LOG10_ZERO)


def _token_matrix(tokens: list[str]) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
    """(V, L) uint8 with the UTF-8 bytes of each token (zero padded, cut at L), the byte lengths, and the bytes.

    L covers all but the longest 0.1% of the tokens (a few very long words would otherwise widen every line's
    matrix); lines with a longer token are written one by one (:func:`_block_bytes`).
    """
    enc = [t.encode("utf-8") for t in tokens]
    lens = np.fromiter(map(len, enc), dtype=np.int64, count=len(enc))
    L = max(1, int(np.ceil(np.quantile(lens, 0.999))))
    flat = np.frombuffer(b"".join(enc), dtype=np.uint8)
    cols = np.arange(int(lens.max()))
    full = np.zeros((len(enc), len(cols)), dtype=np.uint8)
    full[cols[None, :] < lens[:, None]] = flat
    return np.ascontiguousarray(full[:, :L]), lens, enc


def _block_bytes(lm: BackoffLM, k: int, lo: int, hi: int, logp: np.ndarray, logb: np.ndarray | None,
                 has_bow: np.ndarray | None, tok: tuple[np.ndarray, np.ndarray, list[bytes]], digits: int) -> bytes:
    """The ARPA lines of rows lo..hi-1 of order k: laid out in one uint8 matrix, flattened, zeros dropped."""
    mat, toklen, enc = tok
    V, L = len(lm.vocab), mat.shape[1]
    r = hi - lo
    P = format_decimals(logp[lo:hi], digits)
    words = rows_to_words(lm._keys[:k], V, np.arange(lo, hi, dtype=np.int64))
    B = None
    if logb is not None:
        B = format_decimals(logb[lo:hi], digits)
        hb = has_bow[lo:hi]
        B[~hb] = 0
    W = P.shape[1] + 1 + k * L + (k - 1) + 1 + (0 if B is None else 1 + B.shape[1])
    block = np.empty((r, W), dtype=np.uint8)
    c = P.shape[1]
    block[:, :c] = P
    block[:, c] = 9  # tab
    c += 1
    for i in range(k):
        if i:
            block[:, c] = 32  # space
            c += 1
        block[:, c: c + L] = mat[words[:, i]]
        c += L
    if B is not None:
        block[:, c] = np.where(hb, 9, 0)
        block[:, c + 1: c + 1 + B.shape[1]] = B
        c += 1 + B.shape[1]
    block[:, c] = 10  # newline
    flat = block.reshape(-1)
    keep = flat != 0
    long_rows = np.flatnonzero((toklen[words] > L).any(axis=1))
    if not len(long_rows):
        return flat[keep].tobytes()
    # a row with a token longer than L has its text cut in the matrix: write that line whole, in its place
    pieces, prev = [], 0
    for j in long_rows.tolist():
        pieces.append(flat[prev * W: j * W][keep[prev * W: j * W]].tobytes())
        line = bytes(P[j][P[j] != 0]) + b"\t" + b" ".join(enc[w] for w in words[j].tolist())
        if B is not None and hb[j]:
            line += b"\t" + bytes(B[j][B[j] != 0])
        pieces.append(line + b"\n")
        prev = j + 1
    pieces.append(flat[prev * W:][keep[prev * W:]].tobytes())
    return b"".join(pieces)


def write_arpa(lm: BackoffLM, path: str | os.PathLike, precision: int | None = None,
               sentence_end: str | None = SENTENCE_END, threads: int = 1) -> Path:
    """Write ``lm`` (a :class:`BackoffLM`) to ``path`` in ARPA format (log10 probabilities and backoff weights);
    returns the path.

    ``precision``: significant digits of the numbers (None: 17, which read back to the model's values; 7 is
    SRILM's). ``sentence_end``: the name the model's end token ``lm.eos`` (``<eos>``) gets in the file --
    ``</s>``, which KenLM and SRILM append to every sentence; None keeps it. ``threads``: blocks of lines formatted
    at once (NumPy releases the GIL); the file is the same.
    """
    if lm._unseen_bow != 1.0:
        raise ValueError(f"{lm.name}: a backoff weight for contexts never seen cannot be written in ARPA")
    digits = 17 if precision is None else int(precision)
    path = Path(path)
    V, n = len(lm.vocab), lm.n
    tokens = lm.vocab.tokens
    bad = next((t for t in tokens if not t or len(t.split()) != 1 or t != t.strip()), None)
    if bad is not None:
        raise ValueError(f"ARPA separates words by whitespace: the token {bad!r} cannot be written")
    if sentence_end is not None and lm.eos in lm.vocab and sentence_end not in lm.vocab:
        tokens = [sentence_end if t == lm.eos else t for t in tokens]
    tok = _token_matrix(tokens)
    path.parent.mkdir(parents=True, exist_ok=True)
    pool = ThreadPoolExecutor(max_workers=threads) if threads > 1 else None
    try:
        with open(path, "wb") as f:
            f.write(("\\data\\\n" + "".join(f"ngram {k}={size}\n" for k, size in enumerate(lm.sizes, 1))).encode())
            for k in range(1, n + 1):
                f.write(f"\n\\{k}-grams:\n".encode())
                R = len(lm._keys[k - 1])
                logp = _log10(lm._prob[k - 1])
                logb = has_bow = None
                if k < n:
                    logb = _log10(lm._bow[k - 1])
                    has_bow = lm._bow[k - 1] != 1.0  # a weight that matters, or ...
                    has_bow[lm._keys[k] // V] = True  # ... the context of an entry of the next order
                spans = [(lo, min(lo + _BLOCK, R)) for lo in range(0, R, _BLOCK)]
                args = (logp, logb, has_bow, tok, digits)
                if pool is None:
                    for lo, hi in spans:
                        f.write(_block_bytes(lm, k, lo, hi, *args))
                else:
                    pending: deque = deque()
                    for lo, hi in spans:
                        pending.append(pool.submit(_block_bytes, lm, k, lo, hi, *args))
                        if len(pending) > 2 * threads:
                            f.write(pending.popleft().result())
                    while pending:
                        f.write(pending.popleft().result())
            f.write(b"\n\\end\\\n")
    finally:
        if pool is not None:
            pool.shutdown()
    return path


def _is_marker(ln: str) -> bool:
    return ln[:1] == "\\" and (ln == "\\end\\" or bool(_SECTION.match(ln)))


def _floats(values: list[str], path: Path, k: int, where: Callable[[int], int]) -> np.ndarray:
    """The numbers of one column of the k-gram section; ``where(e)`` is the file line of entry e (for errors)."""
    try:
        out = np.array(values, dtype=np.float64) if values else np.zeros(0)
    except ValueError:
        e = next(j for j, v in enumerate(values) if not _is_float(v))
        raise ValueError(f"{path}, line {where(e)}: not a number in the {k}-grams: {values[e]!r}") from None
    bad = np.flatnonzero(~np.isfinite(out))
    if len(bad):
        raise ValueError(f"{path}, line {where(int(bad[0]))}: non-finite value {values[int(bad[0])]!r} in the "
                         f"{k}-grams")
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
        where = _line_finder(lines, start)
        sizes = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
        wrong = np.flatnonzero((sizes != k + 1) & (sizes != k + 2))
        if len(wrong):
            raise ValueError(f"{path}, line {where(int(wrong[0]))}: a {k}-gram line needs log10 p, {k} words and an "
                             f"optional backoff weight; got {' '.join(parts[int(wrong[0])])!r}")
        if k > len(header) or len(parts) != header[k - 1]:
            raise ValueError(f"{path}: header says ngram {k}={header[k - 1] if k <= len(header) else 0} but the "
                             f"section has {len(parts)} entries")
        logp = _floats([p[0] for p in parts], path, k, where)
        above = np.flatnonzero(logp > 0)  # a log10 probability above 0 is a probability above 1
        if len(above):
            e = int(above[0])
            raise ValueError(f"{path}, line {where(e)}: log10 probability {parts[e][0]} of "
                             f"{' '.join(parts[e][1:k + 1])!r} is above 0 (a probability above 1): not a valid ARPA "
                             "model")
        bow = np.zeros(len(parts))
        has = np.flatnonzero(sizes == k + 2)
        bow[has] = _floats([parts[j][-1] for j in has.tolist()], path, k, lambda e: where(int(has[e])))
        sections.append((logp, [p[1: k + 1] for p in parts], bow))
    if len(sections) != len(header):
        raise ValueError(f"{path}: header lists {len(header)} orders but the file has {len(sections)} sections")
    return sections


def _line_finder(lines: list[str], start: int) -> Callable[[int], int]:
    """``where(e)``: the 1-based file line of the e-th non-blank line from ``lines[start]`` on (errors only)."""
    def where(e: int) -> int:
        seen = -1
        for j in range(start, len(lines)):
            if lines[j].split():
                seen += 1
                if seen == e:
                    return j + 1
        return len(lines)
    return where


def _to_prob(log10) -> np.ndarray:
    a = np.asarray(log10, dtype=np.float64)
    return np.where(a <= LOG10_ZERO, 0.0, 10.0 ** a)


def read_arpa(path: str | os.PathLike, unk: str = "<unk>", bos: str = "<s>", eos: str = "<eos>",
              sentence_end: str | None = SENTENCE_END) -> BackoffLM:
    """Load an ARPA file as a :class:`BackoffLM` that scores exactly what the file says.

    The vocabulary is the unigram section in file order (so a file written by :func:`write_arpa` keeps the
    original ids); ``unk`` becomes its unknown-word fallback when present. The file's ``sentence_end`` (``</s>``)
    is read as ``eos`` (``<eos>``, the last token of our lines) unless the file has an ``eos`` of its own; pass
    ``eos="</s>"`` (or ``sentence_end=None``) to keep the file's name.
    """
    path = Path(path)
    sections = _parse(path)
    tokens = [w[0] for w in sections[0][1]]
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"{path}: duplicate unigrams")
    rename = sentence_end is not None and sentence_end != eos and sentence_end in tokens and eos not in tokens
    if rename:
        tokens = [eos if t == sentence_end else t for t in tokens]
    vocab = Vocab(tokens, unk=unk if unk in tokens else None)
    stoi, V, n = vocab.stoi, len(tokens), len(sections)
    if rename:
        stoi = {**stoi, sentence_end: stoi[eos]}
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

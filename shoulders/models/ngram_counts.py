"""Counting n-grams with integer hashing: one sorted int64 key per distinct n-gram, no per-token dicts.

An n-gram of word ids (w_1 .. w_k) is stored as one row of the order-k table, with the key

    key(w_1 .. w_k) = row(w_1 .. w_{k-1}) * |V| + w_k            (order 1: key = row = w_1)

where ``row(.)`` is the row of the prefix in the order-(k-1) table. Mixed radix |V|^k overflows int64 at k = 5
for WikiText-2 (33,279^5 > 2^63); chaining through the *rank* of the prefix instead keeps every key below
(#distinct (k-1)-grams) * |V| (~7e10 here), so one ``np.unique`` per order counts the whole corpus. Keys sort
lexicographically, so all continuations of one context are a contiguous run of rows -- the layout of a trie.

Sentence boundaries (the convention of KenLM and SRILM): each line is a sentence, preceded by **one** start
symbol ``<s>``; the line's last token (``<eos>`` in WikiText) plays the role of ``</s>``. Only n-grams that *end on
a real token* are counted: ``<s>`` is context, never a predicted word. So the first word of a line is counted as
the bigram ``<s> w_1`` (and unigram ``w_1``), the second as ``<s> w_1 w_2``, ... -- an n-gram never reaches past
the line's ``<s>``, and the k-gram counts do not depend on the order of the model: one table of order 5 serves
every model of order n <= 5. A k-gram that starts with ``<s>`` can only occur at the start of a line; nothing
precedes it (see :meth:`NGramCounts.starts_with_bos` and Kneser-Ney's adjusted counts in :mod:`.ngram_smoothing`).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from ..text.vocab import Vocab

__all__ = ["BOS", "UNK", "CountTable", "NGramCounts", "count_ngrams", "padded_stream", "stream_hits",
           "stream_rows"]

BOS = "<s>"
UNK = "<unk>"
_MAX_KEY = np.iinfo(np.int64).max


@dataclass(frozen=True, eq=False)
class CountTable:
    """The distinct k-grams of one order, sorted by key; row r is (prefix row, word) = divmod(keys[r], |V|)."""

    order: int
    keys: np.ndarray    # (R,) int64, sorted: prefix_row * |V| + word   (order 1: the word id itself, R = |V|)
    counts: np.ndarray  # (R,) int64, occurrences ending on a real (predicted) token
    suffix: np.ndarray  # (R,) int64, row of (w_2 .. w_k) in the order k-1 table (order 1: -1)

    def __len__(self) -> int:
        return len(self.keys)


def _check_lines(lines: object) -> list:
    if isinstance(lines, str):
        raise TypeError("expected lines of tokens (list[list[str]]), got a str; tokenize it first")
    lines = lines if isinstance(lines, list) else list(lines)  # type: ignore[arg-type]
    for line in lines[:1000]:
        if isinstance(line, str):
            raise TypeError("expected lines of tokens (list[list[str]]), got a list of str; wrap it: [tokens]")
    return lines


def padded_stream(lines: Sequence[Sequence[str]], vocab: Vocab, pad: int, bos: str = BOS):
    """Encode ``lines`` as one id stream with ``pad`` ``<s>`` before every line (1: our convention; 0: none).

    Returns ``x`` (T,) int64 ids, ``pos`` (T,) int64 position inside the padded line, ``real`` (T,) bool
    (True on the lines' own tokens, the positions a model predicts).
    """
    lines = _check_lines(lines)
    lens = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
    ids = vocab.encode_array(list(chain.from_iterable(lines)))
    full = lens + pad
    ends = np.cumsum(full)
    total = int(ends[-1]) if len(ends) else 0
    x = np.full(total, vocab[bos] if pad else 0, dtype=np.int64)
    pos = np.arange(total, dtype=np.int64) - np.repeat(ends - full, full)
    real = pos >= pad
    x[real] = ids
    return x, pos, real


def stream_hits(keys: Sequence[np.ndarray], V: int, x: np.ndarray, pos: np.ndarray
                ) -> list[tuple[np.ndarray, np.ndarray]]:
    """The k-grams of the stream that are in the tables, k = 1 .. len(keys): ``hits[k-1] = (at, row)``, the
    positions whose k-gram (ending there, inside its line) is stored, and its row.

    A k-gram can only be stored if its prefix, the (k-1)-gram ending one position earlier, is: so order k looks up
    only the positions after a hit of order k - 1 (fewer and fewer), one ``searchsorted`` per order. Order 2 sorts
    its keys first (successive binary searches then walk the same part of the table: ~4x faster than in stream
    order); its hits come out sorted by row, so the keys of the next orders are nearly sorted already.
    """
    T = len(x)
    at, row = np.arange(T, dtype=np.int64), x
    hits = [(at, row)]
    for k in range(2, len(keys) + 1):
        nxt = at + 1
        ok = nxt < T
        nxt, prev = nxt[ok], row[ok]
        ok = pos[nxt] >= 1  # the next position is in the same line (a hit at order k-1 then fits order k)
        nxt, prev = nxt[ok], prev[ok]
        table = keys[k - 1]
        if not len(nxt) or not len(table):
            at = row = np.zeros(0, dtype=np.int64)
            hits.append((at, row))
            continue
        key = prev * V + x[nxt]
        if k == 2:
            order = np.argsort(key)
            key, nxt = key[order], nxt[order]
        i = np.minimum(np.searchsorted(table, key), len(table) - 1)
        hit = table[i] == key
        at, row = nxt[hit], i[hit]
        hits.append((at, row))
    return hits


def stream_rows(keys: Sequence[np.ndarray], V: int, x: np.ndarray, pos: np.ndarray) -> list[np.ndarray]:
    """Row of the k-gram ending at each position, for k = 1 .. len(keys): ``rows[k-1][j]`` (-1 = not in table).

    The window of a k-gram must lie inside its line (``pos >= k - 1``); see :func:`stream_hits`.
    """
    rows = []
    for at, row in stream_hits(keys, V, x, pos):
        r = np.full(len(x), -1, dtype=np.int64)
        r[at] = row
        rows.append(r)
    return rows


class NGramCounts:
    """n-gram counts of orders 1 .. ``order`` over one vocabulary (see the module docstring for the layout).

    ``counts.table(k)`` is the :class:`CountTable` of order k; :meth:`continuation` gives Kneser-Ney's
    N1+(. w_1..w_k) (Kneser & Ney 1995; Chen & Goodman 1998, sec. 2.7).
    """

    def __init__(self, vocab: Vocab, tables: list[CountTable], bos: str, padded: bool, num_tokens: int,
                 num_lines: int) -> None:
        self.vocab, self.tables, self.bos, self.padded = vocab, tables, bos, padded
        self.num_tokens, self.num_lines = num_tokens, num_lines
        self._cont: dict[int, np.ndarray] = {}
        self._bos_first: list[np.ndarray] = []

    @property
    def order(self) -> int:
        return len(self.tables)

    def _check_n(self, n: int, hi: int | None = None) -> int:
        hi = self.order if hi is None else hi
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or not 1 <= n <= hi:
            raise ValueError(f"n must be an integer in 1..{hi} (these counts go up to order {self.order}), got {n!r}")
        return int(n)

    def table(self, n: int) -> CountTable:
        return self.tables[self._check_n(n) - 1]

    def num_ngrams(self, n: int) -> int:
        """Number of distinct n-grams seen in the corpus (count > 0): the size of an order-n model."""
        return int(np.count_nonzero(self.table(n).counts))

    def continuation(self, n: int) -> np.ndarray:
        """N1+(. w_1..w_n) for every row of the order-n table: distinct words seen before it (needs n < order)."""
        n = self._check_n(n, self.order - 1)
        if n not in self._cont:
            up = self.tables[n]
            self._cont[n] = np.bincount(up.suffix[up.counts > 0], minlength=len(self.tables[n - 1]))
        return self._cont[n]

    def starts_with_bos(self, n: int) -> np.ndarray:
        """(R,) bool: which rows of the order-n table start with ``<s>`` (always False for unpadded counts).

        Such an n-gram can only occur at the start of a line, so it has no left extension: its Kneser-Ney
        continuation count would be 0, and KenLM's ``lmplz`` gives it its raw count instead (as we do).
        """
        n = self._check_n(n)
        if not self._bos_first:
            V = len(self.vocab)
            first = self.tables[0].keys == self.vocab[self.bos] if self.padded else np.zeros(V, dtype=bool)
            self._bos_first.append(first)
            for t in self.tables[1:]:
                first = first[t.keys // V]
                self._bos_first.append(first)
        return self._bos_first[n - 1]

    def count_of_counts(self, n: int, kind: str = "raw", max_r: int = 4) -> np.ndarray:
        """``[n_1, ..., n_max_r]``: how many order-n rows have count exactly r (``kind`` = raw | continuation)."""
        c = self.table(n).counts if kind == "raw" else self.continuation(n)
        return np.bincount(c[c > 0], minlength=max_r + 1)[1: max_r + 1]

    def words(self, n: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Word ids of the order-n rows as an (R, n) matrix (all rows by default)."""
        n = self._check_n(n)
        return rows_to_words([tb.keys for tb in self.tables[:n]], len(self.vocab), rows)

    def _row(self, ngram: Sequence[str]) -> int:
        k = len(ngram)
        self._check_n(k)
        x = np.asarray(self.vocab.encode(list(ngram)), dtype=np.int64)
        rows = stream_rows([t.keys for t in self.tables[:k]], len(self.vocab), x, np.arange(k))
        return int(rows[k - 1][k - 1])

    def count(self, ngram: Sequence[str]) -> int:
        """How often ``ngram`` (a sequence of 1 .. order words) ends on a real token of the corpus."""
        if isinstance(ngram, str):
            ngram = (ngram,)
        r = self._row(ngram)
        return 0 if r < 0 else int(self.tables[len(ngram) - 1].counts[r])

    def most_common(self, n: int, k: int = 10) -> list[tuple[tuple[str, ...], int]]:
        """The ``k`` most frequent n-grams with their counts (ties by row, i.e. lexicographic id order)."""
        c = self.table(n).counts
        top = np.argsort(-c, kind="stable")[:k]
        top = top[c[top] > 0]
        itos = self.vocab.tokens
        return [(tuple(itos[i] for i in w), int(c[r])) for r, w in zip(top, self.words(n, top))]

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}: {self.num_ngrams(k):,}" for k in range(1, self.order + 1))
        return (f"NGramCounts(order={self.order}, |V|={len(self.vocab):,}, tokens={self.num_tokens:,}, "
                f"distinct n-grams {{{sizes}}})")


def rows_to_words(keys: Sequence[np.ndarray], V: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Word ids (R, k) of rows of the order-k table (k = len(keys)), walking prefix rows down to order 1."""
    k = len(keys)
    r = np.arange(len(keys[-1]), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    out = np.empty((len(r), k), dtype=np.int64)
    for i in range(k - 1, -1, -1):
        key = keys[i][r]
        if i == 0:
            out[:, 0] = key
        else:
            r, out[:, i] = np.divmod(key, V)
    return out


def _prepare_vocab(vocab: Vocab | None, lines: list, min_freq: int, bos: str, unk: str) -> Vocab:
    if vocab is None:
        return Vocab.build(lines, specials=[bos], unk=unk, min_freq=min_freq)
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a shoulders.text.Vocab or None, got {type(vocab).__name__}")
    if min_freq != 1:
        raise ValueError("min_freq only applies when count_ngrams builds the vocabulary (vocab=None); "
                         "build yours with Vocab.build(..., min_freq=...)")
    if bos in vocab and (vocab.unk is not None):
        return vocab
    # keep every existing id; append what is missing (ids of the original tokens do not change)
    tokens, new_unk = vocab.tokens, vocab.unk
    if new_unk is None:
        new_unk = unk
        if unk not in vocab:
            tokens.append(unk)
    if bos not in vocab:
        tokens.append(bos)
    return Vocab(tokens, dict(vocab.counts), specials=vocab.specials, unk=new_unk)


def count_ngrams(lines: Iterable[Sequence[str]], order: int = 5, vocab: Vocab | None = None, min_freq: int = 1,
                 *, bos: str = BOS, unk: str = UNK, pad: bool = True) -> NGramCounts:
    """Count all n-grams of orders 1 .. ``order`` in ``lines`` (lists of tokens, e.g. ``sh.data.wikitext2``).

    ``vocab=None`` builds ``Vocab.build(lines, specials=["<s>"], unk="<unk>", min_freq=min_freq)``; a given
    vocabulary is extended (ids kept) with ``<s>`` and ``<unk>`` if it lacks them. Tokens outside the vocabulary
    are counted as ``<unk>``. Each line gets one ``<s>`` in front (KenLM's and SRILM's convention, see the module
    docstring). ``pad=False`` takes the lines as already padded (e.g. NLTK's ``pad_both_ends``): no ``<s>`` is
    added and every position, ``<s>`` included, is counted -- the convention of NLTK's counter.

    Cost: one sort of the token stream's keys per order (``benchmarks/ngram.py`` times it against KenLM).
    """
    if not isinstance(order, (int, np.integer)) or isinstance(order, bool) or order < 1:
        raise ValueError(f"order must be an integer >= 1, got {order!r}")
    lines = _check_lines(lines)
    num_tokens = sum(map(len, lines))
    if num_tokens == 0:
        raise ValueError("empty corpus: the lines hold no tokens, there is nothing to count")
    vocab = _prepare_vocab(vocab, lines, min_freq, bos, unk)
    V = len(vocab)
    x, pos, real = padded_stream(lines, vocab, 1 if pad else 0, bos)
    tables = [CountTable(1, np.arange(V, dtype=np.int64), np.bincount(x[real], minlength=V).astype(np.int64),
                         np.full(V, -1, dtype=np.int64))]
    prev = x  # row of the (k-1)-gram ending at each position
    for k in range(2, order + 1):
        if len(tables[-1]) > _MAX_KEY // V:
            raise OverflowError(f"order {k}: {len(tables[-1])} prefixes x |V|={V} overflows int64 keys")
        j = np.flatnonzero(pos >= k - 1)
        keys, inv = np.unique(prev[j - 1] * V + x[j], return_inverse=True)
        inv = inv.reshape(-1)
        counts = np.bincount(inv[real[j]], minlength=len(keys)).astype(np.int64)
        suffix = np.empty(len(keys), dtype=np.int64)
        suffix[inv] = prev[j]
        tables.append(CountTable(k, keys, counts, suffix))
        prev = np.full(len(x), -1, dtype=np.int64)
        prev[j] = inv
    return NGramCounts(vocab, tables, bos, bool(pad), num_tokens, len(lines))

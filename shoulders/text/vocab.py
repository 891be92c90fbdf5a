"""A vocabulary: the one table between tokens (strings) and ids (row numbers of an embedding matrix).

Every model of the book, from the n-gram LM to BERT, starts by numbering its tokens. The rules here are the
ones torchtext and the pytorch/examples word LM use, made explicit and deterministic:

* ``specials`` (``<unk>``, ``<pad>``, ``<eos>``, ...) come first, in the order given, so their ids are stable
  (``<pad>`` = 0 if you list it first, whatever the corpus);
* then every other token seen at least ``min_freq`` times, by frequency (descending), ties by the token
  itself (ascending code points) -- the same corpus always gives the same ids;
* ``max_size`` (optional) caps the *total* size, specials included;
* tokens outside the vocabulary map to the ``unk`` token's id; a vocabulary built with ``unk=None`` has no
  such fallback and an unknown token is a :class:`KeyError` that names it.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, repeat
from pathlib import Path
from typing import Any, Union

import numpy as np

from .._atomic import write_text_atomic

FORMAT = "shoulders.text.Vocab"
VERSION = 1

TokenSource = Union[Mapping[str, int], Iterable[str], Iterable[Iterable[str]]]


class VocabFileError(ValueError):
    """A file given to :meth:`Vocab.load` is not a (valid) saved vocabulary."""


def count_tokens(source: TokenSource) -> Counter:
    """Count tokens from a ``Counter``/mapping, a flat iterable of tokens, or an iterable of token lines.

    A bare ``str`` is refused: iterating it would count characters, which is almost never what was meant
    (use :func:`shoulders.text.chars` to say so).
    """
    if isinstance(source, str):
        raise TypeError("expected tokens, lines of tokens or a Counter, got a str; tokenize it first "
                        "(shoulders.text.words(text) or shoulders.text.chars(text))")
    if isinstance(source, Mapping):
        counts = Counter()
        for tok, n in source.items():
            if not isinstance(tok, str):
                raise TypeError(f"tokens must be str, got {type(tok).__name__} ({tok!r})")
            if int(n) != n or n < 0:
                raise ValueError(f"count of {tok!r} must be a non-negative integer, got {n!r}")
            counts[tok] = int(n)
        return counts
    it = iter(source)
    for first in it:
        break
    else:
        return Counter()
    rest = chain([first], it)
    if isinstance(first, str):  # a flat stream of tokens
        return Counter(rest)
    counts = Counter()  # lines of tokens
    for line in rest:
        if isinstance(line, str):
            raise TypeError("mixed input: a line of tokens followed by a bare str; pass either tokens or lines")
        counts.update(line)
    bad = next((t for t in counts if not isinstance(t, str)), None)
    if bad is not None:
        raise TypeError(f"tokens must be str, got {type(bad).__name__} ({bad!r})")
    return counts


class Vocab:
    """Token <-> id table with counts, specials and an optional ``unk`` fallback.

    Build one with :meth:`Vocab.build` (from a corpus or a ``Counter``); the constructor takes the final,
    ordered token list and is what :meth:`load` uses.

    >>> v = Vocab.build([["the", "cat"], ["the", "dog"]], specials=["<pad>"], unk="<unk>")
    >>> v.tokens
    ['<pad>', '<unk>', 'the', 'cat', 'dog']
    >>> v.encode(["the", "cow"])
    [2, 1]
    """

    def __init__(self, tokens: Sequence[str], counts: Mapping[str, int] | None = None,
                 specials: Sequence[str] = (), unk: str | None = None) -> None:
        self._itos: list[str] = list(tokens)
        self._stoi: dict[str, int] = {t: i for i, t in enumerate(self._itos)}
        if len(self._stoi) != len(self._itos):
            dup = sorted(t for t, n in Counter(self._itos).items() if n > 1)
            raise ValueError(f"duplicate tokens in vocabulary: {dup[:5]}")
        for t in self._itos:
            if not isinstance(t, str):
                raise TypeError(f"tokens must be str, got {type(t).__name__} ({t!r})")
        self.specials: tuple[str, ...] = tuple(specials)
        if list(self.specials) != self._itos[: len(self.specials)]:
            raise ValueError(f"specials {list(self.specials)} must be the first tokens of the vocabulary")
        if unk is not None and unk not in self._stoi:
            raise ValueError(f"unk token {unk!r} is not in the vocabulary")
        self.unk: str | None = unk
        self.unk_id: int | None = None if unk is None else self._stoi[unk]
        counts = counts or {}
        #: corpus counts of the vocabulary's tokens (0 for a special never seen in the corpus)
        self.counts: Counter = Counter({t: int(counts.get(t, 0)) for t in self._itos})

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, source: TokenSource, specials: Sequence[str] = (), unk: str | None = "<unk>",
              min_freq: int = 1, max_size: int | None = None) -> "Vocab":
        """Build a vocabulary from a corpus (tokens or lines of tokens) or a ``Counter`` of tokens.

        ``unk`` (default ``"<unk>"``) is the fallback for unknown tokens; if it is not among ``specials`` it is
        put first, before them. ``unk=None`` builds a closed vocabulary (unknown tokens raise ``KeyError``).
        ``min_freq`` drops rarer tokens; ``max_size`` caps the total size *including* specials. Specials
        are always kept, whatever their count. Order: specials, then count descending, then token ascending.
        """
        if min_freq < 1:
            raise ValueError(f"min_freq must be >= 1, got {min_freq}")
        specials = list(specials)
        if len(set(specials)) != len(specials):
            raise ValueError(f"duplicate specials: {specials}")
        if unk is not None and unk not in specials:
            specials.insert(0, unk)
        if max_size is not None and max_size < len(specials):
            raise ValueError(f"max_size={max_size} is smaller than the {len(specials)} specials {specials}")
        counts = count_tokens(source)
        special_set = set(specials)
        rest = sorted((t for t, n in counts.items() if n >= min_freq and t not in special_set),
                      key=lambda t: (-counts[t], t))
        if max_size is not None:
            rest = rest[: max_size - len(specials)]
        return cls(specials + rest, counts, specials=specials, unk=unk)

    # ------------------------------------------------------------------ lookups
    def __len__(self) -> int:
        return len(self._itos)

    def __contains__(self, token: object) -> bool:
        return token in self._stoi

    def __iter__(self):
        return iter(self._itos)

    def __getitem__(self, token: str) -> int:
        """Id of ``token``; the ``unk`` id for an unknown token, or ``KeyError`` if there is no ``unk``."""
        i = self._stoi.get(token)
        if i is None:
            if self.unk_id is None:
                raise self._unknown(token)
            return self.unk_id
        return i

    def _unknown(self, token: object) -> KeyError:
        return KeyError(f"token {token!r} is not in the vocabulary and it has no unk token; rebuild it with "
                        f"Vocab.build(..., unk='<unk>') or filter tokens with `tok in vocab` first")

    @property
    def tokens(self) -> list[str]:
        """All tokens in id order (a copy)."""
        return list(self._itos)

    @property
    def stoi(self) -> dict[str, int]:
        """token -> id (a copy)."""
        return dict(self._stoi)

    def lookup_token(self, i: int) -> str:
        """The token with id ``i`` (``IndexError`` outside ``0 .. len-1``; negative ids are refused)."""
        i = int(i)
        if not 0 <= i < len(self._itos):
            raise IndexError(f"id {i} is out of range for a vocabulary of size {len(self._itos)}")
        return self._itos[i]

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Ids of ``tokens`` (unknown ones -> ``unk`` id, or ``KeyError`` without ``unk``)."""
        if isinstance(tokens, str):
            raise TypeError("encode expects a sequence of tokens, got a str; wrap it in a list or tokenize it")
        if self.unk_id is None:
            try:
                return list(map(self._stoi.__getitem__, tokens))
            except KeyError as err:
                raise self._unknown(err.args[0]) from None
        return list(map(self._stoi.get, tokens, repeat(self.unk_id)))

    def encode_array(self, tokens: Iterable[str]) -> np.ndarray:
        """Like :meth:`encode` but returns an ``int64`` NumPy array ``(N,)``; ~2M tokens/0.2 s on one core."""
        if isinstance(tokens, str):
            raise TypeError("encode_array expects a sequence of tokens, got a str")
        count = len(tokens) if isinstance(tokens, Sequence) else -1
        if self.unk_id is None:
            ids = map(self._stoi.__getitem__, tokens)
            try:
                return np.fromiter(ids, dtype=np.int64, count=count)
            except KeyError as err:
                raise self._unknown(err.args[0]) from None
        return np.fromiter(map(self._stoi.get, tokens, repeat(self.unk_id)), dtype=np.int64, count=count)

    def decode(self, ids: Any) -> list[str]:
        """Tokens of ``ids`` (a list, 1-D NumPy array or 1-D tensor of ints)."""
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        if isinstance(ids, int):
            raise TypeError("decode expects a sequence of ids; use lookup_token for one id")
        itos, n = self._itos, len(self._itos)
        out = []
        for i in ids:
            if not isinstance(i, (int, np.integer)) or not 0 <= i < n:
                raise IndexError(f"id {i!r} is out of range for a vocabulary of size {n}")
            out.append(itos[i])
        return out

    def count_array(self) -> np.ndarray:
        """Corpus counts in id order, ``int64`` ``(V,)`` -- e.g. for unigram/negative-sampling tables."""
        return np.fromiter((self.counts[t] for t in self._itos), dtype=np.int64, count=len(self._itos))

    # ------------------------------------------------------------------ equality, repr
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocab):
            return NotImplemented
        return (self._itos == other._itos and self.specials == other.specials and self.unk == other.unk
                and self.counts == other.counts)

    __hash__ = None  # type: ignore[assignment]  # mutable-looking container: not hashable

    def __repr__(self) -> str:
        head = ", ".join(repr(t) for t in self._itos[:6]) + (", ..." if len(self) > 6 else "")
        return f"Vocab(size={len(self)}, unk={self.unk!r}, specials={list(self.specials)}, tokens=[{head}])"

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> Path:
        """Write the vocabulary as UTF-8 JSON, one ``[token, count]`` entry per line (id = line order).

        The write is atomic (a temporary file renamed into place). Returns the path.
        """
        path = Path(path)
        for i, t in enumerate(self._itos):  # a lone surrogate (text decoded with errors="surrogateescape") has no UTF-8
            try:
                t.encode("utf-8")
            except UnicodeEncodeError as err:
                raise ValueError(f"token {i} ({t!r}) cannot be written as UTF-8: {err.reason} at position {err.start}; "
                                 "clean the text it came from (decode it with errors='replace')") from None
        head = {"format": FORMAT, "version": VERSION, "size": len(self), "unk": self.unk,
                "specials": list(self.specials)}
        lines = ["{"]
        lines += [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}," for k, v in head.items()]
        lines.append('  "tokens": [')
        entries = [f"    {json.dumps([t, self.counts[t]], ensure_ascii=False)}" for t in self._itos]
        lines.append(",\n".join(entries))
        lines += ["  ]", "}", ""]
        return write_text_atomic(path, "\n".join(lines))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Vocab":
        """Read a vocabulary written by :meth:`save`; anything else raises :class:`VocabFileError`."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise VocabFileError(f"{path} is not a shoulders vocabulary file (not UTF-8 JSON: {err})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise VocabFileError(f"{path} is not a shoulders vocabulary file (expected \"format\": \"{FORMAT}\"); "
                                 f"write one with Vocab.save")
        if data.get("version") != VERSION:
            raise VocabFileError(f"{path}: unsupported vocabulary file version {data.get('version')!r} "
                                 f"(this shoulders reads version {VERSION})")
        try:
            entries = data["tokens"]
            specials, unk, size = data["specials"], data["unk"], data["size"]
            if not isinstance(entries, list) or not all(
                    isinstance(e, list) and len(e) == 2 and isinstance(e[0], str)
                    and isinstance(e[1], int) and not isinstance(e[1], bool) and e[1] >= 0 for e in entries):
                raise VocabFileError(f"{path}: \"tokens\" must be a list of [token, count] pairs")
            if not isinstance(specials, list) or not all(isinstance(s, str) for s in specials):
                raise VocabFileError(f"{path}: \"specials\" must be a list of strings")
            if unk is not None and not isinstance(unk, str):
                raise VocabFileError(f"{path}: \"unk\" must be a string or null")
            if size != len(entries):
                raise VocabFileError(f"{path}: header says {size} tokens but the file lists {len(entries)} "
                                     f"(truncated or edited?)")
            tokens = [t for t, _ in entries]
            return cls(tokens, dict(entries), specials=specials, unk=unk)
        except KeyError as err:
            raise VocabFileError(f"{path}: missing field {err.args[0]!r}") from None
        except (TypeError, ValueError) as err:
            if isinstance(err, VocabFileError):
                raise
            raise VocabFileError(f"{path}: {err}") from None

"""GPT-2's byte-level BPE tokenizer: pre-tokenisation, byte symbols, merges, training, vocab.json + merges.txt.

Byte-pair encoding (Sennrich et al. 2016, "Neural Machine Translation of Rare Words with Subword Units", §3.2)
builds a subword vocabulary bottom-up. Every word starts as a sequence of symbols; the trainer counts every pair
of adjacent symbols over the word types, weighted by how often each word occurs, and *merges* the most frequent
pair ``(a, b)`` into a new symbol ``ab`` everywhere it occurs. The merge is a new vocabulary entry and the next
line of the merge list; the loop repeats until the vocabulary has the size asked for. Encoding a new word replays
the merges in the order they were learned: among the adjacent pairs of the word, the one learned first is merged
(all its occurrences, left to right), then the next, until no learned pair is left.

GPT-2 (Radford et al. 2019, "Language Models are Unsupervised Multitask Learners", §2.2) runs BPE on **bytes**
instead of characters. The initial symbols are the 256 possible bytes of UTF-8 text, so every string -- any
script, emoji, control characters -- is a sequence of known symbols, and the tokenizer needs no unknown token:
a word never seen in training is at worst spelled out byte by byte, and ``decode(encode(s)) == s`` for every
string. (A character-level BPE must either put all ~150,000 Unicode characters in its base vocabulary or map the
rare ones to ``<unk>``.) Two details come from GPT-2's ``encoder.py``, reproduced here exactly:

* **the byte alphabet** (:func:`bytes_to_unicode`): each byte is written as one printable character so that
  vocab.json and merges.txt are text. The 188 printable bytes (``!``..``~``, ``¡``..``¬``, ``®``..``ÿ``) stand
  for themselves; the 68 others (control characters, space, ...) are moved to ``Ā`` (U+0100) onwards, in byte
  order: a space is ``Ġ``, a newline ``Ċ``, so `` the`` is the token ``Ġthe``;
* **pre-tokenisation** (:data:`PATTERN`): before BPE the text is cut by a regular expression into contractions
  (``'s``, ``'ll``, ...), runs of letters, runs of digits and runs of other characters, each with at most one
  leading space, and runs of whitespace. Merges never cross these pieces, so BPE does not learn ``dog.``,
  ``dog!`` and ``dog?`` as separate entries -- the paper's reason for the split. The ``regex`` module is needed for
  ``\\p{L}`` (any letter) and ``\\p{N}`` (any number).

**Training** (:meth:`ByteLevelBPE.train`). The pre-tokens of the corpus are counted once; the merge loop then works
on the pre-token *types* (tens of thousands for WikiText-2) with their counts. Pair counts and a pair -> words
index are kept up to date after each merge -- only the words holding the merged pair are re-segmented, and only
the counts of the pairs around each merged occurrence change -- and a lazy max-heap finds the most frequent pair
(an entry is checked against the current count when it comes out). Ties between equally frequent pairs go to
the pair with the smallest ids (first the left part, then the right), where the bytes come first (ordered by their
printable character, as in GPT-2's vocab.json) and a merged token's id is the order it was learned in. That is
the rule of Hugging Face's ``tokenizers`` trainer: trained on the same text, the two learn the same merges.

**Files.** :meth:`ByteLevelBPE.save` writes GPT-2's two files, which Hugging Face's ``tokenizers`` and
``transformers`` (``GPT2Tokenizer``) read as they read OpenAI's: ``vocab.json`` (token -> id, tokens written in the
byte alphabet) and ``merges.txt`` (``#version: 0.2``, then one ``a b`` merge per line, in the order learned).
Special tokens (GPT-2's ``<|endoftext|>``) are ordinary vocab.json entries; when the files are read back, an entry
of the form ``<|...|>`` that no merge produces is special. A special token written in the text is kept whole
as its id and never split into bytes.
"""
from __future__ import annotations

import heapq
import json
import operator
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import regex

from .._atomic import write_text_atomic
from .vocab import VocabFileError

__all__ = ["PATTERN", "ByteLevelBPE", "bytes_to_unicode", "merge_pair"]

PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
"""GPT-2's pre-tokenisation pattern (``encoder.py``): contractions, letters, numbers, other characters (each with
at most one leading space) and whitespace. ``\\s+(?!\\S)`` leaves the last space of a run of spaces to the next
word: ``"a   b"`` -> ``["a", "  ", " b"]``."""

MERGES_HEADER = "#version: 0.2"
_SPECIAL_FORM = re.compile(r"<\|.+\|>", re.DOTALL)  # how a special token is recognised in a vocab.json
_CACHE_LIMIT = 1_000_000  # pre-tokens whose ids are remembered (a bound on memory for endless streams)


@lru_cache(maxsize=None)
def _pattern() -> regex.Pattern:
    return regex.compile(PATTERN)


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character map (``encoder.py``), a bijection of the 256 bytes.

    Printable bytes stand for themselves (``ord(c) == b``); the 68 others (0-32, 127-160, 173) become the
    characters U+0100, U+0101, ... in byte order, so that no token holds a space or a control character:

    >>> m = bytes_to_unicode()
    >>> m[ord("a")], m[ord(" ")], m[ord("\\n")], len(set(m.values()))
    ('a', 'Ġ', 'Ċ', 256)
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    out = {b: chr(b) for b in printable}
    moved = 0
    for b in range(256):
        if b not in out:
            out[b] = chr(256 + moved)
            moved += 1
    return out


def _byte_alphabet() -> list[str]:
    """The 256 byte characters in GPT-2's vocab.json order: sorted by code point (printable bytes first)."""
    return sorted(bytes_to_unicode().values())


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as err:
        bad = text[err.start:err.end]
        raise ValueError(f"the text holds the lone surrogate {bad!r}: it is not Unicode text and has no UTF-8 "
                         "bytes to encode") from None


def merge_pair(ids: Sequence[int], a: int, b: int, merged: int) -> list[int]:
    """``ids`` with every occurrence of the pair ``(a, b)`` replaced by ``merged``, left to right and without
    overlap (``a a a`` with the pair ``(a, a)`` -> ``aa a``): one merge step of BPE (and of WordPiece's trainer)."""
    new, i, n = [], 0, len(ids)
    while i < n:
        if i + 1 < n and ids[i] == a and ids[i + 1] == b:
            new.append(merged)
            i += 2
        else:
            new.append(ids[i])
            i += 1
    return new


class ByteLevelBPE:
    """GPT-2's byte-level BPE tokenizer over a fixed vocabulary and merge list (see the module docstring).

    >>> bpe = ByteLevelBPE.train(["low low low lower lowest newest newest widest"] * 3, vocab_size=270)
    >>> bpe.merges[:4]
    [('l', 'o'), ('lo', 'w'), ('e', 's'), ('Ġ', 'low')]
    >>> bpe.tokens("the lowest newt")
    ['t', 'h', 'e', 'Ġlow', 'est', 'Ġnew', 't']
    >>> bpe.decode(bpe.encode("lowest newt <|endoftext|> 😀")) == "lowest newt <|endoftext|> 😀"
    True

    ``vocab`` maps every token (written in the byte alphabet of :func:`bytes_to_unicode`) to its id, the ids being
    ``0 .. len(vocab) - 1``; it must hold the 256 single-byte tokens. ``merges`` are the learned pairs in order:
    both parts and their concatenation must be vocabulary entries. ``special_tokens`` (kept whole when they appear
    in the text) default to the entries of the form ``<|...|>`` that no merge produces. Build one with
    :meth:`train`, or read GPT-2's files (ours, OpenAI's, Hugging Face's) with :meth:`load`.
    """

    EOS = "<|endoftext|>"

    def __init__(self, vocab: Mapping[str, int], merges: Iterable[tuple[str, str]],
                 special_tokens: Iterable[str] | None = None) -> None:
        if not isinstance(vocab, Mapping):
            raise TypeError(f"vocab must be a mapping token -> id, got {type(vocab).__name__}")
        itos: list[str | None] = [None] * len(vocab)
        for token, i in vocab.items():
            if not isinstance(token, str) or not token:
                raise ValueError(f"vocabulary entries must be non-empty strings, got {token!r}")
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(vocab):
                raise ValueError(f"the ids of a {len(vocab)}-entry vocabulary must be the integers 0..{len(vocab) - 1}"
                                 f"; {token!r} has id {i!r}")
            if itos[i] is not None:
                raise ValueError(f"id {i} is given to both {itos[i]!r} and {token!r}")
            itos[i] = token
        self._itos: list[str] = itos  # type: ignore[assignment]  (each id taken exactly once: no None left)
        self._stoi = {t: i for i, t in enumerate(self._itos)}
        stoi = self._stoi

        self._merges: list[tuple[str, str]] = []
        self._ranks: dict[tuple[int, int], tuple[int, int]] = {}  # (id a, id b) -> (rank, id of ab); last wins
        for rank, merge in enumerate(merges):
            if isinstance(merge, str) or len(merge) != 2:
                raise ValueError(f"merge {rank} must be a pair of tokens, got {merge!r}")
            a, b = merge
            for part in (a, b, a + b):
                if part not in stoi:
                    raise ValueError(f"merge {rank} ({a!r} {b!r}): {part!r} is not in the vocabulary")
            self._merges.append((a, b))
            self._ranks[stoi[a], stoi[b]] = (rank, stoi[a + b])

        merged = {a + b for a, b in self._merges}
        if special_tokens is None:
            specials = [t for t in self._itos if _SPECIAL_FORM.fullmatch(t) and t not in merged]
        else:
            if isinstance(special_tokens, str):
                raise TypeError(f"special_tokens must be a sequence of strings, got the str {special_tokens!r}")
            specials = list(dict.fromkeys(special_tokens))
            missing = [s for s in specials if s not in stoi]
            if missing:
                raise ValueError(f"the special tokens {missing} are not in the vocabulary")
        self._specials: tuple[str, ...] = tuple(specials)
        special_set = set(specials)
        for a, b in self._merges:
            if a in special_set or b in special_set:
                raise ValueError(f"the merge {a!r} {b!r} joins a special token, which is never split or merged")

        to_char = bytes_to_unicode()
        from_char = {c: b for b, c in to_char.items()}
        missing_bytes = [c for c in to_char.values() if c not in stoi]
        if missing_bytes:
            raise ValueError(f"the vocabulary lacks {len(missing_bytes)} of the 256 byte tokens (e.g. "
                             f"{missing_bytes[:5]}); a byte-level BPE needs all of them, so that any text encodes")
        self._byte_ids = [stoi[to_char[b]] for b in range(256)]  # byte value -> id
        self._bytes: list[bytes] = []  # id -> the bytes it decodes to
        for t in self._itos:
            if t in special_set:
                self._bytes.append(t.encode("utf-8"))
                continue
            try:
                self._bytes.append(bytes(from_char[c] for c in t))
            except KeyError:
                raise ValueError(f"the entry {t!r} is neither written in the byte alphabet (bytes_to_unicode) nor "
                                 "a special token") from None
        self._special_re = (regex.compile("(" + "|".join(map(regex.escape, sorted(specials, key=len, reverse=True)))
                                          + ")") if specials else None)
        self._cache: dict[str, tuple[int, ...]] = {}  # pre-token -> ids

    # ------------------------------------------------------------------ vocabulary
    def __len__(self) -> int:
        return len(self._itos)

    def __repr__(self) -> str:
        return f"ByteLevelBPE(size={len(self)}, merges={len(self._merges)}, special_tokens={list(self._specials)})"

    @property
    def vocab(self) -> dict[str, int]:
        """Token -> id (a copy; tokens in the byte alphabet, as in vocab.json)."""
        return dict(self._stoi)

    @property
    def merges(self) -> list[tuple[str, str]]:
        """The merges in the order they were learned (a copy): the lines of merges.txt."""
        return list(self._merges)

    @property
    def special_tokens(self) -> tuple[str, ...]:
        return self._specials

    @property
    def special_ids(self) -> dict[str, int]:
        """Special token -> id, e.g. ``{"<|endoftext|>": 7999}``."""
        return {s: self._stoi[s] for s in self._specials}

    @property
    def eos_id(self) -> int:
        """The id of ``<|endoftext|>``, GPT-2's end-of-text (and document separator) token."""
        if self.EOS not in self._specials:
            raise KeyError(f"this tokenizer has no {self.EOS} special token (its special tokens: "
                           f"{list(self._specials)}); train with special_tokens=({self.EOS!r},)")
        return self._stoi[self.EOS]

    def token_to_id(self, token: str) -> int:
        """The id of one vocabulary entry (written in the byte alphabet: `` the`` is ``Ġthe``)."""
        try:
            return self._stoi[token]
        except KeyError:
            raise KeyError(f"{token!r} is not in the vocabulary ({len(self)} entries); tokens are written in GPT-2's "
                           "byte alphabet (a space is 'Ġ', a newline 'Ċ'): use encode for text") from None

    def id_to_token(self, i: int) -> str:
        """The vocabulary entry of one id; ``ValueError`` for an id outside ``0 .. len(self) - 1``."""
        return self._itos[self._check_id(i)]

    def _check_id(self, i: Any) -> int:
        try:
            i = operator.index(i)
        except TypeError:
            raise TypeError(f"token ids are integers, got {i!r}") from None
        if not 0 <= i < len(self._itos):
            raise ValueError(f"id {i} is not in the vocabulary (ids 0..{len(self._itos) - 1})")
        return i

    # ------------------------------------------------------------------ encoding
    def pre_tokenize(self, text: str) -> list[str]:
        """The pieces BPE runs on: special tokens whole, the rest cut by :data:`PATTERN` (plain text, not bytes)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        findall = _pattern().findall
        if self._special_re is None:
            return findall(text)
        out: list[str] = []
        for k, part in enumerate(self._special_re.split(text)):
            if k % 2:
                out.append(part)
            elif part:
                out.extend(findall(part))
        return out

    def _bpe(self, piece: str) -> tuple[int, ...]:
        """One pre-token -> ids: its bytes, then the learned merges, lowest rank first (GPT-2's ``bpe``)."""
        ids = [self._byte_ids[b] for b in _utf8(piece)]
        ranks = self._ranks
        while len(ids) > 1:
            best = None
            for pair in zip(ids, ids[1:]):
                r = ranks.get(pair)
                if r is not None and (best is None or r[0] < best[0]):
                    best, a, b = r, pair[0], pair[1]
            if best is None:
                break
            ids = merge_pair(ids, a, b, best[1])
        return tuple(ids)

    def encode(self, text: str) -> list[int]:
        """``text`` -> token ids. Special tokens written in the text become their id; everything else is
        pre-tokenised and each piece goes through BPE (results cached per piece)."""
        cache, specials, out = self._cache, self._specials, []
        for piece in self.pre_tokenize(text):
            ids = cache.get(piece)
            if ids is None:
                ids = (self._stoi[piece],) if piece in specials else self._bpe(piece)
                if len(cache) < _CACHE_LIMIT:
                    cache[piece] = ids
            out.extend(ids)
        return out

    def encode_batch(self, texts: Iterable[str]) -> list[list[int]]:
        """:meth:`encode` of each text."""
        if isinstance(texts, str):
            raise TypeError("encode_batch expects an iterable of texts, got one str; use encode")
        return [self.encode(t) for t in texts]

    def tokens(self, text: str) -> list[str]:
        """``text`` -> its tokens as vocabulary entries (``"Hello world"`` -> ``['Hello', 'Ġworld']``)."""
        itos = self._itos
        return [itos[i] for i in self.encode(text)]

    def decode(self, ids: Any, errors: str = "replace") -> str:
        """Ids (a list, 1-D array or tensor) -> text: the bytes of the tokens, joined, read as UTF-8.

        ``decode(encode(s)) == s`` for every string. A sequence cut in the middle of a character (one byte of
        an emoji's four) is not valid UTF-8: ``errors="replace"`` (GPT-2's choice) writes U+FFFD there,
        ``errors="strict"`` raises. An id outside the vocabulary is a ``ValueError``.
        """
        ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
        table = self._bytes
        try:
            if ids and min(ids) < 0:  # table[-1] would be the last token
                raise IndexError
            data = b"".join([table[i] for i in ids])
        except (IndexError, TypeError):
            for i in ids:
                self._check_id(i)  # raises, naming the id
            raise
        return data.decode("utf-8", errors=errors)

    # ------------------------------------------------------------------ training
    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int, special_tokens: Sequence[str] = (EOS,),
              min_frequency: int = 2, progress: bool = False) -> "ByteLevelBPE":
        """Learn ``vocab_size`` entries (special tokens included) from ``texts`` (module docstring).

        Ids ``0..255`` are the byte tokens in GPT-2's order, then the merged tokens in the order they were
        learned, then the special tokens (GPT-2's ``<|endoftext|>`` is its last id, 50256). Each text is
        pre-tokenised on its own (pass lines, paragraphs or documents); special tokens written in it are cut out
        and not learned from. The loop stops early if the most frequent pair occurs fewer than ``min_frequency``
        times (Hugging Face's meaning of ``min_frequency``), so the result can be smaller than ``vocab_size``.
        Special tokens must look like ``<|...|>``, which is how :meth:`load` recognises them.

        On WikiText-2's training text (11 MB, 2.05M words) 8,000 entries take about 3 s on one CPU core; that
        vocabulary encodes WikiText-2's validation text in 1.31 tokens per word.
        """
        if isinstance(texts, str):
            raise TypeError("texts must be an iterable of strings (e.g. lines), got one str")
        if isinstance(special_tokens, str):
            raise TypeError(f"special_tokens must be a sequence of strings, got the str {special_tokens!r}")
        specials = list(special_tokens)
        if len(set(specials)) != len(specials):
            raise ValueError(f"special_tokens has duplicates: {specials}")
        odd = [s for s in specials if not isinstance(s, str) or not _SPECIAL_FORM.fullmatch(s)]
        if odd:
            raise ValueError(f"special tokens must have the form <|name|> (as GPT-2's <|endoftext|>), so that "
                             f"load() recognises them in vocab.json; got {odd}")
        if min_frequency < 1:
            raise ValueError(f"min_frequency must be >= 1, got {min_frequency}")
        if vocab_size < 256 + len(specials):
            raise ValueError(f"vocab_size={vocab_size} cannot hold the 256 byte tokens and {len(specials)} special "
                             f"tokens ({256 + len(specials)} entries)")

        findall = _pattern().findall
        cut = regex.compile("|".join(map(regex.escape, sorted(specials, key=len, reverse=True)))) if specials else None
        counts: Counter = Counter()
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"texts must hold strings, got {type(text).__name__}")
            if cut is None:
                counts.update(findall(text))
            else:
                for part in cut.split(text):
                    counts.update(findall(part))

        tokens = _byte_alphabet()
        stoi = {t: i for i, t in enumerate(tokens)}
        byte_ids = [stoi[c] for b, c in sorted(bytes_to_unicode().items())]
        words, freqs = [], []
        for piece, n in counts.items():
            data = _utf8(piece)
            if len(data) > 1:  # a single byte has no pair to merge
                words.append([byte_ids[b] for b in data])
                freqs.append(n)
        merges = _learn_merges(tokens, stoi, words, freqs, vocab_size - len(specials), min_frequency, progress)
        vocab = {t: i for i, t in enumerate(tokens + specials)}
        return cls(vocab, [(tokens[a], tokens[b]) for a, b in merges], specials)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> Path:
        """Write ``vocab.json`` at ``path`` and ``merges.txt`` beside it (GPT-2's files), each atomically.

        ``path`` names the vocab.json file; an existing folder, or a name without suffix, means
        ``path/vocab.json``. Returns the vocab.json path. merges.txt is written first, so a complete vocab.json
        means both files are there.
        """
        path = Path(path)
        if path.is_dir() or (not path.exists() and not path.suffix):
            path = path / "vocab.json"
        merges = "".join(f"{a} {b}\n" for a, b in self._merges)
        write_text_atomic(path.with_name("merges.txt"), f"{MERGES_HEADER}\n{merges}")
        write_text_atomic(path, json.dumps(self._stoi, ensure_ascii=False))
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, special_tokens: Iterable[str] | None = None) -> "ByteLevelBPE":
        """Read ``vocab.json`` and the ``merges.txt`` beside it (ours, OpenAI's GPT-2 files, Hugging Face's).

        ``path`` is the vocab.json file or the folder holding both. Special tokens are the entries of the form
        ``<|...|>`` that no merge produces, unless ``special_tokens`` names them. A missing file is
        ``FileNotFoundError``; a malformed one is :class:`~shoulders.text.VocabFileError` (a ``ValueError``) naming
        the file and, for merges.txt, the line.
        """
        path = Path(path)
        if path.is_dir() or (not path.exists() and not path.suffix):  # a folder, as in save
            path = path / "vocab.json"
        merges_path = path.with_name("merges.txt")
        for p in (path, merges_path):
            if not p.is_file():
                raise FileNotFoundError(f"no {p.name} at {p}: a byte-level BPE is saved as vocab.json + merges.txt "
                                        "in one folder (ByteLevelBPE.save)")

        def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for k, v in pairs:
                if k in out:
                    raise VocabFileError(f"{path}: the token {k!r} is listed twice")
                out[k] = v
            return out

        try:
            vocab = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=no_duplicates)
        except json.JSONDecodeError as err:
            raise VocabFileError(f"{path}, line {err.lineno}, column {err.colno}: not valid JSON ({err.msg}); "
                                 "vocab.json is one object token -> id") from None
        except UnicodeDecodeError as err:
            raise VocabFileError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
        if not isinstance(vocab, dict) or not vocab:
            raise VocabFileError(f"{path}: vocab.json must be a non-empty JSON object token -> id")

        try:
            lines = merges_path.read_text(encoding="utf-8").split("\n")
        except UnicodeDecodeError as err:
            raise VocabFileError(f"{merges_path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
        if lines[-1] == "":
            lines.pop()
        merges = []
        for number, line in enumerate(lines, start=1):
            line = line.removesuffix("\r")
            if number == 1 and line.startswith("#version"):
                continue
            parts = line.split(" ")
            if len(parts) != 2 or not all(parts):
                raise VocabFileError(f"{merges_path}, line {number}: expected two tokens separated by one space, "
                                     f"got {line!r}")
            for part in (parts[0], parts[1], parts[0] + parts[1]):
                if part not in vocab:
                    raise VocabFileError(f"{merges_path}, line {number}: {part!r} (of the merge {line!r}) is not in "
                                         f"{path.name}")
            merges.append((parts[0], parts[1]))
        try:
            return cls(vocab, merges, special_tokens)
        except ValueError as err:
            raise VocabFileError(f"{path}: {err}") from None


def _learn_merges(tokens: list[str], stoi: dict[str, int], words: list[list[int]], freqs: list[int],
                  target: int, min_frequency: int, progress: bool = False) -> list[tuple[int, int]]:
    """Merge the most frequent adjacent pair until ``len(tokens) == target``; extends ``tokens`` and ``stoi`` and
    returns the merges as pairs of ids, in order.

    ``words`` are the pre-token types as lists of ids (re-segmented in place), ``freqs`` their counts. State:
    ``pairs`` (pair -> frequency-weighted count of its occurrences, overlapping ones included: ``a a a`` holds
    ``(a, a)`` twice) and ``where`` (pair -> indices of the words holding it). The heap holds ``(-count, a, b)``,
    so it pops the most frequent pair, ties to the smallest ids. A count can fall after its entry was pushed (the
    entry is then re-pushed with the new count when it comes out) or rise only for pairs the merge just made
    (pushed at once), so the first entry that agrees with ``pairs`` is the true maximum.
    """
    pairs: dict[tuple[int, int], int] = defaultdict(int)
    where: defaultdict[tuple[int, int], set[int]] = defaultdict(set)
    for wi, (w, f) in enumerate(zip(words, freqs)):
        for p in zip(w, w[1:]):
            pairs[p] += f
            where[p].add(wi)
    pairs = dict(pairs)
    heap = [(-n, a, b) for (a, b), n in pairs.items()]
    heapq.heapify(heap)
    merges: list[tuple[int, int]] = []
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=target, initial=len(tokens), desc="BPE merges", unit="token")
    while len(tokens) < target and heap:
        neg, a, b = heapq.heappop(heap)
        p = (a, b)
        n = pairs.get(p, 0)
        if n != -neg:  # a stale entry: put the pair back with its current count
            if n > 0:
                heapq.heappush(heap, (-n, a, b))
            continue
        if n < min_frequency:
            break
        text = tokens[a] + tokens[b]
        m = stoi.get(text)
        if m is None:  # the same string can come from two different pairs (a + bc, ab + c): one id for it
            m = stoi[text] = len(tokens)
            tokens.append(text)
            if bar is not None:
                bar.update(1)
        merges.append(p)
        delta: dict[tuple[int, int], int] = defaultdict(int)
        for wi in where.pop(p):
            w, f = words[wi], freqs[wi]
            new = merge_pair(w, a, b, m)
            old_pairs, new_pairs = list(zip(w, w[1:])), list(zip(new, new[1:]))
            for q in old_pairs:
                delta[q] -= f
            for q in new_pairs:
                delta[q] += f
            old_set, new_set = set(old_pairs), set(new_pairs)
            for q in old_set - new_set:
                if q != p:
                    where[q].discard(wi)
            for q in new_set - old_set:
                where[q].add(wi)
            words[wi] = new
        for q, d in delta.items():
            if not d:
                continue
            c = pairs.get(q, 0) + d
            if c > 0:
                pairs[q] = c
                if d > 0:
                    heapq.heappush(heap, (-c, q[0], q[1]))
            else:
                pairs.pop(q, None)
                where.pop(q, None)
    if bar is not None:
        bar.close()
    return merges

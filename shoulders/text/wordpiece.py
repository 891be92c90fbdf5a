"""BERT's WordPiece tokenizer: basic tokenization, greedy longest-match-first pieces, and vocabulary training.

WordPiece (Schuster & Nakajima 2012, "Japanese and Korean Voice Search"; Wu et al. 2016, GNMT §4.1) splits
every word into pieces from a fixed vocabulary of a few thousand units, so a model sees no out-of-vocabulary
word: a rare word becomes a few frequent pieces (``unaffable`` -> ``un ##aff ##able``). BERT (Devlin et al.
2019, §3) uses a 30,000-piece vocabulary and two steps, reproduced here exactly as Google's ``tokenization.py``
(and Hugging Face's ``BertTokenizer``) do them:

1. **basic tokenization** (:meth:`WordPiece.basic`): drop control characters, split on whitespace, lower-case
   and strip accents (NFD, drop the combining marks), cut every punctuation character into its own token and
   put spaces around CJK ideographs. The special tokens (``[MASK]``, ``[UNK]``, ...) are taken out of the text
   first, wherever they are, and kept whole;
2. **WordPiece** (:meth:`WordPiece.word_pieces`): each basic token is covered greedily from the left by the
   *longest* vocabulary entry that matches; a piece that does not start the word carries the ``##`` prefix.
   If some position cannot be matched at all, the whole word becomes ``[UNK]`` (it is not half-tokenized).

**Training** (:meth:`WordPiece.train`). Google never published its WordPiece trainer; the papers describe it as
a greedy bottom-up merge that picks, at each step, the merge that most increases the likelihood of the training
data under a unigram language model over the current units (Schuster & Nakajima 2012, §3.2). With counts
``n(a)``, ``n(b)`` of the two units and ``n(ab)`` of the adjacent pair, that gain is ranked by the score

    score(a, b) = n(ab) / (n(a) * n(b))

-- Hugging Face's description of WordPiece training. Unlike BPE's raw pair frequency (Sennrich et al. 2016), it
prefers pairs whose parts rarely occur apart: a frequent pair of two very frequent units loses to a rarer pair
of units that almost always come together. The score ranks pairs as pointwise mutual information does and
ignores how often the pair occurs, so it fills the vocabulary with rare whole words before common ones (``the``
is still ``th ##e`` after 8,000 entries on WikiText-2). The default, ``criterion="likelihood"``, ranks by the
exact gain of the unigram log-likelihood ``sum_u n(u) log(n(u) / N)`` instead (counts and ``N`` after the merge
minus before), about ``n(ab)`` times the log of that ratio: the criterion of the paper, and a vocabulary like
BPE's (``criterion="score"`` keeps the ratio alone).

The trainer starts from every character seen, each both as a word-initial piece (``a``) and as a continuation
piece (``##a``), so that any word made of seen characters can be tokenized without ``[UNK]``; then it merges
the best pair over the word types, weighted by their frequency, until the vocabulary has ``vocab_size``
entries. Pair counts, unit counts and a pair -> words index are updated incrementally (only the words holding
the merged pair are re-segmented), and a lazy max-heap holds the scores.
"""
from __future__ import annotations

import heapq
import os
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from math import log
from pathlib import Path
from typing import Any

from .._atomic import write_text_atomic
from .bpe import merge_pair
from .vocab import Vocab, VocabFileError

__all__ = ["WordPiece"]

_DROP, _SPACE, _KEEP = "", " ", None
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
               (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_punctuation(ch: str) -> bool:
    """BERT's ``_is_punctuation``: every non-alphanumeric ASCII character, plus Unicode category ``P*``."""
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _text_fix(ch: str) -> str | None:
    """What BERT's text cleaning does to one character: drop it, make it a space, pad it with spaces, or keep it.

    ``_clean_text`` drops NUL, U+FFFD and control characters (category ``C*`` except tab/newline/return) and turns
    whitespace (space, tab, newline, return, category ``Zs``) into a space; ``_tokenize_chinese_chars`` puts
    spaces around CJK ideographs so that each becomes a token.
    """
    cp = ord(ch)
    if ch in " \t\n\r":
        return _KEEP  # str.split() splits on them anyway
    if cp == 0 or cp == 0xFFFD:
        return _DROP
    if unicodedata.category(ch) == "Zs":
        return _SPACE
    if unicodedata.category(ch).startswith("C"):
        return _DROP
    if any(lo <= cp <= hi for lo, hi in _CJK_RANGES):
        return f" {ch} "
    return _KEEP


class _Basic:
    """BERT's BasicTokenizer with two caches: per character (cleaning) and per whitespace token (the rest)."""

    def __init__(self, lower: bool, specials: Sequence[str]) -> None:
        self.lower = lower
        self.specials = frozenset(specials)
        self._special_re = re.compile("(" + "|".join(map(re.escape, sorted(specials, key=len, reverse=True)))
                                      + ")")
        self._plain: set[str] = set()  # characters that cleaning leaves alone (the common case)
        self._fixes: dict[int, str] = {}  # code point -> replacement, for the others
        self._tokens: dict[str, tuple[str, ...]] = {}

    def chunks(self, text: str) -> list[str]:
        """The whitespace tokens of ``text`` after cleaning; special tokens are split out and kept whole."""
        if "[" in text:
            out = []
            for i, part in enumerate(self._special_re.split(text)):
                if i % 2:
                    out.append(part)
                elif part:
                    out.extend(self._clean(part).split())
            return out
        return self._clean(text).split()

    def _clean(self, text: str) -> str:
        chars = set(text)
        if chars <= self._plain:
            return text
        for ch in chars - self._plain:
            if ord(ch) not in self._fixes:
                fix = _text_fix(ch)
                if fix is _KEEP:
                    self._plain.add(ch)
                else:
                    self._fixes[ord(ch)] = fix
        table = {cp: self._fixes[cp] for cp in map(ord, chars) if cp in self._fixes}
        return text.translate(table) if table else text

    def split(self, token: str) -> tuple[str, ...]:
        """One cleaned whitespace token -> its basic tokens (NFC, lower + strip accents, punctuation split)."""
        out = self._tokens.get(token)
        if out is None:
            out = self._split(token)
            if len(self._tokens) < 2_000_000:  # a bound on memory for endless streams of new words
                self._tokens[token] = out
        return out

    def _split(self, token: str) -> tuple[str, ...]:
        if token in self.specials:
            return (token,)
        if not token.isascii():
            token = unicodedata.normalize("NFC", token)  # as Hugging Face's BasicTokenizer
        if self.lower:
            token = token.lower()
            if not token.isascii():
                token = "".join(c for c in unicodedata.normalize("NFD", token) if unicodedata.category(c) != "Mn")
        if token.isalnum():
            return (token,) if token else ()
        out, cur = [], []
        for ch in token:
            if _is_punctuation(ch):
                if cur:
                    out.append("".join(cur))
                    cur = []
                out.append(ch)
            else:
                cur.append(ch)
        if cur:
            out.append("".join(cur))
        return tuple(out)


class WordPiece:
    """A BERT WordPiece tokenizer over a fixed vocabulary (``vocab.txt`` order = ids).

    >>> wp = WordPiece(WordPiece.SPECIALS + ("un", "##aff", "##able", "aff"))
    >>> wp.tokenize("Unaffable!")
    ['un', '##aff', '##able', '[UNK]']

    ``lower=True`` is the uncased BERT (lower-case and strip accents); ``max_chars_per_word`` longer basic
    tokens become ``[UNK]``. Build a vocabulary with :meth:`train`, or read one (e.g. Google's) with :meth:`load`.
    """

    PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
    SPECIALS = (PAD, UNK, CLS, SEP, MASK)  # ids 0..4 in a trained vocabulary

    def __init__(self, tokens: Sequence[str], lower: bool = True, max_chars_per_word: int = 100) -> None:
        if isinstance(tokens, str):
            raise TypeError("tokens must be a sequence of vocabulary entries, got a str")
        tokens = list(tokens)
        missing = [s for s in self.SPECIALS if s not in set(tokens)]
        if missing:
            raise ValueError(f"the vocabulary lacks the special tokens {missing}; a WordPiece vocabulary needs all "
                             f"of {list(self.SPECIALS)} (WordPiece.train puts them at ids 0..4)")
        if max_chars_per_word < 1:
            raise ValueError(f"max_chars_per_word must be >= 1, got {max_chars_per_word}")
        self.vocab = Vocab(tokens, unk=self.UNK)  # token <-> id (raises on duplicates)
        self._stoi = self.vocab.stoi
        self.lower = bool(lower)
        self.max_chars_per_word = int(max_chars_per_word)
        self._basic = _Basic(self.lower, self.SPECIALS)
        self._pieces: dict[str, tuple[str, ...]] = {}  # basic token -> pieces
        self._chunk_pieces: dict[str, tuple[str, ...]] = {}  # whitespace token -> pieces
        self._chunk_ids: dict[str, tuple[int, ...]] = {}  # whitespace token -> ids

    # ------------------------------------------------------------------ vocabulary
    @property
    def tokens(self) -> list[str]:
        """The vocabulary in id order (a copy)."""
        return self.vocab.tokens

    def __len__(self) -> int:
        return len(self.vocab)

    def __repr__(self) -> str:
        return f"WordPiece(size={len(self)}, lower={self.lower})"

    @property
    def pad_id(self) -> int:
        return self._stoi[self.PAD]

    @property
    def unk_id(self) -> int:
        return self._stoi[self.UNK]

    @property
    def cls_id(self) -> int:
        return self._stoi[self.CLS]

    @property
    def sep_id(self) -> int:
        return self._stoi[self.SEP]

    @property
    def mask_id(self) -> int:
        return self._stoi[self.MASK]

    def ids_to_tokens(self, ids: Any) -> list[str]:
        """Tokens of ``ids`` (a list, 1-D array or tensor); ``IndexError`` for an id out of range."""
        return self.vocab.decode(ids)

    def tokens_to_ids(self, tokens: Iterable[str]) -> list[int]:
        """Ids of ``tokens``; a token outside the vocabulary gets ``unk_id``."""
        return self.vocab.encode(tokens)

    # ------------------------------------------------------------------ tokenizing
    def basic(self, text: str) -> list[str]:
        """BERT's BasicTokenizer: the words and punctuation marks that WordPiece then splits into pieces.

        >>> WordPiece(WordPiece.SPECIALS).basic("Don't say \\"Café\\" [MASK].")
        ['don', "'", 't', 'say', '"', 'cafe', '"', '[MASK]', '.']
        """
        split = self._basic.split
        return [t for chunk in self._basic.chunks(text) for t in split(chunk)]

    def word_pieces(self, word: str) -> list[str]:
        """Greedy longest-match-first pieces of one basic token (continuations prefixed ``##``).

        The whole word is ``[UNK]`` if some position has no matching piece or it is longer than
        ``max_chars_per_word`` characters. Results are cached per word.
        """
        return list(self._word_pieces(word))

    def _word_pieces(self, word: str) -> tuple[str, ...]:
        out = self._pieces.get(word)
        if out is not None:
            return out
        vocab, n = self._stoi, len(word)
        if word in vocab:  # the common case: the whole word is a piece (specials included)
            out = (word,)
        elif n > self.max_chars_per_word:
            out = (self.UNK,)
        else:
            pieces, start = [], 0
            while start < n:
                end = n
                while end > start:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    if piece in vocab:
                        break
                    end -= 1
                else:
                    pieces = [self.UNK]
                    break
                pieces.append(piece)
                start = end
            out = tuple(pieces)
        if len(self._pieces) < 2_000_000:
            self._pieces[word] = out
        return out

    def _chunk(self, chunk: str) -> tuple[str, ...]:
        out = self._chunk_pieces.get(chunk)
        if out is None:
            pieces = self._word_pieces
            out = tuple(p for t in self._basic.split(chunk) for p in pieces(t))
            if len(self._chunk_pieces) < 2_000_000:
                self._chunk_pieces[chunk] = out
        return out

    def _chunk_id(self, chunk: str) -> tuple[int, ...]:
        out = self._chunk_ids.get(chunk)
        if out is None:
            stoi = self._stoi
            out = tuple(stoi[p] for p in self._chunk(chunk))
            if len(self._chunk_ids) < 2_000_000:
                self._chunk_ids[chunk] = out
        return out

    def tokenize(self, text: str) -> list[str]:
        """``text`` -> WordPiece tokens (:meth:`basic`, then :meth:`word_pieces` on each basic token)."""
        chunk = self._chunk
        return [p for c in self._basic.chunks(text) for p in chunk(c)]

    def encode(self, text: str) -> list[int]:
        """``text`` -> ids of its WordPiece tokens (no ``[CLS]``/``[SEP]``: see :mod:`shoulders.text.bert_inputs`)."""
        chunk_id = self._chunk_id
        return [i for c in self._basic.chunks(text) for i in chunk_id(c)]

    def encode_words(self, words: Sequence[str]) -> tuple[list[int], list[int]]:
        """Ids of pre-split words and, for every id, the index of the word it came from.

        Each word (a CoNLL token, a whitespace-split SQuAD word) goes through :meth:`basic` and
        :meth:`word_pieces` on its own, so a word never merges with its neighbours; its first id is where a
        tagger puts the word's label, and answer spans map through the indices. A word that basic tokenization
        empties (only control or zero-width characters) becomes one ``[UNK]``, so every word has at least one id.
        """
        if isinstance(words, str):
            raise TypeError("encode_words expects a sequence of words, got a str; use encode for text")
        ids: list[int] = []
        index: list[int] = []
        chunks, chunk_id, unk = self._basic.chunks, self._chunk_id, self.unk_id
        for w, word in enumerate(words):
            start = len(ids)
            for c in chunks(word):
                ids.extend(chunk_id(c))
            if len(ids) == start:
                ids.append(unk)
            index.extend([w] * (len(ids) - start))
        return ids, index

    def decode(self, ids: Any) -> str:
        """Ids -> text: a ``##`` piece is glued to the previous one, other tokens are joined by a space.

        Lower-casing, stripped accents and the spaces around punctuation are not undone (``"U.S."`` comes back
        as ``"u . s ."``).
        """
        out: list[str] = []
        for t in self.ids_to_tokens(ids):
            if t.startswith("##") and out:
                out[-1] += t[2:]
            else:
                out.append(t)
        return " ".join(out)

    # ------------------------------------------------------------------ training
    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int = 8000, min_freq: int = 2, lower: bool = True,
              progress: bool = False, criterion: str = "likelihood", max_chars_per_word: int = 100) -> "WordPiece":
        """Learn a WordPiece vocabulary of ``vocab_size`` entries from ``texts`` (see the module docstring).

        Ids 0..4 are :attr:`SPECIALS`, then every character seen (word-initial, then ``##`` continuation forms,
        each in code-point order), then the merged pieces in the order they were learned. Words seen fewer than
        ``min_freq`` times take no part in the merges but their characters are in the vocabulary. Special tokens
        written in the text (a literal ``[UNK]``) stay whole and are not learned from, and neither are words longer
        than ``max_chars_per_word`` (encoding maps them to ``[UNK]`` anyway). The result can be smaller
        than ``vocab_size`` only when no pair is left to merge; a ``vocab_size`` too small to hold the specials
        and the characters is a ``ValueError``.

        ``criterion="likelihood"`` (the default, Schuster & Nakajima's criterion) ranks pairs by the exact gain in
        unigram log-likelihood of the corpus (module docstring), which weighs how often the pair occurs;
        ``criterion="score"`` by ``n(ab) / (n(a) n(b))`` alone. On WikiText-2 (8,000 entries) the likelihood
        needs ~1.1 pieces per word against ~3 for the score, whose vocabulary fills with rare whole words first;
        it takes about three times as long to train (~20 s against ~7 s on one thread).
        """
        if criterion not in ("score", "likelihood"):
            raise ValueError(f"criterion must be 'score' or 'likelihood', got {criterion!r}")
        if min_freq < 1:
            raise ValueError(f"min_freq must be >= 1, got {min_freq}")
        if isinstance(texts, str):
            raise TypeError("texts must be an iterable of strings (e.g. lines), got one str")
        basic = _Basic(bool(lower), cls.SPECIALS)
        chunk_counts: Counter = Counter()
        for text in texts:
            chunk_counts.update(basic.chunks(text))
        counts: Counter = Counter()
        for chunk, n in chunk_counts.items():
            for word in basic.split(chunk):
                counts[word] += n
        for s in cls.SPECIALS:
            counts.pop(s, None)

        alphabet = sorted({ch for word in counts for ch in word})
        tokens = list(cls.SPECIALS) + alphabet + ["##" + ch for ch in alphabet]
        if vocab_size < len(tokens):
            raise ValueError(f"vocab_size={vocab_size} cannot hold the {len(cls.SPECIALS)} specials and the "
                             f"{len(alphabet)} characters of the corpus in both forms ({len(tokens)} entries)")
        stoi = {t: i for i, t in enumerate(tokens)}
        # words longer than max_chars_per_word encode as [UNK] whatever the vocabulary: nothing to learn from them
        merge_words = [(w, n) for w, n in counts.items() if n >= min_freq and 1 < len(w) <= max_chars_per_word]
        merge_words.sort(key=lambda wn: (-wn[1], wn[0]))  # deterministic order
        words = [[stoi[w[0]]] + [stoi["##" + ch] for ch in w[1:]] for w, _ in merge_words]
        freqs = [n for _, n in merge_words]
        _learn_merges(tokens, stoi, words, freqs, vocab_size, criterion == "likelihood", progress)
        return cls(tokens, lower=lower, max_chars_per_word=max_chars_per_word)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> Path:
        """Write the standard BERT ``vocab.txt`` (one token per line, id order), atomically; returns its path.

        ``path`` may be a folder (an existing one, or a name without suffix): the file is then ``path/vocab.txt``.
        """
        path = Path(path)
        if path.is_dir() or (not path.exists() and not path.suffix):
            path = path / "vocab.txt"
        bad = [t for t in self.vocab.tokens if not t or "\n" in t or "\r" in t]
        if bad:
            raise ValueError(f"tokens {bad[:3]!r} cannot be written one per line")
        return write_text_atomic(path, "".join(t + "\n" for t in self.vocab.tokens))

    @classmethod
    def load(cls, path: str | os.PathLike, lower: bool = True) -> "WordPiece":
        """Read a BERT ``vocab.txt`` (ours, or Google's/Hugging Face's); ``path`` may be the folder holding it.

        A missing file is ``FileNotFoundError``; an empty one, or one without the special tokens, is
        :class:`~shoulders.text.VocabFileError` (a ``ValueError``).
        """
        path = Path(path)
        if path.is_dir():
            path = path / "vocab.txt"
        if not path.is_file():
            raise FileNotFoundError(f"no WordPiece vocabulary at {path}; train one with WordPiece.train and save it")
        lines = path.read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        tokens = [line[:-1] if line.endswith("\r") else line for line in lines]
        if not tokens:
            raise VocabFileError(f"{path} is empty: a vocab.txt lists one token per line")
        try:
            return cls(tokens, lower=lower)
        except ValueError as err:
            raise VocabFileError(f"{path}: {err}") from None


def _xlogx(x: int) -> float:
    return x * log(x) if x > 0 else 0.0


def _learn_merges(tokens: list[str], stoi: dict[str, int], words: list[list[int]], freqs: list[int],
                  vocab_size: int, gain: bool = False, progress: bool = False) -> None:
    """Merge pairs of units by ``n(ab) / (n(a) n(b))`` until ``len(tokens) == vocab_size``; extends ``tokens``.

    ``words`` are the word types as lists of unit ids (re-segmented in place), ``freqs`` their counts. The state:
    ``unit`` (unit -> frequency-weighted count), ``pairs`` (adjacent pair -> count), ``where`` (pair -> the words
    holding it) and ``touching`` (unit -> the pairs it is part of). A merge only visits the words in
    ``where[pair]``. The heap holds ``(-score, -count, a, b)``; an entry is checked against the current counts
    when it comes out. Scores that went *down* are fixed then (re-pushed), scores that went *up* -- every pair
    touching ``a`` or ``b``, whose counts fell, and the new pairs of the merged unit -- are pushed at once, so the
    first valid entry is always the true maximum.
    """
    unit: Counter = Counter()
    pairs: Counter = Counter()
    where: defaultdict[tuple[int, int], set[int]] = defaultdict(set)
    touching: defaultdict[int, set[tuple[int, int]]] = defaultdict(set)
    for wi, (w, f) in enumerate(zip(words, freqs)):
        for u in w:
            unit[u] += f
        for p in zip(w, w[1:]):
            pairs[p] += f
            where[p].add(wi)
    for a, b in pairs:
        touching[a].add((a, b))
        touching[b].add((a, b))

    total = sum(unit.values())  # N, the number of units in the corpus
    xlogx_total = _xlogx(total)
    xlogx_unit = {u: _xlogx(n) for u, n in unit.items()}

    repeats: dict[tuple[int, int], int] = {}  # (a, a) -> merges it would make, cached until a word holding it changes

    def merges(p: tuple[int, int]) -> int:
        """How many units the merge of ``p`` would create. For a != b, the pair count; a run of one unit
        (``0 0 0`` in "1000") holds overlapping pairs but merges left to right without overlap (``00 0``)."""
        a, b = p
        if a != b:
            return pairs[p]
        if p not in repeats:
            k = 0
            for wi in where[p]:
                w, i = words[wi], 0
                while i + 1 < len(w):
                    if w[i] == a and w[i + 1] == a:
                        k += freqs[wi]
                        i += 2
                    else:
                        i += 1
            repeats[p] = k
        return repeats[p]

    def entry(p: tuple[int, int]) -> tuple[float, int, int, int]:
        n, a, b = pairs[p], p[0], p[1]
        if not gain:
            return (-n / (unit[a] * unit[b]), -n, a, b)
        # log-likelihood sum_u n(u) log(n(u) / N) after the merge minus before (x log x terms; N falls by k, the
        # merges made: a unit of a repeated character is consumed twice per merge)
        if a != b:
            k, rest_a, rest_b = n, unit[a] - n, unit[b] - n
            g = (n * log(n) + (rest_a * log(rest_a) if rest_a else 0.0) - xlogx_unit[a]
                 + (rest_b * log(rest_b) if rest_b else 0.0) - xlogx_unit[b])
        else:
            k = merges(p)
            g = _xlogx(k) + _xlogx(unit[a] - 2 * k) - xlogx_unit[a]
        return ((total - k) * log(total - k) - xlogx_total - g, -n, a, b)

    heap = [entry(p) for p in pairs]
    heapq.heapify(heap)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=vocab_size, initial=len(tokens), desc="WordPiece merges", unit="token")
    while len(tokens) < vocab_size and heap:
        top = heapq.heappop(heap)
        a, b = top[2], top[3]
        p = (a, b)
        if p not in pairs:
            continue
        now = entry(p)
        if now != top:
            heapq.heappush(heap, now)
            continue
        text = tokens[a] + tokens[b][2:]
        m = stoi.get(text)
        if m is None:  # the same string can arise from two different pairs: one id for it
            m = stoi[text] = len(tokens)
            tokens.append(text)
            if bar is not None:
                bar.update(1)
        delta: Counter = Counter()
        for wi in where.pop(p):
            w, f = words[wi], freqs[wi]
            new = merge_pair(w, a, b, m)
            k = len(w) - len(new)  # occurrences merged
            old_pairs, new_pairs = list(zip(w, w[1:])), list(zip(new, new[1:]))
            for q in old_pairs:
                delta[q] -= f
                if q[0] == q[1]:
                    repeats.pop(q, None)
            for q in new_pairs:
                delta[q] += f
                if q[0] == q[1]:
                    repeats.pop(q, None)
            for q in set(old_pairs).difference(new_pairs):
                if q != p:
                    where[q].discard(wi)
            for q in set(new_pairs).difference(old_pairs):
                where[q].add(wi)
            unit[a] -= k * f
            unit[b] -= k * f
            unit[m] += k * f
            total -= k * f
            words[wi] = new
        for q, d in delta.items():
            if not d:
                continue
            n = pairs[q] + d
            if n:
                pairs[q] = n
                touching[q[0]].add(q)
                touching[q[1]].add(q)
            else:
                del pairs[q]
                touching[q[0]].discard(q)
                touching[q[1]].discard(q)
                where.pop(q, None)
        xlogx_total = _xlogx(total)
        for u in (a, b, m):
            xlogx_unit[u] = _xlogx(unit[u])
        # scores that may have gone up: pairs touching a or b (n(a), n(b) fell), pairs whose count grew (with m)
        for q in touching[a] | touching[b] | {q for q, d in delta.items() if d > 0}:
            if q in pairs:
                heapq.heappush(heap, entry(q))
    if bar is not None:
        bar.close()

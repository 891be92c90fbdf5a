"""Words as rows of character ids: ELMo's input (Peters et al. 2018, sec. 3.1; the scheme of their ``bilm-tf``).

A character-level token encoder never meets an unknown word: any string is a sequence of UTF-8 bytes. Each word
becomes ``max_chars`` ids (ELMo: 50)::

    [BOW, b_1 + 1, b_2 + 1, ..., b_n + 1, EOW, PAD_CHAR, ..., PAD_CHAR]      n <= max_chars - 2

with the word's bytes b_i shifted by one, so that id 0 is free for *no word at all*: a padded position of a batch
is an all-zero row, which the encoder masks out. The 262 ids are ELMo's: 0 (no word), 1..256 (bytes), 257/258
(the sentence markers' characters ``<S>``/``</S>``), 259 (begin of word), 260 (end of word), 261 (padding inside
a word). The sentence markers ``<S>`` and ``</S>`` are encoded the way ELMo encodes them, as a single reserved
character between BOW and EOW; every other string (``<unk>``, ``<eos>`` included) is spelled out byte by byte.
Words longer than ``max_chars - 2`` bytes are cut (possibly inside a multi-byte character -- bytes are ids, not
text).

A whole word vocabulary becomes one table (:func:`char_table`, ``(|V|, max_chars)``), so a batch of word ids
``(B, T)`` turns into characters by indexing: ``table[ids]`` -> ``(B, T, max_chars)``.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

__all__ = ["BOS_CHAR", "BOS_TOKEN", "BOW", "EOS_CHAR", "EOS_TOKEN", "EOW", "N_CHARS", "NO_WORD", "PAD_CHAR",
           "char_ids", "char_table", "word_char_ids"]

NO_WORD = 0  # a padded position: its whole row is 0
BOS_CHAR, EOS_CHAR = 257, 258  # the characters of the sentence markers <S> and </S>
BOW, EOW = 259, 260  # begin / end of word
PAD_CHAR = 261  # padding inside a word, after EOW
N_CHARS = 262  # the size of the character embedding table
BOS_TOKEN, EOS_TOKEN = "<S>", "</S>"
_MARKERS = {BOS_TOKEN: BOS_CHAR, EOS_TOKEN: EOS_CHAR}


def _check_max_chars(max_chars: int) -> None:
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 3:
        raise ValueError(f"max_chars must be an int >= 3 (BOW, at least one byte, EOW), got {max_chars!r}")


def word_char_ids(word: str, max_chars: int) -> list[int]:
    """The ``max_chars`` character ids of one word: BOW, its UTF-8 bytes + 1 (cut to ``max_chars - 2``), EOW,
    then PAD_CHAR."""
    _check_max_chars(max_chars)
    if not isinstance(word, str):
        raise TypeError(f"a word must be a str, got {type(word).__name__} ({word!r})")
    if not word:
        raise ValueError("cannot encode an empty word: a word needs at least one character (empty strings "
                         "usually come from splitting on single spaces; use shoulders.text.words)")
    body = [_MARKERS[word]] if word in _MARKERS else [b + 1 for b in word.encode("utf-8")[: max_chars - 2]]
    return [BOW, *body, EOW] + [PAD_CHAR] * (max_chars - 2 - len(body))


def char_ids(words: Iterable[str], max_chars: int = 50) -> torch.Tensor:
    """Character ids of a list of words: ``(N, max_chars)`` long tensor (see the module docstring)."""
    _check_max_chars(max_chars)
    if isinstance(words, str):
        raise TypeError("char_ids takes a list of words, got a str: wrap one word as [word] (or split a text "
                        "with shoulders.text.words)")
    rows = [word_char_ids(w, max_chars) for w in words]
    return torch.tensor(rows, dtype=torch.long).view(len(rows), max_chars)


def char_table(vocab_tokens: Sequence[str] | Iterable[str], max_chars: int = 50,
               pad_token: str | None = None) -> torch.Tensor:
    """The character ids of every word of a vocabulary, in id order: ``(|V|, max_chars)``.

    ``vocab_tokens`` is a :class:`shoulders.text.Vocab` (iterating it gives its tokens in id order) or any list
    of strings. ``table[ids]`` turns word ids ``(B, T)`` into characters ``(B, T, max_chars)``. The row of
    ``pad_token`` (when given) is all zeros (:data:`NO_WORD`), so that padded positions of a batch padded with
    that token's id are masked by the character encoder.
    """
    tokens = list(vocab_tokens)
    if not tokens:
        raise ValueError("char_table needs at least one token (got an empty vocabulary)")
    table = char_ids(tokens, max_chars)  # (|V|, C)
    if pad_token is not None:
        if pad_token not in tokens:
            raise ValueError(f"pad_token {pad_token!r} is not in the vocabulary")
        table[tokens.index(pad_token)] = NO_WORD
    return table

"""Whole words as tokens, behind the interface the task features use (:mod:`shoulders.text.task_features`).

ELMo's task models (Peters et al. 2018, §3.3) read words, not word pieces: each word is looked up in a table of
context-independent vectors (GloVe) and spelled out for the biLM's character encoder. :class:`WordTokenizer` gives
a word vocabulary the methods :class:`~shoulders.text.wordpiece.WordPiece` offers to
:func:`~shoulders.text.task_features.classification_features` and
:func:`~shoulders.text.task_features.tagging_features` -- ``encode``, ``encode_words``, ``cls_id``, ``sep_id``,
``pad_id``, ``decode`` -- so the same features, heads and fine-tuning code serve both chapters. The packing tokens
are the biLM's sentence markers: ``<S> A </S>`` and ``<S> A </S> B </S>`` (bilm-tf wraps every sentence in
``<S>`` ... ``</S>``; :mod:`shoulders.text.word_chars` spells them as ELMo does).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .tokenize import words
from .vocab import Vocab

__all__ = ["WordTokenizer"]


class WordTokenizer:
    """A word vocabulary with ``<pad>``, ``<unk>``, ``<S>`` and ``</S>`` and a way to split text into words.

    ``split`` turns a text into words (default :func:`shoulders.text.words`: whitespace, as SST's and WNUT-17's
    pre-tokenised text needs). A word outside the vocabulary becomes ``<unk>``.
    """

    PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<S>", "</S>"
    SPECIALS = (PAD, UNK, BOS, EOS)

    def __init__(self, vocab: Vocab, split: Callable[[str], list[str]] = words):
        missing = [s for s in self.SPECIALS if s not in vocab]
        if missing:
            raise ValueError(f"the vocabulary lacks {missing}; build it with WordTokenizer.build (which adds "
                             f"{list(self.SPECIALS)})")
        self.vocab, self.split = vocab, split

    @classmethod
    def build(cls, texts: Iterable[Sequence[str] | str], split: Callable[[str], list[str]] = words,
              min_freq: int = 1) -> "WordTokenizer":
        """The words of ``texts`` (strings, split with ``split``, or lists of words) seen at least ``min_freq``
        times, most frequent first, after the four specials."""
        lines = [split(t) if isinstance(t, str) else list(t) for t in texts]
        vocab = Vocab.build(lines, specials=list(cls.SPECIALS), unk=cls.UNK, min_freq=min_freq)
        return cls(vocab, split)

    def __len__(self) -> int:
        return len(self.vocab)

    def __repr__(self) -> str:
        return f"WordTokenizer(size={len(self)})"

    @property
    def tokens(self) -> list[str]:
        return self.vocab.tokens

    @property
    def pad_id(self) -> int:
        return self.vocab[self.PAD]

    @property
    def unk_id(self) -> int:
        return self.vocab[self.UNK]

    @property
    def cls_id(self) -> int:
        """``<S>``: opens every packed input, in the place of BERT's ``[CLS]``."""
        return self.vocab[self.BOS]

    @property
    def sep_id(self) -> int:
        """``</S>``: closes each sentence, in the place of BERT's ``[SEP]``."""
        return self.vocab[self.EOS]

    def encode(self, text: str) -> list[int]:
        return self.vocab.encode(self.split(text))

    def encode_words(self, word_list: Sequence[str]) -> tuple[list[int], list[int]]:
        """Ids of ``word_list`` and, per id, the index of its word (one id per word)."""
        return self.vocab.encode(word_list), list(range(len(word_list)))

    def decode(self, ids: Any) -> str:
        return " ".join(t for t in self.vocab.decode(ids) if t not in (self.PAD, self.BOS, self.EOS))

"""The two vocabularies of a translation model (chapter 9's CoVe giants), kept in one file."""
from __future__ import annotations

import json
import os
from pathlib import Path

from .._atomic import write_text_atomic
from .vocab import Vocab, VocabFileError
from .word_tokenizer import WordTokenizer

__all__ = ["PairVocab"]

FORMAT = "shoulders.pair_vocab/1"


class PairVocab:
    """A source and a target :class:`~shoulders.text.word_tokenizer.WordTokenizer` (each with ``<pad>``,
    ``<unk>``, ``<S>``, ``</S>`` as ids 0-3), saved together as one UTF-8 JSON file: what a giant's
    ``tokenizer`` must be when its model reads one language and writes another."""

    def __init__(self, source: WordTokenizer, target: WordTokenizer):
        self.source, self.target = source, target

    def __repr__(self) -> str:
        return f"PairVocab(source={len(self.source):,} words, target={len(self.target):,} words)"

    def save(self, path: str | os.PathLike) -> Path:
        data = {"format": FORMAT, "source": self.source.tokens, "target": self.target.tokens}
        return write_text_atomic(path, json.dumps(data, ensure_ascii=False))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "PairVocab":
        """Read a file written by :meth:`save`; anything else raises :class:`~shoulders.text.vocab.VocabFileError`
        naming the file and what is wrong."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise VocabFileError(f"{path} is not a pair vocabulary (not UTF-8 JSON: {err})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise VocabFileError(f"{path} is not a pair vocabulary (expected format {FORMAT!r})")
        sides = []
        for side in ("source", "target"):
            tokens = data.get(side)
            if not isinstance(tokens, list) or list(tokens[:4]) != list(WordTokenizer.SPECIALS):
                raise VocabFileError(f"{path}: its {side} vocabulary must be a list of words starting with "
                                     f"{list(WordTokenizer.SPECIALS)}")
            try:
                vocab = Vocab(tokens, specials=WordTokenizer.SPECIALS, unk=WordTokenizer.UNK)
            except (TypeError, ValueError) as err:
                raise VocabFileError(f"{path}: its {side} vocabulary is malformed ({err})") from None
            sides.append(WordTokenizer(vocab))
        return cls(*sides)

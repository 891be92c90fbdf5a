"""Three tokenisers for the first half of the book (subword tokenisers -- WordPiece, BPE -- come later).

* :func:`words` -- whitespace splitting, for corpora that are already tokenised (WikiText writes
  ``"the cat @-@ like , ..."``: splitting on spaces *is* its tokenisation);
* :func:`simple_words` -- a small regular expression for raw text: words, numbers and single punctuation marks;
* :func:`chars` -- one token per character (char-level LMs, Tiny Shakespeare).
"""
from __future__ import annotations

import re
import unicodedata

__all__ = ["SIMPLE_WORDS_PATTERN", "chars", "ptb_to_wikitext", "simple_words", "words"]


def words(text: str, lower: bool = False) -> list[str]:
    """Split on runs of whitespace (``str.split()``: spaces, tabs, newlines and Unicode spaces).

    Leading/trailing whitespace gives no empty tokens: ``words("  a  b\\n") == ["a", "b"]``.
    """
    return (text.lower() if lower else text).split()


#: The pattern :func:`simple_words` matches, tried left to right at each position:
#:
#: 1. ``\d+(?:[.,]\d+)+`` -- a number with inner separators stays whole: ``3.14``, ``1,000,000``, ``10.0.1``;
#: 2. ``\w+(?:['’]\w+)*`` -- a run of letters/digits/underscore, with *inner* apostrophes kept:
#:    ``don't``, ``o'clock``, ``rock’n’roll``, ``naïve``, ``COVID19`` (a leading/trailing quote is punctuation);
#: 3. ``[^\w\s]`` -- any other single non-space character: each punctuation mark or symbol is its own token,
#:    so ``"..."`` gives three ``"."`` and ``"state-of-the-art"`` gives ``state - of - the - art``.
#:
#: Text is NFC-normalised first, so a letter written with a combining accent (``e`` + U+0301) is one character.
SIMPLE_WORDS_PATTERN = re.compile(r"\d+(?:[.,]\d+)+|\w+(?:['’]\w+)*|[^\w\s]")


def simple_words(text: str, lower: bool = True) -> list[str]:
    """Tokenise raw text with :data:`SIMPLE_WORDS_PATTERN` (words, numbers, single punctuation marks).

    >>> simple_words("Don't panic -- it's 3.14!")
    ["don't", 'panic', '-', '-', "it's", '3.14', '!']
    """
    text = unicodedata.normalize("NFC", text)
    if lower:
        text = text.lower()
    return SIMPLE_WORDS_PATTERN.findall(text)


def chars(text: str) -> list[str]:
    """One token per Unicode code point (newlines and spaces included: they matter to a char LM)."""
    return list(text)


_PTB_QUOTES = {"``": '"', "''": '"', "`": "'"}
_WIKITEXT_JOINS = re.compile(r"(?<=\w)([-,.])(?=\w)")


def ptb_to_wikitext(tokens: list[str]) -> list[str]:
    """Penn-Treebank-tokenised words (the Stanford Sentiment Treebank's) re-cut the way WikiText is, so a model
    trained on WikiText meets them under the forms it learned (Merity et al. 2017's WikiText keeps Moses-style
    tokens and marks joined word parts with ``@``):

    * negations: ``does n't`` -> ``doesn 't`` (``ca n't`` -> ``can 't``, ``wo n't`` -> ``won 't``);
    * quotes: ``` `` ``` and ``''`` -> ``"``, a single ````` -> ``'``;
    * hyphens, and commas and points inside numbers: ``coming-of-age`` -> ``coming @-@ of @-@ age``,
      ``1,000`` -> ``1 @,@ 000``, ``2.5`` -> ``2 @.@ 5``.

    >>> ptb_to_wikitext("It does n't feel `` old-fashioned '' .".split())
    ['It', 'doesn', "'t", 'feel', '"', 'old', '@-@', 'fashioned', '"', '.']
    """
    out: list[str] = []
    for tok in tokens:
        if tok in ("n't", "N'T") and out:
            out[-1] += tok[0]  # does n't -> doesn 't; ca n't -> can 't; wo n't -> won 't
            out.append(tok[1:])
            continue
        tok = _PTB_QUOTES.get(tok, tok)
        out.extend(_WIKITEXT_JOINS.sub(r" @\1@ ", tok).split())
    return out

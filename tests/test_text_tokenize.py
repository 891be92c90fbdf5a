"""shoulders.text tokenisers on tricky strings."""
from __future__ import annotations

import pytest

from shoulders.text import chars, simple_words, words


def test_words_splits_on_any_whitespace_without_empty_tokens():
    assert words("  a\tb \n c\u00a0d  \r\n") == ["a", "b", "c", "d"]
    assert words("") == [] and words(" \n ") == []
    assert words(" The cat @-@ like , 3 @.@ 5 \n") == ["The", "cat", "@-@", "like", ",", "3", "@.@", "5"]
    assert words("The CAT", lower=True) == ["the", "cat"] and words("The CAT") == ["The", "CAT"]


@pytest.mark.parametrize("text, expected", [
    ("Don't panic -- it's 3.14!", ["don't", "panic", "-", "-", "it's", "3.14", "!"]),
    ("Hello, world.", ["hello", ",", "world", "."]),
    ("1,000,000 people; 10.0.1", ["1,000,000", "people", ";", "10.0.1"]),
    ("Wait... what?!", ["wait", ".", ".", ".", "what", "?", "!"]),
    ("state-of-the-art", ["state", "-", "of", "-", "the", "-", "art"]),
    ("'tis the dogs' toys", ["'", "tis", "the", "dogs", "'", "toys"]),
    ("rock’n’roll o'clock", ["rock’n’roll", "o'clock"]),
    ("“Quoted” (parens) [x]", ["“", "quoted", "”", "(", "parens", ")", "[", "x", "]"]),
    ("naïve café Ünïcödé", ["naïve", "café", "ünïcödé"]),
    ("cafe\u0301", ["caf\u00e9"]),  # combining accent: NFC makes it one letter
    ("e-mail: a@b.com #tag $5 50%",
     ["e", "-", "mail", ":", "a", "@", "b", ".", "com", "#", "tag", "$", "5", "50", "%"]),
    ("COVID19 mp3 snake_case", ["covid19", "mp3", "snake_case"]),
    ("end.Next", ["end", ".", "next"]),
    ("🙂 ok", ["🙂", "ok"]),
    ("", []),
    ("  \n\t ", []),
])
def test_simple_words(text, expected):
    assert simple_words(text) == expected


def test_simple_words_keeps_case_when_asked():
    assert simple_words("Don't Panic", lower=False) == ["Don't", "Panic"]


def test_chars_keeps_every_code_point():
    assert chars("a b\n") == ["a", " ", "b", "\n"]
    assert chars("") == []
    assert chars("é🙂") == ["é", "🙂"]
    s = "First Citizen:\nBefore we proceed"
    assert "".join(chars(s)) == s

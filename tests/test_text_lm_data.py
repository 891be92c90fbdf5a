"""The shared LM corpus: n-gram lines and neural streams hold the same tokens under the same vocabulary."""
from __future__ import annotations

import math

import pytest
import torch

import shoulders as sh
from shoulders.text import take_tokens, wikitext2_corpus


def test_take_tokens_keeps_whole_lines_within_the_budget():
    lines = [["a", "b"], ["c"], ["d", "e", "f"], ["g"]]
    assert take_tokens(lines, 3) == [["a", "b"], ["c"]]
    assert take_tokens(lines, 5) == [["a", "b"], ["c"]]
    assert take_tokens(lines, 6) == [["a", "b"], ["c"], ["d", "e", "f"]]
    assert take_tokens(lines, 1) == [["a", "b"]]  # never empty
    assert take_tokens(lines, None) == lines
    with pytest.raises(ValueError, match="limit"):
        take_tokens(lines, 0)


@pytest.fixture(scope="module")
def small():
    return wikitext2_corpus(max_vocab=2_000, train_tokens=30_000, eval_tokens=5_000)


def test_lines_and_streams_are_the_same_tokens(small):
    for split in ("train", "valid", "test"):
        flat = [w for line in small.lines[split] for w in line]
        assert small.vocab.decode(small.streams[split].ids) == flat
        assert all(w in small.vocab for w in flat)
    assert len(small.vocab) == 2_000
    assert small.train.num_tokens <= 30_000 and small.streams["valid"].num_tokens <= 5_000
    assert small.lines["valid"] == [[w if w in small.vocab else "<unk>" for w in line]
                                    for line in sh.data.wikitext2("valid")[:len(small.lines["valid"])]]


def test_unigram_perplexity_is_the_add_one_formula(small):
    c = torch.bincount(small.train.ids, minlength=len(small.vocab)).double()
    p = (c + 1) / (c.sum() + len(small.vocab))
    ids = small.streams["valid"].ids
    expected = math.exp(-sum(math.log(p[i]) for i in ids.tolist()) / len(ids))
    assert small.unigram_perplexity("valid") == pytest.approx(expected, rel=1e-9)
    assert 1 < small.unigram_perplexity("valid") < len(small.vocab)


def test_full_wikitext2_has_the_standard_sizes():
    full = wikitext2_corpus(splits=("train", "valid"))
    assert len(full.vocab) == 33_278
    assert full.train.num_tokens == 2_088_628 and full.streams["valid"].num_tokens == 217_646


def test_train_split_is_required():
    with pytest.raises(ValueError, match="train"):
        wikitext2_corpus(splits=("valid",))

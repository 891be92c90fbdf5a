"""One language-modelling corpus for every LM chapter: the same vocabulary, the same tokens, counted or streamed.

Chapters 1-3 compare very different models -- counted n-grams, the NNLM, recurrent LMs -- by perplexity, and a
perplexity is only comparable with another computed on *the same tokens under the same vocabulary*. An
:class:`LMCorpus` holds both views of one corpus:

* ``lines[split]``: lines of tokens with every out-of-vocabulary word already written as ``<unk>`` (what
  :func:`shoulders.models.ngram.count_ngrams` counts), and
* ``streams[split]``: the same tokens as one :class:`~shoulders.text.LMStream` of ids (what the neural models
  read),

so an n-gram model and a neural model score exactly the same targets (every token, ``<eos>`` included).

Smaller scales take the first whole lines up to a token budget (:func:`take_tokens`) and may cap the vocabulary
(the most frequent words; the rest become ``<unk>``); their perplexities are then comparable with each other on the
page, not with published WikiText-2 numbers.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import torch

from ..data.corpora import wikitext2
from .stream import LMStream, lm_stream
from .vocab import Vocab

__all__ = ["LMCorpus", "take_tokens", "unigram_log_probs", "wikitext2_corpus"]

Lines = list[list[str]]


def take_tokens(lines: Sequence[Sequence[str]], limit: int | None) -> Lines:
    """The first whole lines holding at most ``limit`` tokens in all (``None``: every line; never fewer than one
    line, so a limit smaller than the first line still gives that line)."""
    if limit is None:
        return [list(line) for line in lines]
    if limit < 1:
        raise ValueError(f"limit must be >= 1 or None, got {limit}")
    out, total = [], 0
    for line in lines:
        if out and total + len(line) > limit:
            break
        out.append(list(line))
        total += len(line)
    return out


def unigram_log_probs(counts: torch.Tensor) -> torch.Tensor:
    """The add-one unigram model of training ``counts`` (|V|,): log P(w) = log((c_w + 1) / (N + |V|)), float64.

    The baseline every LM chapter must beat, and the start of their output layers
    (:func:`shoulders.models.nnlm.init_unigram_bias_`).
    """
    counts = torch.as_tensor(counts, dtype=torch.float64).flatten()
    return (counts + 1.0).log() - (counts.sum() + counts.numel()).log()


@dataclasses.dataclass
class LMCorpus:
    """A vocabulary and, per split, the same tokens as ``<unk>``-mapped lines and as an id stream."""

    vocab: Vocab
    lines: dict[str, Lines]
    streams: dict[str, LMStream]

    @property
    def train(self) -> LMStream:
        return self.streams["train"]

    def counts(self) -> torch.Tensor:
        """Training count of every id, ``(|V|,)`` int64 (for the unigram model and
        :func:`shoulders.models.nnlm.init_unigram_bias_`)."""
        return torch.bincount(self.train.ids, minlength=len(self.vocab))

    def unigram_log_probs(self) -> torch.Tensor:
        """log P(w) of the add-one unigram model of the training tokens, (|V|,) float64."""
        return unigram_log_probs(self.counts())

    def unigram_perplexity(self, split: str = "valid") -> float:
        """Perplexity of the add-one unigram model of the training tokens on ``split``."""
        return math.exp(-self.unigram_log_probs()[self.streams[split].ids].mean().item())

    def describe(self) -> str:
        sizes = ", ".join(f"{s} {st.num_tokens:,}" for s, st in self.streams.items())
        return f"vocabulary {len(self.vocab):,} words; tokens: {sizes}"


def wikitext2_corpus(max_vocab: int | None = None, train_tokens: int | None = None,
                     eval_tokens: int | None = None, splits: Sequence[str] = ("train", "valid", "test")) -> LMCorpus:
    """WikiText-2 (Merity et al. 2016) as an :class:`LMCorpus`.

    ``train_tokens`` / ``eval_tokens`` keep the first whole lines of the training / evaluation splits up to that
    many tokens; ``max_vocab`` keeps the most frequent words of the (kept) training lines, ``<unk>`` first. With
    no limits this is the standard setting: 2,088,628 / 217,646 / 245,569 tokens and 33,278 words.
    """
    if "train" not in splits:
        raise ValueError(f"splits must include 'train' (the vocabulary comes from it), got {list(splits)}")
    raw = {s: take_tokens(wikitext2(s), train_tokens if s == "train" else eval_tokens) for s in splits}
    vocab = Vocab.build(raw["train"], specials=["<unk>"], unk="<unk>", max_size=max_vocab)
    lines = {s: [[w if w in vocab else "<unk>" for w in line] for line in ls] for s, ls in raw.items()}
    return LMCorpus(vocab, lines, {s: lm_stream(ls, vocab) for s, ls in lines.items()})

"""Paragraph vectors (Le & Mikolov 2014, "Distributed Representations of Sentences and Documents").

Every paragraph p gets a vector d_p, a column of the paragraph matrix D, trained like a word vector:

* **PV-DM** (distributed memory, §2.2): the paragraph vector and the vectors of the words around position t are
  combined and predict the word there,

      h_t = (d_p + sum_{0 < |j| <= b} w_{t+j}) / (1 + #context words),    maximise log p(w_t | h_t)

  The paper combines d_p with the *previous* words by concatenation or averaging; gensim's ``Doc2Vec(dm=1,
  dm_mean=1)`` averages a window on both sides, as here (word2vec's CBOW with one more "word" that is the same
  everywhere in the paragraph -- the memory of what the window misses).
* **PV-DBOW** (distributed bag of words, §2.3): the paragraph vector alone predicts the paragraph's words,
  h_t = d_p, maximise log p(w_t | d_p) -- word2vec's skip-gram with the paragraph as the centre "word". The word
  matrix is not used (gensim's ``dm=0`` without ``dbow_words``).

p(w | h) is negative sampling (Mikolov et al. 2013b, eq. 4; :mod:`~shoulders.models.negative_sampling`) -- the
paper used the hierarchical softmax; gensim defaults to negative sampling, and chapter 7 compares with it.

**Inference** (§2.2, "the inference stage"): a paragraph not seen in training gets a new column of D, trained by
gradient descent on its own words while the word vectors W and the output vectors stay fixed
(:meth:`ParagraphVectors.sgd_step` with ``docs=`` a new table; the loop is
:func:`shoulders.recipes.sentence_vectors.infer_vectors`).

The corpus is word2vec's (:class:`~shoulders.models.word2vec.WordCorpus`) with each token's ``sentence`` the index
of its paragraph (:func:`prepare_documents`), and the batches are word2vec's (:class:`ParagraphBatches`:
subsampling, runs in random order, dynamic windows), so word2vec.c's SGD trainer,
:func:`shoulders.recipes.word_vectors.train_word2vec`, trains both models unchanged.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn as nn

from ..config import ConfigError
from ..text.vocab import Vocab
from .ids import check_ids, check_labels
from .negative_sampling import NegativeSampler, NegativeSampling
from .sparse_rows import add_rows_, take_rows
from .word2vec import Word2VecBatches, Word2VecConfig, WordCorpus, window_pairs, zipf_counts

__all__ = ["PV_ARCHS", "ParagraphBatches", "ParagraphVectorConfig", "ParagraphVectors", "prepare_documents"]

PV_ARCHS = ("dbow", "dm")


def prepare_documents(docs: Sequence[Sequence[str]], vocab: Vocab | None = None, min_count: int = 5,
                      max_vocab: int | None = None) -> WordCorpus:
    """The tokens of ``docs`` (lists of words) as one id stream whose ``sentence`` is each token's paragraph index
    (``0 .. len(docs) - 1``; a paragraph with no known word keeps its index and has no tokens). ``vocab``: the
    training corpus's vocabulary (for paragraphs to infer); without it one is built from ``docs`` (``min_count``,
    at most ``max_vocab`` words; no unknown-word token: unknown words are dropped, as word2vec.c does)."""
    if not docs:
        raise ValueError("no paragraphs")
    if vocab is None:
        vocab = Vocab.build([list(d) for d in docs], unk=None, min_freq=min_count, max_size=max_vocab)
        if len(vocab) < 2:
            raise ValueError(f"only {len(vocab)} word(s) occur >= min_count={min_count} times; lower min_count")
    stoi = vocab.stoi
    ids = [[stoi[w] for w in d if w in stoi] for d in docs]
    flat = np.fromiter((i for d in ids for i in d), dtype=np.int64)
    doc_of = np.repeat(np.arange(len(docs)), [len(d) for d in ids])
    counts = torch.as_tensor(vocab.count_array())
    return WordCorpus(torch.from_numpy(flat), torch.from_numpy(doc_of), vocab, counts)


class ParagraphBatches(Word2VecBatches):
    """word2vec's epoch of batches (:class:`~shoulders.models.word2vec.Word2VecBatches`) for paragraph vectors:
    ``dbow`` yields ``(paragraph (C,), word (C,))`` for every kept token; ``dm`` yields
    ``(x (C, 1 + 2w), centre (C,), mask (C, 1 + 2w))`` where column 0 of ``x`` is the paragraph and the rest its
    window (the paragraph column is always on: a word alone in its paragraph is still predicted from d_p)."""

    ARCHS: ClassVar[tuple[str, ...]] = PV_ARCHS

    def make_batch(self, ids: torch.Tensor, sentence: torch.Tensor, positions: torch.Tensor,
                   generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        if self.arch == "dbow":
            return sentence[positions], ids[positions]  # (C,), (C,)
        center, context, mask = window_pairs(ids, sentence, self.window, generator=generator, positions=positions)
        doc = sentence[positions][:, None]  # (C, 1)
        return (torch.cat([doc, context], 1), center,
                torch.cat([torch.ones_like(doc, dtype=torch.bool), mask], 1))


class ParagraphVectors(nn.Module):
    """PV-DM or PV-DBOW (``cfg.arch``) with negative sampling. ``docs`` is the paragraph matrix D ``(P, d)``,
    ``embed`` the word matrix W ``(V, d)`` (PV-DM only), ``out`` the output vectors; D and W start uniform in
    +-0.5/d, the output vectors at zero (word2vec.c, gensim)."""

    def __init__(self, cfg: ParagraphVectorConfig, counts: Any | None = None, num_docs: int | None = None):
        super().__init__()
        counts = zipf_counts(cfg.vocab_size) if counts is None else torch.as_tensor(counts)
        self.cfg, self.arch = cfg, cfg.arch
        V, d = len(counts), cfg.dim
        P = cfg.num_docs if num_docs is None else int(num_docs)
        if P < 1:
            raise ValueError(f"need at least one paragraph, got {P}")
        g = torch.Generator().manual_seed(cfg.seed)
        self.docs = nn.Embedding(P, d)  # (P, d): D
        self.embed = nn.Embedding(V, d)  # (V, d): W
        with torch.no_grad():
            self.docs.weight.copy_((torch.rand(P, d, generator=g) - 0.5) / d)
            self.embed.weight.copy_((torch.rand(V, d, generator=g) - 0.5) / d)
        self.out = NegativeSampling(NegativeSampler(counts), d, cfg.negatives)

    def new_docs(self, n: int, seed: int = 0) -> torch.Tensor:
        """``(n, d)`` fresh paragraph vectors for inference, initialised as D was."""
        g = torch.Generator().manual_seed(seed)
        d = self.docs.embedding_dim
        return ((torch.rand(n, d, generator=g) - 0.5) / d).to(self.docs.weight.device)

    def hidden(self, x: torch.Tensor, mask: torch.Tensor | None = None,
               docs: torch.Tensor | None = None) -> torch.Tensor:
        """h ``(B, d)``: d_p for PV-DBOW (``x`` (B,) paragraphs); for PV-DM the mean of d_p (``x[:, 0]``) and the
        window's word vectors (``x[:, 1:]`` where ``mask[:, 1:]``). ``docs``: a paragraph table other than D."""
        D = self.docs.weight if docs is None else docs
        if self.arch == "dbow":
            check_ids(x, "x", D.shape[0], dims=1)
            return D[x]  # (B, d)
        check_ids(x[:, :1], "x[:, 0] (paragraphs)", D.shape[0], dims=2)
        check_ids(x[:, 1:], "x[:, 1:] (words)", self.embed.num_embeddings, dims=2)
        m = (torch.ones_like(x, dtype=torch.bool) if mask is None else mask.bool())[:, 1:]  # (B, 2w)
        words = (self.embed(x[:, 1:]) * m[..., None]).sum(1)  # (B, d)
        return (D[x[:, 0]] + words) / (1 + m.sum(1, keepdim=True))  # (B, d)

    def forward(self, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Mean negative-sampling loss of predicting ``y`` (B,) from :meth:`hidden` (autograd; the tests)."""
        check_labels(y, "y", self.embed.num_embeddings)
        return self.out.loss(self.hidden(x, mask), y)

    @torch.no_grad()
    def sgd_step(self, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None = None, lr: float = 0.025,
                 noise: torch.Tensor | None = None, group: int = 1, docs: torch.Tensor | None = None) -> torch.Tensor:
        """One hand-written SGD step (word2vec.c's updates summed over the batch); returns the summed loss.

        With ``docs`` (a new paragraph table, :meth:`new_docs`) only its rows move: the inference stage, W and the
        output vectors frozen. The mean's gradient reaches d_p and each context word divided by the window's
        size, as in word2vec's CBOW (:meth:`~shoulders.models.word2vec.Word2Vec.sgd_step`)."""
        check_labels(y, "y", self.embed.num_embeddings)
        D = self.docs.weight if docs is None else docs
        learn = docs is None
        h = self.hidden(x, mask, D)  # (B, d)
        loss, dh = self.out.sgd_step(h, y, lr, noise, group, update=learn)
        if self.arch == "dbow":
            add_rows_(D, x, dh, alpha=-lr)
            return loss
        m = (torch.ones_like(x, dtype=torch.bool) if mask is None else mask.bool())[:, 1:]  # (B, 2w)
        share = dh / (1 + m.sum(1, keepdim=True))  # (B, d)
        add_rows_(D, x[:, 0], share, alpha=-lr)
        if learn:
            rows = m.nonzero(as_tuple=True)
            add_rows_(self.embed.weight, x[:, 1:][rows], take_rows(share, rows[0]), alpha=-lr)
        return loss

    def vectors(self) -> torch.Tensor:
        """The paragraph vectors ``(P, d)``."""
        return self.docs.weight.detach()

    def extra_repr(self) -> str:
        return f"arch=pv-{self.arch}, dim={self.cfg.dim}, window={self.cfg.window}, negatives={self.cfg.negatives}"


@dataclasses.dataclass
class ParagraphVectorConfig(Word2VecConfig):
    """Paragraph vectors trained by word2vec.c's SGD (gensim ``Doc2Vec``'s names where they exist: ``vector_size``
    is ``dim``, ``dm=1`` is ``arch="dm"``, ``dm_mean=1`` always). ``num_docs`` sizes a model built without data."""

    arch: str = "dbow"
    output: str = "ns"
    lr: float = 0.025           # gensim's alpha
    sample: float = 1e-4
    min_count: int = 2
    epochs: int = 20
    infer_epochs: int = 20      # gradient passes over an unseen paragraph (gensim's infer_vector epochs)
    num_docs: int = 1_000
    vocab_size: int = 20_000

    presets: ClassVar = {
        # smoke: a million words, ten passes (~4 s for PV-DBOW): with 100,000 words and five passes both
        # architectures scored at the majority class on SST-2 and SNLI (2026-12-03)
        "smoke": dict(dim=50, epochs=10, infer_epochs=20, train_tokens=1_000_000, vocab_size=5_000, num_docs=2_000),
        "cpu": dict(dim=100),
        "full": dict(dim=300, batch_words=1_000, num_docs=100_000, vocab_size=70_000),
    }

    # what chapter 7 asserts: shoulders' PV-DBOW at least this share of gensim's Doc2Vec SentEval accuracy on every
    # task (the target at cpu; at smoke the SentEval is a few hundred sentences, within noise of chance)
    page_presets: ClassVar = {"smoke": {"gensim_quality": 0.7}, "cpu": {"gensim_quality": 0.95},
                              "full": {"gensim_quality": 0.95}}
    archs: ClassVar[tuple[str, ...]] = PV_ARCHS  # "dbow" (PV-DBOW) or "dm" (PV-DM)

    def validate(self) -> None:
        super().validate()
        if self.output != "ns":
            raise ConfigError("paragraph vectors here are trained with negative sampling (output='ns')")
        if self.infer_epochs < 1 or self.num_docs < 1:
            raise ConfigError("infer_epochs and num_docs must be >= 1")

    def build(self, counts: Any | None = None, num_docs: int | None = None) -> ParagraphVectors:  # type: ignore[override]
        return ParagraphVectors(self, counts, num_docs)

    def example_batch(self, batch_size: int = 4) -> tuple[torch.Tensor, ...]:
        """A tiny random batch: ``(paragraph, word)`` for PV-DBOW, ``(x, centre, mask)`` for PV-DM."""
        g = torch.Generator().manual_seed(0)
        doc = torch.randint(self.num_docs, (batch_size,), generator=g)
        word = torch.randint(self.vocab_size, (batch_size,), generator=g)
        if self.arch == "dbow":
            return doc, word
        ctx = torch.randint(self.vocab_size, (batch_size, 2 * self.window), generator=g)
        mask = torch.ones(batch_size, 1 + 2 * self.window, dtype=torch.bool)
        mask[:, 1] = False
        return torch.cat([doc[:, None], ctx], 1), word, mask

    def step_batch(self) -> tuple[torch.Tensor, ...]:
        """A batch of one training step's shapes: ``batch_words`` tokens of random paragraphs of 20 words."""
        g = torch.Generator().manual_seed(0)
        n = self.batch_words + 2 * self.window
        ids = torch.randint(self.vocab_size, (n,), generator=g)
        sentence = (torch.arange(n) // 20) % self.num_docs
        batches = ParagraphBatches(WordCorpus(ids, sentence, Vocab(["<w>"]), torch.ones(1)), self.arch, self.window,
                                   self.batch_words, 0.0)
        return batches.make_batch(ids, sentence, torch.arange(self.window, self.window + self.batch_words), g)

    def batches(self, corpus: WordCorpus) -> ParagraphBatches:
        return ParagraphBatches(corpus, self.arch, self.window, self.batch_words, self.sample, self.sample_rule,
                                self.seed, self.predict, self.shuffle_run)

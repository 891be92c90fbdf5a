"""Sentence vectors from context (chapter 7): paragraph vectors trained, inferred for new sentences, and handed to
the small SentEval (:mod:`shoulders.evaluate.senteval`) as frozen encoders.

* :func:`train_paragraph_vectors` -- PV-DM / PV-DBOW (Le & Mikolov 2014) on a list of paragraphs, by word2vec.c's
  SGD (:func:`~shoulders.recipes.word_vectors.train_word2vec`: the same batches, rate decay and Hogwild workers);
* :func:`infer_vectors` -- the inference stage (§2.2): new paragraph vectors fitted to unseen text with the word
  and output vectors frozen, the rate decayed linearly as in training (gensim's ``infer_vector``);
* :func:`paragraph_encoder` -- a SentEval encoder: raw sentences -> tokens -> inferred vectors.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..models.paragraph_vectors import ParagraphVectorConfig, ParagraphVectors, prepare_documents
from ..models.word2vec import WordCorpus
from ..text.tokenize import simple_words
from ..text.vocab import Vocab
from ..train.history import History
from .word_vectors import train_word2vec

__all__ = ["infer_vectors", "paragraph_encoder", "train_paragraph_vectors"]


def train_paragraph_vectors(cfg: ParagraphVectorConfig, docs: Sequence[Sequence[str]], *, progress: bool = True,
                            **train_kwargs: Any) -> tuple[ParagraphVectors, WordCorpus, History]:
    """Build the vocabulary of ``docs`` (lists of words; ``cfg.min_count``, ``cfg.max_vocab``), train a paragraph
    vector for each and the model's word and output vectors; returns the model, the corpus (its ``vocab`` is
    what :func:`infer_vectors` needs) and the training history."""
    corpus = prepare_documents(docs, min_count=cfg.min_count, max_vocab=cfg.max_vocab)
    model = cfg.build(corpus.counts, num_docs=len(docs))
    history = train_word2vec(model, corpus, cfg, progress=progress, **train_kwargs)
    return model, corpus, history


@torch.no_grad()
def infer_vectors(model: ParagraphVectors, vocab: Vocab, docs: Sequence[Sequence[str]], epochs: int | None = None,
                  lr: float | None = None, seed: int = 0) -> torch.Tensor:
    """``(len(docs), d)`` paragraph vectors for unseen ``docs`` (lists of words): fresh vectors
    (:meth:`~ParagraphVectors.new_docs`) trained for ``epochs`` passes (default ``cfg.infer_epochs``) on their
    own words with the word and output vectors frozen, the rate decayed linearly from ``lr`` (default
    ``cfg.lr``) to ``lr * cfg.min_lr_ratio``. Words outside ``vocab`` are skipped; a paragraph with none keeps
    its random start (as gensim's ``infer_vector`` does)."""
    cfg = model.cfg
    epochs = cfg.infer_epochs if epochs is None else int(epochs)
    lr0 = cfg.lr if lr is None else float(lr)
    if epochs < 1 or lr0 <= 0:
        raise ValueError(f"need epochs >= 1 and lr > 0, got {epochs}, {lr0}")
    dev = model.docs.weight.device
    table = model.new_docs(len(docs), seed)  # (P, d)
    corpus = prepare_documents(docs, vocab=vocab).to(dev)
    N = len(corpus)
    if N == 0:
        return table
    batches = cfg.replace(seed=seed).batches(corpus)
    noise_gen = torch.Generator(device=dev).manual_seed(seed + 7)
    G = cfg.share_negatives
    for ep in range(epochs):
        for (x, y, *mask), raw in batches.epoch(ep):
            lr_now = lr0 * max(cfg.min_lr_ratio, 1.0 - (ep * N + raw) / (epochs * N))
            noise = model.out.sampler.sample((-(-y.shape[0] // G), cfg.negatives), noise_gen)
            model.sgd_step(x, y, mask=mask[0] if mask else None, lr=lr_now, noise=noise, group=G, docs=table)
    return table


def paragraph_encoder(model: ParagraphVectors, vocab: Vocab, tokenize: Callable[[str], list[str]] = simple_words,
                      epochs: int | None = None, seed: int = 0) -> Callable[[Sequence[str]], torch.Tensor]:
    """A frozen sentence encoder for :func:`shoulders.evaluate.senteval.evaluate_encoder`: each raw sentence is
    split by ``tokenize`` and gets an inferred paragraph vector (:func:`infer_vectors`)."""
    def encode(sentences: Sequence[str]) -> torch.Tensor:
        return infer_vectors(model, vocab, [tokenize(s) for s in sentences], epochs, seed=seed).cpu()

    return encode

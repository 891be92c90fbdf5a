"""Sentence vectors from context (chapter 7): paragraph vectors trained, inferred for new sentences, and handed to
the small SentEval (:mod:`shoulders.evaluate.senteval`) as frozen encoders.

* :func:`train_paragraph_vectors` -- PV-DM / PV-DBOW (Le & Mikolov 2014) on a list of paragraphs, by word2vec.c's
  SGD (:func:`~shoulders.recipes.word_vectors.train_word2vec`: the same batches, rate decay and Hogwild workers);
* :func:`infer_vectors` -- the inference stage (§2.2): new paragraph vectors fitted to unseen text with the word
  and output vectors frozen, the rate decayed linearly as in training (gensim's ``infer_vector``);
* :func:`paragraph_encoder` -- a SentEval encoder: raw sentences -> tokens -> inferred vectors;
* :func:`sentence_corpus` -- WikiText-2's articles as documents of sentences of ids (BookCorpus, the papers'
  text, is not distributed any more), the training text of the neural encoders;
* :func:`train_skip_thoughts` / :func:`train_quick_thoughts` -- Skip-thoughts (Kiros et al. 2015) and
  Quick-thoughts (Logeswaran & Lee 2018) trained with Adam through :func:`shoulders.train.fit`, timed per epoch;
* :func:`neural_encoder` -- either one as a SentEval encoder (``model.encode`` on padded ids, eval mode);
* :func:`skip_thoughts_giant` / :func:`quick_thoughts_giant` -- the two as giants (trained once per scale).
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch import nn

from .. import data
from ..models.paragraph_vectors import ParagraphVectorConfig, ParagraphVectors, prepare_documents
from ..models.quick_thoughts import QuickThoughts, QuickThoughtsConfig
from ..models.skip_thoughts import SkipThoughts, SkipThoughtsConfig
from ..models.word2vec import WordCorpus
from ..text.pad import pad_sequences
from ..text.sentences import NeighbourBlocks, NeighbourTriples, wikitext_documents
from ..text.tokenize import simple_words
from ..text.vocab import Vocab
from ..train.history import History
from ..train.loop import fit
from .artefact import Artefact
from .word_vectors import train_word2vec

__all__ = ["SENTENCE_SPECIALS", "SentenceCorpus", "build_paragraph_vectors", "build_sentence_model", "infer_vectors",
           "neural_encoder", "paragraph_encoder", "paragraph_vectors_giant", "quick_thoughts_giant", "sentence_corpus",
           "sentence_ids", "skip_thoughts_giant", "train_paragraph_vectors", "train_quick_thoughts",
           "train_skip_thoughts", "wikitext_sentences"]

SENTENCE_SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")  # padding is id 0, as the configs' pad_id


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


def paragraph_vectors_giant(cfg: ParagraphVectorConfig, *, device: Any = None, progress: bool = True,
                            docs: Sequence[Sequence[str]] | None = None, **train_kwargs: Any) -> Artefact:
    """Chapter 7's paragraph vectors (PV-DBOW, or PV-DM with ``cfg.arch="dm"``; Le & Mikolov 2014) trained on
    WikiText-2's sentences (:func:`wikitext_sentences` up to ``cfg.train_tokens`` words, or ``docs``) as a giant.

    A later page gives an unseen sentence its vector by inference (:func:`infer_vectors`), which reads the word and
    output vectors only; so the giant keeps those and not the trained paragraph matrix D (one row per WikiText-2
    sentence, of no use to another text): its D is the ``cfg.num_docs`` rows of a fresh model
    (:func:`build_paragraph_vectors`), which is also what a cached giant is loaded into."""
    docs = wikitext_sentences(max_tokens=cfg.train_tokens) if docs is None else docs
    model, corpus, history = train_paragraph_vectors(cfg, docs, progress=progress, device=device, **train_kwargs)
    kept = build_paragraph_vectors(cfg, corpus.vocab)
    kept.load_state_dict({**model.cpu().state_dict(), "docs.weight": kept.docs.weight})  # strict: all else trained
    return Artefact(model=kept, history=history, tokenizer=corpus.vocab,
                    metrics={"final_loss": history.last("loss")},
                    facts={"paragraphs (sentences)": len(docs), "tokens": len(corpus),
                           "vocabulary": len(corpus.vocab), "epochs": cfg.epochs, "architecture": cfg.arch})


def build_paragraph_vectors(cfg: ParagraphVectorConfig, vocab: Vocab) -> ParagraphVectors:
    """The untrained model a cached ``paragraph_vectors`` giant is loaded into: ``vocab``'s counts shape the noise
    distribution, the paragraph matrix has ``cfg.num_docs`` rows (unused by inference)."""
    return cfg.build(torch.as_tensor(vocab.count_array()), num_docs=cfg.num_docs)


@dataclasses.dataclass
class SentenceCorpus:
    """Documents of sentences of ids over ``vocab`` (lower-cased words; :data:`SENTENCE_SPECIALS` first)."""

    docs: list[list[list[int]]]
    vocab: Vocab

    @property
    def sentences(self) -> int:
        return sum(len(d) for d in self.docs)


def sentence_ids(vocab: Vocab, sentences: Sequence[str], max_len: int,
                 tokenize: Callable[[str], list[str]] = simple_words) -> torch.Tensor:
    """Raw sentences -> padded ids ``(B, T)`` over ``vocab`` (a :func:`sentence_corpus` vocabulary: at most
    ``max_len`` words; an empty sentence becomes ``<unk>``)."""
    rows = [vocab.encode(tokenize(s)[:max_len]) or [vocab.unk_id] for s in sentences]
    return pad_sequences(rows, vocab[SENTENCE_SPECIALS[0]])[0]


def wikitext_sentences(lines: Iterable[Sequence[str]] | None = None, min_len: int = 3,
                       max_tokens: int | None = None) -> list[list[str]]:
    """WikiText-2 train's sentences (or ``lines``'), lower-cased, in order, each a list of words: the paragraphs
    chapter 7 trains paragraph vectors on (one sentence, one paragraph vector). ``max_tokens``: only the first
    sentences up to that many words (a config's ``train_tokens``)."""
    lines = data.wikitext2("train", eos=None) if lines is None else lines
    out, total = [], 0
    for s in (s for d in wikitext_documents([[t.lower() for t in line] for line in lines], min_len) for s in d):
        if max_tokens is not None and total >= max_tokens:
            break
        out.append(s)
        total += len(s)
    return out


def sentence_corpus(vocab_size: int, lines: Iterable[Sequence[str]] | None = None, min_len: int = 3,
                    max_docs: int = 0, vocab: Vocab | None = None) -> SentenceCorpus:
    """WikiText-2 train (or ``lines``: WikiText-style lines of tokens) as documents of sentences
    (:func:`~shoulders.text.sentences.wikitext_documents`), lower-cased, over its ``vocab_size`` most frequent
    words and the specials, or over a given ``vocab`` (with an unknown token); other words are ``<unk>``.
    ``max_docs``: only the first documents (0: all)."""
    lines = data.wikitext2("train", eos=None) if lines is None else lines
    docs = wikitext_documents([[t.lower() for t in line] for line in lines], min_len)
    docs = docs[:max_docs] if max_docs > 0 else docs
    if not docs:
        raise ValueError("no document with two sentences in the text")
    if vocab is None:
        vocab = Vocab.build((s for d in docs for s in d), specials=SENTENCE_SPECIALS, unk="<unk>",
                            max_size=vocab_size)
    return SentenceCorpus([[vocab.encode(s) for s in d] for d in docs], vocab)


def _train(model: nn.Module, batches: Any, cfg: Any, progress: bool, **fit_kwargs: Any) -> tuple[History, float]:
    """Adam at ``cfg.lr`` with the gradient clipped at ``cfg.clip`` for ``cfg.epochs`` passes; returns the history
    and the seconds one epoch took (the mean over the epochs)."""
    t0 = time.perf_counter()
    history = fit(model, batches, torch.optim.Adam(model.parameters(), lr=cfg.lr), steps=cfg.epochs * len(batches),
                  clip=cfg.clip, progress=progress, seed=cfg.seed, **fit_kwargs)
    return history, (time.perf_counter() - t0) / cfg.epochs


def train_skip_thoughts(cfg: SkipThoughtsConfig, corpus: SentenceCorpus, *, progress: bool = True,
                        **fit_kwargs: Any) -> tuple[SkipThoughts, History, float]:
    """Skip-thoughts on ``corpus`` (every sentence with both neighbours, shuffled each epoch); returns the model
    (eval mode), the history and the seconds per epoch."""
    if len(corpus.vocab) > cfg.vocab_size:
        raise ValueError(f"the corpus has {len(corpus.vocab)} words but the model {cfg.vocab_size}")
    v = corpus.vocab
    batches = NeighbourTriples(corpus.docs, cfg.batch_size, v["<pad>"], v["<s>"], v["</s>"], cfg.max_len)
    model = cfg.build()
    history, per_epoch = _train(model, batches, cfg, progress, **fit_kwargs)
    return model.eval(), history, per_epoch


def train_quick_thoughts(cfg: QuickThoughtsConfig, corpus: SentenceCorpus, *, progress: bool = True,
                         **fit_kwargs: Any) -> tuple[QuickThoughts, History, float]:
    """Quick-thoughts on ``corpus`` (blocks of consecutive sentences, documents shuffled each epoch); returns the
    model (eval mode), the history and the seconds per epoch."""
    if len(corpus.vocab) > cfg.vocab_size:
        raise ValueError(f"the corpus has {len(corpus.vocab)} words but the model {cfg.vocab_size}")
    batches = NeighbourBlocks(corpus.docs, cfg.batch_size, corpus.vocab["<pad>"], cfg.max_len, cfg.context)
    model = cfg.build()
    history, per_epoch = _train(model, batches, cfg, progress, **fit_kwargs)
    return model.eval(), history, per_epoch


def neural_encoder(model: SkipThoughts | QuickThoughts, vocab: Vocab, max_len: int = 60,
                   tokenize: Callable[[str], list[str]] = simple_words) -> Callable[[Sequence[str]], torch.Tensor]:
    """A frozen SentEval encoder: raw sentences -> :func:`sentence_ids` -> ``model.encode`` (eval mode, no
    gradient), on the model's device."""
    dev = next(model.parameters()).device

    def encode(sentences: Sequence[str]) -> torch.Tensor:
        model.eval()
        with torch.no_grad():
            return model.encode(sentence_ids(vocab, sentences, max_len, tokenize).to(dev)).float().cpu()

    return encode


def _giant(train: Callable[..., tuple[nn.Module, History, float]], cfg: Any, device: Any, progress: bool,
           corpus: SentenceCorpus | None, **fit_kwargs: Any) -> Artefact:
    corpus = corpus if corpus is not None else sentence_corpus(cfg.vocab_size, max_docs=cfg.train_docs)
    model, history, per_epoch = train(cfg, corpus, progress=progress, device=device, **fit_kwargs)
    return Artefact(model=model.cpu(), history=history, tokenizer=corpus.vocab,
                    metrics={"seconds_per_epoch": per_epoch, "final_loss": history.last("loss")},
                    facts={"documents": len(corpus.docs), "sentences": corpus.sentences,
                           "vocabulary": len(corpus.vocab), "epochs": cfg.epochs})


def skip_thoughts_giant(cfg: SkipThoughtsConfig, *, device: Any = None, progress: bool = True,
                        corpus: SentenceCorpus | None = None, **fit_kwargs: Any) -> Artefact:
    """Skip-thoughts on WikiText-2's sentences (or ``corpus``) as a giant; ``metrics["seconds_per_epoch"]``."""
    return _giant(train_skip_thoughts, cfg, device, progress, corpus, **fit_kwargs)


def quick_thoughts_giant(cfg: QuickThoughtsConfig, *, device: Any = None, progress: bool = True,
                         corpus: SentenceCorpus | None = None, **fit_kwargs: Any) -> Artefact:
    """Quick-thoughts on WikiText-2's sentences (or ``corpus``) as a giant; ``metrics["seconds_per_epoch"]``."""
    return _giant(train_quick_thoughts, cfg, device, progress, corpus, **fit_kwargs)


def build_sentence_model(cfg: SkipThoughtsConfig | QuickThoughtsConfig, vocab: Vocab) -> nn.Module:
    """The untrained model a cached ``skip_thoughts`` / ``quick_thoughts`` giant is loaded into."""
    if len(vocab) > cfg.vocab_size:
        raise ValueError(f"the vocabulary has {len(vocab)} words but the model {cfg.vocab_size}")
    return cfg.build()

"""Word vectors from raw text: corpus, training and scores for chapters 4 (word2vec), 5 (GloVe) and 6 (fastText).

* :func:`corpus_lines`, :func:`prepare` -- the training text as lines of tokens, and its vocabulary and id stream
  (:func:`shoulders.models.word2vec.prepare_corpus` with a config's limits);
* :func:`train_word2vec` -- word2vec.c's own update rule (Mikolov et al. 2013a/b): plain SGD, the rate decayed
  linearly with the words read, updates written by hand (``model.sgd_step``); it drives
  :class:`~shoulders.models.word2vec.Word2Vec` and fastText's subword skip-gram
  (:class:`~shoulders.models.fasttext.SubwordSkipGram`, Bojanowski et al. 2017) alike. It keeps its own update
  rule, not an optimiser, but shares :func:`shoulders.train.fit`'s progress bar, history and evaluation hook
  (:class:`~shoulders.train.Tracker`);
* :func:`train_glove` -- GloVe's AdaGrad (Pennington et al. 2014) through :func:`shoulders.train.fit`;
* :func:`train_classifier` -- fastText's text classifier (Joulin et al. 2017): SGD on *sparse* gradients with a
  linear decay to zero, through :func:`shoulders.train.fit`;
* :func:`scores` -- what chapters 4-6 report for a set of vectors: analogies, WordSim-353, SimLex-999 and the
  month/number neighbourhoods.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from .. import data
from ..evaluate.words import analogy, group_precision, word_similarity
from ..models.fasttext import FastTextClassifier, FastTextConfig
from ..models.glove import Cooccurrence, GloVe, GloVeConfig
from ..models.word2vec import Word2VecConfig, WordCorpus, prepare_corpus
from ..train.history import History
from ..train.loop import fit
from ..train.progress import Tracker
from ..train.schedules import linear_warmup_decay

__all__ = ["CORPORA", "corpus_lines", "prepare", "scores", "train_classifier", "train_glove", "train_word2vec"]

CORPORA = ("wikitext-2", "text8")
LOG_EVERY = 20  # word2vec's history: one row (mean loss per prediction, lr, words/s) every this many batches


def corpus_lines(corpus: str = "wikitext-2") -> list[list[str]]:
    """The training text as lines of tokens: WikiText-2 train without ``<eos>`` (a line is already a window
    boundary), or text8 cut into 10,000-word lines (the chunk gensim's ``Text8Corpus`` reads; text8 has no line
    breaks)."""
    if corpus == "wikitext-2":
        return data.wikitext2("train", eos=None)
    if corpus == "text8":
        return data.text8()
    raise ValueError(f"corpus must be one of {CORPORA}, got {corpus!r}")


def prepare(cfg: Any, lines: Iterable[Sequence[str]] | None = None) -> WordCorpus:
    """Vocabulary and id stream of ``lines`` (default: :func:`corpus_lines` of ``cfg.corpus``) with the config's
    ``min_count``, ``train_tokens`` and ``max_vocab`` -- for a :class:`~shoulders.models.word2vec.Word2VecConfig`,
    a :class:`~shoulders.models.fasttext.SubwordConfig` or a :class:`~shoulders.models.glove.GloVeConfig`
    (whose co-occurrence matrix is then ``cfg.cooccurrence(corpus)``)."""
    return prepare_corpus(corpus_lines(cfg.corpus) if lines is None else lines, cfg.min_count, cfg.train_tokens,
                          cfg.max_vocab)


# -- word2vec.c's SGD (word2vec, fastText subwords) ---------------------------------------------------------------
def train_word2vec(model: nn.Module, corpus: WordCorpus, cfg: Word2VecConfig | None = None, *,
                   epochs: int | None = None, steps: int | None = None, progress: bool = True,
                   evaluate: Callable[[nn.Module], Mapping[str, float]] | None = None,
                   eval_every: int | None = None, device: torch.device | str | None = None) -> History:
    """Train with word2vec.c's SGD: lr = lr0 * max(min_lr_ratio, 1 - words done / words planned), linear.

    ``model`` has ``sgd_step(x, y, mask=, lr=, **noise)`` (a :class:`~shoulders.models.word2vec.Word2Vec` or a
    :class:`~shoulders.models.fasttext.SubwordSkipGram`). ``epochs`` (default ``cfg.epochs``) plans the run;
    ``steps`` stops after that many batches (the decay is then planned over the steps). Returns a
    :class:`~shoulders.train.History` with ``loss`` (mean per prediction), ``lr``, ``words`` (corpus tokens
    read), ``words_per_s``, ``time`` and ``epoch`` every 20 batches, and the ``evaluate`` metrics every
    ``eval_every`` batches and at the end; the bar counts words (or steps).
    """
    cfg = cfg or model.cfg
    epochs = cfg.epochs if epochs is None else int(epochs)
    if epochs < 1 or (steps is not None and steps < 1):
        raise ValueError(f"epochs and steps must be >= 1, got {epochs}, {steps}")
    dev = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(dev)
    corpus = corpus.to(dev)
    batches = cfg.batches(corpus)
    N = len(corpus)
    planned = epochs * N
    noise_gen = torch.Generator(device=dev).manual_seed(cfg.seed + 7)
    tracker = Tracker(planned if steps is None else steps, evaluate=evaluate, eval_every=eval_every,
                      progress=progress, desc=f"word2vec {cfg.arch}/{cfg.output}",
                      unit="word" if steps is None else "step")
    step, start, words, lr, ep = 0, time.perf_counter(), 0, cfg.lr, 0
    acc_loss, acc_n = 0.0, 0

    def log() -> None:
        elapsed = time.perf_counter() - start
        tracker.log(step, loss=acc_loss / acc_n, lr=lr, words=words, words_per_s=words / elapsed, time=elapsed,
                    epoch=ep)

    try:
        for ep in range(epochs):
            done = 0
            for batch, raw in batches.epoch(ep):
                frac = step / steps if steps is not None else (ep * N + done) / planned
                lr = cfg.lr * max(cfg.min_lr_ratio, 1.0 - frac)
                x, y = batch[0], batch[1]
                mask = batch[2] if len(batch) > 2 else None
                kw = {}
                if cfg.output == "ns":
                    G = cfg.share_negatives
                    kw["noise"] = model.out.sampler.sample((-(-y.shape[0] // G), cfg.negatives), noise_gen)
                    kw["group"] = G
                loss = float(model.sgd_step(x, y, mask=mask, lr=lr, **kw))
                step += 1
                words += raw - done
                tracker.advance(loss / y.shape[0], lr, 1 if steps is not None else raw - done)
                done = raw
                acc_loss += loss
                acc_n += y.shape[0]
                if step % LOG_EVERY == 0 or (steps is not None and step == steps):
                    log()
                    acc_loss, acc_n = 0.0, 0
                if tracker.due(step):
                    tracker.evaluate(model, step)
                if steps is not None and step >= steps:
                    break
            if steps is not None and step >= steps:
                break
    finally:
        tracker.close()
    if acc_n:
        log()
    if evaluate is not None and not tracker.due(step):
        tracker.evaluate(model, step)
    return tracker.history


# -- GloVe's AdaGrad ---------------------------------------------------------------------------------------------
def train_glove(model: GloVe, cooc: Cooccurrence, cfg: GloVeConfig | None = None, *, epochs: int | None = None,
                steps: int | None = None, progress: bool = True,
                evaluate: Callable[[GloVe], Mapping[str, float]] | None = None, eval_every: int | None = None,
                device: Any = None, **fit_kwargs: Any) -> History:
    """AdaGrad (lr ``cfg.lr``) through :func:`shoulders.train.fit` for ``epochs`` passes over X (default
    ``cfg.epochs``) or ``steps`` batches; returns fit's History.

    With dense gradients a word absent from the batch has a zero gradient, and AdaGrad then leaves both its
    vector and its accumulator alone -- exactly the sparse updates of glove.c."""
    cfg = cfg or model.cfg
    batches = cfg.batches(cooc)
    total = steps if steps is not None else (cfg.epochs if epochs is None else int(epochs)) * len(batches)
    opt = torch.optim.Adagrad(model.parameters(), lr=cfg.lr)
    return fit(model, batches, opt, steps=total, progress=progress, evaluate=evaluate,
               eval_every=eval_every or (None if evaluate is None else len(batches)), device=device, amp=False,
               seed=cfg.seed, **fit_kwargs)


# -- fastText's classifier ---------------------------------------------------------------------------------------
def train_classifier(model: FastTextClassifier, batches: Any, cfg: FastTextConfig | None = None, *,
                     steps: int | None = None, progress: bool = True,
                     evaluate: Callable[[FastTextClassifier], Mapping[str, float]] | None = None,
                     eval_every: int | None = None, device: Any = None, **fit_kwargs: Any) -> History:
    """fastText's optimiser through :func:`shoulders.train.fit`: plain SGD, the rate decayed linearly to 0 over
    ``steps`` (default ``cfg.epochs`` passes over ``batches``, e.g. a
    :class:`~shoulders.models.fasttext.ClassificationBatches`). Returns fit's History (``loss``, ``lr/0``,
    ``time`` every step, the ``evaluate`` metrics every ``eval_every`` steps and at the end).

    ``cfg.lr`` is fastText's rate *per example* (it updates after every text); the model's loss is the mean over
    a minibatch, so the optimiser's rate is ``cfg.lr * cfg.batch_size`` -- each example then moves the weights as
    far as in fastText. The table A takes *sparse* gradients during training (only the rows of the batch's words
    and bigrams are touched, as in fastText): a dense step over millions of bucket rows would cost far more than
    the batch itself. ``fit`` measures (and would clip) sparse gradients like dense ones.
    """
    cfg = cfg or model.cfg
    total = int(steps) if steps is not None else cfg.epochs * len(batches)
    if total < 1:
        raise ValueError(f"steps must be >= 1, got {total}")
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr * cfg.batch_size)
    sparse_before, model.A.sparse = model.A.sparse, True
    try:
        return fit(model, batches, opt, steps=total, schedule=linear_warmup_decay(0, total), evaluate=evaluate,
                   eval_every=eval_every, progress=progress, device=device, amp=False, seed=cfg.seed, **fit_kwargs)
    finally:
        model.A.sparse = sparse_before


# -- scores ------------------------------------------------------------------------------------------------------
def scores(vectors: torch.Tensor, words: Sequence[str]) -> dict[str, float]:
    """What chapters 4-6 report for word vectors (V, d) with tokens ``words``: 3CosAdd analogy accuracy (all,
    semantic, syntactic; ``correct`` and ``coverage``), Spearman's rho on WordSim-353 and SimLex-999 (with their
    coverage) and the month/number neighbourhood precision (:func:`shoulders.evaluate.group_precision`)."""
    a = analogy(vectors, words)
    ws = word_similarity(vectors, words, "wordsim353")
    sl = word_similarity(vectors, words, "simlex999")
    return {"analogy": a["accuracy"], "correct": a["correct"], "coverage": a["coverage"], "semantic": a["semantic"],
            "syntactic": a["syntactic"], "ws353": ws["spearman"], "ws_cov": ws["coverage"],
            "simlex": sl["spearman"], "sl_cov": sl["coverage"], "groups": group_precision(vectors, words)}

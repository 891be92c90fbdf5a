"""Word vectors from raw text: corpus, training and scores for chapters 4 (word2vec), 5 (GloVe) and 6 (fastText).

* :func:`corpus_lines`, :func:`prepare` -- the training text as lines of tokens, and its vocabulary and id stream
  (:func:`shoulders.models.word2vec.prepare_corpus` with a config's limits);
* :func:`train_word2vec` -- word2vec.c's own update rule (Mikolov et al. 2013a/b): plain SGD, the rate decayed
  linearly with the words read, updates written by hand (``model.sgd_step``); it drives
  :class:`~shoulders.models.word2vec.Word2Vec` and fastText's subword skip-gram
  (:class:`~shoulders.models.fasttext.SubwordSkipGram`, Bojanowski et al. 2017) alike. It keeps its own update
  rule, not an optimiser, but shares :func:`shoulders.train.fit`'s progress bar, history and evaluation hook
  (:class:`~shoulders.train.Tracker`);
* :func:`word2vec_giant` / :func:`build_word2vec`, :func:`subword_giant` / :func:`build_subword` -- chapter 4's
  skip-gram and chapter 6's subword skip-gram as giants (the ``word2vec`` and ``fasttext`` vectors later chapters
  average or start from: the sentence-vector baselines of chapter 7, chapter 16's embeddings);
* :func:`train_glove` -- GloVe's AdaGrad (Pennington et al. 2014) through :func:`shoulders.train.fit`;
  :func:`glove_giant` / :func:`build_glove` -- the ``glove`` giant (chapter 5's vectors, for later chapters);
* :func:`train_classifier` -- fastText's text classifier (Joulin et al. 2017): SGD on *sparse* gradients with a
  linear decay to zero, through :func:`shoulders.train.fit`;
* :func:`scores` -- what chapters 4-6 report for a set of vectors: analogies, WordSim-353, SimLex-999 and the
  month/number neighbourhoods.
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from .. import data
from ..evaluate.words import analogy, group_precision, word_similarity
from ..models.fasttext import FastTextClassifier, FastTextConfig, SubwordConfig, SubwordSkipGram
from ..models.glove import CORPORA, Cooccurrence, GloVe, GloVeConfig
from ..models.word2vec import Word2Vec, Word2VecConfig, WordCorpus, prepare_corpus
from ..train.forked import fork_context
from ..train.history import History
from ..train.loop import fit
from ..train.progress import Tracker
from ..train.schedules import linear_warmup_decay
from .artefact import Artefact

__all__ = ["CORPORA", "build_glove", "build_subword", "build_word2vec", "corpus_lines", "glove_giant", "prepare",
           "scores", "subword_giant", "train_classifier", "train_glove", "train_word2vec", "word2vec_giant"]

LOG_EVERY = 20  # word2vec's history: one row (mean loss per prediction, lr, words/s) every this many batches


def corpus_lines(corpus: str = "wikitext-2") -> list[list[str]]:
    """The training text as lines of tokens: WikiText-2 train without ``<eos>`` (a line is already a window
    boundary), or text8 cut into 10,000-word lines (the chunk gensim's ``Text8Corpus`` reads; text8 has no line
    breaks). ``"+sst"`` after either puts the Stanford Sentiment Treebank's 8,544 training sentences (cased, split
    at spaces, labels unused) before it: their words get vectors even under a ``train_tokens`` cut."""
    if corpus not in CORPORA:
        raise ValueError(f"corpus must be one of {CORPORA}, got {corpus!r}")
    base, _, extra = corpus.partition("+")
    lines = data.wikitext2("train", eos=None) if base == "wikitext-2" else data.text8()
    if extra == "sst":
        lines = [s.split() for s in data.sst_trees("train")[0]] + list(lines)
    return lines


def prepare(cfg: Any, lines: Iterable[Sequence[str]] | None = None) -> WordCorpus:
    """Vocabulary and id stream of ``lines`` (default: :func:`corpus_lines` of ``cfg.corpus``) with the config's
    ``min_count``, ``train_tokens`` and ``max_vocab`` -- for a :class:`~shoulders.models.word2vec.Word2VecConfig`,
    a :class:`~shoulders.models.fasttext.SubwordConfig` or a :class:`~shoulders.models.glove.GloVeConfig`
    (whose co-occurrence matrix is then ``cfg.cooccurrence(corpus)``)."""
    return prepare_corpus(corpus_lines(cfg.corpus) if lines is None else lines, cfg.min_count, cfg.train_tokens,
                          cfg.max_vocab)


# -- word2vec.c's SGD (word2vec, fastText subwords) ---------------------------------------------------------------
# per worker, in shared memory: corpus words read, summed loss, predictions, batches done
_WORDS, _LOSS, _PREDICTIONS, _STEPS = range(4)


def _rate(cfg: Word2VecConfig, shared: np.ndarray, planned: int, steps: int | None) -> float:
    """word2vec.c's linear decay at the progress of *all* workers: words read of ``planned`` (or batches of
    ``steps``), floored at ``min_lr_ratio``."""
    frac = shared[:, _WORDS].sum() / planned if steps is None else shared[:, _STEPS].sum() / steps
    return cfg.lr * max(cfg.min_lr_ratio, 1.0 - float(frac))


def _train_part(model: nn.Module, batches: Any, cfg: Word2VecConfig, part: int, parts: int, epochs: int, N: int,
                steps: int | None, shared: np.ndarray, after_batch: Callable[[int, float, float], None] | None,
                ) -> None:
    """One worker's share of word2vec.c's SGD: the batches ``part, part + parts, ...`` of every epoch; the learning
    rate follows the words read by *all* workers (``shared``, one row per worker), as in word2vec.c, where the
    threads share ``word_count_actual``."""
    dev = next(model.parameters()).device
    noise_gen = torch.Generator(device=dev).manual_seed(cfg.seed + 7 + 7_919 * part)
    planned, row = epochs * N, shared[part]
    for ep in range(epochs):
        done = 0
        for batch, raw in batches.epoch(ep, part, parts):
            if steps is not None and shared[:, _STEPS].sum() >= steps:
                return
            lr = _rate(cfg, shared, planned, steps)
            x, y = batch[0], batch[1]
            mask = batch[2] if len(batch) > 2 else None
            kw = {}
            if cfg.output == "ns":
                G = cfg.share_negatives
                kw["noise"] = model.out.sampler.sample((-(-y.shape[0] // G), cfg.negatives), noise_gen)
                kw["group"] = G
            loss = float(model.sgd_step(x, y, mask=mask, lr=lr, **kw))
            row[_WORDS] += raw - done
            row[_LOSS] += loss
            row[_PREDICTIONS] += y.shape[0]
            row[_STEPS] += 1
            done = raw
            if after_batch is not None:
                after_batch(ep, lr, loss / y.shape[0])


def train_word2vec(model: nn.Module, corpus: WordCorpus, cfg: Word2VecConfig | None = None, *,
                   epochs: int | None = None, steps: int | None = None, progress: bool = True,
                   evaluate: Callable[[nn.Module], Mapping[str, float]] | None = None,
                   eval_every: int | None = None, device: torch.device | str | None = None,
                   workers: int | None = None) -> History:
    """Train with word2vec.c's SGD: lr = lr0 * max(min_lr_ratio, 1 - words done / words planned), linear.

    ``model`` has ``sgd_step(x, y, mask=, lr=, **noise)`` (a :class:`~shoulders.models.word2vec.Word2Vec` or a
    :class:`~shoulders.models.fasttext.SubwordSkipGram`). ``epochs`` (default ``cfg.epochs``) plans the run;
    ``steps`` stops after that many batches (the decay is then planned over the steps). Returns a
    :class:`~shoulders.train.History` with ``loss`` (mean per prediction), ``lr``, ``words`` (corpus tokens
    read), ``words_per_s``, ``time`` and ``epoch`` every 20 batches, and the ``evaluate`` metrics every
    ``eval_every`` batches and at the end; the bar counts words (or steps).

    ``workers`` (default ``cfg.workers``) > 1 trains as word2vec.c and gensim do with several threads --
    *Hogwild* (Niu, Recht, Ré & Wright 2011): the model's tables move to shared memory, ``workers - 1`` forked
    processes and this one each take their share of every epoch's batches (:meth:`Word2VecBatches.epoch`
    ``part``) and update the shared tables without locks, each on one CPU thread. The rare collisions (two
    workers adding to the same row at once) lose an update now and then, which SGD shrugs off; the run is then
    not bit-for-bit repeatable. CPU only (on another device, or without ``fork``, one worker trains).
    """
    cfg = cfg or model.cfg
    epochs = cfg.epochs if epochs is None else int(epochs)
    workers = int(getattr(cfg, "workers", 1) if workers is None else workers)
    if epochs < 1 or (steps is not None and steps < 1) or workers < 1:
        raise ValueError(f"epochs, steps and workers must be >= 1, got {epochs}, {steps}, {workers}")
    dev = torch.device(device) if device is not None else next(model.parameters()).device
    model.to(dev)
    context = fork_context()
    if workers > 1 and (dev.type != "cpu" or context is None):
        warnings.warn(f"workers={workers}: Hogwild workers need the CPU and fork; training with one", stacklevel=2)
        workers = 1
    corpus = corpus.to(dev)
    batches = cfg.batches(corpus)
    N = len(corpus)
    total = epochs * N if steps is None else steps
    tracker = Tracker(total, evaluate=evaluate, eval_every=eval_every, progress=progress,
                      desc=f"word2vec {cfg.arch}/{cfg.output}" + (f" x{workers}" if workers > 1 else ""),
                      unit="word" if steps is None else "step")
    shared_t = torch.zeros(workers, 4, dtype=torch.float64)
    if workers > 1:
        shared_t.share_memory_()
        model.share_memory()  # the tables every worker updates in place (Hogwild)
    shared = shared_t.numpy()
    start = time.perf_counter()
    seen = {"step": 0, "bar": 0, "loss": 0.0, "n": 0.0, "eval": 0, "lr": cfg.lr, "epoch": 0}

    def report(batch_loss: float | None = None, final: bool = False) -> None:
        """Bring the bar, the history and the evaluations up to the workers' shared counters."""
        words, loss, n, step = (float(v) for v in shared.sum(0))
        step = int(step)
        seen["lr"] = _rate(cfg, shared, epochs * N, steps)  # all workers' rate now, not this worker's last one
        bar_now = int(words if steps is None else step)
        tracker.advance(batch_loss, seen["lr"], bar_now - seen["bar"])
        seen["bar"] = bar_now
        if n > seen["n"] and (step // LOG_EVERY > seen["step"] // LOG_EVERY or final):
            elapsed = time.perf_counter() - start
            tracker.log(step, loss=(loss - seen["loss"]) / (n - seen["n"]), lr=seen["lr"], words=int(words),
                        words_per_s=words / elapsed, time=elapsed, epoch=seen["epoch"])
            seen["loss"], seen["n"] = loss, n
        if evaluate is not None and eval_every is not None and step // eval_every > seen["eval"] // eval_every:
            tracker.evaluate(model, step)
            seen["eval"] = step
        seen["step"] = step

    def after_batch(ep: int, lr: float, loss: float) -> None:
        seen["epoch"] = ep
        report(loss)

    children, threads_before = [], torch.get_num_threads()
    try:
        if workers > 1:
            torch.set_num_threads(1)  # one thread per worker: its ops are small, and the cores are the workers'
            for part in range(1, workers):
                proc = context.Process(target=_hogwild_child, daemon=True,
                                       args=(model, batches, cfg, part, workers, epochs, N, steps, shared_t))
                proc.start()
                children.append(proc)
        _train_part(model, batches, cfg, 0, workers, epochs, N, steps, shared, after_batch)
        while any(p.is_alive() for p in children):  # this worker is done; follow the others
            time.sleep(0.05)
            report()
        failed = [p.exitcode for p in children if p.exitcode != 0]
        if failed:
            raise RuntimeError(f"{len(failed)} Hogwild worker(s) failed (exit codes {failed}); see stderr")
        report(final=True)
    finally:
        for proc in children:
            if proc.is_alive():
                proc.terminate()
            proc.join()
        torch.set_num_threads(threads_before)
        tracker.close()
    step = int(shared[:, _STEPS].sum())
    if evaluate is not None and seen["eval"] != step:
        tracker.evaluate(model, step)
    return tracker.history


def _hogwild_child(model: nn.Module, batches: Any, cfg: Word2VecConfig, part: int, parts: int, epochs: int, N: int,
                   steps: int | None, shared: torch.Tensor) -> None:
    """A forked worker of :func:`train_word2vec` (the tables and ``shared`` are in shared memory)."""
    torch.set_num_threads(1)
    _train_part(model, batches, cfg, part, parts, epochs, N, steps, shared.numpy(), None)


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



def build_glove(cfg: GloVeConfig, vocab: Any) -> GloVe:
    """An untrained GloVe for ``vocab``'s words: what a cached ``glove`` giant's weights are loaded into."""
    return cfg.build(len(vocab))


def glove_giant(cfg: GloVeConfig, *, device: Any = None, progress: bool = True, **fit_kwargs: Any) -> Artefact:
    """Chapter 5's recipe as a giant: count X on ``cfg.corpus``, fit GloVe, keep the vocabulary beside it, so that
    later chapters (ELMo's task models read GloVe vectors, chapter 10) load the vectors instead of training them.
    The vectors are ``model.vectors()`` (W + W~, as the paper evaluates them)."""
    corpus = prepare(cfg)
    cooc = cfg.cooccurrence(corpus)
    model = build_glove(cfg, corpus.vocab)
    history = train_glove(model, cooc, cfg, progress=progress, device=device, **fit_kwargs)
    return Artefact(model=model.cpu(), history=history, tokenizer=corpus.vocab,
                    metrics={"final_loss": history.last("loss")},
                    facts={"corpus": cfg.corpus, "tokens": len(corpus), "vocabulary": len(corpus.vocab),
                           "non-zero entries of X": len(cooc)})

def build_word2vec(cfg: Word2VecConfig, vocab: Any) -> Word2Vec:
    """An untrained word2vec for ``vocab``'s words (their counts shape the noise distribution): what a cached
    ``word2vec`` giant's weights are loaded into."""
    return cfg.build(torch.as_tensor(vocab.count_array()))


def build_subword(cfg: SubwordConfig, vocab: Any) -> SubwordSkipGram:
    """An untrained subword skip-gram for ``vocab``'s words: what a cached ``fasttext`` giant is loaded into."""
    return cfg.build(vocab.tokens, torch.as_tensor(vocab.count_array()))


def _vector_giant(cfg: Any, build: Callable[[Any, Any], nn.Module], device: Any, progress: bool,
                  **train_kwargs: Any) -> Artefact:
    corpus = prepare(cfg)
    model = build(cfg, corpus.vocab)
    history = train_word2vec(model, corpus, cfg, progress=progress, device=device, **train_kwargs)
    model = model.cpu()
    return Artefact(model=model, history=history, tokenizer=corpus.vocab,
                    metrics={k: float(v) for k, v in scores(model.vectors(), corpus.vocab.tokens).items()},
                    facts={"corpus": cfg.corpus, "tokens": len(corpus), "vocabulary": len(corpus.vocab),
                           "epochs": cfg.epochs, "Hogwild workers": cfg.workers})


def word2vec_giant(cfg: Word2VecConfig, *, device: Any = None, progress: bool = True, **train_kwargs: Any
                   ) -> Artefact:
    """Chapter 4's skip-gram (or CBOW) with word2vec.c's SGD on ``cfg.corpus`` as a giant; the metrics are
    chapter 4's scores (:func:`scores`). The vectors are ``model.vectors()``, the words ``tokenizer.tokens``."""
    return _vector_giant(cfg, build_word2vec, device, progress, **train_kwargs)


def subword_giant(cfg: SubwordConfig, *, device: Any = None, progress: bool = True, **train_kwargs: Any
                  ) -> Artefact:
    """Chapter 6's subword skip-gram (Bojanowski et al. 2017) as a giant; ``model.word_vector(w)`` gives any
    word's vector, seen in training or not."""
    return _vector_giant(cfg, build_subword, device, progress, **train_kwargs)


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

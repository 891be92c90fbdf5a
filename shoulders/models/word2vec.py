"""word2vec: CBOW and skip-gram (Mikolov, Chen, Corrado & Dean 2013a, "Efficient Estimation of Word
Representations in Vector Space"; Mikolov, Sutskever, Chen, Corrado & Dean 2013b, "Distributed Representations
of Words and Phrases and their Compositionality").

Two log-linear models with one table of input vectors v_w (``embed``) and one of output vectors v'_w:

* **skip-gram** (2013a sec. 3.2; 2013b eq. 1): the centre word predicts each word of its window,
  maximise 1/T sum_t sum_{-c <= j <= c, j != 0} log p(w_{t+j} | w_t), with h = v_{w_t};
* **CBOW** (2013a sec. 3.1): the average of the window's vectors predicts the centre word,
  h = 1/|C| sum_{j in C} v_{w_{t+j}}.

p(w_O | h) is one of three output layers (``output=``): the full softmax exp(v'_{w_O}^T h) / sum_w
exp(v'_w^T h) (2013b eq. 2), the hierarchical softmax over a Huffman tree (eq. 3,
:mod:`~shoulders.models.huffman_tree`) or negative sampling (eq. 4, :mod:`~shoulders.models.negative_sampling`).

The training tricks of the papers and of word2vec.c: subsampling of frequent words (2013b eq. 5), a *dynamic
window* (for each centre word the window size b is drawn uniformly from 1..c, so near words count more; 2013a
sec. 3.2 "we randomly choose R in range <1; C>"), and plain SGD whose learning rate decays linearly from
``lr`` to ``lr * 1e-4`` over the planned number of words.

Speed comes from batches, not from a loop per token: :class:`Word2VecBatches` cuts an epoch into chunks of
``batch_words`` tokens and builds all (centre, context) pairs of a chunk with tensor ops;
:meth:`Word2Vec.sgd_step` (driven by :func:`shoulders.recipes.word_vectors.train_word2vec`) applies word2vec.c's
update rules to the whole batch at once with scatter-adds (``sparse_rows``; gradients written by hand, checked
against autograd in the tests). The module's ``forward`` returns the loss too, so
:func:`shoulders.train.fit` can train it with any optimiser.

What batching changes, and how it is kept in check. word2vec.c updates after every pair, so each update sees the
previous one; a batch computes all its updates from the same old vectors and sums them. For most rows that is
harmless, but a frequent word's output vector (and, in the hierarchical softmax, the nodes near the root, which
every path visits) receives hundreds of updates per batch, and their sum overshoots. Hence: batches of a few
hundred centre words (``batch_words=500``: ~3,000 pairs, stable with lr 0.025), the hierarchical softmax divides a
node's summed update by the square root of its visits in the batch, and ``share_negatives`` lets groups of pairs
from *different* centre words share their k noise words (``1`` = word2vec.c's own draws per pair; sharing
makes the step ~3x faster at some cost in quality: see ``benchmarks/word2vec.py``). Two choices keep the stale
sums off the word vectors themselves: a batch takes its centre words in short runs from all over the corpus
(``shuffle_run``), because text is bursty -- a rare word's few occurrences sit in one article, and in-order
batches would give its vector their summed stale updates at once -- and skip-gram pairs are oriented as in
word2vec.c (``predict="centre"``: the context word's vector predicts the centre, so a window's updates pile up
on the centre's output vector, which is not kept).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError
from ..text.vocab import Vocab
from .huffman_tree import HierarchicalSoftmax, huffman_tree
from .ids import check_ids, check_labels
from .negative_sampling import NegativeSampler, NegativeSampling, keep_probability, subsample
from .sparse_rows import add_rows_, take_rows

__all__ = ["FullSoftmax", "Word2Vec", "Word2VecBatches", "Word2VecConfig", "WordCorpus", "dynamic_window",
           "output_layer", "prepare_corpus", "window_pairs", "zipf_counts"]

ARCHS = ("sg", "cbow")
OUTPUTS = ("ns", "hs", "softmax")
PREDICTS = ("centre", "context")
HS_RULES = ("sqrt", "sum", "prox")


# -- data ---------------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class WordCorpus:
    """A corpus for word vectors: ``ids`` (N,) of the in-vocabulary tokens (out-of-vocabulary ones are dropped,
    as word2vec.c does), ``sentence`` (N,) the line each token came from (windows never cross lines), and the
    ``vocab`` (ids by descending count) with ``counts`` (V,)."""

    ids: torch.Tensor  # (N,)
    sentence: torch.Tensor  # (N,)
    vocab: Vocab
    counts: torch.Tensor  # (V,)

    def __len__(self) -> int:
        return self.ids.numel()

    def to(self, device: torch.device | str) -> "WordCorpus":
        return WordCorpus(self.ids.to(device), self.sentence.to(device), self.vocab, self.counts)


def prepare_corpus(lines: Iterable[Sequence[str]], min_count: int = 5, max_tokens: int | None = None,
                   max_vocab: int | None = None, drop: Sequence[str] = ("<eos>",)) -> WordCorpus:
    """Count, build the vocabulary (``min_count``, at most ``max_vocab`` words) and encode lines of tokens.

    ``max_tokens`` keeps only the first lines up to that many tokens (smoke scale); tokens in ``drop`` (the LM
    end-of-line marker) are removed first -- a line is already a window boundary.
    """
    dropped = set(drop)
    kept_lines, total = [], 0
    for line in lines:
        if max_tokens is not None and total >= max_tokens:
            break
        toks = [t for t in line if t not in dropped]
        if toks:
            kept_lines.append(toks)
            total += len(toks)
    if not kept_lines:
        raise ValueError("the corpus has no tokens")
    vocab = Vocab.build(kept_lines, unk=None, min_freq=min_count, max_size=max_vocab)
    if len(vocab) < 2:
        raise ValueError(f"only {len(vocab)} word(s) occur >= min_count={min_count} times; lower min_count")
    stoi = vocab.stoi
    raw = np.fromiter((stoi.get(t, -1) for t in chain.from_iterable(kept_lines)), dtype=np.int64, count=total)
    line_of = np.repeat(np.arange(len(kept_lines)), [len(x) for x in kept_lines])
    keep = raw >= 0
    counts = torch.as_tensor(vocab.count_array())
    return WordCorpus(torch.from_numpy(raw[keep]), torch.from_numpy(line_of[keep]), vocab, counts)


def zipf_counts(vocab_size: int, total: int = 1_000_000) -> torch.Tensor:
    """Counts (V,) following Zipf's law, count ~ 1/rank: stand-in frequencies for a model built without data."""
    r = torch.arange(1, vocab_size + 1, dtype=torch.float64)
    return (total / r / (1.0 / r).sum()).ceil().long()


def dynamic_window(n: int, window: int, generator: torch.Generator | None = None,
                   device: torch.device | str | None = None) -> torch.Tensor:
    """The effective window b (n,) of each centre word, uniform on 1..window (word2vec.c's ``b``)."""
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    return torch.randint(1, window + 1, (n,), generator=generator, device=device)


def window_pairs(ids: torch.Tensor, sentence: torch.Tensor, window: int, start: int = 0, stop: int | None = None,
                 generator: torch.Generator | None = None, positions: torch.Tensor | None = None,
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The windows of the centre positions ``start .. stop-1`` of a stream (or of ``positions`` (C,), any order),
    all at once.

    Returns ``center`` (C,) ids, ``context`` (C, 2*window) ids (offsets -window..-1, 1..window) and ``mask``
    (C, 2*window): ``True`` where the offset is within that centre's dynamic window b, inside the stream and on
    the same line. Skip-gram pairs are ``center[i], context[i, j]`` for every ``mask[i, j]``.
    """
    N = ids.numel()
    if positions is None:
        stop = N if stop is None else min(stop, N)
        pos = torch.arange(start, stop, device=ids.device)  # (C,)
    else:
        pos = positions.to(ids.device)  # (C,)
    b = dynamic_window(pos.numel(), window, generator, ids.device)  # (C,)
    off = torch.cat([torch.arange(-window, 0), torch.arange(1, window + 1)]).to(ids.device)  # (2w,)
    j = pos[:, None] + off[None, :]  # (C, 2w)
    mask = (off.abs()[None, :] <= b[:, None]) & (j >= 0) & (j < N)
    j = j.clamp_(0, N - 1)
    mask &= sentence[j] == sentence[pos][:, None]
    return ids[pos], ids[j], mask


class Word2VecBatches:
    """An epoch of word2vec batches over a :class:`WordCorpus` (re-iterable; each ``iter()`` is a new epoch).

    Per epoch: subsample the stream (eq. 5), then take ``batch_words`` centre tokens at a time and yield, for
    ``arch="sg"``, ``(input (P,), target (P,))`` -- all P pairs of the chunk -- and for ``arch="cbow"``,
    ``(context (C, 2w), center (C,), mask (C, 2w))``. :meth:`epoch` also yields how many corpus tokens (before
    subsampling) the batch has consumed, for the learning-rate decay.

    Which centre tokens share a batch: with ``shuffle_run`` = r > 0 the kept stream is cut into runs of r
    consecutive tokens and each epoch takes the runs in a new random order, so a batch holds ``batch_words / r``
    runs from all over the corpus; ``0`` reads the stream in order, as word2vec.c does (see
    :class:`Word2VecConfig` ``shuffle_run`` for why a batched trainer should not).

    A skip-gram pair is (centre, context word); ``predict`` says which of the two is the target. ``"context"`` is
    the papers' p(w_{t+j} | w_t) read literally: ``(center, context)``. ``"centre"`` is what word2vec.c and gensim
    run: the context word's input vector scores the centre word (and the noise words that replace it),
    ``(context, center)``. Summed over a corpus both see the same pairs; they differ in which vectors a batch
    updates from stale values -- see :class:`Word2VecConfig` ``predict``.
    """

    ARCHS: ClassVar[tuple[str, ...]] = ARCHS

    def __init__(self, corpus: WordCorpus, arch: str = "sg", window: int = 5, batch_words: int = 500,
                 sample: float = 1e-3, rule: str = "word2vec.c", seed: int = 0, predict: str = "centre",
                 shuffle_run: int = 10) -> None:
        if arch not in self.ARCHS:
            raise ValueError(f"arch must be one of {self.ARCHS}, got {arch!r}")
        if batch_words < 1:
            raise ValueError(f"batch_words must be >= 1, got {batch_words}")
        if predict not in PREDICTS:
            raise ValueError(f"predict must be one of {PREDICTS}, got {predict!r}")
        if shuffle_run < 0:
            raise ValueError(f"shuffle_run must be >= 0 (0 = in corpus order), got {shuffle_run}")
        self.corpus, self.arch, self.window, self.batch_words = corpus, arch, int(window), int(batch_words)
        self.predict, self.shuffle_run = predict, int(shuffle_run)
        self.keep = keep_probability(corpus.counts, sample, rule)  # (V,)
        self.seed, self.epochs_done = int(seed), 0

    def __len__(self) -> int:
        """Expected batches per epoch (subsampling is random)."""
        kept = float((self.keep * self.corpus.counts.double()).sum())
        return max(1, math.ceil(kept / self.batch_words))

    def epoch(self, index: int, part: int = 0, parts: int = 1) -> Iterator[tuple[tuple[torch.Tensor, ...], int]]:
        """``(batch, raw tokens consumed so far this epoch)`` for epoch ``index`` (seeded by seed and index).

        ``parts`` > 1 splits the epoch between workers (Hogwild training, see
        :func:`shoulders.recipes.word_vectors.train_word2vec`): every part draws the same subsample and order, and
        part p takes the batches p, p + parts, p + 2 parts, ... of it, with window sizes from its own generator;
        its raw count is then its share of the corpus, N x (its kept tokens so far) / M."""
        if not 0 <= part < parts:
            raise ValueError(f"need 0 <= part < parts, got part {part} of {parts}")
        dev = self.corpus.ids.device
        g = torch.Generator(device=dev).manual_seed(self.seed * 1_000_003 + index)
        kept = subsample(self.corpus.ids, self.keep, g)  # (N,)
        where = kept.nonzero().squeeze(1)  # (M,) positions of the kept tokens in the raw stream
        ids, sentence = self.corpus.ids[where], self.corpus.sentence[where]
        M, N, r = ids.numel(), len(self.corpus), self.shuffle_run
        if r:  # runs of r consecutive kept tokens, in random order: (M,) positions
            starts = torch.randperm(-(-M // r), generator=g, device=dev) * r
            order = (starts[:, None] + torch.arange(r, device=dev)).reshape(-1)
            order = order[order < M]
        else:
            order = torch.arange(M, device=dev)
        if parts > 1:  # this part's own window draws (one generator per part: the parts run concurrently)
            g = torch.Generator(device=dev).manual_seed((self.seed * 1_000_003 + index) * 1_009 + part + 1)
        mine = 0  # kept tokens of this part so far
        for s in range(part * self.batch_words, M, parts * self.batch_words):
            e = min(s + self.batch_words, M)
            batch = self.make_batch(ids, sentence, order[s:e], g)
            mine += e - s
            if parts > 1:
                raw = N * mine // M
            elif e == M:
                raw = N
            else:  # corpus tokens read so far: exact in corpus order, the share of the epoch done when shuffled
                raw = N * e // M if r else int(where[e - 1]) + 1
            if batch[0].numel():
                yield batch, raw

    def make_batch(self, ids: torch.Tensor, sentence: torch.Tensor, positions: torch.Tensor,
                   generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        """The batch of the centre tokens at ``positions`` (C,) of the kept stream ``ids`` / ``sentence``."""
        center, context, mask = window_pairs(ids, sentence, self.window, generator=generator, positions=positions)
        if self.arch == "sg":
            i, j = mask.nonzero(as_tuple=True)
            pair = (context[i, j], center[i])  # (P,), (P,): input, target
            return pair if self.predict == "centre" else pair[::-1]
        rows = mask.any(1)  # a centre alone on its line has no context
        return context[rows], center[rows], mask[rows]

    def __iter__(self) -> Iterator[tuple[torch.Tensor, ...]]:
        index = self.epochs_done
        self.epochs_done += 1
        return (b for b, _ in self.epoch(index))


# -- model --------------------------------------------------------------------------------------------------------
class FullSoftmax(nn.Module):
    """p(w | h) = exp(v'_w^T h) / sum_{w'} exp(v'_{w'}^T h) (2013b eq. 2): ``weight`` (V, d), zero-initialised.
    Costs O(V) per example -- the reason for the other two output layers; fine for small vocabularies."""

    def __init__(self, num_words: int, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(num_words, dim))  # (V, d)

    def loss(self, h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(h @ self.weight.T, y)  # mean over B

    def log_probs(self, h: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(h @ self.weight.T, -1)  # (B, V)

    @torch.no_grad()
    def sgd_step(self, h: torch.Tensor, y: torch.Tensor, lr: float) -> tuple[torch.Tensor, torch.Tensor]:
        """dL/dlogits = softmax - onehot; returns (summed loss, dL/dh), updates v' in place (dense)."""
        chunk = max(1, 2**22 // self.weight.shape[0])  # bound the (B, V) matrix
        loss, dhs = h.new_zeros(()), []
        for s in range(0, h.shape[0], chunk):
            hc, yc = h[s: s + chunk], y[s: s + chunk]
            logits = hc @ self.weight.T  # (b, V)
            loss += F.cross_entropy(logits, yc, reduction="sum")
            dlogits = torch.softmax(logits, -1)
            dlogits[torch.arange(yc.numel(), device=yc.device), yc] -= 1.0
            dhs.append(dlogits @ self.weight)  # (b, d)
            self.weight.add_(dlogits.T @ hc, alpha=-lr)
        return loss, torch.cat(dhs)


def output_layer(kind: str, counts: Any, dim: int, negatives: int = 5, power: float = 0.75,
                 hs_rule: str = "sqrt") -> nn.Module:
    """``"softmax"`` (:class:`FullSoftmax`), ``"hs"`` (Huffman tree of ``counts``; ``hs_rule`` is its batch rule,
    see :meth:`HierarchicalSoftmax.sgd_step`) or ``"ns"`` (noise from ``counts``^power): each has
    ``loss(h, y)``, ``sgd_step(h, y, lr)`` and a ``weight`` of output vectors."""
    V = len(counts)
    if kind == "softmax":
        return FullSoftmax(V, dim)
    if kind == "hs":
        if hs_rule not in HS_RULES:
            raise ValueError(f"hs_rule must be one of {HS_RULES}, got {hs_rule!r}")
        return HierarchicalSoftmax(huffman_tree(counts), dim, rule=hs_rule)
    if kind == "ns":
        return NegativeSampling(NegativeSampler(counts, power), dim, negatives)
    raise ValueError(f"output must be one of {OUTPUTS}, got {kind!r}")


class Word2Vec(nn.Module):
    """Skip-gram or CBOW with one of the three output layers. ``embed`` holds the input vectors v_w -- the word
    vectors -- initialised as word2vec.c does (uniform in +-0.5/d; output vectors start at zero)."""

    def __init__(self, cfg: "Word2VecConfig", counts: Any | None = None):
        super().__init__()
        counts = zipf_counts(cfg.vocab_size) if counts is None else torch.as_tensor(counts)
        self.cfg, self.arch = cfg, cfg.arch
        V, d = len(counts), cfg.dim
        self.embed = nn.Embedding(V, d)  # (V, d): v_w
        nn.init.uniform_(self.embed.weight, -0.5 / d, 0.5 / d)
        self.out = output_layer(cfg.output, counts, d, cfg.negatives, hs_rule=cfg.hs_rule)

    def hidden(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """h (B, d): v_x for skip-gram (x (B,)); the mean of the unmasked v over the window for CBOW (x (B, 2w))."""
        check_ids(x, "x", self.embed.num_embeddings, dims=1 if self.arch == "sg" else 2)
        v = self.embed(x)
        if self.arch == "sg":
            return v  # (B, d)
        m = torch.ones_like(x, dtype=v.dtype) if mask is None else mask.to(v.dtype)  # (B, 2w)
        return (v * m[..., None]).sum(1) / m.sum(1, keepdim=True).clamp(min=1.0)  # (B, d)

    def forward(self, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Mean -log p(y | h(x)) over the batch (for NS: the negative of eq. 4, noise drawn from torch's RNG)."""
        h = self.hidden(x, mask)  # (B, d)
        check_labels(y, "y", self.embed.num_embeddings)
        return self.out.loss(h, y)

    @torch.no_grad()
    def sgd_step(self, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None = None, lr: float = 0.025,
                 **out_kwargs: Any) -> torch.Tensor:
        """One hand-written SGD step on the batch (word2vec.c's updates, summed over the batch): returns the
        summed loss. The gradient of the CBOW mean reaches each context word divided by |C| (word2vec.c adds
        the undivided error instead -- the same direction with a larger step)."""
        h = self.hidden(x, mask)
        check_labels(y, "y", self.embed.num_embeddings)  # the output words, (B,)
        loss, dh = self.out.sgd_step(h, y, lr, **out_kwargs)
        W = self.embed.weight
        if self.arch == "sg":
            add_rows_(W, x, dh, alpha=-lr)
        else:
            m = torch.ones_like(x, dtype=torch.bool) if mask is None else mask.bool()  # (B, 2w)
            share = dh / m.sum(1, keepdim=True).clamp(min=1)  # (B, d)
            rows = m.nonzero(as_tuple=True)
            add_rows_(W, x[rows], take_rows(share, rows[0]), alpha=-lr)
        return loss

    def vectors(self) -> torch.Tensor:
        """The word vectors (V, d): the input vectors v_w, as word2vec.c saves them."""
        return self.embed.weight.detach()

    def extra_repr(self) -> str:
        c = self.cfg
        return f"arch={c.arch}, output={c.output}, dim={c.dim}, window={c.window}"


# -- config -------------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Word2VecConfig(Config):
    """word2vec's settings, named as in word2vec.c / gensim where they exist."""

    arch: str = "sg"  # "sg" (skip-gram) or "cbow"
    output: str = "ns"  # "ns" (negative sampling), "hs" (hierarchical softmax), "softmax"
    dim: int = 100  # -size
    window: int = 5  # -window: the largest dynamic window c
    negatives: int = 5  # -negative: k noise words per pair
    share_negatives: int = 16  # this many pairs (of different centre words) share their k noise words (1 = word2vec.c)
    workers: int = 1  # -threads / gensim's workers: Hogwild worker processes on the CPU (train_word2vec)
    # the hierarchical softmax's batch rule: "sqrt" divides a node's summed update by sqrt(its visits in the batch),
    # "sum" is the plain summed gradient step (word2vec.c's per-pair updates, added up); see HierarchicalSoftmax
    hs_rule: str = "sqrt"
    # skip-gram: which word of a (centre, context) pair is scored from the other's input vector. "centre" is
    # word2vec.c's and gensim's order (the context word's vector predicts the centre): a batch then sums the stale
    # updates of one centre's window on its *output* vector, which is thrown away, and every input vector -- the
    # word vectors kept -- gets one update per pair. "context" reads eq. 1 literally (the centre's vector predicts
    # each context word) and sums a window's updates on the kept vector instead. Measured on WikiText-2 at cpu
    # scale (benchmarks/word2vec.py, batches in corpus order): analogy 4.69% (5 seeds) against 4.75% (15 seeds),
    # WS-353 0.337 against 0.349 -- a small difference; the batch order below matters more
    predict: str = "centre"
    # batches of centre words from all over the corpus: runs of this many consecutive (kept) tokens in random
    # order, a new order every epoch; 0 = the corpus in order, as word2vec.c reads it. Sequential SGD can read
    # in order, but a batch computes every update from the same old vectors, and text is bursty: a rare word's
    # few occurrences cluster in one article, so in-order batches give it several summed stale updates where
    # word2vec.c makes several successive ones. Measured (WikiText-2, cpu scale, benchmarks/word2vec.py, 15 seeds):
    # analogy 4.75% in order, 5.18% with runs of 10 (gensim: 4.87-4.90%); fully shuffled (runs of 1) scored the
    # same over 5 seeds but ran ~25% slower, since neighbouring windows no longer share rows in the cache
    shuffle_run: int = 10
    sample: float = 1e-3  # -sample: the subsampling threshold t (0 = off)
    sample_rule: str = "word2vec.c"  # or "paper": how t turns into a keep probability (negative_sampling.py)
    min_count: int = 5  # -min-count
    max_vocab: int | None = None
    lr: float = 0.025  # -alpha: 0.025 for skip-gram, 0.05 for CBOW in word2vec.c
    min_lr_ratio: float = 1e-4  # word2vec.c never lets alpha fall below starting_alpha * 1e-4
    epochs: int = 5  # -iter
    batch_words: int = 500  # centre tokens per batch (~6 pairs each); larger batches sum more stale updates
    corpus: str = "wikitext-2"  # or "text8"
    train_tokens: int | None = None  # only the first N tokens of the corpus (smoke)
    vocab_size: int = 33_278  # used only when a model is built without corpus counts
    seed: int = 0

    presets: ClassVar = {
        "smoke": dict(dim=50, window=5, negatives=5, sample=1e-3, min_count=3, epochs=5, train_tokens=200_000,
                      vocab_size=8_000),
        "cpu": dict(dim=100, window=5, negatives=5, sample=1e-3, min_count=5, epochs=5, vocab_size=28_000),
        # Mikolov et al. on text8 (demo-word.sh uses cbow, size 200, window 8, negative 25, sample 1e-4, iter 15)
        "full": dict(corpus="text8", dim=200, window=5, negatives=10, sample=1e-4, min_count=5, epochs=5,
                     batch_words=1_000, vocab_size=71_290),
    }

    # what chapter 4 asserts at each scale: the floors of shoulders' skip-gram + NS over gensim's on the same text
    # (ours / gensim's, one seed a side), and its margins over random vectors. benchmarks/word2vec.py, five seeds a
    # side at cpu scale: the worst pair of seeds is 0.93 (analogy), 0.95 (WS-353), 0.94 (SimLex-999); at smoke
    # scale (200,000 words, 6 seeds) analogies are a handful of questions (ratio of the means 0.77, worst pair
    # 0.53; with two Hogwild workers a side, 0.37 seen) and the similarity sets within noise of zero: only the
    # month/number neighbourhoods (ratio of the means 1.00) are compared there
    page_presets: ClassVar = {
        "smoke": {"gensim_ratio": {"groups": 0.7}, "over_random": {}},
        "cpu": {"gensim_ratio": {"analogy": 0.85, "ws353": 0.85, "simlex": 0.85, "groups": 0.9},
                "over_random": {"ws353": 0.1, "simlex": 0.05}},
        "full": {"gensim_ratio": {"analogy": 0.85, "ws353": 0.85, "simlex": 0.85, "groups": 0.9},
                 "over_random": {"ws353": 0.1, "simlex": 0.05}},
    }

    archs: ClassVar[tuple[str, ...]] = ARCHS  # the architectures this config trains (paragraph vectors: its own)

    def validate(self) -> None:
        if self.arch not in self.archs:
            raise ConfigError(f"arch must be one of {self.archs}, got {self.arch!r}")
        if self.output not in OUTPUTS:
            raise ConfigError(f"output must be one of {OUTPUTS}, got {self.output!r}")
        if min(self.dim, self.window, self.negatives, self.share_negatives, self.min_count, self.epochs,
               self.batch_words, self.vocab_size, self.workers) < 1:
            raise ConfigError("dim, window, negatives, share_negatives, min_count, epochs, batch_words, vocab_size "
                              "and workers must be >= 1")
        if self.vocab_size < 2:
            raise ConfigError("vocab_size must be >= 2")
        if self.lr <= 0 or not 0 <= self.min_lr_ratio <= 1 or self.sample < 0:
            raise ConfigError(f"need lr > 0, 0 <= min_lr_ratio <= 1, sample >= 0; got {self.lr}, "
                              f"{self.min_lr_ratio}, {self.sample}")
        if self.shuffle_run < 0:
            raise ConfigError(f"shuffle_run must be >= 0 (0 = the corpus in order), got {self.shuffle_run}")
        if self.hs_rule not in HS_RULES:
            raise ConfigError(f"hs_rule must be one of {HS_RULES}, got {self.hs_rule!r}")
        if self.predict not in PREDICTS:
            raise ConfigError(f"predict must be one of {PREDICTS}, got {self.predict!r}")
        if self.sample_rule not in ("paper", "word2vec.c"):
            raise ConfigError(f"sample_rule must be 'paper' or 'word2vec.c', got {self.sample_rule!r}")
        if self.corpus not in ("wikitext-2", "text8"):
            raise ConfigError(f"corpus must be 'wikitext-2' or 'text8', got {self.corpus!r}")

    def build(self, counts: Any | None = None) -> Word2Vec:
        """The model; ``counts`` (V,) are the corpus counts (``corpus.counts``) that shape the Huffman tree and
        the noise distribution -- without them a Zipf stand-in of ``vocab_size`` words is used."""
        return Word2Vec(self, counts)

    def example_batch(self, batch_size: int = 4) -> tuple[torch.Tensor, ...]:
        """A tiny random batch: ``(center, context)`` for skip-gram, ``(context, center, mask)`` for CBOW."""
        g = torch.Generator().manual_seed(0)
        if self.arch == "sg":
            return (torch.randint(self.vocab_size, (batch_size,), generator=g),
                    torch.randint(self.vocab_size, (batch_size,), generator=g))
        ctx = torch.randint(self.vocab_size, (batch_size, 2 * self.window), generator=g)
        mask = torch.ones_like(ctx, dtype=torch.bool)
        mask[:, 0] = False
        return ctx, torch.randint(self.vocab_size, (batch_size,), generator=g), mask

    def step_batch(self) -> tuple[torch.Tensor, ...]:
        """A random batch with the exact shapes of one training step of this preset, built as
        :class:`Word2VecBatches` builds one: ``batch_words`` centre words (after subsampling) of a random stream of
        ids below ``vocab_size`` (text8's 71,290 words at ``full``), each with its dynamic window b ~ U{1..window}
        (:func:`window_pairs`), on one line (text8 is cut into 10,000-word lines, so nearly every window is
        whole). Skip-gram: all the batch's pairs, about ``batch_words * (window + 1)`` of them (2 E[b] per centre),
        oriented by ``predict``; CBOW: ``(context (C, 2w), center (C,), mask (C, 2w))``."""
        g = torch.Generator().manual_seed(0)
        C, w = self.batch_words, self.window
        ids = torch.randint(self.vocab_size, (C + 2 * w,), generator=g)
        center, context, mask = window_pairs(ids, torch.zeros_like(ids), w, w, w + C, generator=g)
        if self.arch == "cbow":
            return context, center, mask
        i, j = mask.nonzero(as_tuple=True)
        pair = (context[i, j], center[i])  # (P,), (P,): the context word predicts the centre (word2vec.c)
        return pair if self.predict == "centre" else pair[::-1]

    def batches(self, corpus: WordCorpus) -> Word2VecBatches:
        return Word2VecBatches(corpus, self.arch, self.window, self.batch_words, self.sample, self.sample_rule,
                               self.seed, self.predict, self.shuffle_run)

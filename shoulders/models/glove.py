"""GloVe: global vectors from co-occurrence counts (Pennington, Socher & Manning 2014, EMNLP).

1. **Count** (sec. 4.2): X_ij, how often word j occurs in the context of word i, over a symmetric window of
   ``window`` words on each side, a pair d words apart adding 1/d ("word pairs that are d words apart contribute
   1/d to the total count"). X is symmetric and very sparse: it is stored as three vectors (rows, cols, values).
2. **Fit** the weighted least-squares model (eq. 8)

       J = sum_{i,j: X_ij > 0} f(X_ij) (w_i^T w~_j + b_i + b~_j - log X_ij)^2

   with the weighting function (eq. 9)

       f(x) = (x / x_max)^alpha  if x < x_max,  else 1          (x_max = 100, alpha = 3/4)

   by AdaGrad (initial learning rate 0.05) over the non-zero entries in random order.
3. **Use** W + W~ as the word vectors (sec. 4.2: the two sets are equivalent up to initialisation, and their
   sum gives a small boost).

The model's ``forward(i, j, x)`` returns the batch mean of f(X)(...)^2, so :func:`shoulders.train.fit` trains it
with ``torch.optim.Adagrad``: with dense gradients, a word absent from the batch has a zero gradient, and
AdaGrad then leaves both its vector and its accumulator alone -- exactly the sparse updates of glove.c.
AdaGrad is invariant to the scale of the loss, so the mean (rather than the sum) changes nothing but eps.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import ClassVar

import torch
import torch.nn as nn

from ..config import Config, ConfigError
from .ids import check_ids
from .word2vec import WordCorpus

__all__ = ["CORPORA", "Cooccurrence", "GloVe", "GloVeBatches", "GloVeConfig", "GloVeSSTConfig", "cooccurrence",
           "glove_weight"]


@dataclasses.dataclass
class Cooccurrence:
    """A sparse co-occurrence matrix X (V, V): ``rows``, ``cols`` (nnz,) int64 and ``values`` (nnz,) float64,
    one entry per distinct (i, j), sorted by i * V + j."""

    rows: torch.Tensor  # (nnz,)
    cols: torch.Tensor  # (nnz,)
    values: torch.Tensor  # (nnz,)
    num_words: int

    def __len__(self) -> int:
        return self.values.numel()

    def to_dense(self) -> torch.Tensor:
        X = torch.zeros(self.num_words, self.num_words, dtype=self.values.dtype)
        X[self.rows, self.cols] = self.values
        return X


def cooccurrence(ids: torch.Tensor, window: int = 10, sentence: torch.Tensor | None = None,
                 num_words: int | None = None, symmetric: bool = True) -> Cooccurrence:
    """X from a stream of ids (N,): for every pair at distance d = 1..window on the same line (``sentence``
    (N,) line ids; ``None`` = one line), X[left, right] += 1/d and, if ``symmetric``, X[right, left] += 1/d.
    Vectorised: one pass of tensor ops per distance d, merged by sorting the keys i * V + j."""
    ids = torch.as_tensor(ids, dtype=torch.long).reshape(-1)
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    V = int(num_words if num_words is not None else int(ids.max()) + 1)
    keys, vals = torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.float64)
    for d in range(1, min(window, ids.numel() - 1) + 1):
        left, right = ids[:-d], ids[d:]
        if sentence is not None:
            same = sentence[:-d] == sentence[d:]
            left, right = left[same], right[same]
        k = left * V + right
        if symmetric:
            k = torch.cat([k, right * V + left])
        keys = torch.cat([keys, k])
        vals = torch.cat([vals, torch.full((k.numel(),), 1.0 / d, dtype=torch.float64)])
        keys, inverse = torch.unique(keys, sorted=True, return_inverse=True)  # merge after each distance
        vals = torch.zeros(keys.numel(), dtype=torch.float64).index_add_(0, inverse, vals)
    return Cooccurrence(keys // V, keys % V, vals, V)


def glove_weight(x: torch.Tensor, x_max: float = 100.0, alpha: float = 0.75) -> torch.Tensor:
    """f(x) = (x / x_max)^alpha below x_max, 1 above (eq. 9)."""
    return (x / x_max).pow(alpha).clamp(max=1.0)


class GloVe(nn.Module):
    """Word vectors ``W`` and context vectors ``W_tilde`` (V, d), biases ``b`` and ``b_tilde`` (V,), all
    initialised uniform in +-0.5/d as in glove.c."""

    def __init__(self, cfg: "GloVeConfig", num_words: int | None = None):
        super().__init__()
        self.cfg = cfg
        V, d = int(num_words or cfg.vocab_size), cfg.dim
        self.W = nn.Embedding(V, d)  # w_i
        self.W_tilde = nn.Embedding(V, d)  # w~_j
        self.b = nn.Embedding(V, 1)  # b_i
        self.b_tilde = nn.Embedding(V, 1)  # b~_j
        for p in self.parameters():
            nn.init.uniform_(p, -0.5 / d, 0.5 / d)

    def forward(self, i: torch.Tensor, j: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """1/B sum_b f(x_b) (w_i^T w~_j + b_i + b~_j - log x_b)^2 over a batch of entries i, j, x (B,) (eq. 8)."""
        V = self.W.num_embeddings
        check_ids(i, "i", V, dims=1)
        check_ids(j, "j", V, dims=1)
        if x.shape != i.shape or not bool((x > 0).all()):
            raise ValueError(f"x must hold one positive co-occurrence count per entry (shape {tuple(i.shape)}): log x "
                             f"is undefined for a count <= 0; got shape {tuple(x.shape)}")
        pred = (self.W(i) * self.W_tilde(j)).sum(-1) + self.b(i).squeeze(-1) + self.b_tilde(j).squeeze(-1)  # (B,)
        x = x.to(pred.dtype)
        diff = pred - x.log()
        return (glove_weight(x, self.cfg.x_max, self.cfg.alpha) * diff.square()).mean()

    def vectors(self) -> torch.Tensor:
        """W + W~ (V, d), the vectors the paper evaluates."""
        return (self.W.weight + self.W_tilde.weight).detach()

    def extra_repr(self) -> str:
        return f"dim={self.cfg.dim}, x_max={self.cfg.x_max}, alpha={self.cfg.alpha}"


class GloVeBatches:
    """The non-zero entries of X in a fresh random order each pass (``torch.randperm`` on the global RNG, which
    :func:`shoulders.train.fit` seeds per epoch, drawn when ``iter()`` is called: ``draws_at_iter``):
    batches ``(i, j, x)``, each (B,)."""

    draws_at_iter = True

    def __init__(self, cooc: Cooccurrence, batch_size: int = 4096):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.cooc, self.batch_size = cooc, int(batch_size)

    def __len__(self) -> int:
        return math.ceil(len(self.cooc) / self.batch_size)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        return self._batches(torch.randperm(len(self.cooc)))

    def _batches(self, order: torch.Tensor) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        c = self.cooc
        for s in range(0, len(c), self.batch_size):
            k = order[s: s + self.batch_size]
            yield c.rows[k], c.cols[k], c.values[k].float()


CORPORA = ("wikitext-2", "text8", "wikitext-2+sst", "text8+sst")  # the training texts a GloVeConfig names


@dataclasses.dataclass
class GloVeConfig(Config):
    """GloVe's settings (names as in glove.c where it has them)."""

    dim: int = 100  # -vector-size
    window: int = 10  # -window-size: words on each side
    x_max: float = 100.0  # -x-max
    alpha: float = 0.75  # -alpha
    lr: float = 0.05  # -eta, AdaGrad's initial rate
    epochs: int = 25  # -iter (paper: 50 below 300 dimensions, 100 otherwise)
    batch_size: int = 4096
    min_count: int = 5  # -min-count
    max_vocab: int | None = None
    corpus: str = "wikitext-2"  # or "text8"; "+sst" after either adds SST's training sentences (GloVeSSTConfig)
    train_tokens: int | None = None
    vocab_size: int = 28_000  # used only when the model is built without a corpus
    seed: int = 0

    presets: ClassVar = {
        "smoke": dict(dim=50, window=5, epochs=10, batch_size=16_384, min_count=3, train_tokens=200_000,
                      vocab_size=8_000),
        # WikiText-2: X has ~8M non-zero entries; the paper's 50 passes (below 300 dimensions), in batches of
        # 65,536, take ~5.5 minutes on one core (6.6 s a pass, chapter 5). Chapter 5 plots the scores against the
        # passes: 10 passes left GloVe well short of where 50 take it
        "cpu": dict(dim=100, window=10, epochs=50, batch_size=65_536, min_count=5, vocab_size=28_000),
        "full": dict(corpus="text8", dim=300, window=10, epochs=50, batch_size=262_144, min_count=5,
                     vocab_size=71_290),
    }

    def validate(self) -> None:
        if min(self.dim, self.window, self.epochs, self.batch_size, self.min_count) < 1 or self.vocab_size < 2:
            raise ConfigError("dim, window, epochs, batch_size, min_count must be >= 1 and vocab_size >= 2")
        if self.x_max <= 0 or not 0 < self.alpha <= 1 or self.lr <= 0:
            raise ConfigError(f"need x_max > 0, 0 < alpha <= 1, lr > 0; got {self.x_max}, {self.alpha}, {self.lr}")
        if self.corpus not in CORPORA:
            raise ConfigError(f"corpus must be one of {CORPORA}, got {self.corpus!r}")

    def build(self, num_words: int | None = None) -> GloVe:
        return GloVe(self, num_words)

    def example_batch(self, batch_size: int = 4) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(0)
        i = torch.randint(self.vocab_size, (batch_size,), generator=g)
        j = torch.randint(self.vocab_size, (batch_size,), generator=g)
        return i, j, torch.rand(batch_size, generator=g) * 200 + 0.5

    def step_batch(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A random batch with the exact shapes of one training step of this preset: ``batch_size`` non-zero
        entries ``(i, j, x)`` of X, as :class:`GloVeBatches` yields them, ids below ``vocab_size`` (text8's 71,290
        words at ``full``) and counts log-uniform between 1/window (one pair at the window's edge) and 10^4."""
        g = torch.Generator().manual_seed(0)
        B = self.batch_size
        i = torch.randint(self.vocab_size, (B,), generator=g)
        j = torch.randint(self.vocab_size, (B,), generator=g)
        low, high = math.log(1.0 / self.window), math.log(1e4)
        return i, j, (torch.rand(B, generator=g) * (high - low) + low).exp()

    def cooccurrence(self, corpus: WordCorpus) -> Cooccurrence:
        """X of a prepared corpus (:func:`shoulders.recipes.word_vectors.prepare`) with this config's window."""
        return cooccurrence(corpus.ids, self.window, corpus.sentence, len(corpus.vocab))

    def batches(self, cooc: Cooccurrence) -> GloVeBatches:
        return GloVeBatches(cooc, self.batch_size)


@dataclasses.dataclass
class GloVeSSTConfig(GloVeConfig):
    """Chapter 5's GloVe at every scale, trained on its corpus *plus* the Stanford Sentiment Treebank's 8,544
    training sentences (labels unused): the ``glove_sst`` giant, with which ``benchmarks/cove_levers.py --lever
    glove-sst`` asks whether CoVe needs GloVe to know a review's words. WikiText-2 lacks many of them (*bland*,
    *engrossing*, *n't*); CoVe's GloVe, of 840 billion words of web text, has them. SST's sentences come first, so
    the smoke preset's token cut keeps them."""

    corpus: str = "wikitext-2+sst"

    presets: ClassVar = {scale: {**p, "corpus": p.get("corpus", "wikitext-2") + "+sst"}
                         for scale, p in GloVeConfig.presets.items()}

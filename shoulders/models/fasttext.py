"""fastText: a bag-of-n-grams text classifier and subword word vectors.

(a) **Classifier** -- Joulin, Grave, Bojanowski & Mikolov 2017, "Bag of Tricks for Efficient Text
    Classification" (EACL). A sentence is the *average* of the embeddings of its words and of its hashed word
    bigrams ("bag of n-grams as additional features to capture some partial information about the local word
    order", sec. 2.2; the "hashing trick" maps them to ``buckets`` rows); a linear layer and a softmax give the
    class (sec. 2, eq. 1: minimise -1/N sum_n y_n log f(B A x_n)); with many classes, the hierarchical softmax
    over a Huffman tree of the label frequencies (sec. 2.1; :mod:`~shoulders.models.huffman_tree`).

(b) **Subword vectors** -- Bojanowski, Grave, Joulin & Mikolov 2017, "Enriching Word Vectors with Subword
    Information" (TACL). A word is the set G_w of its character n-grams, 3 <= n <= 6, of the word wrapped in
    ``<`` and ``>``, plus the word itself (sec. 3.2: "where" with n = 3 gives <wh, whe, her, ere, re> and the
    special sequence <where>). Its vector is built from the n-gram vectors z_g, and the skip-gram score is
    (eq. 3 sums; fastText's code averages, which is what is done here)

        s(w, c) = sum_{g in G_w} z_g^T v_c

    trained with negative sampling (eq. 2) -- the sampler of word2vec, reused. N-grams are hashed into
    ``buckets`` rows with FNV-1a (32 bit) as fastText does, so a word never seen in training still gets a
    vector: the average of its n-grams'.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError
from ..text.vocab import Vocab
from .huffman_tree import HierarchicalSoftmax, huffman_tree
from .ids import check_ids, check_labels
from .negative_sampling import NegativeSampler, NegativeSampling
from .sparse_rows import add_rows_
from .word2vec import Word2VecConfig, zipf_counts

__all__ = ["ClassificationBatches", "FastTextClassifier", "FastTextConfig", "SubwordConfig", "SubwordSkipGram",
           "Subwords", "bag_rows", "bigram_ids", "char_ngrams", "encode_texts", "fnv1a"]

BIGRAM_PRIME = 116_049_371  # fastText's multiplier for word n-gram hashes (Dictionary::addWordNgrams)
MASK64 = (1 << 64) - 1


# -- hashing ------------------------------------------------------------------------------------------------------
def fnv1a(text: str) -> int:
    """32-bit FNV-1a of the UTF-8 bytes, as fastText's ``Dictionary::hash`` computes it (each byte is
    sign-extended first: ``h ^= uint32_t(int8_t(c))``, which only matters for non-ASCII bytes)."""
    h = 2_166_136_261
    for byte in text.encode("utf-8"):
        h ^= (byte - 256 if byte > 127 else byte) & 0xFFFFFFFF
        h = (h * 16_777_619) & 0xFFFFFFFF
    return h


def char_ngrams(word: str, minn: int = 3, maxn: int = 6, include_word: bool = True) -> list[str]:
    """The character n-grams (minn <= n <= maxn) of ``<word>``, then the special sequence ``<word>`` itself
    (Bojanowski et al. sec. 3.2). ``char_ngrams("where", 3, 3) == ['<wh', 'whe', 'her', 'ere', 're>', '<where>']``.
    """
    if not 1 <= minn <= maxn:
        raise ValueError(f"need 1 <= minn <= maxn, got {minn}, {maxn}")
    w = f"<{word}>"
    grams = [w[i: i + n] for n in range(minn, maxn + 1) for i in range(len(w) - n + 1)]
    grams = [g for g in grams if g != w]  # the whole word is added once, below
    return grams + [w] if include_word else grams


def bigram_ids(tokens: Sequence[str], num_words: int, buckets: int) -> list[int]:
    """Rows of the hashed word bigrams of one text: ``num_words + h(a, b) % buckets`` with fastText's
    h(a, b) = (fnv1a(a) * 116049371 + fnv1a(b)) mod 2^64, for each adjacent pair (Joulin et al. sec. 2.2).
    The hash depends on the strings, so bigrams with words outside the vocabulary count too (as in fastText)."""
    if buckets < 1:
        raise ValueError(f"buckets must be >= 1, got {buckets}")
    hashes = [fnv1a(t) for t in tokens]
    return [num_words + ((a * BIGRAM_PRIME + b) & MASK64) % buckets for a, b in zip(hashes, hashes[1:])]


# -- (a) the classifier -------------------------------------------------------------------------------------------
def encode_texts(texts: Iterable[Sequence[str]], vocab: Vocab, buckets: int = 2_000_000,
                 word_ngrams: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    """Texts (lists of tokens) -> ``(ids (N,), offsets (B,))`` for ``nn.EmbeddingBag``: each text's known word
    ids, then (``word_ngrams=2``) its hashed bigram rows. Unknown words are dropped (fastText does the same)."""
    if word_ngrams not in (1, 2):
        raise ValueError(f"word_ngrams must be 1 or 2, got {word_ngrams}")
    stoi, V = vocab.stoi, len(vocab)
    flat: list[int] = []
    offsets: list[int] = []
    for toks in texts:
        offsets.append(len(flat))
        flat.extend(stoi[t] for t in toks if t in stoi)
        if word_ngrams == 2:
            flat.extend(bigram_ids(toks, V, buckets))
    return torch.tensor(flat, dtype=torch.long), torch.tensor(offsets, dtype=torch.long)


class FastTextClassifier(nn.Module):
    """A (V + buckets, d) table A averaged over a text's words and bigrams, then B (classes x d) and a softmax,
    or the hierarchical softmax of the label Huffman tree (``loss="hs"``)."""

    def __init__(self, cfg: "FastTextConfig", label_counts: Any | None = None):
        super().__init__()
        self.cfg = cfg
        rows = cfg.vocab_size + (cfg.buckets if cfg.word_ngrams > 1 else 0)
        self.A = nn.EmbeddingBag(rows, cfg.dim, mode="mean")  # (V + buckets, d)
        nn.init.uniform_(self.A.weight, -1.0 / cfg.dim, 1.0 / cfg.dim)  # fastText: uniform(-1/dim, 1/dim)
        if cfg.loss == "softmax":
            self.B = nn.Linear(cfg.dim, cfg.num_labels, bias=False)  # (classes, d)
            nn.init.zeros_(self.B.weight)
        else:
            counts = torch.ones(cfg.num_labels) if label_counts is None else torch.as_tensor(label_counts)
            self.B = HierarchicalSoftmax(huffman_tree(counts), cfg.dim)

    def hidden(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        """The texts' rows of A, averaged: ``ids`` (N,) all texts' words and n-gram buckets one after the other,
        ``offsets`` (B,) where each text starts -> (B, d)."""
        check_ids(ids, "ids", self.A.num_embeddings, dims=1, allow_empty=True)  # texts may be empty (all unknown)
        check_ids(offsets, "offsets", ids.numel() + 1, dims=1)  # where each text starts: 0 .. len(ids)
        return self.A(ids, offsets)  # (B, d): the average of the text's rows

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean negative log-likelihood of the labels (B,) of the texts given as ``(ids, offsets)``."""
        h = self.hidden(ids, offsets)
        check_labels(labels, "labels", self.cfg.num_labels)
        if isinstance(self.B, HierarchicalSoftmax):
            return self.B.loss(h, labels)
        return F.cross_entropy(self.B(h), labels)

    @torch.no_grad()
    def log_probs(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        """(B, classes) log-probabilities."""
        h = self.hidden(ids, offsets)
        return self.B.log_probs(h) if isinstance(self.B, HierarchicalSoftmax) else torch.log_softmax(self.B(h), -1)

    @torch.no_grad()
    def predict(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.log_probs(ids, offsets).argmax(-1)  # (B,)


@dataclasses.dataclass
class FastTextConfig(Config):
    """The supervised classifier (fastText ``supervised``: dim 10, lr 0.1, 5 epochs, bigrams in the paper)."""

    num_labels: int = 2
    dim: int = 10
    word_ngrams: int = 2  # 1: words only; 2: + hashed bigrams
    buckets: int = 2_000_000
    loss: str = "softmax"  # or "hs"
    lr: float = 0.1  # SGD, decayed linearly to 0 (fastText)
    epochs: int = 5
    batch_size: int = 32
    min_count: int = 1
    vocab_size: int = 20_000  # set from the data's vocabulary before build()
    seed: int = 0

    presets: ClassVar = {
        "smoke": dict(dim=10, buckets=100_000, epochs=2, vocab_size=5_000),
        "cpu": dict(dim=10, buckets=1_000_000, epochs=5, vocab_size=20_000),
        "full": dict(dim=10, buckets=2_000_000, epochs=5, vocab_size=100_000),
    }

    def validate(self) -> None:
        if min(self.num_labels, self.dim, self.buckets, self.epochs, self.batch_size, self.vocab_size) < 1:
            raise ConfigError("num_labels, dim, buckets, epochs, batch_size and vocab_size must be >= 1")
        if self.word_ngrams not in (1, 2):
            raise ConfigError(f"word_ngrams must be 1 or 2, got {self.word_ngrams}")
        if self.loss not in ("softmax", "hs"):
            raise ConfigError(f"loss must be 'softmax' or 'hs', got {self.loss!r}")
        if self.loss == "hs" and self.num_labels < 2:
            raise ConfigError("a hierarchical softmax needs at least 2 labels")

    def build(self, label_counts: Any | None = None) -> FastTextClassifier:
        return FastTextClassifier(self, label_counts)

    def example_batch(self, batch_size: int = 3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(0)
        rows = self.vocab_size + (self.buckets if self.word_ngrams > 1 else 0)
        ids = torch.randint(rows, (4 * batch_size,), generator=g)
        offsets = torch.arange(0, 4 * batch_size, 4)
        return ids, offsets, torch.randint(self.num_labels, (batch_size,), generator=g)

    def step_batch(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """A random batch with the exact shapes of one training step of this preset: ``batch_size`` texts of 9
        words (SST-2's 67,349 training phrases average 9.4 tokens), each with its 8 hashed bigram rows when
        ``word_ngrams=2``, as :class:`ClassificationBatches` yields them: ``(ids, offsets (B,), labels (B,))``;
        word ids below ``vocab_size``, bigram rows in ``vocab_size .. vocab_size + buckets - 1``."""
        g = torch.Generator().manual_seed(0)
        B, n = self.batch_size, 9
        words = torch.randint(self.vocab_size, (B, n), generator=g)
        if self.word_ngrams > 1:
            bigrams = self.vocab_size + torch.randint(self.buckets, (B, n - 1), generator=g)
            words = torch.cat([words, bigrams], 1)
        per_text = words.shape[1]
        return words.reshape(-1), torch.arange(0, B * per_text, per_text), torch.randint(self.num_labels, (B,),
                                                                                          generator=g)


class ClassificationBatches:
    """Shuffled minibatches ``(ids, offsets, labels)`` of encoded texts (re-iterable, for ``fit``).

    A pass's order is drawn when ``iter()`` is called (``draws_at_iter``: ``fit`` then keeps only that call in its
    data RNG lane, not every batch -- see :mod:`shoulders.train.stream`).
    """

    draws_at_iter = True

    def __init__(self, ids: torch.Tensor, offsets: torch.Tensor, labels: torch.Tensor, batch_size: int = 32,
                 shuffle: bool = True):
        self.ids, self.offsets, self.labels = ids, offsets, torch.as_tensor(labels, dtype=torch.long)
        self.ends = torch.cat([offsets[1:], torch.tensor([ids.numel()])])
        self.batch_size, self.shuffle = int(batch_size), bool(shuffle)

    def __len__(self) -> int:
        return math.ceil(self.labels.numel() / self.batch_size)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        n = self.labels.numel()
        return self._batches(torch.randperm(n) if self.shuffle else torch.arange(n))

    def _batches(self, order: torch.Tensor) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        for s in range(0, order.numel(), self.batch_size):
            k = order[s: s + self.batch_size]
            starts, lengths = self.offsets[k], self.ends[k] - self.offsets[k]
            offs = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
            idx = torch.repeat_interleave(starts - offs, lengths) + torch.arange(int(lengths.sum()))
            yield self.ids[idx], offs, self.labels[k]


# -- (b) subword vectors ------------------------------------------------------------------------------------------
def bag_rows(word_ids: torch.Tensor, flat: torch.Tensor, starts: torch.Tensor,
             lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, offsets)`` for ``nn.EmbeddingBag`` from a CSR table (``flat`` rows, ``starts`` and ``lengths``
    per word): the rows of every word of ``word_ids`` (B,), gathered without a Python loop."""
    n, first = lengths[word_ids], starts[word_ids]  # (B,)
    offsets = torch.cumsum(n, 0) - n  # (B,)
    idx = torch.repeat_interleave(first - offsets, n) + torch.arange(int(n.sum()), device=n.device)
    return flat[idx], offsets


class Subwords:
    """The rows of each vocabulary word in the input table: its own id, then ``V + fnv1a(g) % buckets`` for
    each character n-gram g (CSR: ``flat`` ids, ``starts`` and ``lengths`` per word)."""

    def __init__(self, words: Sequence[str], buckets: int = 2_000_000, minn: int = 3, maxn: int = 6):
        self.words, self.V, self.buckets, self.minn, self.maxn = list(words), len(words), int(buckets), minn, maxn
        self.index = {w: i for i, w in enumerate(self.words)}
        self._hash: dict[str, int] = {}
        lists = [[i] + self.ngram_rows(w) for i, w in enumerate(self.words)]
        self._hash.clear()
        self.lengths = torch.tensor([len(x) for x in lists], dtype=torch.long)  # (V,)
        self.starts = torch.cumsum(self.lengths, 0) - self.lengths  # (V,)
        self.flat = torch.tensor([r for x in lists for r in x], dtype=torch.long)  # (sum of lengths,)

    def ngram_rows(self, word: str) -> list[int]:
        """The hashed rows of the n-grams of ``<word>`` (without the word's own id). fastText leaves ``<word>``
        out of the n-grams when it is in the vocabulary (its id stands for it) but hashes it like any n-gram
        when ``minn <= len(<word>) <= maxn``; here that n-gram is always included when it fits."""
        grams = char_ngrams(word, self.minn, self.maxn, include_word=False)
        if self.minn <= len(word) + 2 <= self.maxn:
            grams.append(f"<{word}>")
        cache = self._hash
        out = []
        for g in grams:
            h = cache.get(g)
            if h is None:
                h = cache[g] = fnv1a(g)
            out.append(self.V + h % self.buckets)
        return out

    def rows(self, word: str) -> list[int]:
        """All input rows of ``word``: its id (when in the vocabulary) and its n-gram rows."""
        own = [self.index[word]] if word in self.index else []
        return own + self.ngram_rows(word)


class SubwordSkipGram(nn.Module):
    """Skip-gram whose centre-word vector is the mean of its rows in ``embed`` (V + buckets, d) -- its own and
    its n-grams' -- scored against the context words' output vectors by negative sampling."""

    def __init__(self, cfg: "SubwordConfig", words: Sequence[str] | None = None, counts: Any | None = None):
        super().__init__()
        self.cfg = cfg
        words = list(words) if words is not None else [f"w{i}" for i in range(cfg.vocab_size)]
        counts = zipf_counts(len(words)) if counts is None else torch.as_tensor(counts)
        self.subwords = Subwords(words, cfg.buckets, cfg.minn, cfg.maxn)
        # the CSR table as buffers, so it follows the model to its device
        self.register_buffer("bag_flat", self.subwords.flat, persistent=False)
        self.register_buffer("bag_starts", self.subwords.starts, persistent=False)
        self.register_buffer("bag_lengths", self.subwords.lengths, persistent=False)
        self.embed = nn.EmbeddingBag(len(words) + cfg.buckets, cfg.dim, mode="mean")  # z_g and the word rows
        nn.init.uniform_(self.embed.weight, -1.0 / cfg.dim, 1.0 / cfg.dim)
        self.out = NegativeSampling(NegativeSampler(counts), cfg.dim, cfg.negatives)  # v_c

    def bags(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(ids, offsets)`` of the rows of the words x (B,)."""
        return bag_rows(x, self.bag_flat, self.bag_starts, self.bag_lengths)

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        ids, offsets = self.bags(x)
        return self.embed(ids, offsets)  # (B, d)

    def _check(self, x: torch.Tensor, y: torch.Tensor) -> None:
        check_ids(x, "x", self.bag_lengths.numel(), dims=1)  # centre words (B,)
        check_labels(y, "y", self.bag_lengths.numel())  # context words (B,)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Mean negative-sampling loss of (centre x (B,), context y (B,)) pairs (eq. 2)."""
        self._check(x, y)
        return self.out.loss(self.hidden(x), y)

    @torch.no_grad()
    def sgd_step(self, x: torch.Tensor, y: torch.Tensor, mask: None = None, lr: float = 0.05,
                 **out_kwargs: Any) -> torch.Tensor:
        """Hand-written SGD with fastText's rule: every row of the centre's bag receives the whole dL/dh.

        The paper scores with the *sum* of the rows (Bojanowski et al. 2017, eq. 3: s(w, c) = sum_g z_g^T v_c), so
        each z_g's gradient is the full gradient of the score; fastText's code computes h as their mean (a
        1/|G_w| rescaling of the score) and still adds the undivided dL/dh to each row (``Model::update``: only the
        supervised model divides by the bag size). This is fastText's own update, not a departure from it.
        Giving each row its 1/|G_w| share instead -- the exact gradient of the mean -- would move a ~22-row bag's
        rows ~22 times less per step (chapter 6, exercise 6). ``mask`` is unused (the signature of
        :meth:`Word2Vec.sgd_step`, so word2vec's loop drives both)."""
        self._check(x, y)
        ids, offsets = self.bags(x)
        h = self.embed(ids, offsets)  # (B, d), the mean of each bag's rows
        loss, dh = self.out.sgd_step(h, y, lr, **out_kwargs)
        lengths = self.bag_lengths[x]  # (B,)
        add_rows_(self.embed.weight, ids, dh.repeat_interleave(lengths, 0), alpha=-lr)  # (sum |bag|, d)
        return loss

    @torch.no_grad()
    def word_vector(self, word: str) -> torch.Tensor:
        """The vector (d,) of any word, in the vocabulary or not: the mean of its rows."""
        rows = self.subwords.rows(word)
        return self.embed.weight[torch.tensor(rows, device=self.embed.weight.device)].mean(0)

    @torch.no_grad()
    def vectors(self) -> torch.Tensor:
        """The vectors (V, d) of the vocabulary words."""
        ids, offsets = self.bags(torch.arange(self.subwords.V, device=self.embed.weight.device))
        return self.embed(ids, offsets)


@dataclasses.dataclass
class SubwordConfig(Word2VecConfig):
    """Subword skip-gram (fastText ``skipgram``: dim 100, window 5, 5 negatives, n = 3..6, lr 0.05, t = 1e-4).

    Reuses word2vec's corpus, pairs, subsampling and lr decay; ``arch`` is always skip-gram with ``output="ns"``.
    """

    buckets: int = 2_000_000
    minn: int = 3
    maxn: int = 6
    lr: float = 0.05
    sample: float = 1e-4
    predict: str = "context"  # fastText's skipgram: the centre word's bag of rows predicts each context word

    presets: ClassVar = {
        "smoke": dict(dim=50, buckets=100_000, epochs=5, min_count=3, train_tokens=200_000, vocab_size=8_000),
        "cpu": dict(dim=100, buckets=200_000, epochs=5, vocab_size=28_000),
        # the paper: dim 300 and 2M buckets; fastText's defaults dim 100, and 500k buckets keep the table at 0.2 GB
        "full": dict(corpus="text8", dim=100, buckets=500_000, epochs=5, batch_words=1_000, vocab_size=71_290),
    }

    def validate(self) -> None:
        super().validate()
        if self.arch != "sg" or self.output != "ns":
            raise ConfigError("subword vectors are trained by skip-gram with negative sampling (arch='sg', "
                              "output='ns')")
        if not 1 <= self.minn <= self.maxn or self.buckets < 1:
            raise ConfigError(f"need 1 <= minn <= maxn and buckets >= 1, got {self.minn}, {self.maxn}, {self.buckets}")

    def build(self, words: Sequence[str] | None = None,  # type: ignore[override]
              counts: Any | None = None) -> SubwordSkipGram:
        """The model over ``words`` (the vocabulary's tokens, e.g. ``corpus.vocab.tokens``) with their
        ``counts``; without them ``vocab_size`` placeholder words with Zipf counts."""
        return SubwordSkipGram(self, words, counts)

"""Sentence encoders trained with labels (chapter 8): InferSent on SNLI, one encoder trained on NLI and
Quick-thoughts at once, and the Universal Sentence Encoder's two encoders under the same objectives.

* :class:`SupervisedEncodersConfig` -- the chapter's sizes, data and training, one preset per scale;
* :func:`glove_inputs` -- the word table every encoder starts from: chapter 5's ``glove`` giant (InferSent keeps
  its GloVe vectors fixed, Conneau et al. 2017 §3.3), with the padding and unknown rows of
  :data:`~shoulders.recipes.sentence_vectors.SENTENCE_SPECIALS`;
* :func:`nli_pairs` -- SNLI as ids: training pairs (part of *dev* below ``full``: the training split is not in the
  offline mirror; the canonical training split at ``full``) and the test pairs;
* :func:`build_encoder` -- ``"bilstm"`` (a BiLSTM with ``max`` / ``mean`` / ``last`` pooling, InferSent §3.2),
  ``"dan"`` (the deep averaging network) and ``"transformer"`` (chapter 12's blocks, USE §3.1), all on the GloVe
  table;
* :func:`train_multitask` -- :class:`~shoulders.models.multitask.MultiTaskEncoder` with any of the tasks ``"nli"``
  and ``"qt"`` (Quick-thoughts on WikiText-2's sentences) through one :func:`shoulders.train.fit`; ``("nli",)``
  is InferSent itself;
* :func:`nli_accuracy` -- the trained NLI classifier on SNLI test (InferSent's own measure, §4.1);
* :func:`encode_seconds` -- the encode time per sentence against the sentence length (USE's trade-off, §4).

Departures, said once: Adam at ``lr`` instead of the paper's SGD at 0.1 (with at most ten thousand pairs below
``full``, SGD at 0.1 barely moves in the epochs the budget allows), and the training pairs below ``full`` are
SNLI dev's, so the InferSent encoders here have seen about 2% of what the paper's did.
"""
from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import torch
from torch import nn

from ..config import Config, ConfigError
from ..data.tasks import snli
from ..models.multitask import MultiTaskEncoder, TaggedBatches
from ..models.sentence_encoders import POOLINGS, RecurrentSentenceEncoder
from ..models.universal_encoder import DeepAveragingNetwork, TransformerSentenceEncoder
from ..text.sentences import NeighbourBlocks, SentencePairBatches
from ..text.tokenize import simple_words
from ..text.vocab import Vocab
from ..train.history import History
from ..train.loop import fit
from .sentence_vectors import SENTENCE_SPECIALS, sentence_corpus

__all__ = ["ENCODERS", "NLIPairs", "SupervisedEncodersConfig", "build_encoder", "encode_seconds", "glove_inputs",
           "nli_accuracy", "nli_pairs", "qt_documents", "task_losses", "train_multitask"]

ENCODERS = ("bilstm", "dan", "transformer")


@dataclasses.dataclass
class SupervisedEncodersConfig(Config):
    """Chapter 8's encoders (InferSent: GloVe 300-d, BiLSTM 2 x 2,048, max pooling, MLP 512; USE's DAN and
    Transformer) and their training on SNLI and WikiText-2's sentences."""

    vocab_size: int = 20_000      # the GloVe giant's most frequent words kept (+ the specials)
    hidden: int = 2_048           # BiLSTM units per direction
    mlp: int = 512                # the NLI classifier's hidden layer
    max_len: int = 64             # words kept per sentence
    nli_source: str = "train"     # "dev" below full (its pairs; the test split scores)
    nli_train: int = 0            # training pairs drawn with ``seed`` (0: all of the source)
    epochs: int = 10              # passes over the NLI pairs (a multi-task epoch adds ``qt_every`` QT blocks per batch)
    batch_size: int = 64
    lr: float = 1e-3              # Adam
    clip: float = 5.0
    poolings: tuple[str, ...] = POOLINGS
    seeds: tuple[int, ...] = (0, 1, 2)   # the pooling comparison's seeds
    qt_docs: int = 0              # WikiText-2 train documents read by the Quick-thoughts objective (0: all)
    qt_block: int = 100           # consecutive sentences per Quick-thoughts block (each the others' candidates)
    qt_context: int = 1
    qt_every: int = 1             # Quick-thoughts blocks after each NLI batch
    dan_hidden: int = 512
    dan_layers: int = 3
    dan_buckets: int = 100_000    # hashed bigram rows
    tf_layers: int = 2
    tf_heads: int = 4
    tf_ff: int = 1_024
    speed_lengths: tuple[int, ...] = (8, 16, 32, 64, 128, 256)
    speed_batch: int = 64
    seed: int = 0

    # what chapter 8 asserts: InferSent's max pooling ahead of mean and last on SNLI test (mean over the seeds)
    page_presets: ClassVar = {
        "smoke": dict(max_pooling_wins=False),
        "cpu": dict(max_pooling_wins=True),
        "full": dict(max_pooling_wins=True),
    }
    presets: ClassVar = {
        # smoke: 2,000 dev pairs, 60 articles, tiny widths, one seed
        "smoke": dict(vocab_size=5_000, hidden=64, mlp=64, max_len=40, nli_source="dev", nli_train=2_000, epochs=3,
                      seeds=(0,), qt_docs=60, qt_block=50, dan_hidden=64, dan_layers=2, dan_buckets=20_000,
                      tf_layers=1, tf_heads=2, tf_ff=128, speed_lengths=(8, 32, 128), speed_batch=16),
        # cpu: all 9,842 dev pairs (the test split scores), widths of chapter 7's Quick-thoughts; three passes,
        # Quick-thoughts blocks of 50 and two seeds per pooling keep the page under 20 minutes on two threads (five
        # passes, blocks of 100, three seeds: 35.7 minutes; three passes, blocks of 50, three seeds: 20.0 minutes,
        # 2026-12-03); the speed curve runs to 1,024 words, where attention's quadratic term shows
        "cpu": dict(vocab_size=20_000, hidden=256, mlp=256, max_len=50, nli_source="dev", epochs=3, seeds=(0, 1),
                    qt_docs=0, qt_block=50, dan_hidden=256, dan_layers=3, tf_layers=2, tf_heads=4, tf_ff=400,
                    speed_lengths=(8, 16, 32, 64, 128, 256, 512, 1024), speed_batch=16),
        "full": dict(vocab_size=100_000),
    }

    def validate(self) -> None:
        if self.nli_source not in ("dev", "train"):
            raise ConfigError(f"nli_source must be 'dev' or 'train', got {self.nli_source!r}")
        unknown = sorted(set(self.poolings) - set(POOLINGS))
        if unknown or not self.poolings or not self.seeds:
            raise ConfigError(f"poolings must be some of {POOLINGS} and seeds not empty, got {self.poolings}, "
                              f"{self.seeds}")
        sizes = dict(vocab_size=self.vocab_size, hidden=self.hidden, mlp=self.mlp, max_len=self.max_len,
                     epochs=self.epochs, batch_size=self.batch_size, qt_block=self.qt_block - 1,
                     qt_context=self.qt_context, dan_hidden=self.dan_hidden, dan_layers=self.dan_layers,
                     dan_buckets=self.dan_buckets, tf_layers=self.tf_layers, tf_heads=self.tf_heads,
                     tf_ff=self.tf_ff, speed_batch=self.speed_batch)
        if any(v < 1 for v in sizes.values()) or min(self.nli_train, self.qt_docs, self.qt_every) < 0:
            raise ConfigError(f"sizes must be positive (qt_block at least 2; nli_train, qt_docs, qt_every >= 0), "
                              f"got {sizes}, nli_train={self.nli_train}, qt_docs={self.qt_docs}, "
                              f"qt_every={self.qt_every}")
        if self.lr <= 0 or self.clip <= 0 or not self.speed_lengths or min(self.speed_lengths) < 1:
            raise ConfigError("lr and clip must be positive and speed_lengths positive lengths")


def glove_inputs(vectors: torch.Tensor, words: Sequence[str], vocab_size: int) -> tuple[Vocab, torch.Tensor]:
    """The encoders' vocabulary and word table from a word-vector giant (``vectors`` ``(V, d)``, row i the vector
    of ``words[i]``, most frequent first): :data:`SENTENCE_SPECIALS` (zero rows; ``<pad>`` is id 0), then the
    first ``vocab_size`` words that are not specials. Returns ``(vocab, table (len(vocab), d))``."""
    if vectors.dim() != 2 or vectors.shape[0] != len(words):
        raise ValueError(f"vectors must be (V, d) with one row per word: {tuple(vectors.shape)}, {len(words)} words")
    rows = [i for i, w in enumerate(words) if w not in SENTENCE_SPECIALS][:vocab_size]
    vocab = Vocab(list(SENTENCE_SPECIALS) + [words[i] for i in rows], specials=SENTENCE_SPECIALS, unk="<unk>")
    table = torch.cat([torch.zeros(len(SENTENCE_SPECIALS), vectors.shape[1]), vectors[rows].float().cpu()])
    return vocab, table  # (V', d)


@dataclasses.dataclass
class NLIPairs:
    """SNLI pairs as ids: premises, hypotheses, labels."""

    a: list[list[int]]
    b: list[list[int]]
    labels: list[int]

    def batches(self, cfg: SupervisedEncodersConfig, vocab: Vocab, seed: int | None = None) -> SentencePairBatches:
        return SentencePairBatches(self.a, self.b, self.labels, cfg.batch_size, vocab["<pad>"], vocab.unk_id,
                                   cfg.max_len, seed)

    def __len__(self) -> int:
        return len(self.labels)


def nli_pairs(cfg: SupervisedEncodersConfig, vocab: Vocab) -> dict[str, NLIPairs]:
    """``{"train", "test"}``: the training pairs (``cfg.nli_train`` of ``cfg.nli_source``, drawn with
    ``cfg.seed``; 0: all) and SNLI test, lower-cased words (:func:`~shoulders.text.simple_words`) as ids."""

    def encode(split: tuple[list[str], list[str], list[int]], keep: Sequence[int] | None = None) -> NLIPairs:
        a, b, y = split
        keep = range(len(y)) if keep is None else keep
        return NLIPairs([vocab.encode(simple_words(a[i])) for i in keep],
                        [vocab.encode(simple_words(b[i])) for i in keep], [y[i] for i in keep])

    source = snli(cfg.nli_source)
    order = list(range(len(source[2])))
    random.Random(cfg.seed).shuffle(order)
    return {"train": encode(source, order[: cfg.nli_train] if cfg.nli_train else order),
            "test": encode(snli("test"))}


def build_encoder(kind: str, cfg: SupervisedEncodersConfig, table: torch.Tensor, pooling: str = "max") -> nn.Module:
    """One of :data:`ENCODERS` on the word ``table`` ``(V, d)``: the BiLSTM reads it frozen (InferSent); the DAN
    and the Transformer start from it and train it, as USE learns its own (the Transformer's rows divided by
    sqrt(d), which its input multiplies back). Every one is ``forward(ids (B, T)) -> (B, dim)``."""
    V, d = table.shape
    if kind == "bilstm":
        embed = nn.Embedding.from_pretrained(table.clone(), freeze=True, padding_idx=0)
        return RecurrentSentenceEncoder(V, d, cfg.hidden, "lstm", True, pooling, 0, embed=embed)
    if kind == "dan":
        dan = DeepAveragingNetwork(V, d, cfg.dan_hidden, 2 * cfg.hidden, cfg.dan_layers, cfg.dan_buckets, 0)
        with torch.no_grad():
            dan.embed.weight[:V] = table
        return dan
    if kind == "transformer":
        tf = TransformerSentenceEncoder(V, d, cfg.tf_heads, cfg.tf_ff, cfg.tf_layers, max(cfg.max_len,
                                        max(cfg.speed_lengths)), 0)
        with torch.no_grad():
            tf.embed.weight.copy_(table / math.sqrt(d))
        return tf
    raise ValueError(f"encoder must be one of {ENCODERS}, got {kind!r}")


def train_multitask(encoder: nn.Module, tasks: Sequence[str], cfg: SupervisedEncodersConfig, vocab: Vocab,
                    pairs: NLIPairs | None = None, docs: Sequence[Sequence[Sequence[int]]] | None = None,
                    context_encoder: nn.Module | None = None, seed: int = 0, device: Any = None,
                    progress: bool = True, **fit_kwargs: Any) -> tuple[MultiTaskEncoder, History, float]:
    """Train ``encoder`` on ``tasks`` (``"nli"``: ``pairs``; ``"qt"``: Quick-thoughts blocks of ``docs``, read by
    ``context_encoder`` as g -- build it as the encoder, :func:`build_encoder`) for ``cfg.epochs`` passes over
    the first task -- Quick-thoughts alone, given ``pairs``, reads as many blocks as the mixture with them would,
    so that "either half" sees the same text as the whole; Adam at ``cfg.lr`` over the trainable parameters.
    Returns the model (eval mode, on the CPU), the history and the seconds it took."""
    tasks = tuple(tasks)
    batches: dict[str, Any] = {}
    if "nli" in tasks:
        if pairs is None:
            raise ValueError("the NLI task needs its pairs")
        batches["nli"] = pairs.batches(cfg, vocab)
    if "qt" in tasks:
        if docs is None or context_encoder is None:
            raise ValueError("the Quick-thoughts task needs documents of sentences and a context encoder")
        batches["qt"] = NeighbourBlocks(docs, cfg.qt_block, vocab["<pad>"], cfg.max_len, cfg.qt_context)
    model = MultiTaskEncoder(encoder, tasks, nli_hidden=cfg.mlp,
                             context_encoder=context_encoder if "qt" in tasks else None)
    tagged = TaggedBatches({t: batches[t] for t in tasks}, every={"qt": cfg.qt_every})
    steps = cfg.epochs * len(tagged)
    if tasks == ("qt",) and pairs is not None:  # the blocks a mixture with the NLI pairs would read, no more
        steps = cfg.epochs * len(pairs.batches(cfg, vocab)) * cfg.qt_every
    params = [p for p in model.parameters() if p.requires_grad]
    t0 = time.perf_counter()
    history = fit(model, tagged, torch.optim.Adam(params, lr=cfg.lr), steps=steps,
                  clip=cfg.clip, seed=seed, device=device, progress=progress, **fit_kwargs)
    return model.cpu().eval(), history, time.perf_counter() - t0


def task_losses(history: History, tasks: Sequence[str], cfg: SupervisedEncodersConfig) -> dict[str, Any]:
    """The logged losses of a :func:`train_multitask` run, one series per task (``{task: (steps, losses)}``): the
    mixture's steps interleave the tasks as :class:`~shoulders.models.multitask.TaggedBatches` does (one NLI batch,
    then ``cfg.qt_every`` Quick-thoughts blocks), and their losses live on different scales."""
    steps, losses = history.series("loss")
    tasks = tuple(tasks)
    if len(tasks) == 1:
        return {tasks[0]: (steps, losses)}
    period = 1 + cfg.qt_every
    is_first = (steps - steps[0]) % period == 0
    return {tasks[0]: (steps[is_first], losses[is_first]), tasks[1]: (steps[~is_first], losses[~is_first])}


@torch.no_grad()
def nli_accuracy(model: MultiTaskEncoder, pairs: NLIPairs, cfg: SupervisedEncodersConfig, vocab: Vocab) -> float:
    """Accuracy (%) of the model's own NLI classifier on ``pairs`` (InferSent's SNLI test score, §4.1)."""
    model.eval()
    dev = next(model.parameters()).device
    correct = 0
    for a, b, y in pairs.batches(cfg, vocab, seed=0):
        correct += int((model.nli.logits(a.to(dev), b.to(dev)).argmax(-1).cpu() == y).sum())
    return 100.0 * correct / len(pairs)


@torch.no_grad()
def encode_seconds(encoder: nn.Module, vocab_size: int, lengths: Sequence[int], batch: int, repeats: int = 3,
                   seed: int = 0) -> dict[int, float]:
    """Seconds per sentence to encode ``batch`` random sentences of each length (the minimum of ``repeats``
    timings, after one warm-up call), eval mode: ``{length: seconds}``."""
    encoder.eval()
    g = torch.Generator().manual_seed(seed)
    out = {}
    for n in lengths:
        ids = torch.randint(len(SENTENCE_SPECIALS), vocab_size, (batch, n), generator=g)
        encoder(ids)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            encoder(ids)
            times.append(time.perf_counter() - t0)
        out[int(n)] = min(times) / batch
    return out


def qt_documents(cfg: SupervisedEncodersConfig, vocab: Vocab) -> list[list[list[int]]]:
    """WikiText-2 train's documents of sentences (the first ``cfg.qt_docs``; 0: all) as ids over ``vocab``: the
    Quick-thoughts objective's text."""
    return sentence_corpus(len(vocab), max_docs=cfg.qt_docs, vocab=vocab).docs

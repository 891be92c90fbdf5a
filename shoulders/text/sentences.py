"""Running text as documents of sentences, and the neighbour batches the context-based sentence encoders of chapter 7
learn from (Skip-thoughts: a sentence and its two neighbours, Kiros et al. 2015; Quick-thoughts: blocks of
consecutive sentences whose neighbours are the targets, Logeswaran & Lee 2018).

Both papers read BookCorpus (novels, ~74M sentences), which is not distributed any more. The book uses
WikiText-2's articles (Merity et al. 2017): :func:`wikitext_documents` cuts each article at its headings
(``= Title =`` lines) and each paragraph into sentences at the end-of-sentence tokens ``.``, ``?`` and ``!``
(WikiText is tokenised: a sentence-final point is its own token, the point of ``U.S.`` or ``1 @.@ 5`` is not).
Neighbours never cross a document.
"""
from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

import torch

from .pad import pad_sequences

__all__ = ["END_OF_SENTENCE", "NeighbourBlocks", "NeighbourTriples", "SentencePairBatches", "split_sentences",
           "wikitext_documents"]

END_OF_SENTENCE = frozenset({".", "?", "!"})


def split_sentences(tokens: Sequence[str], min_len: int = 1) -> list[list[str]]:
    """Cut a run of tokens after each end-of-sentence token; a trailing piece without one is a sentence too.
    Sentences shorter than ``min_len`` tokens are dropped."""
    out, cur = [], []
    for t in tokens:
        cur.append(t)
        if t in END_OF_SENTENCE:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return [s for s in out if len(s) >= min_len]


def wikitext_documents(lines: Sequence[Sequence[str]], min_len: int = 3) -> list[list[list[str]]]:
    """WikiText lines (bare tokens, ``eos=None``) -> documents -> sentences -> tokens. A heading line (``= ... =``,
    at any level) ends the document before it and is not a sentence; sentences shorter than ``min_len`` tokens
    are dropped, and so are documents left with fewer than two sentences (they have no neighbours)."""
    docs: list[list[list[str]]] = []
    cur: list[list[str]] = []
    for line in lines:
        if not line:
            continue
        if len(line) >= 3 and line[0] == line[-1] and set(line[0]) == {"="}:
            if len(cur) >= 2:
                docs.append(cur)
            cur = []
            continue
        cur.extend(split_sentences(line, min_len))
    if len(cur) >= 2:
        docs.append(cur)
    return docs


def _shuffled(items: list, seed: int | None) -> list:
    """``items`` shuffled by ``random.Random(seed)``, or by the global ``random`` when ``seed`` is None (the lane
    :func:`shoulders.train.fit` seeds per epoch)."""
    items = list(items)
    (random.Random(seed) if seed is not None else random).shuffle(items)
    return items


class NeighbourTriples:
    """Skip-thoughts batches, one epoch per ``iter()``: every sentence with a sentence before and after it in its
    document, in shuffled order, as ``(current (B, T), previous (B, T'), next (B, T''))`` -- the current sentence
    as ids (at most ``max_len``), each neighbour as ``<s> ids </s>`` (the decoder reads all but the last and
    predicts all but the first). ``docs``: documents of sentences of token ids. ``seed`` fixes the order of every
    epoch; None draws it from the global ``random`` (seeded per epoch by :func:`shoulders.train.fit`)."""

    draws_at_iter = True  # the epoch's order is drawn when iter() is called (shoulders.train.stream)

    def __init__(self, docs: Sequence[Sequence[Sequence[int]]], batch_size: int, pad_id: int, bos_id: int,
                 eos_id: int, max_len: int, seed: int | None = None):
        self.triples = [(d, i) for d, doc in enumerate(docs) for i in range(1, len(doc) - 1)]
        if not self.triples:
            raise ValueError("no sentence has a neighbour on both sides: documents need at least three sentences")
        self.docs, self.batch_size, self.max_len, self.seed = docs, int(batch_size), int(max_len), seed
        self.pad_id, self.bos_id, self.eos_id = pad_id, bos_id, eos_id

    def __len__(self) -> int:
        return -(-len(self.triples) // self.batch_size)

    def _framed(self, s: Sequence[int]) -> list[int]:
        return [self.bos_id, *s[: self.max_len], self.eos_id]

    def __iter__(self) -> Iterator[tuple[torch.Tensor, ...]]:
        order = _shuffled(self.triples, self.seed)
        return (self._batch(order[b: b + self.batch_size]) for b in range(0, len(order), self.batch_size))

    def _batch(self, chunk: list[tuple[int, int]]) -> tuple[torch.Tensor, ...]:
        docs = self.docs
        cur, _ = pad_sequences([docs[d][i][: self.max_len] for d, i in chunk], self.pad_id)
        prev, _ = pad_sequences([self._framed(docs[d][i - 1]) for d, i in chunk], self.pad_id)
        nxt, _ = pad_sequences([self._framed(docs[d][i + 1]) for d, i in chunk], self.pad_id)
        return cur, prev, nxt


class NeighbourBlocks:
    """Quick-thoughts batches, one epoch per ``iter()``: the documents in shuffled order, read as one stream of
    sentences cut into blocks of ``batch_size`` consecutive sentences, each block ``(ids (B, T), positive (B, B))``
    -- ``positive[i, j]`` is True when sentence j lies within ``context`` sentences of sentence i in the same
    document (j != i): the targets among the block's candidates. ``seed`` as :class:`NeighbourTriples`."""

    draws_at_iter = True

    def __init__(self, docs: Sequence[Sequence[Sequence[int]]], batch_size: int, pad_id: int, max_len: int,
                 context: int = 1, seed: int | None = None):
        if context < 1 or batch_size < 2:
            raise ValueError(f"need context >= 1 and batch_size >= 2, got {context}, {batch_size}")
        self.docs, self.batch_size, self.pad_id, self.max_len = docs, int(batch_size), pad_id, int(max_len)
        self.context, self.seed = int(context), seed
        self.sentences = sum(len(d) for d in docs)
        if self.sentences < 2:
            raise ValueError("Quick-thoughts needs at least two sentences")

    def __len__(self) -> int:
        return -(-self.sentences // self.batch_size) - (self.sentences % self.batch_size == 1)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        order = _shuffled(range(len(self.docs)), self.seed)
        stream = [(d, i) for d in order for i in range(len(self.docs[d]))]
        return (self._block(stream[b: b + self.batch_size]) for b in range(0, len(stream), self.batch_size)
                if len(stream) - b >= 2)

    def _block(self, chunk: list[tuple[int, int]]) -> tuple[torch.Tensor, torch.Tensor]:
        ids, _ = pad_sequences([self.docs[d][i][: self.max_len] for d, i in chunk], self.pad_id)
        doc = torch.tensor([d for d, _ in chunk])
        pos = torch.tensor([i for _, i in chunk])
        gap = (pos[:, None] - pos[None, :]).abs()  # (B, B)
        return ids, (doc[:, None] == doc[None, :]) & (gap >= 1) & (gap <= self.context)


class SentencePairBatches:
    """Labelled sentence pairs (SNLI's premise and hypothesis, chapter 8), one epoch per ``iter()``, in shuffled
    order: ``(a (B, T), b (B, T'), labels (B,))``, each side padded with ``pad_id`` to its longest sentence (at
    most ``max_len`` ids kept; an empty sentence is one ``unk_id``). ``seed`` as :class:`NeighbourTriples`."""

    def __init__(self, a: Sequence[Sequence[int]], b: Sequence[Sequence[int]], labels: Sequence[int],
                 batch_size: int, pad_id: int, unk_id: int, max_len: int, seed: int | None = None):
        if not len(a) == len(b) == len(labels) or not len(a):
            raise ValueError(f"need as many first sentences, second sentences and labels, at least one: got "
                             f"{len(a)}, {len(b)} and {len(labels)}")
        if batch_size < 1 or max_len < 1:
            raise ValueError(f"batch_size and max_len must be positive, got {batch_size} and {max_len}")
        keep = lambda s: list(s[:max_len]) or [unk_id]  # noqa: E731
        self.a, self.b = [keep(s) for s in a], [keep(s) for s in b]
        self.labels = torch.as_tensor(list(labels), dtype=torch.long)
        self.batch_size, self.pad_id, self.seed = int(batch_size), int(pad_id), seed

    def __len__(self) -> int:
        return -(-len(self.a) // self.batch_size)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        order = _shuffled(range(len(self.a)), self.seed)
        for s in range(0, len(order), self.batch_size):
            rows = order[s: s + self.batch_size]
            yield (pad_sequences([self.a[i] for i in rows], self.pad_id)[0],
                   pad_sequences([self.b[i] for i in rows], self.pad_id)[0], self.labels[rows])

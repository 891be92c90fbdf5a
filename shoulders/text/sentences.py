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

__all__ = ["END_OF_SENTENCE", "neighbour_blocks", "neighbour_triples", "split_sentences", "wikitext_documents"]

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


def neighbour_triples(docs: Sequence[Sequence[Sequence[int]]], batch_size: int, pad_id: int, bos_id: int,
                      eos_id: int, max_len: int, seed: int = 0) -> Iterator[tuple[torch.Tensor, ...]]:
    """One epoch of Skip-thoughts batches, shuffled with ``seed``: every sentence with a sentence before and after
    it in its document, as ``(current (B, T), previous (B, T'), next (B, T''))`` -- the current sentence as ids
    (at most ``max_len``), each neighbour as ``<s> ids </s>`` (the decoder reads all but the last, predicts all but
    the first). ``docs``: documents of sentences of token ids."""
    triples = [(d, i) for d, doc in enumerate(docs) for i in range(1, len(doc) - 1)]
    if not triples:
        raise ValueError("no sentence has a neighbour on both sides: documents need at least three sentences")
    random.Random(seed).shuffle(triples)

    def framed(s: Sequence[int]) -> list[int]:
        return [bos_id, *s[: max_len], eos_id]

    for b in range(0, len(triples), batch_size):
        chunk = triples[b: b + batch_size]
        cur, _ = pad_sequences([docs[d][i][: max_len] for d, i in chunk], pad_id)
        prev, _ = pad_sequences([framed(docs[d][i - 1]) for d, i in chunk], pad_id)
        nxt, _ = pad_sequences([framed(docs[d][i + 1]) for d, i in chunk], pad_id)
        yield cur, prev, nxt


def neighbour_blocks(docs: Sequence[Sequence[Sequence[int]]], batch_size: int, pad_id: int, max_len: int,
                     context: int = 1, seed: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """One epoch of Quick-thoughts batches: the documents in an order shuffled with ``seed``, read as one stream
    of sentences cut into blocks of ``batch_size`` consecutive sentences, each block
    ``(ids (B, T), positive (B, B))`` -- ``positive[i, j]`` is True when sentence j lies within ``context``
    sentences of sentence i in the same document (j != i): the targets among the block's candidates."""
    if context < 1 or batch_size < 2:
        raise ValueError(f"need context >= 1 and batch_size >= 2, got {context}, {batch_size}")
    order = list(range(len(docs)))
    random.Random(seed).shuffle(order)
    stream = [(d, i) for d in order for i in range(len(docs[d]))]
    for b in range(0, len(stream) - 1, batch_size):
        chunk = stream[b: b + batch_size]
        if len(chunk) < 2:
            break
        ids, _ = pad_sequences([docs[d][i][: max_len] for d, i in chunk], pad_id)
        doc = torch.tensor([d for d, _ in chunk])
        pos = torch.tensor([i for _, i in chunk])
        gap = (pos[:, None] - pos[None, :]).abs()  # (B, B)
        positive = (doc[:, None] == doc[None, :]) & (gap >= 1) & (gap <= context)
        yield ids, positive

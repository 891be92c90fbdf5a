"""Next-sentence-prediction pairs from contiguous text (Devlin et al. 2019, §3.1 "Task #2", Appendix A.1).

BERT's pre-training input is ``[CLS] A [SEP] B [SEP]``: A is a run of contiguous sentences of a document; half
the time B is the text that really follows A (``IsNext``, label 0), half the time it is taken from another
document (``NotNext``, label 1). Both are *spans of sentences*, not single sentences: A and B together fill the
sequence up to ``max_len`` (the paper: "combined length <= 512 tokens"), and 10% of the time a shorter target
length is drawn so the model also sees short inputs (the reference implementation's ``short_seq_prob``).

:func:`nsp_pairs` draws the pairs from documents of sentences -- e.g. WikiText-2's articles,
:func:`shoulders.data.wikitext_documents`. All randomness comes from Python's ``random`` module (or the ``rng``
passed), so ``shoulders.train.fit``'s per-epoch data RNG makes each epoch's pairs reproducible and different.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["IS_NEXT", "NOT_NEXT", "NSPPair", "nsp_pairs"]

IS_NEXT, NOT_NEXT = 0, 1  # the label order of the reference implementation (and Hugging Face's)


@dataclass(frozen=True)
class NSPPair:
    """One pre-training example before masking: token ids of A and B, and the NSP label (0 IsNext, 1 NotNext)."""

    a: list[int]
    b: list[int]
    label: int


def nsp_pairs(documents: Sequence[Sequence[Sequence[int]]], max_len: int, short_seq_prob: float = 0.1,
              rng: random.Random | None = None, encode: Callable[[str], list[int]] | None = None) -> list[NSPPair]:
    """Every document cut into consecutive chunks of sentences, each chunk one A/B pair (Appendix A.1).

    Args:
        documents: documents of sentences, each sentence a list of token ids (or strings, with ``encode``).
        max_len: the packed length ``[CLS] A [SEP] B [SEP]``; A + B get ``max_len - 3`` tokens.
        short_seq_prob: how often a chunk aims at a random shorter length (2 .. max_len - 3).
        rng: the random source (default: the global ``random`` module, which ``fit`` seeds per epoch).

    For each chunk: sentences are gathered until they reach the target length; A is the first ``k`` of them
    (``k`` uniform); with probability 1/2 B is the rest of the chunk (IsNext), else B is a random run of
    sentences from another document (NotNext) and the chunk's unused sentences go back to be read again. The
    reference implementation also makes every single-sentence chunk NotNext, which tilts the labels (52% NotNext
    on WikiText-2); here such a chunk is cut inside its sentence for IsNext, so the labels are a fair coin.
    Pairs longer than the budget are cut later by :func:`shoulders.text.bert_inputs.pack` (the longer side
    loses tokens from its end).
    """
    if max_len < 5:
        raise ValueError(f"max_len must leave room for [CLS] A [SEP] B [SEP], got {max_len}")
    if len(documents) < 2:
        raise ValueError("NotNext pairs need at least two documents")
    r = rng if rng is not None else random
    docs = [[encode(s) if encode is not None else list(s) for s in d] for d in documents]
    budget = max_len - 3
    pairs: list[NSPPair] = []
    for d, doc in enumerate(docs):
        target = r.randint(2, budget) if r.random() < short_seq_prob else budget
        chunk: list[list[int]] = []
        length, i = 0, 0
        while i < len(doc):
            chunk.append(doc[i])
            length += len(doc[i])
            if i == len(doc) - 1 or length >= target:
                if r.random() < 0.5:
                    if len(chunk) == 1:  # one long sentence: A and B are its two halves, B still follows A
                        cut = r.randint(1, max(len(chunk[0]) - 1, 1))
                        a, b = chunk[0][:cut], chunk[0][cut:]
                    else:
                        k = r.randint(1, len(chunk) - 1)
                        a, b = [t for s in chunk[:k] for t in s], [t for s in chunk[k:] for t in s]
                    label = IS_NEXT
                else:
                    k = r.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
                    a = [t for s in chunk[:k] for t in s]
                    b = _random_span(docs, d, target - len(a), r)
                    label = NOT_NEXT
                    i -= len(chunk) - k  # the unused sentences of the chunk are read again
                if a and b:
                    pairs.append(NSPPair(a, b, label))
                chunk, length = [], 0
                target = r.randint(2, budget) if r.random() < short_seq_prob else budget
            i += 1
    return pairs


def _random_span(docs: list[list[list[int]]], avoid: int, want: int, r: random.Random) -> list[int]:
    """At least ``max(want, 1)`` tokens of consecutive sentences from a random document other than ``avoid``."""
    other = r.randrange(len(docs) - 1)
    other += other >= avoid  # uniform over the other documents
    doc = docs[other]
    out: list[int] = []
    for s in doc[r.randrange(len(doc)):]:
        out.extend(s)
        if len(out) >= max(want, 1):
            break
    return out

"""GPT's input transformations (Radford et al. 2018, §3.3 and Figure 1): every task becomes token sequences that a
left-to-right language model reads, so the pre-trained network needs no new architecture, only a linear layer.

    classification:   <start> text <extract>                                       -> linear on h(<extract>)
    entailment:       <start> premise <delim> hypothesis <extract>                 -> linear on h(<extract>)
    multiple choice:  <start> context <delim> answer_k <extract>, one per answer k -> linear, softmax over the k

The start, delimiter and extract tokens are "randomly initialized start and end tokens" that pre-training never
shows: here they are special entries of the byte-level BPE vocabulary (:mod:`shoulders.text.bpe`, the form
``<|name|>``), present from the start but never in the pre-training text, so their embeddings are as untrained as
the paper's newly added ones. The classifier reads the last token's state: the ``pooled`` vector of
:class:`shoulders.models.gpt.GPTModel` with right padding.

Text is encoded as the book's GPT read WikiText-2 in pre-training: words separated by single spaces, with a space
in front of the first one (:func:`lm_text`), so a sentence's first word has the same pieces as anywhere in a line.
Features are the dicts of :func:`shoulders.text.bert_inputs.collate` (``input_ids``, ``token_type_ids`` -- all zero:
GPT has no segments -- and ``labels``), so every head and the fine-tuning recipe of chapter 14 take them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .bert_inputs import truncate_pair
from .task_features import COPA_CONNECTIVES

__all__ = ["DELIM", "EXTRACT", "SPECIALS", "START", "choice_features", "classification_features", "copa_texts",
           "lm_text", "transform"]

START, DELIM, EXTRACT = "<|start|>", "<|delim|>", "<|extract|>"
SPECIALS = ("<|endoftext|>", START, DELIM, EXTRACT)  # <|endoftext|> separates documents (GPT-2) and pads


def lm_text(words: Sequence[str]) -> str:
    """Words as the LM reads them: ``" w1 w2 ... wn"`` (a leading space, single spaces between)."""
    return "".join(f" {w}" for w in words)


def transform(tok: Any, a: Sequence[int], b: Sequence[int] | None, max_len: int) -> list[int]:
    """``<start> a <extract>`` or ``<start> a <delim> b <extract>`` (ids), the longer text cut to fit ``max_len``."""
    specials = 2 if b is None else 3
    a, b = truncate_pair(list(a), None if b is None else list(b), max_len - specials)
    start, delim, extract = (tok.token_to_id(t) for t in (START, DELIM, EXTRACT))
    return [start, *a, extract] if b is None else [start, *a, delim, *b, extract]


def _feature(ids: list[int]) -> dict[str, Any]:
    return {"input_ids": ids, "token_type_ids": [0] * len(ids)}


def classification_features(tok: Any, texts_a: Sequence[str], texts_b: Sequence[str] | None,
                            labels: Sequence[int] | None, max_len: int) -> list[dict[str, Any]]:
    """One transformed sequence per example (a single text, or an entailment pair); ``labels=None`` leaves them out.

    ``texts_a`` / ``texts_b`` are already in the LM's form (:func:`lm_text`).
    """
    if texts_b is not None and len(texts_b) != len(texts_a):
        raise ValueError(f"{len(texts_a)} first texts but {len(texts_b)} second texts")
    if labels is not None and len(labels) != len(texts_a):
        raise ValueError(f"{len(texts_a)} texts but {len(labels)} labels")
    out = []
    for i, a in enumerate(texts_a):
        feature = _feature(transform(tok, tok.encode(a), None if texts_b is None else tok.encode(texts_b[i]),
                                     max_len))
        if labels is not None:
            feature["labels"] = int(labels[i])
        out.append(feature)
    return out


def choice_features(tok: Any, contexts: Sequence[str], answers: Sequence[Sequence[str]],
                    labels: Sequence[int] | None, max_len: int) -> list[dict[str, Any]]:
    """Multiple choice: ``<start> context <delim> answer <extract>`` for each answer of each example
    (``{"choices": [...], "labels"}``, what :class:`shoulders.heads.MultipleChoice` and ``collate`` take)."""
    if len(answers) != len(contexts) or (labels is not None and len(labels) != len(contexts)):
        raise ValueError(f"{len(contexts)} contexts, {len(answers)} answer lists, "
                         f"{'no' if labels is None else len(labels)} labels: they must match")
    out = []
    for i, context in enumerate(contexts):
        c = tok.encode(context)
        feature: dict[str, Any] = {"choices": [_feature(transform(tok, c, tok.encode(ans), max_len))
                                               for ans in answers[i]]}
        if labels is not None:
            feature["labels"] = int(labels[i])
        out.append(feature)
    return out


def copa_texts(items: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]], list[int]]:
    """Balanced COPA items as (contexts, answers, labels) for :func:`choice_features` and zero-shot scoring.

    The premise, without its final full stop, is the context; each alternative continues it after a connective,
    ``because`` when the item asks for the cause and ``so`` for the effect (ours, as in chapter 14's COPA
    features), with a lower-case first letter and its full stop cut off WikiText's way (`` .``): "The man broke
    his toe | because he dropped a hammer on his foot ." -- one sentence, as the LM read sentences.
    """
    contexts, answers, labels = [], [], []
    for item in items:
        connective = COPA_CONNECTIVES[item["question"]]
        contexts.append(" " + item["premise"].rstrip().rstrip("."))
        answers.append([f" {connective} {alt[0].lower()}{alt[1:].rstrip().rstrip('.')} ."
                        for alt in (item["choice1"], item["choice2"])])
        labels.append(int(item["label"]))
    return contexts, answers, labels

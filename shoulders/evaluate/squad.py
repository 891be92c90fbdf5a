"""Reading comprehension: SQuAD v1.1 exact match and F1 (chapter 14, the span head).

Rajpurkar, Zhang, Lopyrev & Liang (2016, sec. 6.1) score a predicted answer string against each human answer after
normalising both (lower case; punctuation and the articles a/an/the removed; whitespace collapsed): exact match
(EM) is 1 when the normalised strings are equal; F1 treats each as a bag of tokens. A question takes its best
score over its references, and the corpus score is the mean over questions in percent -- the rules of the official
v1.1 evaluation script, reproduced here line for line.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from typing import Sequence

__all__ = ["squad_em_f1", "squad_normalize"]

_SQUAD_ARTICLES = r"\b(a|an|the)\b"


def squad_normalize(text: str) -> str:
    """SQuAD v1.1's answer normalisation: lower-case, drop ASCII punctuation, drop the words a/an/the, collapse
    whitespace -- in that order (so ``"The-end"`` -> ``"theend"``: the hyphen goes before the article test)."""
    text = "".join(ch for ch in text.lower() if ch not in string.punctuation)
    return " ".join(re.sub(_SQUAD_ARTICLES, " ", text).split())


def _squad_f1(prediction: str, reference: str) -> float:
    """Token F1 of one prediction against one reference: the overlap is the multiset intersection of tokens."""
    pred, ref = squad_normalize(prediction).split(), squad_normalize(reference).split()
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:  # also when either side normalises to nothing (v1.1: F1 0 even if both are empty)
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def squad_em_f1(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> dict[str, float]:
    """Exact match and F1, in percent, of one predicted answer per question against that question's references
    (SQuAD v1.1 has 1 answer per training question and 3 per dev question; the best one counts).

    Returns ``{"exact_match": ..., "f1": ...}`` on the 0-100 scale, as the official script prints them.
    """
    if isinstance(references, str) or any(isinstance(r, str) for r in references):
        raise TypeError("references must hold a list of answer strings per question, e.g. [['Denver Broncos']]")
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} reference lists")
    if not predictions:
        raise ValueError("squad_em_f1 needs at least one question")
    em = f1 = 0.0
    for i, (pred, refs) in enumerate(zip(predictions, references)):
        if not refs:
            raise ValueError(f"question {i} has no reference answer")
        em += max(float(squad_normalize(pred) == squad_normalize(r)) for r in refs)
        f1 += max(_squad_f1(pred, r) for r in refs)
    n = len(predictions)
    return {"exact_match": 100.0 * em / n, "f1": 100.0 * f1 / n}

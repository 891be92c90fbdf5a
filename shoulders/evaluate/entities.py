"""Tagging: entity-level precision, recall and F1 (chapter 14, named entities with the token head).

The CoNLL shared tasks (Tjong Kim Sang 2002; Tjong Kim Sang & De Meulder 2003) score named entities, not tags: an
entity counts as found only when its span and its type both match, and the score is the F1 of precision and
recall over entities. Their ``conlleval`` script is re-implemented in Python by seqeval (Nakayama 2018), which
computes the score here.
"""
from __future__ import annotations

from typing import Sequence

__all__ = ["entity_f1"]


def entity_f1(true_tags: Sequence[Sequence[str]], pred_tags: Sequence[Sequence[str]]) -> dict:
    """Entity-level precision, recall and F1 of BIO tag sequences, CoNLL style (Tjong Kim Sang & De Meulder 2003):
    an entity counts as found only when its span and its type both match exactly. Computed by seqeval
    (Nakayama 2018) in its default mode, which reads tags as the ``conlleval`` script does -- an ``I-X`` that
    does not follow a ``B-X``/``I-X`` starts a new entity.

    Returns ``precision``, ``recall``, ``f1`` (micro-averaged over entities, fractions in 0-1 as seqeval gives
    them) and ``per_type`` {type: f1}. A score with a zero denominator (no predicted or no true entity) is 0.
    """
    from seqeval.metrics import classification_report, f1_score, precision_score, recall_score

    y_true, y_pred = [list(s) for s in true_tags], [list(s) for s in pred_tags]
    if len(y_true) != len(y_pred):
        raise ValueError(f"{len(y_true)} true sequences but {len(y_pred)} predicted ones")
    for i, (t, p) in enumerate(zip(y_true, y_pred)):
        if len(t) != len(p):
            raise ValueError(f"sequence {i}: {len(t)} true tags but {len(p)} predicted ones")
    kw = {"zero_division": 0}
    report = classification_report(y_true, y_pred, output_dict=True, **kw)
    per_type = {k: float(v["f1-score"]) for k, v in report.items() if not k.endswith(" avg")}
    return {"precision": float(precision_score(y_true, y_pred, **kw)),
            "recall": float(recall_score(y_true, y_pred, **kw)),
            "f1": float(f1_score(y_true, y_pred, **kw)), "per_type": per_type}

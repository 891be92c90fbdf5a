"""XLNet's input layout (Yang et al. 2019, §2.5 and the released code): ``A [SEP] B [SEP] [CLS]``.

BERT puts ``[CLS]`` first; XLNet puts it last, so that in the content stream -- where, in pre-training, a token
sees only what comes before it in the factorisation order -- the classification token can be the one that has
seen everything. The segment ids are 0 for A and its ``[SEP]``, 1 for B and its ``[SEP]``, 2 for ``[CLS]``; XLNet
uses them only as "same segment or not" (relative segment encodings), so the three values need no embedding
table. The features are :func:`shoulders.text.bert_inputs.collate`'s dicts: with right padding the ``pooled``
vector of :class:`shoulders.models.xlnet.XLNetModel` is each row's last real token, the ``[CLS]``.
"""
from __future__ import annotations

from collections.abc import Sequence

from .bert_inputs import truncate_pair

__all__ = ["CLS_SEGMENT", "pack_xlnet"]

CLS_SEGMENT = 2  # the released code's SEG_ID_CLS


def pack_xlnet(a: Sequence[int], b: Sequence[int] | None, cls_id: int, sep_id: int,
               max_len: int) -> tuple[list[int], list[int]]:
    """``a [SEP] (b [SEP]) [CLS]`` truncated to ``max_len`` tokens (the longer text loses tokens first), and its
    segment ids (0 ... 0, 1 ... 1, 2)."""
    specials = 2 if b is None else 3
    a, b = truncate_pair(list(a), None if b is None else list(b), max_len - specials)
    ids, segments = [*a, sep_id], [0] * (len(a) + 1)
    if b is not None:
        ids += [*b, sep_id]
        segments += [1] * (len(b) + 1)
    return ids + [cls_id], segments + [CLS_SEGMENT]

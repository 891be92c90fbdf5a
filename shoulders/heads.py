"""Task heads on a pretrained encoder: the small layers fine-tuning adds (Devlin et al. 2019, §4, Figure 4).

BERT adapts one pretrained network to every task by adding a single output layer on top of it and training
everything end to end; GPT does the same with a linear layer over the last token (Radford et al. 2018, §3.3).
Figure 4 of the BERT paper shows the four shapes used here:

* (a, b) sentence / sentence-pair classification (MNLI, SST-2, ...): a classifier on the ``[CLS]`` summary,
  :class:`SequenceClassifier`;
* (c) question answering (SQuAD): a start and an end vector scored against every token, :class:`SpanExtractor`
  and :func:`best_span`;
* (d) single-sentence tagging (NER): a classifier on every token, :class:`TokenTagger`;
* SWAG (§4.4): each candidate continuation packed with the context and scored by a vector on ``[CLS]``,
  :class:`MultipleChoice`;
* and, around any encoder, :class:`MeanPooled`: its summary the mean of the top layer's token vectors instead.

Every head works with any encoder that follows one small protocol (BERT's
:class:`shoulders.models.bert.BertModel` does; so can GPT or ELMo wrappers)::

    out = encoder(input_ids, token_type_ids=None, attention_mask=None)   # input_ids (B, T)
    out.hidden   # (B, T, d)  the top layer's vector for every token
    out.pooled   # (B, d)     the sequence summary (BERT: tanh(W h_[CLS] + b))
    encoder.d_model == d

Given labels a head returns ``{"loss", "acc", "logits"}`` (what :func:`shoulders.train.fit` logs: the scalars);
without labels it returns the logits. :func:`shoulders.recipes.finetune.set_trainable` switches between the three
ways to use a pretrained model: frozen features, fine-tuning everything, or only the top layers.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .models.ids import check_labels
from .models.sentence_encoders import pool_states
from .text.bert_inputs import IGNORE  # padding, special tokens, non-first word pieces: not scored
from .text.task_features import best_span

__all__ = ["Head", "MeanPooled", "MultipleChoice", "SequenceClassifier", "SpanExtractor", "TokenTagger",
           "best_span"]



def _output_layer(d_in: int, d_out: int) -> nn.Linear:
    """A Linear with weights N(0, 0.02²) and bias 0: BERT's released code (``initializer_range``) and GPT
    (Radford et al. 2018, §4.1) initialise this way."""
    layer = nn.Linear(d_in, d_out)
    nn.init.normal_(layer.weight, mean=0.0, std=0.02)
    nn.init.zeros_(layer.bias)
    return layer


class Head(nn.Module):
    """What every head shares: ``self.encoder``, and an encoder that stays in eval mode while it is frozen.

    With frozen features (:func:`shoulders.recipes.finetune.set_trainable` ``"frozen"``) the encoder's dropout
    must be off, or the "fixed" features would change from one pass to the next; ``fit`` switches the whole model
    to train mode, so :meth:`train` puts a frozen encoder back into eval mode.
    """

    encoder_frozen: bool = False

    def train(self, mode: bool = True) -> "Head":
        super().train(mode)
        if self.encoder_frozen:
            self.encoder.eval()
        return self


def _masked_min(logits: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
    """``logits`` with the positions where ``keep`` is False set to the dtype's most negative finite value.

    A finite value (not -inf) keeps softmax and cross-entropy free of NaN even for a row with nothing kept.
    """
    if keep is None:
        return logits
    return logits.masked_fill(~keep.bool(), torch.finfo(logits.dtype).min)


class MeanPooled(nn.Module):
    """An encoder whose ``pooled`` summary is the mean of its top layer's token vectors over the real tokens,
    padding left out, instead of its own (BERT's ``[CLS]`` pooler, GPT's or XLNet's last token, which then get no
    gradient): wrap an encoder of this module's protocol, and a head on it reads the mean. Sentence-BERT pools so
    (Reimers & Gurevych 2019, §3): masked LM trains every token's top vector, only next-sentence prediction
    ``[CLS]``'s. The wrapped encoder is ``.encoder``; its output (a NamedTuple or a dataclass) keeps every other
    field."""

    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder, self.d_model = encoder, encoder.d_model

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None) -> Any:
        out = self.encoder(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask)
        mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask
        pooled = pool_states(out.hidden, mask, "mean")  # (B, d)
        return out._replace(pooled=pooled) if hasattr(out, "_replace") else dataclasses.replace(out, pooled=pooled)


class SequenceClassifier(Head):
    """One label per sequence or sequence pair from the pooled ``[CLS]`` vector (Devlin et al. 2019, §4.1,
    Figure 4a-b): P(c | x) = softmax(C W^T), C = pooled (B, d), W (K, d)."""

    def __init__(self, encoder: nn.Module, n_classes: int, dropout: float = 0.1):
        super().__init__()
        self.encoder = encoder
        self.dropout = nn.Dropout(dropout)
        self.classifier = _output_layer(encoder.d_model, n_classes)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None,
                labels: torch.Tensor | None = None) -> torch.Tensor | dict[str, torch.Tensor]:
        out = self.encoder(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask)
        logits = self.classifier(self.dropout(out.pooled))  # (B, K)
        if labels is None:
            return logits
        check_labels(labels, "labels", self.classifier.out_features)
        return {"loss": F.cross_entropy(logits, labels),
                "acc": (logits.argmax(-1) == labels).float().mean(), "logits": logits}


class TokenTagger(Head):
    """A tag for every token from its top-layer vector (Devlin et al. 2019, §5.3, Figure 4d).

    BERT labels only the first WordPiece of each word; the other pieces (and padding, ``[CLS]``, ``[SEP]``)
    carry the label ``-100`` and are left out of the loss and the accuracy.
    """

    def __init__(self, encoder: nn.Module, n_tags: int, dropout: float = 0.1):
        super().__init__()
        self.encoder = encoder
        self.dropout = nn.Dropout(dropout)
        self.classifier = _output_layer(encoder.d_model, n_tags)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None,
                labels: torch.Tensor | None = None) -> torch.Tensor | dict[str, torch.Tensor]:
        out = self.encoder(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask)
        logits = self.classifier(self.dropout(out.hidden))  # (B, T, K)
        if labels is None:
            return logits
        check_labels(labels, "labels", self.classifier.out_features, ignore_index=IGNORE)
        scored = labels != IGNORE  # (B, T)
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE)
        hits = (logits.argmax(-1) == labels) & scored  # (B, T)
        acc = hits.sum().float() / scored.sum().clamp(min=1)
        return {"loss": loss, "acc": acc, "logits": logits}


class SpanExtractor(Head):
    """Answer span = (start, end) over the tokens (Devlin et al. 2019, §4.2, Figure 4c).

    A start vector S and an end vector E (the two rows of one Linear(d, 2)) score every token:
    P_i^start = softmax_i(S · T_i), P_j^end = softmax_j(E · T_j). Training maximises the log-likelihood of the
    correct start and end, loss = (CE(start) + CE(end)) / 2; a span (i, j) scores S · T_i + E · T_j with j >= i,
    found by :func:`best_span`. Positions outside ``attention_mask`` (padding) get the most negative finite
    logit. Google's ``run_squad.py`` puts no dropout here, so the default is 0.
    """

    def __init__(self, encoder: nn.Module, dropout: float = 0.0):
        super().__init__()
        self.encoder = encoder
        self.dropout = nn.Dropout(dropout)
        self.qa_outputs = _output_layer(encoder.d_model, 2)  # rows: S, E

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, start_positions: torch.Tensor | None = None,
                end_positions: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor] | dict[str, Any]:
        out = self.encoder(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask)
        logits = self.qa_outputs(self.dropout(out.hidden))  # (B, T, 2)
        start = _masked_min(logits[..., 0], attention_mask)  # (B, T)
        end = _masked_min(logits[..., 1], attention_mask)  # (B, T)
        if start_positions is None and end_positions is None:
            return start, end
        if start_positions is None or end_positions is None:
            raise ValueError("give both start_positions and end_positions, or neither")
        check_labels(start_positions, "start_positions", start.shape[1])  # token positions in [0, T)
        check_labels(end_positions, "end_positions", end.shape[1])
        loss = (F.cross_entropy(start, start_positions) + F.cross_entropy(end, end_positions)) / 2
        acc = ((start.argmax(-1) == start_positions) & (end.argmax(-1) == end_positions)).float().mean()
        return {"loss": loss, "acc": acc, "start_logits": start, "end_logits": end}


class MultipleChoice(Head):
    """Pick one of C candidates (SWAG; Devlin et al. 2019, §4.4): each candidate is packed with the context as
    ``[CLS] context [SEP] candidate [SEP]``, scored by a vector V on its pooled vector, score_c = V · C_c, and the
    scores are normalised with a softmax over the C candidates. GPT does the same (Radford et al. 2018, §3.3)."""

    def __init__(self, encoder: nn.Module, dropout: float = 0.1):
        super().__init__()
        self.encoder = encoder
        self.dropout = nn.Dropout(dropout)
        self.scorer = _output_layer(encoder.d_model, 1)  # V

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None,
                labels: torch.Tensor | None = None) -> torch.Tensor | dict[str, torch.Tensor]:
        if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 3:
            got = tuple(input_ids.shape) if isinstance(input_ids, torch.Tensor) else type(input_ids).__name__
            raise ValueError(f"input_ids must be (B, C, T): C candidates of T tokens per example, got {got}")
        B, C, T = input_ids.shape
        flat = [None if t is None else t.reshape(B * C, T) for t in (token_type_ids, attention_mask)]
        out = self.encoder(input_ids.reshape(B * C, T), token_type_ids=flat[0], attention_mask=flat[1])
        logits = self.scorer(self.dropout(out.pooled)).reshape(B, C)  # (B*C, 1) -> (B, C)
        if labels is None:
            return logits
        check_labels(labels, "labels", C)  # the index of the right candidate
        return {"loss": F.cross_entropy(logits, labels),
                "acc": (logits.argmax(-1) == labels).float().mean(), "logits": logits}

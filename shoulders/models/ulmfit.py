"""ULMFiT's classifier: the pre-trained AWD-LSTM, concat pooling and two linear blocks (Howard & Ruder 2018, sec.
3.3), reading long texts by BPT3C.

    H      = AWD-LSTM(x_1 ... x_T)                     the top layer's states, (B, T, d)
    h_c    = [h_T ; maxpool(H) ; meanpool(H)]          concat pooling, (B, 3d): "the signal may be contained in
                                                       a few words ... anywhere in the document" (sec. 3.3)
    logits = Linear(Drop(BN(ReLU(Linear(Drop(BN(h_c)))))))   two blocks with batch normalisation and dropout,
                                                       the first ``hidden`` (50 in the paper) wide, ReLU between

**BPT3C** ("backpropagation through time for text classification", sec. 3.3): the text is read in windows of
``bptt`` tokens, each window starting from the state the previous one ended in; the pooled states of every
window are kept, and gradients flow back through the windows within the last ``max_len`` tokens (the earlier
ones run without autograd: their states still reach the pooling, as constants). The state passed from one window
to the next is detached, as in truncated BPTT for language modelling.

Padding is on the right, so a sequence's real tokens never see its padding (the LSTM reads left to right); the
pooling ignores padded positions and h_T is each sequence's state at its own last token.
"""
from __future__ import annotations

import contextlib
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from .awd_lstm import AWDLSTM
from .ids import check_labels

__all__ = ["PoolingClassifier", "concat_pool"]


def concat_pool(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """ULMFiT's concat pooling (sec. 3.3): ``[h_T ; max_t h_t ; mean_t h_t]`` over each sequence's real tokens.

    states (B, T, d), mask (B, T) bool (True at real tokens, every row at least one) -> (B, 3d)."""
    mask = mask.bool()
    lengths = mask.sum(1)  # (B,)
    if bool((lengths == 0).any()):
        raise ValueError("concat_pool: a sequence has no real tokens (its attention_mask is all False)")
    last = states[torch.arange(states.shape[0], device=states.device), lengths - 1]  # (B, d): right padding
    keep = mask.unsqueeze(-1)  # (B, T, 1)
    biggest = states.masked_fill(~keep, torch.finfo(states.dtype).min).amax(1)  # (B, d)
    mean = (states * keep).sum(1) / lengths.unsqueeze(-1).to(states.dtype)  # (B, d)
    return torch.cat([last, biggest, mean], dim=-1)


class PoolingClassifier(nn.Module):
    """ULMFiT's target-task classifier around an :class:`~shoulders.models.awd_lstm.AWDLSTM` (the LM's softmax is
    not part of it: the classifier reads the top layer's states).

    Args:
        encoder: the language model whose embedding and LSTMs read the text (its output layer is dropped).
        n_classes: classes of the task.
        hidden: width of the first linear block (the paper: 50).
        dropouts: dropout before each linear block (fastai's ULMFiT: 0.4 and 0.1 times its ``drop_mult``).
        bptt: BPT3C's window length.
        max_len: gradients flow through the last ``max_len`` tokens of a text only.

    ``forward(input_ids, token_type_ids=None, attention_mask=None, labels=None)`` takes the batches of
    :func:`shoulders.text.bert_inputs.collate` (``token_type_ids`` is accepted and ignored), like every head of
    :mod:`shoulders.heads`: logits (B, K) without labels, ``{"loss", "acc", "logits"}`` with them.
    """

    def __init__(self, encoder: AWDLSTM, n_classes: int, hidden: int = 50, dropouts: tuple[float, float] = (0.4, 0.1),
                 bptt: int = 70, max_len: int = 1_400):
        super().__init__()
        if n_classes < 2 or hidden < 1 or bptt < 1 or max_len < 1:
            raise ValueError(f"need n_classes >= 2 and positive hidden, bptt and max_len; got {n_classes}, "
                             f"{hidden}, {bptt}, {max_len}")
        self.encoder = encoder
        self.encoder.out = None  # the LM's softmax: unused by the classifier, so not trained or saved with it
        self.bptt, self.max_len, self.n_classes = int(bptt), int(max_len), int(n_classes)
        d = 3 * encoder.cfg.output_dim()
        self.head = nn.Sequential(
            nn.BatchNorm1d(d), nn.Dropout(dropouts[0]), nn.Linear(d, hidden), nn.ReLU(),
            nn.BatchNorm1d(hidden), nn.Dropout(dropouts[1]), nn.Linear(hidden, n_classes))

    def layer_groups(self) -> list[nn.Module]:
        """The groups of discriminative fine-tuning and gradual unfreezing, bottom first: the embedding, each LSTM
        layer, then the pooling head (the last group, the first to train)."""
        return [self.encoder.embed, *self.encoder.rnns, self.head]

    def states(self, input_ids: torch.Tensor) -> torch.Tensor:
        """The top layer's states over the whole text by BPT3C: input_ids (B, T) -> (B, T, d)."""
        T = input_ids.shape[1]
        grad_from = max(0, T - self.max_len)  # windows ending before this run without autograd
        outs, state = [], None
        for start in range(0, T, self.bptt):
            window = input_ids[:, start:start + self.bptt]  # (B, <= bptt)
            quiet = start + window.shape[1] <= grad_from
            with torch.no_grad() if quiet else contextlib.nullcontext():
                enc = self.encoder.encode(window, state)
            outs.append(enc["dropped"][-1])  # (B, t, d)
            state = tuple(s.detach() for s in enc["state"])
        return torch.cat(outs, dim=1)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None,
                labels: torch.Tensor | None = None) -> torch.Tensor | dict[str, Any]:
        mask = attention_mask if attention_mask is not None else torch.ones_like(input_ids, dtype=torch.bool)
        pooled = concat_pool(self.states(input_ids), mask)  # (B, 3d)
        if self.training and pooled.shape[0] == 1:  # one example has no batch statistics: use the running ones
            norms = [m for m in self.head if isinstance(m, nn.BatchNorm1d)]
            for m in norms:
                m.eval()
            try:
                logits = self.head(pooled)
            finally:
                for m in norms:
                    m.train()
        else:
            logits = self.head(pooled)  # (B, K)
        if labels is None:
            return logits
        check_labels(labels, "labels", self.n_classes)
        return {"loss": F.cross_entropy(logits, labels), "acc": (logits.argmax(-1) == labels).float().mean(),
                "logits": logits}

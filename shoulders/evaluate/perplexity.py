"""Perplexity, the score of every language-model chapter (n-grams, NNLM, RNN LMs, Transformer LMs).

Jelinek, Mercer, Bahl & Baker (1977) introduced it as a measure of how hard a text is for a model (its effective
branching factor): the exponential of the per-token cross-entropy, PPL = exp(-1/N sum_i log P(w_i | w_<i)).
Bengio et al. (2003, sec. 4: "the geometric average of 1/P(w_t | w_1^{t-1})") and Mikolov et al. (2010) report it
on held-out text exactly so, over every token of the split.
"""
from __future__ import annotations

import math
from typing import Iterable

import torch

__all__ = ["perplexity"]


@torch.no_grad()
def perplexity(model: torch.nn.Module, batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
               device: torch.device | str | None = None, carry_state: bool = False) -> float:
    """exp of the token-weighted mean cross-entropy, PPL = exp(-1/N sum_i log P(w_i | history)).

    ``model(x, y)`` must return the *mean* loss in nats over the ``y.numel()`` targets of the batch; batches are
    weighted by their number of targets, so a shorter last window counts exactly as much as its tokens.

    ``carry_state=True`` is for recurrent LMs over consecutive BPTT windows (``LMStream.bptt_batches``): each
    window starts from the state the previous one ended with (``model(x, y, state=s, return_state=True)``, see
    :mod:`shoulders.models.rnnlm`), so every row is scored as one long sequence, the way the model is trained with
    :class:`~shoulders.models.rnnlm.CarryState`; the first window starts from zeros.
    """
    was_training = model.training
    model.eval()
    dev = torch.device(device) if device is not None else next(model.parameters()).device
    total, count = 0.0, 0
    state = None
    for x, y in batches:
        x, y = x.to(dev), y.to(dev)
        if carry_state:
            out = model(x, y, state=state, return_state=True)
            loss, state = out["loss"], out["state"]
        else:
            loss = model(x, y)
        total += float(loss) * y.numel()
        count += y.numel()
    model.train(was_training)
    if count == 0:
        raise ValueError("perplexity needs at least one batch with targets")
    return math.exp(total / count)

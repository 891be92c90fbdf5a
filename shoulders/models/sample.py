"""Writing with a language model: draw the next token from P(. | history), append it, repeat.

One sampler for every neural LM of the book. The model enters through ``next_logits(ids) -> (|V|,)``, the
unnormalised log-probabilities of the token after the id sequence ``ids`` (1-D), so a window model passes its last
``n - 1`` ids and a recurrent or Transformer LM the whole history. A temperature T reshapes the distribution to
P^(1/T) (renormalised): T < 1 sharpens it towards the likely tokens, T > 1 flattens it; ``top_k`` keeps only the k
most probable tokens (Fan et al. 2018).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

__all__ = ["sample_tokens"]


@torch.no_grad()
def sample_tokens(next_logits: Callable[[torch.Tensor], torch.Tensor], prompt: Sequence[int], steps: int,
                  temperature: float = 1.0, top_k: int | None = None, generator: torch.Generator | None = None,
                  banned: Sequence[int] = ()) -> list[int]:
    """``steps`` ids drawn one at a time after ``prompt`` (the prompt is not repeated in the result).

    ``banned`` ids get probability zero (e.g. ``<unk>``, for readable samples; say so when you use it).
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if not prompt:
        raise ValueError("sampling needs a prompt of at least one id")
    ids = torch.as_tensor(list(prompt), dtype=torch.long)
    out: list[int] = []
    for _ in range(steps):
        logits = next_logits(ids).float().flatten() / temperature  # (|V|,)
        if banned:
            logits[list(banned)] = float("-inf")
        if top_k is not None:
            kth = torch.topk(logits, min(top_k, logits.numel())).values[-1]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        nxt = int(torch.multinomial(torch.softmax(logits, 0).cpu(), 1, generator=generator))
        out.append(nxt)
        ids = torch.cat([ids, torch.tensor([nxt])])
    return out

"""Writing with a language model: draw the next token from P(. | history), append it, repeat.

One sampler for every neural LM of the book. The model enters through ``next_logits(ids) -> (|V|,)``, the
unnormalised log-probabilities of the token after the id sequence ``ids`` (1-D), so a window model passes its last
``n - 1`` ids and a recurrent or Transformer LM the whole history (GPT's :func:`shoulders.models.gpt.generate`
passes a function that feeds only the new ids through its KV cache).

Three ways to reshape P before drawing, applied in this order by :func:`filter_logits`:

* a temperature T turns P into P^(1/T) (renormalised): T < 1 sharpens it towards the likely tokens, T > 1
  flattens it;
* ``top_k`` keeps only the k most probable tokens (Fan et al. 2018, "Hierarchical Neural Story Generation");
* ``top_p`` keeps the nucleus: the smallest set of most probable tokens whose probability is at least p, the
  rest set to zero and the nucleus renormalised (Holtzman et al. 2020, "The Curious Case of Neural Text
  Degeneration", eq. 2-3: V^(p) is the smallest set with sum_{x in V^(p)} P(x | history) >= p). Unlike top-k,
  the number of candidates adapts: few after a predictable history, many after an open one.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

__all__ = ["filter_logits", "sample_tokens"]


def filter_logits(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                  top_p: float | None = None) -> torch.Tensor:
    """``logits`` ``(..., |V|)`` divided by ``temperature``, with ``-inf`` outside the top ``k`` and outside the
    nucleus of mass ``top_p`` (see the module docstring); ``softmax`` of the result is the distribution to draw
    from. Returns a new float32 tensor; ``None`` (or ``top_p=1``) turns a filter off. Ties at the k-th logit are
    all kept."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be >= 1 (or None: no top-k filter), got {top_k}")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1] (or None: no nucleus filter), got {top_p}")
    logits = logits.float() / temperature  # log P^(1/T), up to a constant
    if top_k is not None and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest logit
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        ordered, order = logits.sort(dim=-1, descending=True)  # (..., |V|) most probable first
        probs = ordered.softmax(dim=-1)
        before = probs.cumsum(dim=-1) - probs  # mass of the tokens more probable than this one
        outside = before >= top_p  # the nucleus already holds p without it (the most probable always stays)
        outside = torch.zeros_like(outside).scatter(-1, order, outside)  # back to vocabulary order
        logits = logits.masked_fill(outside, float("-inf"))
    return logits


@torch.no_grad()
def sample_tokens(next_logits: Callable[[torch.Tensor], torch.Tensor], prompt: Sequence[int], steps: int,
                  temperature: float = 1.0, top_k: int | None = None, generator: torch.Generator | None = None,
                  banned: Sequence[int] = (), top_p: float | None = None, eos_id: int | None = None) -> list[int]:
    """``steps`` ids drawn one at a time after ``prompt`` (the prompt is not repeated in the result).

    ``banned`` ids get probability zero (e.g. ``<unk>``, for readable samples; say so when you use it), before
    :func:`filter_logits` applies ``temperature``, ``top_k`` and ``top_p``. With ``eos_id``, sampling stops
    after that id is drawn (it is the last id of the result). The draws use ``generator`` on the CPU, so the same
    generator state gives the same samples on any device.
    """
    if not prompt:
        raise ValueError("sampling needs a prompt of at least one id")
    filter_logits(torch.zeros(1), temperature, top_k, top_p)  # check the settings before the first step
    ids = torch.as_tensor(list(prompt), dtype=torch.long)
    out: list[int] = []
    for _ in range(steps):
        logits = next_logits(ids).float().flatten()  # (|V|,)
        if banned:
            logits[list(banned)] = float("-inf")
        logits = filter_logits(logits, temperature, top_k, top_p)
        nxt = int(torch.multinomial(torch.softmax(logits, 0).cpu(), 1, generator=generator))
        out.append(nxt)
        if eos_id is not None and nxt == eos_id:
            break
        ids = torch.cat([ids, torch.tensor([nxt])])
    return out

"""BERT's masked-LM corruption (Devlin et al. 2019, §3.1 "Task #1" and Appendix C.2).

Of each sequence's maskable tokens (not ``[CLS]``, ``[SEP]`` or padding), exactly ``round(15%)`` (at least one)
are chosen as prediction targets, uniformly without replacement -- the reference implementation's
``num_to_predict``, not an independent coin per token. Each chosen token is then

* replaced by ``[MASK]`` with probability 0.8,
* replaced by a random token with probability 0.1,
* left unchanged with probability 0.1,

and the model must predict the original at every chosen position. Why not always ``[MASK]``? ``[MASK]`` never
occurs at fine-tuning time, so a model trained only on it would learn nothing useful for the representations
of real tokens; the random 10% makes it keep a distributional representation of *every* input token (it cannot
know which ones were swapped), and the unchanged 10% biases that representation towards the word actually seen.
Random replacements hit only 1.5% of all tokens, which the paper finds does not harm language understanding.

This module masks *dynamically*: a fresh choice for every batch (RoBERTa, Liu et al. 2019, §4.1), where the
original pre-processing fixed ten maskings per sequence in advance; the proportions are the paper's.
"""
from __future__ import annotations

import torch

from .bert_inputs import IGNORE

__all__ = ["IGNORE", "mask_tokens"]



def mask_tokens(input_ids: torch.Tensor, maskable: torch.Tensor, mask_id: int, vocab_size: int,
                first_random_id: int = 0, mask_prob: float = 0.15, replace_probs: tuple[float, float] = (0.8, 0.1),
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Corrupt a batch for the masked LM; returns ``(corrupted ids (B, T), labels (B, T))``.

    Args:
        input_ids: ``(B, T)`` token ids.
        maskable: ``(B, T)`` bool, ``True`` where a token may be chosen (real, non-special tokens).
        mask_id: the ``[MASK]`` id.
        vocab_size: random replacements are drawn uniformly from ``[first_random_id, vocab_size)``.
        first_random_id: the first id a random replacement may take (pass the number of special tokens so no
            ``[PAD]``/``[CLS]``/``[MASK]`` appears at random).
        mask_prob: the fraction of maskable tokens chosen per sequence (rounded, at least one when any).
        replace_probs: P([MASK]) and P(random token) for a chosen token; the rest stays unchanged.
        generator: torch RNG (default: the global one, which ``fit`` seeds per epoch).

    Labels hold the original id at chosen positions and :data:`IGNORE` elsewhere.
    """
    if input_ids.shape != maskable.shape:
        raise ValueError(f"input_ids {tuple(input_ids.shape)} and maskable {tuple(maskable.shape)} differ in shape")
    if not 0.0 < mask_prob < 1.0:
        raise ValueError(f"mask_prob must be in (0, 1), got {mask_prob}")
    p_mask, p_random = replace_probs
    if p_mask < 0 or p_random < 0 or p_mask + p_random > 1:
        raise ValueError(f"replace_probs must be two non-negative probabilities summing to <= 1, got {replace_probs}")
    if not 0 <= first_random_id < vocab_size:
        raise ValueError(f"first_random_id must be in [0, vocab_size={vocab_size}), got {first_random_id}")
    dev = input_ids.device
    n = maskable.sum(dim=1)  # (B,) maskable tokens per sequence
    k = torch.where(n > 0, torch.clamp(torch.round(n * mask_prob), min=1), torch.zeros_like(n))  # (B,)
    scores = torch.rand(input_ids.shape, generator=generator, device=dev)  # (B, T)
    scores = scores.masked_fill(~maskable, 2.0)  # never chosen before a maskable token
    ranks = scores.argsort(dim=1).argsort(dim=1)  # (B, T): 0 = smallest score
    chosen = (ranks < k[:, None]) & maskable  # (B, T): exactly k[b] positions in row b
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE))
    u = torch.rand(input_ids.shape, generator=generator, device=dev)  # (B, T)
    to_mask = chosen & (u < p_mask)
    to_random = chosen & (u >= p_mask) & (u < p_mask + p_random)
    random_ids = torch.randint(first_random_id, vocab_size, input_ids.shape, generator=generator, device=dev)
    out = torch.where(to_mask, torch.full_like(input_ids, mask_id), input_ids)
    out = torch.where(to_random, random_ids, out)
    return out, labels

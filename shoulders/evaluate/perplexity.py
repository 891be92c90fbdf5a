"""Perplexity, the score of every language-model chapter (n-grams, NNLM, RNN LMs, Transformer LMs).

Jelinek, Mercer, Bahl & Baker (1977) introduced it as a measure of how hard a text is for a model (its effective
branching factor): the exponential of the per-token cross-entropy, PPL = exp(-1/N sum_i log P(w_i | w_<i)).
Bengio et al. (2003, sec. 4: "the geometric average of 1/P(w_t | w_1^{t-1})") and Mikolov et al. (2010) report it
on held-out text exactly so, over every token of the split.

Two models that predict the same tokens can also be *mixed*: P = lambda P_a + (1 - lambda) P_b is again a
language model, and its perplexity needs only each model's per-token log-probabilities
(:func:`token_logprobs` for a network, ``NGramLM.token_logprobs`` for a counting model). Bengio et al. (2003,
Tables 1-2, the "mixture" rows) and Mikolov et al. (2010) interpolate their networks with a smoothed n-gram model
this way; the one weight is fitted by maximum likelihood on held-out text (:func:`fit_interpolation`), never on the
text whose perplexity is reported.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
import torch

__all__ = ["fit_interpolation", "interpolate", "interpolated_perplexity", "perplexity", "sliding_window_nll",
           "token_logprobs"]


@torch.no_grad()
def perplexity(model: torch.nn.Module, batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
               device: torch.device | str | None = None, carry_state: bool = False) -> float:
    """exp of the token-weighted mean cross-entropy, PPL = exp(-1/N sum_i log P(w_i | history)).

    ``model(x, y)`` must return the *mean* loss in nats over the ``y.numel()`` targets of the batch (a tensor, or a
    dict whose ``"loss"`` it is, as AWD-LSTM returns in eval mode, where its regularisers are off); batches are
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
            loss = loss["loss"] if isinstance(loss, Mapping) else loss  # a model that returns a dict of losses
        total += float(loss) * y.numel()
        count += y.numel()
    model.train(was_training)
    if count == 0:
        raise ValueError("perplexity needs at least one batch with targets")
    return math.exp(total / count)


@torch.no_grad()
def token_logprobs(model: torch.nn.Module, batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
                   device: torch.device | str | None = None) -> np.ndarray:
    """ln P(y | x) of every target, in the order of ``batches``: a float64 array of N = sum of ``y.numel()``.

    For a model whose ``logits(x)`` gives unnormalised log-probabilities of shape ``y.shape + (|V|,)`` (the window
    LMs of chapter 2: NNLM, LBL). With the in-order evaluation batches (``cfg.batches(stream, train=False)``) this
    is one entry per token of the stream, aligned with an n-gram model's ``token_logprobs`` of the same lines, and
    ``exp(-mean)`` is :func:`perplexity`.
    """
    was_training = model.training
    model.eval()
    dev = torch.device(device) if device is not None else next(model.parameters()).device
    out = []
    for x, y in batches:
        logits = model.logits(x.to(dev)).float()
        lp = torch.log_softmax(logits, dim=-1).gather(-1, y.to(dev).unsqueeze(-1)).squeeze(-1)
        out.append(lp.reshape(-1).double().cpu())
    model.train(was_training)
    return torch.cat(out).numpy() if out else np.zeros(0)


@torch.no_grad()
def sliding_window_nll(model: torch.nn.Module, ids: torch.Tensor, window: int, stride: int | None = None,
                       batch_size: int = 16, device: torch.device | str | None = None) -> tuple[float, int]:
    """Total negative log-likelihood (nats) of ``ids[1:]`` under a fixed-context LM, and how many tokens that is.

    A Transformer LM sees at most ``window`` tokens. Cutting the text into disjoint windows would score each
    window's first tokens with almost no context; instead windows start every ``stride`` tokens and each scores
    only the targets the previous window did not, so every target after the first window has at least
    ``window - stride`` tokens of context (``stride = window // 2`` by default; ``stride = window`` is the disjoint
    cut, ``stride = 1`` the exact but slow one-prediction-per-window). ``model.logits(x)`` gives ``(B, T, |V|)``.
    ``ids[0]`` is context only: put a separator there (e.g. ``<|endoftext|>``) to score every token of a text.
    Perplexity per token is ``exp(nll / count)``; per word, ``exp(nll / words)`` for the words the text holds.
    """
    ids = torch.as_tensor(ids, dtype=torch.long).flatten()
    stride = window // 2 if stride is None else int(stride)
    if window < 1 or not 1 <= stride <= window:
        raise ValueError(f"need window >= 1 and 1 <= stride <= window, got window={window}, stride={stride}")
    n = ids.numel() - 1  # targets ids[1:], target i is ids[i + 1] after ids[: i + 1]
    if n < 1:
        raise ValueError("sliding_window_nll needs at least two ids (one context, one target)")
    was_training = model.training
    model.eval()
    dev = torch.device(device) if device is not None else next(model.parameters()).device
    jobs, start, covered = [], 0, 0  # (start, length, first scored offset) per window
    while True:
        length = min(window, n - start)
        jobs.append((start, length, covered - start))
        covered = start + length
        if covered >= n:
            break
        start += stride
    total = 0.0
    try:
        for length in sorted({j[1] for j in jobs}, reverse=True):
            same = [j for j in jobs if j[1] == length]
            for b in range(0, len(same), batch_size):
                part = same[b:b + batch_size]
                x = torch.stack([ids[s: s + length] for s, _, _ in part]).to(dev)  # (B, T)
                y = torch.stack([ids[s + 1: s + 1 + length] for s, _, _ in part]).to(dev)  # (B, T)
                lp = model.logits(x).float().log_softmax(-1).gather(-1, y[..., None]).squeeze(-1)  # (B, T)
                keep = torch.arange(length, device=dev)[None, :] >= torch.tensor([j0 for _, _, j0 in part],
                                                                                  device=dev)[:, None]
                total -= float(lp[keep].double().sum())
    finally:
        model.train(was_training)
    return total, n


def _pair(logp_a, logp_b) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(logp_a, dtype=np.float64).reshape(-1)
    b = np.asarray(logp_b, dtype=np.float64).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"the two models must score the same tokens: {a.size} and {b.size} log-probabilities")
    if a.size == 0:
        raise ValueError("no tokens: the log-probabilities are empty")
    return a, b


def _check_lam(lam: float) -> float:
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"the interpolation weight must be in [0, 1], got {lam}")
    return float(lam)


def interpolate(logp_a, logp_b, lam: float) -> np.ndarray:
    """ln(lam P_a + (1 - lam) P_b) of each token, from the two models' ln P of the same tokens (stable in logs)."""
    a, b = _pair(logp_a, logp_b)
    lam = _check_lam(lam)
    if lam == 1.0:
        return a.copy()
    if lam == 0.0:
        return b.copy()
    return np.logaddexp(math.log(lam) + a, math.log1p(-lam) + b)


def interpolated_perplexity(logp_a, logp_b, lam: float) -> float:
    """exp(-mean ln(lam P_a + (1 - lam) P_b)): the perplexity of the mixture of two models on the same tokens."""
    return float(np.exp(-interpolate(logp_a, logp_b, lam).mean()))


def fit_interpolation(logp_a, logp_b, tol: float = 1e-12) -> float:
    """The weight lam in [0, 1] that maximises the likelihood of the tokens under lam P_a + (1 - lam) P_b.

    The log-likelihood L(lam) = sum_i ln(lam P_a(i) + (1 - lam) P_b(i)) is concave, so its maximum is where the
    derivative L'(lam) = sum_i (P_a(i) - P_b(i)) / (lam P_a(i) + (1 - lam) P_b(i)) -- decreasing in lam -- crosses
    zero, or an end of [0, 1] if it does not; bisection finds it to ``tol``. (Jelinek & Mercer's (1980) deleted
    interpolation reaches the same point with EM, lam <- mean of lam P_a / (lam P_a + (1 - lam) P_b), more
    slowly.) Fit it on held-out tokens and report the mixture's perplexity on others.
    """
    a, b = _pair(logp_a, logp_b)
    top = np.maximum(a, b)
    pa, pb = np.exp(a - top), np.exp(b - top)  # each token's two probabilities over the larger: in [0, 1]

    def slope(lam: float) -> float:
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.sum((pa - pb) / (lam * pa + (1.0 - lam) * pb)))

    if slope(0.0) <= 0.0:
        return 0.0
    if slope(1.0) >= 0.0:
        return 1.0
    lo, hi = 0.0, 1.0
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if slope(mid) > 0.0 else (lo, mid)
    return 0.5 * (lo + hi)

"""Negative sampling and the subsampling of frequent words (Mikolov et al. 2013b, secs. 2.2 and 2.3).

Shared by word2vec (chapter 4), fastText's subword skip-gram (chapter 6) and paragraph vectors (chapter 7).

**Negative sampling** (eq. 4) replaces log P(w_O | w_I) by a logistic regression that tells the observed
output word from k words drawn from a noise distribution P_n(w):

    log sigma(v'_{w_O}^T v_{w_I}) + sum_{i=1}^k E_{w_i ~ P_n(w)} [ log sigma(-v'_{w_i}^T v_{w_I}) ]      (eq. 4)

with P_n(w) = U(w)^{3/4} / Z, the unigram distribution raised to the 3/4 power (sec. 2.2: "significantly
outperformed the unigram and the uniform distributions").

**Subsampling** (eq. 5): each occurrence of word w with corpus frequency f(w) is discarded with probability

    P(w) = 1 - sqrt(t / f(w))                                                                           (eq. 5)

(t = 1e-5 in the paper), i.e. kept with probability min(1, sqrt(t / f)). word2vec.c (and gensim) keep
with probability sqrt(t / f) + t / f instead; ``rule="word2vec.c"`` gives that one.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .sparse_rows import add_rows_, take_rows

__all__ = ["NegativeSampler", "NegativeSampling", "keep_probability", "noise_distribution", "subsample"]


def _counts(counts: Any) -> torch.Tensor:
    c = torch.as_tensor(np.asarray(counts, dtype=np.float64)).reshape(-1)  # (V,)
    if c.numel() == 0 or (c < 0).any() or not torch.isfinite(c).all():
        raise ValueError("counts must be a non-empty vector of finite, non-negative numbers")
    return c


def noise_distribution(counts: Any, power: float = 0.75) -> torch.Tensor:
    """P_n(w) = count(w)^power / Z (float64, (V,)); words with count 0 are never drawn."""
    c = _counts(counts)
    p = torch.where(c > 0, c.pow(power), torch.zeros_like(c))
    if p.sum() <= 0:
        raise ValueError("all counts are zero: nothing to sample")
    return p / p.sum()


class NegativeSampler(nn.Module):
    """Draws noise words from P_n by inverting its CDF (``searchsorted`` on uniforms): exact, O(log V) a draw.

    word2vec.c fills a table of 1e8 ids instead; the CDF avoids the table's rounding of rare words. A module
    without parameters, so the CDF (a buffer) moves with the model that holds the sampler.
    """

    def __init__(self, counts: Any, power: float = 0.75):
        super().__init__()
        self.power = float(power)
        probs = noise_distribution(counts, power)  # (V,) float64
        cdf = probs.cumsum(0)
        cdf = (cdf / cdf[-1]).float()
        cdf[-1] = 1.0
        self.register_buffer("cdf", cdf)  # (V,)

    @property
    def probs(self) -> torch.Tensor:
        """P_n (V,) as the sampler sees it (the differences of the float32 CDF)."""
        return torch.diff(self.cdf.double(), prepend=self.cdf.new_zeros(1, dtype=torch.float64))

    @property
    def num_words(self) -> int:
        return self.cdf.numel()

    def sample(self, shape: tuple[int, ...], generator: torch.Generator | None = None) -> torch.Tensor:
        """Ids drawn i.i.d. from P_n, a LongTensor of ``shape``."""
        u = torch.rand(shape, device=self.cdf.device, generator=generator)
        return torch.searchsorted(self.cdf, u, right=True).clamp_(max=self.num_words - 1)


def keep_probability(counts: Any, t: float = 1e-5, rule: str = "paper") -> torch.Tensor:
    """The probability (V,) float64 of keeping each occurrence of a word: min(1, sqrt(t / f)) (eq. 5, ``"paper"``)
    or min(1, sqrt(t / f) + t / f) (``"word2vec.c"``, also gensim), f = count / total. ``t <= 0`` keeps all."""
    c = _counts(counts)
    if t <= 0:
        return torch.ones_like(c)
    f = c / c.sum()
    ratio = torch.where(f > 0, t / f, torch.full_like(f, float("inf")))
    if rule == "paper":
        keep = ratio.sqrt()
    elif rule == "word2vec.c":
        keep = ratio.sqrt() + ratio
    else:
        raise ValueError(f"rule must be 'paper' or 'word2vec.c', got {rule!r}")
    return keep.clamp(max=1.0)


def subsample(ids: torch.Tensor, keep: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """A boolean mask (N,) over a stream of ids (N,): ``True`` where the occurrence is kept (drawn per token)."""
    u = torch.rand(ids.shape, generator=generator, dtype=torch.float64, device=ids.device)
    return u < keep.to(ids.device)[ids]


class NegativeSampling(nn.Module):
    """The output side of eq. 4: one vector v'_w per word, ``weight`` (V, d), initialised to zero (word2vec.c).

    A noise word equal to the observed one is skipped (as word2vec.c does). ``loss`` uses autograd (for ``fit``
    and the gradient tests); ``sgd_step`` is the hand-written update of the fast trainers.
    """

    def __init__(self, sampler: NegativeSampler, dim: int, negatives: int = 5):
        super().__init__()
        if negatives < 1:
            raise ValueError(f"negatives (k) must be >= 1, got {negatives}")
        self.sampler, self.k = sampler, int(negatives)
        self.weight = nn.Parameter(torch.zeros(sampler.num_words, dim))  # (V, d): v'_w

    def _rows(self, y: torch.Tensor, noise: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        if noise is None:
            noise = self.sampler.sample((y.shape[0], self.k))  # (B, k)
        rows = torch.cat([y[:, None], noise], 1)  # (B, 1+k): the observed word, then the noise words
        keep = torch.ones_like(rows, dtype=torch.bool)
        keep[:, 1:] = noise != y[:, None]
        return rows, keep

    def loss(self, h: torch.Tensor, y: torch.Tensor, noise: torch.Tensor | None = None) -> torch.Tensor:
        """-1/B sum_b [log sigma(v'_{y}^T h) + sum_i log sigma(-v'_{n_i}^T h)]: h (B, d), y (B,), noise (B, k)."""
        rows, keep = self._rows(y, noise)
        x = torch.einsum("bkd,bd->bk", self.weight[rows], h)  # (B, 1+k)
        sign = torch.full_like(x, -1.0)
        sign[:, 0] = 1.0
        return -(F.logsigmoid(sign * x) * keep).sum() / h.shape[0]

    @torch.no_grad()
    def sgd_step(self, h: torch.Tensor, y: torch.Tensor, lr: float, noise: torch.Tensor | None = None,
                 group: int = 1, update: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """One SGD step on v' by hand: returns (summed loss, dL/dh (B, d)); ``update=False`` leaves v' as it is
        (paragraph vectors' inference, where only the new paragraph's vector moves).

        word2vec.c: ``g = (label - sigma(x)) * lr; neu1e += g v'; v' += g h``; here dL/dx = sigma(x) - label.

        ``group`` > 1 lets ``group`` examples share their k noise words: ``noise`` is then (nG, k) with
        nG = ceil(B / group), and example b uses row ``b % nG`` -- examples nG apart, i.e. from different centre
        words, so each centre word still meets fresh noise words in each of its pairs. The noise scores become
        small matrix products and k / group times fewer rows are read and written. ``group=1`` is word2vec.c's
        own k draws per example.
        """
        B, d = h.shape
        G = max(1, min(int(group), B))
        nG = -(-B // G)
        Bp = nG * G
        if noise is None:
            noise = self.sampler.sample((nG, self.k))  # (nG, k)
        if noise.shape[0] != nG:
            raise ValueError(f"noise must have ceil(B / group) = {nG} rows, got {noise.shape[0]}")
        U_pos = take_rows(self.weight, y)  # (B, d)
        x_pos = (U_pos * h).sum(1)  # (B,)
        pad = Bp - B
        hp = torch.cat([h, h.new_zeros(pad, d)]) if pad else h  # (Bp, d)
        yp = torch.cat([y, y.new_full((pad,), -1)]) if pad else y  # (Bp,)
        hg = hp.view(G, nG, d).transpose(0, 1)  # (nG, G, d): group g holds examples g, g + nG, g + 2 nG, ...
        U_neg = take_rows(self.weight, noise)  # (nG, k, d)
        x_neg = torch.bmm(hg, U_neg.transpose(1, 2))  # (nG, G, k)
        keep = noise[:, None, :] != yp.view(G, nG).T[:, :, None]  # (nG, G, k): skip a draw equal to the target
        if pad:
            keep &= (torch.arange(Bp, device=h.device).view(G, nG).T < B)[:, :, None]
        loss = -(F.logsigmoid(x_pos).sum() + (F.logsigmoid(-x_neg) * keep).sum())
        dx_pos = torch.sigmoid(x_pos) - 1.0  # (B,)
        dx_neg = torch.sigmoid(x_neg) * keep  # (nG, G, k)
        dh_neg = torch.bmm(dx_neg, U_neg).transpose(0, 1).reshape(Bp, d)[:B]  # (B, d)
        dh = dx_pos[:, None] * U_pos + dh_neg  # (B, d), from the old v'
        if not update:
            return loss, dh
        # v' -= lr * dL/dv': the step size goes into the per-score factors, not into (n, d) gradients
        add_rows_(self.weight, y, h * (-lr * dx_pos)[:, None])  # (B, d) positive targets
        step_neg = torch.bmm((-lr * dx_neg).transpose(1, 2), hg)  # (nG, k, d): summed over each group
        add_rows_(self.weight, noise.reshape(-1), step_neg.reshape(-1, d))
        return loss, dh

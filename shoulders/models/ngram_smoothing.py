"""Smoothing: from n-gram counts to the probability and backoff-weight tables of an n-gram LM.

Every method is written in one recursive form over the orders k = 1 .. n of the model (Chen & Goodman 1998,
"An Empirical Study of Smoothing Techniques for Language Modeling", TR-10-98, sec. 2 -- their eqs. written with
a_k for the count a method uses at order k):

    interpolated:  p_k(w | h) = alpha_k(h w) + gamma_k(h) * p_{k-1}(w | h')
    backoff:       p_k(w | h) = alpha_k(h w)  if a_k(h w) > 0  else  gamma_k(h) * p_{k-1}(w | h')

with h' = h minus its first word, p_0 = the uniform distribution over the predictable words (all but ``<s>``)
and, for a context h never seen at order k, gamma_k(h) = 1 ("use the lower order": standard backoff).
A line starts with one ``<s>`` (:mod:`.ngram_counts`), so a context h = ``<s> w_1 .. w_j`` is the *whole* history of
the word w_{j+1}, scored at order j + 2 <= n: such rows play the role of the top order for the start of a line
(Kneser-Ney counts them raw, add-k smooths them; nothing ever backs off to them).
Written per row of the count tables, the result is exactly an ARPA model: ``prob_k`` = p_k(w | h) for every
stored k-gram (interpolation folded in) and ``bow_k(h)`` = gamma_k(h) -- see :mod:`.ngram_backoff`.

Methods (``a_k`` = raw counts c unless said otherwise; tot_k(h) = sum_w a_k(h w); N_r(h.) = #{w: a_k(h w) = r}):

* ``mle``: alpha = c / tot, gamma = 0 -- zeros for every unseen n-gram (the zero problem).
* ``add_k`` (Lidstone; C&G sec. 2.1): p = (c + k) / (tot + k |V|) at order n (and after contexts that start with
  ``<s>``); the lower orders pass the uniform distribution through.
* ``interpolation`` (Jelinek & Mercer 1980; C&G sec. 2.3): alpha = lambda_k c / tot, gamma = 1 - lambda_k,
  one lambda per order, fitted by EM on held-out data (:func:`em_lambdas`).
* ``absolute`` (Ney, Essen & Kneser 1994; C&G sec. 2.6): alpha = max(c - D, 0) / tot, gamma = D N1+(h.) / tot;
  one D for all orders, one per order, or ``"auto"``: D = n1 / (n1 + 2 n2) per order (:func:`ney_discount`).
* ``kn`` (interpolated Kneser & Ney 1995; C&G sec. 2.7): as ``absolute`` but below the top order a_k is the
  continuation count N1+(. h w) = #{v: c(v h w) > 0} (``<s>`` counts as a v); an n-gram that starts with ``<s>``
  keeps its raw count (KenLM's adjusted counts: nothing can precede ``<s>``).
* ``mkn`` (modified KN, C&G sec. 3): three discounts D(a) = D1, D2, D3+ for a = 1, 2, >= 3 and
  gamma = (D1 N1(h.) + D2 N2(h.) + D3+ N3+(h.)) / tot, with, from the count-of-counts n_r of a_k at order k,
  Y = n1 / (n1 + 2 n2), D1 = 1 - 2Y n2/n1, D2 = 2 - 3Y n3/n2, D3+ = 3 - 4Y n4/n3 (:func:`mkn_discounts`).
  Estimating the D's of the lower orders from the continuation counts follows KenLM (Heafield et al. 2013).
* ``katz`` (Katz 1987; C&G sec. 2.4): backoff; alpha = d_c c / tot with Good-Turing d_r for r <= K (K = 5),
  gamma(h) = (1 - sum_{c>0} alpha) / (1 - sum_{c>0} p_{k-1}(w | h')) so that every context sums to 1. A context
  whose followers all have counts > K would leave nothing for unseen words (zeros, infinite perplexity); it
  keeps 1 / (c(h .) + 1) for them instead, as if one more, new, word had followed h once (our guard).
* ``stupid_backoff`` (Brants et al. 2007): S = c / tot if c > 0 else 0.4 S(w | h'). **Not normalised**: its
  scores are not probabilities, so it has no perplexity.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .ngram_counts import NGramCounts

__all__ = ["DEFAULTS", "METHODS", "DiscountFallbackWarning", "build_tables", "em_lambdas", "katz_discounts",
           "level_counts", "mkn_discounts", "ney_discount"]

DEFAULTS: dict[str, dict[str, Any]] = {
    "mle": {},
    "add_k": {"k": 0.01},
    "interpolation": {"lambdas": None},
    "absolute": {"discount": 0.75},
    "kn": {"discount": 0.75, "nltk": False},
    "mkn": {"discounts": None},
    "katz": {"gt_max": 5},
    "stupid_backoff": {"alpha": 0.4},
}
METHODS = tuple(DEFAULTS)
MKN_FALLBACK = (0.5, 1.0, 1.5)  # KenLM's --discount_fallback


class DiscountFallbackWarning(UserWarning):
    """Count-of-counts too degenerate to estimate discounts (tiny corpus, or no singletons): a fallback was used."""


def level_counts(counts: NGramCounts, n: int, k: int, continuation: bool) -> np.ndarray:
    """a_k per row, as float64: raw counts, or (Kneser-Ney, ``continuation`` and k < n) the continuation count
    N1+(. w_1..w_k) -- except for a k-gram that starts with ``<s>``, which has no left extension and keeps its raw
    count (KenLM's adjusted counts, Heafield et al. 2013)."""
    raw = counts.tables[k - 1].counts.astype(np.float64)
    if continuation and k < n:
        return np.where(counts.starts_with_bos(k), raw, counts.continuation(k))
    return raw


def _count_of_counts(a: np.ndarray, max_r: int) -> np.ndarray:
    """[n_0, n_1, .., n_max_r] of the positive integer counts in a (n_0 unused)."""
    ai = a[a > 0].astype(np.int64)
    return np.bincount(np.minimum(ai, max_r + 1), minlength=max_r + 2)[: max_r + 1]


def mkn_discounts(a: np.ndarray, order: int | None = None) -> tuple[float, float, float]:
    """(D1, D2, D3+) of modified Kneser-Ney from the count-of-counts n1..n4 of ``a`` (Chen & Goodman 1998, sec. 3).

    Y = n1/(n1 + 2 n2), D1 = 1 - 2Y n2/n1, D2 = 2 - 3Y n3/n2, D3+ = 3 - 4Y n4/n3. When some n_r is 0 or a D
    leaves (0, r) the estimate is meaningless; KenLM's fallback (0.5, 1, 1.5) is used, with a warning.
    """
    n = _count_of_counts(a, 4).astype(np.float64)
    n1, n2, n3, n4 = n[1], n[2], n[3], n[4]
    if min(n1, n2, n3, n4) > 0:
        y = n1 / (n1 + 2 * n2)
        d = (1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2, 3 - 4 * y * n4 / n3)
        if all(0 < di < r for di, r in zip(d, (1, 2, 3))):
            return tuple(float(v) for v in d)  # type: ignore[return-value]
    where = f" at order {order}" if order else ""
    warnings.warn(f"modified Kneser-Ney: count-of-counts n1..n4 = {n[1:].astype(int).tolist()}{where} give no "
                  f"valid discounts; using the fallback {MKN_FALLBACK} (pass discounts= to choose)",
                  DiscountFallbackWarning, stacklevel=4)
    return MKN_FALLBACK


def ney_discount(a: np.ndarray, order: int | None = None) -> float:
    """D = n1 / (n1 + 2 n2), the estimate of Ney, Essen & Kneser (1994) used by ``discount="auto"``.

    Falls back to 0.75 (with a warning) when n1 or n2 is 0.
    """
    n = _count_of_counts(a, 2).astype(np.float64)
    if n[1] > 0 and n[2] > 0:
        return float(n[1] / (n[1] + 2 * n[2]))
    where = f" at order {order}" if order else ""
    warnings.warn(f"discount='auto': n1, n2 = {n[1:].astype(int).tolist()}{where}; using D = 0.75",
                  DiscountFallbackWarning, stacklevel=4)
    return 0.75


def katz_discounts(a: np.ndarray, gt_max: int = 5) -> np.ndarray:
    """Katz's Good-Turing discount ratios d_r for r = 0 .. gt_max (d_0 unused; Katz 1987, eq. for d_r).

    r* = (r + 1) n_{r+1} / n_r;  d_r = (r*/r - (K+1) n_{K+1}/n_1) / (1 - (K+1) n_{K+1}/n_1),  K = ``gt_max``.
    A d_r outside (0, 1] (non-monotone count-of-counts on small data) is replaced by 1 (no discount).
    """
    n = np.bincount(a[a > 0].astype(np.int64), minlength=gt_max + 2)[: gt_max + 2].astype(np.float64)
    d = np.ones(gt_max + 1)
    if n[1] == 0:
        return d
    common = (gt_max + 1) * n[gt_max + 1] / n[1]
    for r in range(1, gt_max + 1):
        if n[r] > 0 and common < 1:
            dr = ((r + 1) * n[r + 1] / (r * n[r]) - common) / (1 - common)
            if 0 < dr <= 1:
                d[r] = dr
    return d


def _per_order(value: Any, n: int, name: str) -> list:
    """One value per order 1..n from a scalar (or ``"auto"``) or a sequence of n values."""
    if isinstance(value, str) or np.ndim(value) == 0:
        return [value] * n
    value = list(value)
    if len(value) != n:
        raise ValueError(f"{name} must be one value or one per order 1..{n}, got {len(value)} values")
    return value


def _mkn_param(value: Any, n: int) -> list:
    """``discounts`` of ``mkn``: None (estimate), one (D1, D2, D3+) for all orders, or one triple per order."""
    if value is None:
        return [None] * n
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape == (3,):
        arr = np.tile(arr, (n, 1))
    if arr.shape != (n, 3):
        raise ValueError(f"discounts must be (D1, D2, D3+) or one such triple per order 1..{n}, got shape {arr.shape}")
    if not np.all((arr >= 0) & (arr <= np.array([1.0, 2.0, 3.0]))):
        raise ValueError(f"modified KN discounts need 0 <= D1 <= 1, 0 <= D2 <= 2, 0 <= D3+ <= 3, got {arr.tolist()}")
    return [tuple(float(v) for v in row) for row in arr]


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den > 0)
    return out


def build_tables(counts: NGramCounts, n: int, method: str, params: dict[str, Any]):
    """The ARPA-shaped tables of an order-n model: ``(prob, bow, unseen_bow, info)``.

    ``prob[k-1]`` (R_k,) = p_k(w | h) for every row of the order-k count table; ``bow[k-1]`` (R_k,) = gamma_{k+1}
    of that row used as a context (k = 1 .. n-1); ``unseen_bow`` = gamma of a context absent from the tables;
    ``info`` = the estimated parameters (discounts per order, ...).
    """
    V = len(counts.vocab)
    base = np.ones(V)
    if counts.padded:
        base[counts.vocab[counts.bos]] = 0.0  # <s> is never predicted
    vp = base.sum()
    base /= vp
    nltk = method == "kn" and params.get("nltk", False)
    backoff = method in ("katz", "stupid_backoff")
    disc = _per_order(params.get("discount", 0.75), n, "discount")
    mkn = _mkn_param(params.get("discounts"), n)
    lambdas = params.get("lambdas")
    info: dict[str, Any] = {"discounts": [], "vocab_predictable": int(vp)}
    probs: list[np.ndarray] = []
    bows: list[np.ndarray] = []
    for k in range(1, n + 1):
        t = counts.tables[k - 1]
        a = level_counts(counts, n, k, method in ("kn", "mkn"))
        ctx = t.keys // V if k > 1 else np.zeros(len(t), dtype=np.int64)
        nctx = len(counts.tables[k - 2]) if k > 1 else 1
        tot = np.bincount(ctx, weights=a, minlength=nctx)
        seen = tot > 0
        low = base[t.keys] if k == 1 else probs[-1][t.suffix]  # p_{k-1}(w | h') for each row
        follow = np.bincount(ctx, weights=(a > 0), minlength=nctx)  # N1+(h .)
        if method == "mle":
            alpha, gamma = _safe_div(a, tot[ctx]), np.where(seen, 0.0, 1.0)
        elif method == "add_k":
            kk = float(params["k"])
            den = tot + kk * vp
            alpha, gamma = a / den[ctx], kk * vp / den
            if k < n:  # lower orders pass the uniform distribution through, except after a context that
                # starts with <s>: it is the whole context of a word early in its line, so it gets add-k too
                start = counts.starts_with_bos(k - 1) if k > 1 else np.zeros(1, dtype=bool)
                alpha, gamma = np.where(start[ctx], alpha, 0.0), np.where(start, gamma, 1.0)
        elif method == "interpolation":
            lam = float(lambdas[k - 1])
            alpha, gamma = lam * _safe_div(a, tot[ctx]), np.where(seen, 1.0 - lam, 1.0)
        elif method in ("absolute", "kn"):
            d = ney_discount(a, k) if isinstance(disc[k - 1], str) else float(disc[k - 1])
            info["discounts"].append(d)
            if nltk and k == 1 and n > 1:  # NLTK: undiscounted continuation unigram, no uniform floor
                alpha, gamma = _safe_div(a, tot[ctx]), np.zeros(1)
            else:
                if nltk and k < n:  # NLTK counts the context's followers in the raw counts
                    follow = np.bincount(ctx, weights=(t.counts > 0), minlength=nctx)
                alpha = _safe_div(np.maximum(a - d, 0.0), tot[ctx])
                gamma = np.where(seen, _safe_div(d * follow, tot), 1.0)
        elif method == "mkn":
            d1, d2, d3 = mkn[k - 1] if mkn[k - 1] is not None else mkn_discounts(a, k)
            info["discounts"].append((d1, d2, d3))
            dc = np.select([a >= 3, a == 2, a == 1], [d3, d2, d1], 0.0)
            alpha = _safe_div(np.maximum(a - dc, 0.0), tot[ctx])
            nr = [np.bincount(ctx, weights=m, minlength=nctx) for m in (a == 1, a == 2, a >= 3)]
            gamma = np.where(seen, _safe_div(d1 * nr[0] + d2 * nr[1] + d3 * nr[2], tot), 1.0)
        elif method == "katz":
            d = katz_discounts(a, int(params["gt_max"]))
            info["discounts"].append(d[1:].tolist())
            ai = a.astype(np.int64)
            alpha = _safe_div(np.where(ai <= len(d) - 1, d[np.minimum(ai, len(d) - 1)], 1.0) * a, tot[ctx])
            pos = a > 0
            left = np.maximum(1.0 - np.bincount(ctx, weights=alpha * pos, minlength=nctx), 0.0)
            # guard: a context whose followers all have counts > K keeps all its mass (unseen words would get
            # probability 0); leave them 1 / (c(h .) + 1), as if one more, new, word had followed h once
            starving = seen & (left <= 1e-12)
            if starving.any():
                eps = 1.0 / (tot + 1.0)
                alpha = np.where(starving[ctx], alpha * (1.0 - eps[ctx]), alpha)
                left = np.where(starving, eps, left)
            den = 1.0 - np.bincount(ctx, weights=low * pos, minlength=nctx)
            full = seen & (den <= 1e-12)  # the seen words cover the lower order: renormalise, nothing left over
            if full.any():
                s = np.bincount(ctx, weights=alpha * pos, minlength=nctx)
                alpha = np.where(full[ctx], _safe_div(alpha, s[ctx]), alpha)
            gamma = np.where(seen, np.where(full, 0.0, _safe_div(left, np.where(full, 1.0, den))), 1.0)
        elif method == "stupid_backoff":
            alpha = _safe_div(a, tot[ctx])
            gamma = np.full(nctx, 0.0 if k == 1 else float(params["alpha"]))
        else:  # pragma: no cover - validated by the caller
            raise ValueError(method)
        prob = np.where(a > 0, alpha, gamma[ctx] * low) if backoff else alpha + gamma[ctx] * low
        probs.append(prob)
        if k > 1:
            bows.append(gamma)
    unseen = float(params["alpha"]) if method == "stupid_backoff" else 1.0
    return probs, bows, unseen, info


def em_lambdas(ml: np.ndarray, seen: np.ndarray, base: np.ndarray, init: np.ndarray, max_iter: int = 500,
               tol: float = 1e-9) -> tuple[np.ndarray, float]:
    """EM for the per-order weights of recursive Jelinek-Mercer interpolation on held-out tokens.

    ``ml`` (T, n): p_ML at orders 1..n of each held-out token; ``seen`` (T, n): its context was seen at that order
    (else the order is skipped: lambda = 0 for that token); ``base`` (T,): p_0 (uniform). Each step is exact EM
    for the nested mixture (Jelinek & Mercer 1980, "deleted interpolation"): with the posterior R_k of reaching
    order k and q_k of stopping there, lambda_k = sum q_k / sum R_k over tokens whose order-k context was seen.
    The held-out log-likelihood never decreases. Returns (lambdas, held-out mean log-likelihood).
    """
    T, n = ml.shape
    lam = np.clip(np.asarray(init, dtype=np.float64), 1e-6, 1 - 1e-6)
    prev = -np.inf
    tiny = 1e-300
    for _ in range(max_iter):
        lk = np.where(seen, lam, 0.0)  # (T, n)
        p = [np.maximum(base, tiny)]
        for k in range(n):
            p.append(np.maximum(lk[:, k] * ml[:, k] + (1 - lk[:, k]) * p[-1], tiny))
        ll = float(np.mean(np.log(p[-1])))
        reach = np.ones(T)
        num, den = np.zeros(n), np.zeros(n)
        for k in range(n - 1, -1, -1):
            q = reach * lk[:, k] * ml[:, k] / p[k + 1]
            num[k] = q[seen[:, k]].sum()
            den[k] = reach[seen[:, k]].sum()
            reach = reach - q
        lam = np.where(den > 0, np.clip(num / np.where(den > 0, den, 1), 1e-6, 1 - 1e-6), lam)
        if ll - prev < tol:
            break
        prev = ll
    return lam, ll

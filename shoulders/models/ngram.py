"""Statistical n-gram language models: counting, smoothing, perplexity, sampling, ARPA files.

A language model assigns P(w_1 .. w_T) = prod_t P(w_t | w_1 .. w_{t-1}) (the chain rule). The n-gram model makes
the Markov assumption P(w_t | w_1 .. w_{t-1}) ~ P(w_t | w_{t-n+1} .. w_{t-1}) and estimates it from counts:
P_ML(w | h) = c(h w) / c(h .). Most n-grams are never seen (the zero problem, :func:`oov_and_zero_rates`), so
the counts are smoothed -- see :mod:`.ngram_smoothing` for the eight methods and their equations.

    from shoulders.models import ngram
    counts = ngram.count_ngrams(sh.data.wikitext2("train"), order=5)        # one pass per order, NumPy only
    lm = ngram.NGramLM(counts, n=5, smoothing="mkn")                        # modified Kneser-Ney
    lm.perplexity(sh.data.wikitext2("valid")); lm.logprob("the", ("of",)); lm.distribution(("of",))
    lm.sample(max_len=20, temperature=0.8, rng=0); ngram.write_arpa(lm, "wt2.5gram.arpa")
    ngram.NGramLM.from_arpa("wt2.5gram.arpa")                               # scores the same

The pieces, one job per file: :mod:`.ngram_counts` (integer-hashed counting), :mod:`.ngram_smoothing`
(probability tables of each method), :mod:`.ngram_backoff` (the vectorised scorer), :mod:`.ngram_arpa` (files).
Sentences follow KenLM and SRILM (one ``<s>`` before each line, ``<eos>`` written ``</s>`` in ARPA files), and
modified KN is estimated as KenLM's ``lmplz`` does it: the same discounts, and WikiText-2 test perplexities that
agree to ~1e-6 (tests/test_ngram_kenlm.py); ``benchmarks/ngram.py`` times building, writing and scoring against
KenLM's programs. NumPy only: nothing here imports PyTorch.

References: Jelinek & Mercer (1980), Interpolated estimation of Markov source parameters from sparse data.
Katz (1987), Estimation of probabilities from sparse data for the language model component of a speech
recognizer, IEEE TASSP 35(3). Ney, Essen & Kneser (1994), On structuring probabilistic dependences in stochastic
language modelling, CSL 8. Kneser & Ney (1995), Improved backing-off for m-gram language modeling, ICASSP.
Chen & Goodman (1998), An empirical study of smoothing techniques for language modeling, TR-10-98, Harvard.
Brants, Popat, Xu, Och & Dean (2007), Large language models in machine translation, EMNLP-CoNLL.
Heafield, Pouzyrevsky, Clark & Koehn (2013), Scalable modified Kneser-Ney language model estimation, ACL.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..config import Config, ConfigError
from .ngram_arpa import format_decimals, read_arpa, write_arpa
from .ngram_backoff import BackoffLM
from .ngram_counts import BOS, UNK, NGramCounts, count_ngrams, padded_stream, stream_rows
from .ngram_smoothing import (DEFAULTS, METHODS, DiscountFallbackWarning, build_tables, em_lambdas,
                              katz_discounts, level_counts, mkn_discounts, ney_discount)

__all__ = ["BOS", "METHODS", "UNK", "BackoffLM", "DiscountFallbackWarning", "NGramConfig", "NGramCounts", "NGramLM",
           "count_ngrams", "format_decimals", "katz_discounts", "load_arpa", "mkn_discounts", "nltk_kneser_ney",
           "ney_discount", "oov_and_zero_rates", "read_arpa", "write_arpa"]

ALIASES = {"add-k": "add_k", "lidstone": "add_k", "jelinek_mercer": "interpolation", "kneser_ney": "kn",
           "modified_kneser_ney": "mkn", "stupid": "stupid_backoff", "sb": "stupid_backoff"}
LAMBDA_INIT = (0.99, 0.5)  # untuned lambdas: unigram vs uniform, then every higher order


@dataclasses.dataclass
class NGramConfig(Config):
    """How much of WikiText-2 chapter 1 counts at each scale (``None``: the whole split)."""

    train_lines: int | None = None
    valid_lines: int | None = None
    report_test: bool = False  # also score the test split

    presets: ClassVar = {
        "smoke": dict(train_lines=10_000, valid_lines=1_000),  # CI: the first ~560k training tokens
        "cpu": dict(),  # all of WikiText-2 (2.1M tokens)
        "full": dict(report_test=True),  # ... and the test split reported too
    }

    def validate(self) -> None:
        if any(n is not None and n < 1 for n in (self.train_lines, self.valid_lines)):
            raise ConfigError(f"train_lines and valid_lines must be positive or None, got {self.train_lines}, "
                              f"{self.valid_lines}")


class NGramLM(BackoffLM):
    """An order-``n`` LM over ``counts`` (orders 1..n of them) with one of :data:`METHODS` as ``smoothing``.

    Parameters (defaults in :data:`.ngram_smoothing.DEFAULTS`): ``k`` (add_k); ``lambdas`` (interpolation: one
    per order 1..n, None = untuned defaults -- call :meth:`tune`); ``discount`` (absolute, kn: one D or one per
    order, 0 <= D <= 1, or ``"auto"`` = n1 / (n1 + 2 n2) per order); ``nltk`` (kn: reproduce
    ``nltk.lm.KneserNeyInterpolated``, see below); ``discounts``
    (mkn: None = estimated from count-of-counts, or (D1, D2, D3+), or one triple per order); ``gt_max`` (katz:
    the largest count that is Good-Turing discounted, K = 5); ``alpha`` (stupid_backoff, 0.4).

    **The NLTK convention** (``kn`` with ``nltk=True``, counts built with ``pad=False`` from NLTK-padded
    sentences): NLTK's KneserNeyInterpolated (3.x) (1) pads with n-1 ``<s>`` *and* n-1 ``</s>`` and predicts all
    of them; (2) ends the recursion at the undiscounted continuation unigram N1+(. w) / N1+(. .) -- no uniform
    floor, so a word never seen after another word gets probability 0; (3) weights a lower order by
    D * #{w: c(h w) > 0} / N1+(. h .), counting h's followers in the raw counts; (4) uses one D (default 0.1)
    at every order; (5) maps unknown words to its own ``"<UNK>"`` (so a corpus token ``<unk>`` is an ordinary
    word). Our default KN instead discounts the unigram level too and interpolates it with the uniform
    distribution (Chen & Goodman 1998), puts one ``<s>`` before a sentence and never predicts it, and counts an
    n-gram that starts with ``<s>`` raw (KenLM's convention). :func:`nltk_kneser_ney` sets all of this up;
    the two then agree to ~1e-16 (tests/test_ngram_nltk.py).
    """

    def __init__(self, counts: NGramCounts, n: int = 3, smoothing: str = "mkn", **params: Any) -> None:
        if not isinstance(counts, NGramCounts):
            raise TypeError(f"counts must come from ngram.count_ngrams, got {type(counts).__name__}")
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
            raise ValueError(f"n must be an integer >= 1, got {n!r}")
        if n > counts.order:
            raise ValueError(f"n={n} is larger than the order of the counts ({counts.order}); "
                             f"count with count_ngrams(lines, order={n})")
        method = ALIASES.get(str(smoothing).lower(), str(smoothing).lower())
        if method not in METHODS:
            raise ValueError(f"unknown smoothing {smoothing!r}; choose one of {', '.join(METHODS)}")
        unknown = set(params) - set(DEFAULTS[method])
        if unknown:
            raise TypeError(f"{method} takes {sorted(DEFAULTS[method]) or 'no parameters'}, got {sorted(unknown)}")
        self.counts, self.smoothing = counts, method
        self.params = {**DEFAULTS[method], **params}
        self._validate(int(n))
        self.info: dict[str, Any] = {}
        self._fit(int(n))

    def _validate(self, n: int) -> None:
        p, m = self.params, self.smoothing
        if m == "add_k" and not (float(p["k"]) > 0 and np.isfinite(float(p["k"]))):
            raise ValueError(f"add_k needs k > 0 (k = 0 is mle), got {p['k']!r}")
        if m in ("absolute", "kn") and not (isinstance(p["discount"], str) and p["discount"] == "auto"):
            try:
                d = np.atleast_1d(np.asarray(p["discount"], dtype=np.float64))
            except (TypeError, ValueError):
                d = np.array([np.nan])
            if d.size not in (1, n) or np.any(~np.isfinite(d)) or np.any((d < 0) | (d > 1)):
                raise ValueError(f"discount must be 'auto' or in [0, 1] (one value or one per order), "
                                 f"got {p['discount']!r}")
        if m == "kn":
            if p.get("nltk") and (n < 2 or self.counts.padded):
                raise ValueError("nltk=True reproduces NLTK's KneserNeyInterpolated: it needs n >= 2 and counts of "
                                 "NLTK-padded sentences built with count_ngrams(..., pad=False)")
        if m == "interpolation":
            if p["lambdas"] is None:
                p["lambdas"] = [LAMBDA_INIT[0]] + [LAMBDA_INIT[1]] * (n - 1)
            lam = np.asarray(p["lambdas"], dtype=np.float64)
            if lam.shape != (n,) or np.any(~np.isfinite(lam)) or np.any((lam < 0) | (lam > 1)):
                raise ValueError(f"lambdas must be {n} values in [0, 1] (orders 1..{n}), got {p['lambdas']!r}")
        if m == "katz" and (int(p["gt_max"]) < 1):
            raise ValueError(f"gt_max must be >= 1, got {p['gt_max']!r}")
        if m == "stupid_backoff" and not 0 < float(p["alpha"]) <= 1:
            raise ValueError(f"stupid backoff alpha must be in (0, 1], got {p['alpha']!r}")

    def _fit(self, n: int) -> None:
        probs, bows, unseen, self.info = build_tables(self.counts, n, self.smoothing, self.params)
        keys = [t.keys for t in self.counts.tables[:n]]
        super().__init__(self.counts.vocab, keys, probs, bows, bos=self.counts.bos, unseen_bow=unseen,
                         normalized=self.smoothing != "stupid_backoff", name=self.smoothing)

    @property
    def discounts(self) -> list:
        """The discounts used per order 1..n (absolute, kn: D; mkn: (D1, D2, D3+); katz: d_1..d_K)."""
        return list(self.info.get("discounts", []))

    # ------------------------------------------------------------------ held-out tuning
    def _heldout(self, lines: Sequence[Sequence[str]]):
        """Per held-out token and order k: (c_k(h w), tot_k(h)), 0 where the row or context is absent (or the
        context would reach past the line's ``<s>``); p_0; and the highest order that exists for each token."""
        n, V = self.n, len(self.vocab)
        x, pos, real = padded_stream(lines, self.vocab, min(1, n - 1), self.counts.bos)
        j = np.flatnonzero(real)
        if not len(j):
            raise ValueError("no held-out tokens to tune on")
        rows = stream_rows([t.keys for t in self.counts.tables[:n]], V, x, pos)
        num, tot = np.zeros((len(j), n)), np.zeros((len(j), n))
        for k in range(1, n + 1):
            t = self.counts.tables[k - 1]
            a = level_counts(self.counts, n, k, False)
            ctx = t.keys // V if k > 1 else np.zeros(len(t), dtype=np.int64)
            totals = np.bincount(ctx, weights=a, minlength=len(self.counts.tables[k - 2]) if k > 1 else 1)
            g = rows[k - 1][j]
            h = rows[k - 2][j - 1] if k > 1 else np.zeros(len(j), dtype=np.int64)
            num[:, k - 1] = np.where(g >= 0, a[np.maximum(g, 0)], 0.0)
            tot[:, k - 1] = np.where(h >= 0, totals[np.maximum(h, 0)], 0.0)
        base = np.full(len(j), 1.0 / self.info["vocab_predictable"])
        top = np.minimum(pos[j] + 1, n) - 1  # index of the order whose context is the token's whole history
        return num, tot, base, top

    def tune(self, valid_lines: Sequence[Sequence[str]], **options: Any) -> "NGramLM":
        """Fit the held-out parameters on ``valid_lines`` and rebuild; returns ``self``.

        * ``interpolation``: the n lambdas by EM (:func:`.ngram_smoothing.em_lambdas`; Jelinek & Mercer 1980);
        * ``add_k``: k by a log-spaced grid over 1e-6 .. 10 refined by golden-section search on held-out log-lik.
        Other methods have nothing fitted on held-out data (modified KN estimates its discounts from the
        count-of-counts) and raise ``ValueError``.
        """
        num, tot, base, top = self._heldout(valid_lines)
        if self.smoothing == "interpolation":
            ml = np.divide(num, tot, out=np.zeros_like(num), where=tot > 0)
            lam, ll = em_lambdas(ml, tot > 0, base, np.asarray(self.params["lambdas"]), **options)
            self.params["lambdas"] = lam.tolist()
        elif self.smoothing == "add_k":
            at = np.arange(len(top))
            vp, c, t = self.info["vocab_predictable"], num[at, top], tot[at, top]

            def ll(log_k: float) -> float:
                k = 10.0 ** log_k
                return float(np.mean(np.log((c + k) / (t + k * vp))))
            grid = np.linspace(-6, 1, 29)
            i = int(np.argmax([ll(g) for g in grid]))
            lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
            phi = (np.sqrt(5) - 1) / 2
            for _ in range(40):
                a, b = hi - phi * (hi - lo), lo + phi * (hi - lo)
                lo, hi = (lo, b) if ll(a) >= ll(b) else (a, hi)
            self.params["k"] = float(10.0 ** ((lo + hi) / 2))
        else:
            raise ValueError(f"{self.smoothing} has no held-out parameters to tune (only interpolation and add_k)")
        self._fit(self.n)
        return self

    # ------------------------------------------------------------------ ARPA
    @classmethod
    def from_arpa(cls, path: str | os.PathLike, **kwargs: Any) -> BackoffLM:
        """Load an ARPA file (ours or SRILM's / KenLM's) as a :class:`BackoffLM` scoring exactly as the file says."""
        return read_arpa(path, **kwargs)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{s:,}" for s in self.sizes)
        shown = {k: v for k, v in self.params.items() if k != "nltk" or v}
        return f"NGramLM(n={self.n}, smoothing={self.smoothing!r}, params={shown}, n-grams per order [{sizes}])"


def nltk_kneser_ney(sentences: Sequence[Sequence[str]], order: int = 3, discount: float = 0.1) -> NGramLM:
    """Our KN configured to score exactly like ``nltk.lm.KneserNeyInterpolated(order, discount)`` fitted on
    ``padded_everygram_pipeline(order, sentences)`` (see :class:`NGramLM` for the five conventions)."""
    pad = order - 1
    padded = [[BOS] * pad + list(s) + ["</s>"] * pad for s in sentences]
    counts = count_ngrams(padded, order=order, pad=False, unk="<UNK>")
    return NGramLM(counts, n=order, smoothing="kn", discount=discount, nltk=True)


def load_arpa(path: str | os.PathLike, **kwargs: Any) -> BackoffLM:
    """Same as :meth:`NGramLM.from_arpa`."""
    return read_arpa(path, **kwargs)


def oov_and_zero_rates(train_counts: NGramCounts, lines: Sequence[Sequence[str]], n_max: int = 5) -> dict[int, float]:
    """The zero problem, measured: for n = 1 .. ``n_max``, the share of the tokens of ``lines`` whose n-gram (the
    token and the n - 1 words before it in its line; near the start of a line, the shorter n-gram that begins
    with the line's ``<s>``) never occurs in the training counts -- the context an order-n model would look up.

    A token outside the training vocabulary (OOV) makes every n-gram that contains it unseen, so n = 1 is the OOV
    rate (plus in-vocabulary words with zero count). An unseen n-gram stays unseen when extended, so the rates
    never decrease with n.
    """
    if not isinstance(train_counts, NGramCounts):
        raise TypeError("train_counts must come from ngram.count_ngrams")
    n_max = train_counts._check_n(n_max)
    vocab, V = train_counts.vocab, len(train_counts.vocab)
    x, pos, real = padded_stream(lines, vocab, 1 if train_counts.padded else 0, train_counts.bos)
    j = np.flatnonzero(real)
    if not len(j):
        raise ValueError("no tokens in lines")
    flat = [w for line in lines for w in line]
    oov = np.fromiter((w not in vocab for w in flat), dtype=bool, count=len(flat))
    rows = stream_rows([t.keys for t in train_counts.tables[:n_max]], V, x, pos)
    bad = np.zeros(len(x), dtype=bool)
    bad[j[oov]] = True  # positions holding an OOV token
    out: dict[int, float] = {}
    recent_bad = np.zeros(len(j), dtype=bool)
    seen = np.ones(len(j), dtype=bool)
    for k in range(1, n_max + 1):
        fits = pos[j] >= k - 1  # the k-gram lies inside the line (else the shorter one counts, as the model does)
        recent_bad |= bad[j - (k - 1)] & fits
        g = rows[k - 1][j]
        seen_k = (g >= 0) & (train_counts.tables[k - 1].counts[np.maximum(g, 0)] > 0) & ~recent_bad
        seen = np.where(fits, seen_k, seen)
        out[k] = float(1.0 - seen.mean())
    return out

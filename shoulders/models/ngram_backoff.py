"""The scoring engine of every n-gram model: a backoff LM over sorted n-gram tables (the shape of an ARPA file).

For a word w after a context h, take the longest k for which the k-gram (h_k, w) is stored; then (Katz 1987)

    p(w | h) = P_k(w | h_k) * prod_{m = k+1 .. n} bow_m(h_m)

where h_m is the last m - 1 words of h and bow_m(h_m) = 1 when h_m itself is not stored. Interpolated models
(Jelinek-Mercer, absolute discounting, Kneser-Ney) fit this form exactly once the interpolation is folded into
the stored P_k (see :mod:`.ngram_smoothing`), so one vectorised scorer serves every method and ARPA files alike.

Scoring a corpus is one ``searchsorted`` per order over the whole token stream (``benchmarks/ngram.py`` times it
against KenLM's ``query``). Sentences follow the convention of :mod:`.ngram_counts`, KenLM's and SRILM's: each line
is preceded by one ``<s>``, its last token (``<eos>``, written ``</s>`` in an ARPA file) ends it, and ``<s>`` is
never predicted -- so the first word of a line is scored by p(w_1 | <s>), the second by p(w_2 | <s> w_1), ..., and
the number of scored tokens is the number of tokens in the lines, the same as a neural LM's stream.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..text.vocab import Vocab
from .ngram_counts import BOS, padded_stream, stream_hits, stream_rows

__all__ = ["BackoffLM"]

EOS = "<eos>"


def _log(a: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(a)


class BackoffLM:
    """An order-n backoff LM: ``keys[k-1]`` (sorted int64 rows of order k), ``prob[k-1]`` = P_k per row,
    ``bow[k-1]`` = backoff weight of each order-k row used as a context (k < n).

    ``unseen_bow`` is the weight of a context that is not stored (1: plain backoff; 0.4 for stupid backoff).
    ``normalized=False`` marks scores that are not probabilities (stupid backoff): no perplexity, and
    :meth:`distribution` renormalises them so they can be sampled.
    """

    def __init__(self, vocab: Vocab, keys: Sequence[np.ndarray], prob: Sequence[np.ndarray],
                 bow: Sequence[np.ndarray], *, bos: str = BOS, eos: str = EOS, unseen_bow: float = 1.0,
                 normalized: bool = True, name: str = "backoff") -> None:
        if not len(keys) or len(prob) != len(keys) or len(bow) != len(keys) - 1:
            raise ValueError("need n key tables, n probability tables and n-1 backoff tables")
        self.vocab, self.bos, self.eos, self.name = vocab, bos, eos, name
        self.n = len(keys)
        self.normalized = bool(normalized)
        self._keys = [np.asarray(k, dtype=np.int64) for k in keys]
        self._prob = [np.asarray(p, dtype=np.float64) for p in prob]
        self._bow = [np.asarray(b, dtype=np.float64) for b in bow]
        self._unseen_bow = float(unseen_bow)
        if any(not np.all(np.isfinite(b)) or np.any(b < 0) for b in self._bow) or any(
                not np.all(np.isfinite(p)) or np.any(p < 0) for p in self._prob):
            raise ValueError("probabilities and backoff weights must be finite and >= 0")
        self._logp = [_log(p) for p in self._prob]
        self._logbow = [_log(b) for b in self._bow]
        self._V = len(vocab)

    # ------------------------------------------------------------------ sizes
    @property
    def sizes(self) -> list[int]:
        """Number of stored k-grams per order k = 1 .. n (the ARPA header)."""
        return [len(k) for k in self._keys]

    # ------------------------------------------------------------------ the scorer
    def _score(self, x: np.ndarray, pos: np.ndarray, j: np.ndarray, m: int) -> np.ndarray:
        """Natural-log p of token x[j] given the up to m - 1 tokens before it in its line (vectorised).

        From order 1 up: a token whose k-gram is stored takes P_k; one whose k-gram is not, but whose order-k
        context fits in the line, adds that context's log backoff weight -- the backoff formula above, order by
        order, over only the positions :func:`.ngram_counts.stream_hits` found.
        """
        if len(x) and (x.min() < 0 or x.max() >= len(self._keys[0])):
            raise ValueError("a token id is outside the model's unigram table")
        hits = stream_hits(self._keys[:m], self._V, x, pos)
        score = self._logp[0][x]
        log_unseen = float(_log(np.array(self._unseen_bow)))
        T = len(x)
        for k in range(2, m + 1):
            if log_unseen != 0.0:
                score[pos >= k - 1] += log_unseen  # a context that is not stored: the unseen weight ...
            at, row = hits[k - 2]  # ... a stored one: its own weight
            nxt = at + 1
            ok = nxt < T
            nxt, row = nxt[ok], row[ok]
            ok = pos[nxt] >= 1
            score[nxt[ok]] += self._logbow[k - 2][row[ok]] - log_unseen
            at, row = hits[k - 1]
            score[at] = self._logp[k - 1][row]  # a stored k-gram: its probability, the weights below dropped
        return score[j]

    def _context(self, context: Any) -> tuple[str, ...]:
        if isinstance(context, str):
            context = context.split()
        context = tuple(context or ())
        if any(not isinstance(w, str) for w in context):
            raise TypeError("context must be a sequence of words (str)")
        return context[max(0, len(context) - (self.n - 1)):] if self.n > 1 else ()

    def logprob(self, word: str, context: Sequence[str] = ()) -> float:
        """ln p(word | context). Only the last n - 1 words of ``context`` are used; a shorter context is scored by
        the model's lower-order distribution (as NLTK and KenLM do) -- put one ``<s>`` first to mean "at the start
        of a sentence". Unknown words count as ``<unk>``; a zero probability gives ``-inf``."""
        if not isinstance(word, str):
            raise TypeError(f"word must be a str, got {type(word).__name__}")
        ctx = self._context(context)
        x = np.asarray(self.vocab.encode(list(ctx) + [word]), dtype=np.int64)
        return float(self._score(x, np.arange(len(x)), np.array([len(x) - 1]), len(x))[0])

    def score(self, word: str, context: Sequence[str] = ()) -> float:
        """p(word | context) = exp(:meth:`logprob`)."""
        return float(np.exp(self.logprob(word, context)))

    def distribution(self, context: Sequence[str] = ()) -> np.ndarray:
        """p(. | context) over the whole vocabulary, (|V|,) float64 summing to 1 (``<s>`` gets 0)."""
        ctx = self._context(context)
        p = self._prob[0].copy()
        if ctx:
            c = np.asarray(self.vocab.encode(list(ctx)), dtype=np.int64)
            L = len(c)
            rows = stream_rows(self._keys[:L], self._V, c, np.arange(L))
            for k in range(2, L + 2):
                h = int(rows[k - 2][L - 1])  # row of the last k-1 context words
                if h < 0:
                    p *= self._unseen_bow
                    continue
                p *= self._bow[k - 2][h]
                keys = self._keys[k - 1]
                lo, hi = np.searchsorted(keys, [h * self._V, (h + 1) * self._V])
                p[keys[lo:hi] - h * self._V] = self._prob[k - 1][lo:hi]
        if not self.normalized:
            s = p.sum()
            p = p / s if s > 0 else p
        return p

    def top_k(self, context: Sequence[str] = (), k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` most probable next words after ``context``, most probable first (ties by id)."""
        p = self.distribution(context)
        idx = np.argsort(-p, kind="stable")[:k]
        itos = self.vocab.tokens
        return [(itos[i], float(p[i])) for i in idx]

    def token_logprobs(self, lines: Sequence[Sequence[str]]) -> np.ndarray:
        """ln p of every token of ``lines`` (T,), each line a sentence that starts after one ``<s>``."""
        pad = min(1, self.n - 1)
        if pad and self.bos not in self.vocab:
            raise ValueError(f"the model's vocabulary has no {self.bos!r} to pad sentences with")
        x, pos, real = padded_stream(lines, self.vocab, pad, self.bos)
        return self._score(x, pos, np.flatnonzero(real), self.n)

    def perplexity(self, lines: Sequence[Sequence[str]]) -> float:
        """exp(- mean ln p) over all tokens of ``lines`` (sentence-wise, see :meth:`token_logprobs`).

        ``inf`` when some token has probability 0 (e.g. ``mle`` on unseen n-grams). Raises for a model whose
        scores are not probabilities (stupid backoff) and for lines without tokens.
        """
        if not self.normalized:
            raise ValueError(f"{self.name} scores are not normalised probabilities (Brants et al. 2007), so they "
                             f"have no perplexity; compare it by a task metric, or use token_logprobs() knowingly")
        lp = self.token_logprobs(lines)
        if lp.size == 0:
            raise ValueError("no tokens to score: the lines are empty")
        return float(np.exp(-lp.mean()))

    def sample(self, context: Sequence[str] = (), max_len: int = 30, temperature: float = 1.0,
               rng: Any = None) -> list[str]:
        """Generate up to ``max_len`` words after ``context`` (taken as the start of a sentence: one ``<s>`` is
        put before it). Stops after ``<eos>`` (included). ``temperature`` T rescales p^(1/T) (T = 0: greedy);
        ``rng`` is a ``np.random.Generator`` or a seed."""
        if temperature < 0 or not np.isfinite(temperature):
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if max_len < 0:
            raise ValueError(f"max_len must be >= 0, got {max_len}")
        rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        words = [self.bos] * min(1, self.n - 1) + list(self._context(context) if self.n > 1 else ())
        itos, out = self.vocab.tokens, []
        for _ in range(max_len):
            p = self.distribution(words[max(0, len(words) - (self.n - 1)):] if self.n > 1 else ())
            if temperature == 0:
                i = int(np.argmax(p))
            else:
                with np.errstate(divide="ignore"):
                    logit = np.log(p) / temperature
                q = np.exp(logit - logit.max())
                i = int(rng.choice(len(q), p=q / q.sum()))
            out.append(itos[i])
            words.append(itos[i])
            if itos[i] == self.eos:
                break
        return out

    def __repr__(self) -> str:
        sizes = ", ".join(f"{s:,}" for s in self.sizes)
        return f"BackoffLM({self.name}, n={self.n}, |V|={self._V:,}, n-grams per order [{sizes}])"

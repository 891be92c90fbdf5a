"""Translating with a trained :class:`~shoulders.models.transformer.Transformer`: greedy search and beam search.

Both encode the source once and then run the decoder one token at a time. With ``use_cache=True`` (default) each
step feeds only the newest token and a :class:`~shoulders.models.attention.KVCache` supplies the keys and values
of the earlier ones (and of the encoder output); ``use_cache=False`` re-runs the decoder over the whole prefix at
every step -- same numbers, ``O(T)`` times the work, kept to show (and test) that the cache changes nothing.

**Beam search** (Vaswani et al. 2017, §6.1: beam size 4, length penalty α = 0.6, maximum output length input
length + 50) keeps the ``k`` best prefixes by log-probability; a prefix that emits ``<eos>`` is set aside as
finished and a sentence is done when ``k`` finished hypotheses exist (or at the maximum length). The finished
ones are compared by the length-normalised score of GNMT (Wu et al. 2016, eq. 14, without coverage penalty):

    s(Y) = log P(Y | X) / lp(Y),    lp(Y) = ((5 + |Y|) / 6)^α        (|Y| counts the <eos>)

With ``beam_size=1`` it is greedy search (a test checks it).

Both return one list of target ids per source sentence, without ``<bos>`` and ``<eos>``.

Any encoder-decoder with the same protocol is searched the same way (:class:`Translator`): chapter 9's attentional
LSTM (:class:`~shoulders.models.seq2seq.Seq2Seq`) keeps its recurrent state where the Transformer keeps keys and
values.
"""
from __future__ import annotations

from typing import Any, Protocol

import torch

__all__ = ["Translator", "beam_search", "greedy_decode", "length_penalty"]


class Translator(Protocol):
    """What the search needs of a model: ``cfg`` with ``bos_id``, ``eos_id``, ``pad_id``, ``max_len``,
    ``max_extra_len``, ``beam_size`` and ``length_penalty``; ``encode(src)`` giving an object with
    ``index_select(rows)``; ``decode(tokens, enc, cache)`` whose first output is the logits ``(B, T, |V|)`` (with a
    cache that has run, ``tokens`` holds only the new ones); ``new_cache()`` giving a cache with ``reorder(rows)``."""

    cfg: Any

    def encode(self, src: torch.Tensor) -> Any: ...

    def decode(self, tgt_in: torch.Tensor, enc: Any, cache: Any = None) -> tuple[torch.Tensor, ...]: ...

    def new_cache(self) -> Any: ...


def length_penalty(length: int | torch.Tensor, alpha: float) -> float | torch.Tensor:
    """GNMT's lp(Y) = ((5 + |Y|) / 6)^α (Wu et al. 2016, eq. 14); α = 0 turns normalisation off."""
    return ((5.0 + length) / 6.0) ** alpha


def _max_new(model: Translator, src: torch.Tensor, max_len: int | None) -> int:
    limit = model.cfg.max_len - 1  # positions 0 .. max_len-1, the first one is <bos>
    wanted = src.shape[1] + model.cfg.max_extra_len if max_len is None else int(max_len)
    if wanted < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    return min(wanted, limit)


def _step_logits(model: Translator, prefix: torch.Tensor, enc: Any, cache: Any) -> torch.Tensor:
    """Log-probabilities of the next token after each row of ``prefix`` (B, t): ``(B, |V|)``."""
    tokens = prefix[:, -1:] if cache is not None else prefix  # the cache holds the rest
    logits = model.decode(tokens, enc, cache)[0][:, -1]  # (B, |V|)
    return logits.float().log_softmax(dim=-1)


def _strip(row: list[int], eos_id: int) -> list[int]:
    return row[: row.index(eos_id)] if eos_id in row else row


@torch.no_grad()
def greedy_decode(model: Translator, src: torch.Tensor, max_len: int | None = None,
                  use_cache: bool = True) -> list[list[int]]:
    """The most probable next token at every step, until ``<eos>`` or ``max_len`` tokens (default S + 50)."""
    cfg = model.cfg
    was_training = model.training
    model.eval()
    try:
        enc = model.encode(src)
        B = src.shape[0]
        prefix = torch.full((B, 1), cfg.bos_id, dtype=torch.long, device=src.device)  # (B, 1)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        cache = model.new_cache() if use_cache else None
        for _ in range(_max_new(model, src, max_len)):
            nxt = _step_logits(model, prefix, enc, cache).argmax(dim=-1)  # (B,)
            prefix = torch.cat([prefix, nxt[:, None]], dim=1)
            done |= nxt == cfg.eos_id
            if bool(done.all()):
                break
    finally:
        model.train(was_training)
    return [_strip(row[1:], cfg.eos_id) for row in prefix.tolist()]


@torch.no_grad()
def beam_search(model: Translator, src: torch.Tensor, beam_size: int | None = None, alpha: float | None = None,
                max_len: int | None = None, use_cache: bool = True) -> list[list[int]]:
    """The best of ``beam_size`` hypotheses per sentence by length-normalised log-probability (see module doc).

    Defaults come from the config: ``cfg.beam_size`` (4), ``cfg.length_penalty`` (α = 0.6), S + ``max_extra_len``.
    """
    cfg = model.cfg
    K = int(beam_size if beam_size is not None else cfg.beam_size)
    alpha = float(alpha if alpha is not None else cfg.length_penalty)
    if K < 1:
        raise ValueError(f"beam_size must be >= 1, got {K}")
    was_training = model.training
    model.eval()
    try:
        return _beam_search(model, src, K, alpha, _max_new(model, src, max_len), use_cache)
    finally:
        model.train(was_training)


def _beam_search(model: Translator, src: torch.Tensor, K: int, alpha: float, steps: int,
                 use_cache: bool) -> list[list[int]]:
    cfg = model.cfg
    B, dev = src.shape[0], src.device
    rows = torch.arange(B, device=dev).repeat_interleave(K)  # (B*K,) beam j of sentence b is row b*K + j
    enc = model.encode(src).index_select(rows)
    cache = model.new_cache() if use_cache else None
    prefix = torch.full((B * K, 1), cfg.bos_id, dtype=torch.long, device=dev)  # (B*K, t)
    scores = torch.full((B, K), float("-inf"), device=dev)
    scores[:, 0] = 0.0  # K identical beams at the start: count only the first
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(B)]
    done = [False] * B
    for t in range(1, steps + 1):
        logp = _step_logits(model, prefix, enc, cache)  # (B*K, V)
        V = logp.shape[-1]
        cand = (scores.reshape(B * K, 1) + logp).reshape(B, K * V)  # (B, K*V) total log-probabilities
        top_s, top_i = cand.topk(min(2 * K, K * V), dim=1)  # (B, 2K): enough that K survive after <eos>s
        top_s, top_i = top_s.tolist(), top_i.tolist()
        new_rows, new_tokens, new_scores = [], [], []
        for b in range(B):
            keep: list[tuple[int, int, float]] = []
            for s, i in zip(top_s[b], top_i[b]):
                if done[b] or len(keep) == K:
                    break
                beam, tok = divmod(i, V)
                if s == float("-inf"):
                    break
                if tok == cfg.eos_id:
                    hyp = prefix[b * K + beam, 1:].tolist()
                    finished[b].append((s / length_penalty(t, alpha), hyp))
                    if len(finished[b]) >= K:
                        done[b] = True
                else:
                    keep.append((beam, tok, s))
            if done[b] or not keep:
                done[b] = True
                keep = [(0, cfg.pad_id, float("-inf"))]  # a dead sentence: keep its rows busy, never chosen
            keep += [keep[0][:2] + (float("-inf"),)] * (K - len(keep))
            for beam, tok, s in keep:
                new_rows.append(b * K + beam)
                new_tokens.append(tok)
                new_scores.append(s)
        if all(done):
            break
        index = torch.tensor(new_rows, device=dev)  # (B*K,) which old row each new beam extends
        prefix = torch.cat([prefix.index_select(0, index), torch.tensor(new_tokens, device=dev)[:, None]], dim=1)
        scores = torch.tensor(new_scores, device=dev).reshape(B, K)
        if cache is not None:
            cache.reorder(index)
    final = prefix[:, 1:].tolist()
    length = prefix.shape[1] - 1
    out = []
    for b in range(B):
        hyps = list(finished[b])
        if not done[b]:  # ran out of steps: unfinished beams compete too
            hyps += [(float(scores[b, j]) / length_penalty(length, alpha), final[b * K + j]) for j in range(K)
                     if scores[b, j] > float("-inf")]
        out.append(max(hyps, key=lambda h: h[0])[1] if hyps else [])
    return out

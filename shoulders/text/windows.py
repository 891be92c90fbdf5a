"""Fixed-size windows of a token stream: the batches of the window models (NNLM, LBL, C&W).

An n-gram model -- counted (chapter 1) or neural (Bengio et al. 2003) -- predicts each word from the ``n - 1``
words before it. Over one contiguous stream of ids (an :class:`~shoulders.text.LMStream`) every position ``t >=
n - 1`` gives one example, the window ``w[t-n+1 .. t]`` of ``n`` consecutive ids::

    stream   a b c d e f          (L = 6, n = 3 -> L - n + 1 = 4 windows)
    windows  a b c | b c d | c d e | d e f
    context  a b   | b c   | c d   | d e      x: (B, n-1)
    target       c |     d |     e |     f    y: (B,)

:func:`sliding_windows` is that table, built without copying (``Tensor.unfold`` gives a strided view), and
:class:`WindowBatches` draws minibatches of its rows -- shuffled each pass with torch's global generator, which
:func:`shoulders.train.fit` seeds per epoch, so runs are reproducible and resume exactly. Windows cross line
(``<eos>``) boundaries, as the recurrent LMs' streams do.

With ``pad`` (e.g. the ``<eos>`` id), ``n - 1`` pad ids are put before the stream so that *every* token of it is
a target -- the same tokens a unigram or recurrent LM is scored on, which makes perplexities comparable token
for token. C&W (Collobert & Weston 2008) scores whole windows instead of predicting their last word:
``target=False`` gives the ``(B, size)`` windows themselves.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from .stream import LMStream, _as_ids

__all__ = ["WindowBatches", "ngram_batches", "sliding_windows", "window_batches"]


def sliding_windows(ids: Any, size: int) -> torch.Tensor:
    """All ``L - size + 1`` windows of ``size`` consecutive ids of a 1-D stream: ``(L - size + 1, size)``.

    Row ``i`` is ``ids[i : i + size]``; the result is a view (no copy) of the id tensor.
    """
    ids = _as_ids(ids)  # (L,)
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    if ids.numel() < size:
        raise ValueError(f"a stream of {ids.numel()} ids has no window of {size}")
    return ids.unfold(0, size, 1)  # (L - size + 1, size)


class WindowBatches:
    """Minibatches of the rows of :func:`sliding_windows` -- a re-iterable for :func:`shoulders.train.fit`.

    Each ``iter()`` is one pass over all windows, in a fresh random order when ``shuffle`` (``torch.randperm``
    on the global generator), else in stream order. With ``target=True`` a batch is ``(x, y)``: the context
    ``(B, size-1)`` and the next word ``(B,)``; with ``target=False`` it is the ``(B, size)`` windows. The last
    batch of a pass may be smaller (``drop_last=False``).
    """

    def __init__(self, ids: Any, size: int, batch_size: int, *, target: bool = True, shuffle: bool = True,
                 pad: int | None = None, drop_last: bool = False) -> None:
        ids = _as_ids(ids)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if target and size < 2:
            raise ValueError(f"a window with a target needs size >= 2 (a context and a word), got {size}")
        if pad is not None:
            ids = torch.cat([torch.full((size - 1,), int(pad), dtype=torch.long), ids])
        self.windows = sliding_windows(ids, size)  # (N, size)
        self.size, self.batch_size = int(size), int(batch_size)
        self.target, self.shuffle, self.drop_last = bool(target), bool(shuffle), bool(drop_last)

    @property
    def num_windows(self) -> int:
        """Windows per pass (= targets per pass when ``target``)."""
        return self.windows.shape[0]

    def __len__(self) -> int:
        n, b = self.num_windows, self.batch_size
        return n // b if self.drop_last else -(-n // b)

    def __iter__(self) -> Iterator[Any]:
        n = self.num_windows
        order = torch.randperm(n) if self.shuffle else None
        stop = n - n % self.batch_size if self.drop_last else n
        for start in range(0, stop, self.batch_size):
            if order is None:
                w = self.windows[start: start + self.batch_size]  # (B, size) view
            else:
                w = self.windows[order[start: start + self.batch_size]]  # (B, size) gathered rows
            yield (w[:, :-1].contiguous(), w[:, -1].contiguous()) if self.target else w.contiguous()

    def __repr__(self) -> str:
        kind = "(context, target)" if self.target else "windows"
        return (f"WindowBatches(windows={self.num_windows}, size={self.size}, batch_size={self.batch_size}, "
                f"{kind}, shuffle={self.shuffle})")


def _ids(stream: LMStream | Any) -> torch.Tensor:
    return stream.ids if isinstance(stream, LMStream) else _as_ids(stream)


def ngram_batches(stream: LMStream | Any, n: int, batch_size: int, *, shuffle: bool = True,
                  pad: int | None = None, drop_last: bool = False) -> WindowBatches:
    """``(x, y)`` batches of an n-gram LM: ``x`` the ``n - 1`` previous ids ``(B, n-1)``, ``y`` the next ``(B,)``.

    ``pad`` puts ``n - 1`` copies of that id before the stream so every token is predicted once (use it for
    evaluation, e.g. ``pad=vocab["<eos>"]``: the stream then reads as if a line had just ended).
    """
    return WindowBatches(_ids(stream), n, batch_size, target=True, shuffle=shuffle, pad=pad, drop_last=drop_last)


def window_batches(stream: LMStream | Any, size: int, batch_size: int, *, shuffle: bool = True,
                   drop_last: bool = False) -> WindowBatches:
    """``(B, size)`` batches of whole windows (the input of the C&W ranking model)."""
    return WindowBatches(_ids(stream), size, batch_size, target=False, shuffle=shuffle, drop_last=drop_last)

"""Language-model streams and truncated back-propagation through time (BPTT).

A word LM reads its corpus as one long stream of ids (every line ended by ``<eos>``). Training on it follows
Zaremba et al. 2014 and pytorch/examples' ``word_language_model``, written batch-first:

1. :func:`batchify` cuts the stream into ``B`` equal contiguous segments and stacks them as the rows of a
   ``(B, N)`` matrix, dropping the ``len % B`` tokens at the end that cannot fill a whole row::

       stream  a b c d e f g h i j k l m  (13 ids, B = 3 -> N = 4, "m" dropped)
       row 0   a b c d
       row 1   e f g h
       row 2   i j k l

2. :class:`BPTTBatches` walks along the time axis in windows of ``bptt`` steps. Window ``k`` gives
   ``x = data[:, s : s+T]`` and ``y = data[:, s+1 : s+1+T]``, both ``(B, T)``: ``y`` is ``x`` shifted one
   step left *in the underlying stream*, so ``y[:, t] == x[:, t+1]`` inside a window and the last target of
   a window is the first input of the next one. The last window may be shorter.

Because row ``b`` of window ``k+1`` continues row ``b`` of window ``k`` (the same segment of text, picked up
where it stopped), the recurrent hidden state is carried from one window to the next -- detached, so
gradients stop at the window boundary (that is the *truncation*) while the state still remembers context.
(pytorch/examples draws the same picture time-major, ``(N, B)``, where "row" reads "column".)

AWD-LSTM (Merity et al. 2017, sec. 4.1) varies the window length so that boundaries fall at different places
each epoch: with probability ``p_full = 0.95`` the base length is ``bptt``, otherwise ``bptt / 2``; the length is
then drawn from ``N(base, sigma = 5)`` and floored at ``min_len = 5``. ``variable=True`` does this, seeded and
reproducible per epoch; AWD-LSTM also rescales the learning rate by ``T / bptt`` for each window.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, islice
from typing import Any

import numpy as np
import torch

from .vocab import Vocab

__all__ = ["BPTTBatches", "LMStream", "batchify", "lm_stream"]


def _as_ids(ids: Any) -> torch.Tensor:
    """A contiguous 1-D int64 tensor from a tensor, NumPy array or sequence of ints."""
    if isinstance(ids, np.ndarray):
        if not np.issubdtype(ids.dtype, np.integer):
            raise TypeError(f"ids must be integers, got a NumPy array of {ids.dtype}")
        t = torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64))
    elif isinstance(ids, torch.Tensor):
        if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
            raise TypeError(f"ids must be integers, got a tensor of {ids.dtype}")
        t = ids.long()
    else:
        t = torch.as_tensor(list(ids) if not isinstance(ids, Sequence) else ids, dtype=torch.long)
    if t.dim() != 1:
        raise ValueError(f"ids must be 1-D (a stream), got shape {tuple(t.shape)}")
    return t.contiguous()


def batchify(ids: Any, batch_size: int) -> torch.Tensor:
    """Cut a 1-D stream of ``L`` ids into ``batch_size`` contiguous rows: ``(B, N)`` with ``N = L // B``.

    Row ``b`` holds ``ids[b*N : (b+1)*N]``; the last ``L % B`` ids are dropped. The result is a view of the
    input tensor when the input is already a contiguous int64 tensor.
    """
    ids = _as_ids(ids)  # (L,)
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    n = ids.numel() // batch_size
    if n == 0:
        raise ValueError(f"a stream of {ids.numel()} ids cannot fill {batch_size} rows")
    return ids[: n * batch_size].view(batch_size, n)  # (B, N)


class BPTTBatches:
    """The ``(x, y)`` windows of a batchified stream, each ``(B, T)`` with ``T <= bptt`` (see module doc).

    ``len()`` is the number of windows of the epoch the next ``iter()`` will give. Each ``iter()`` uses the
    current :attr:`epoch` and then advances it, so a fresh object with the same ``seed`` replays the same
    sequence of epochs; :meth:`set_epoch` picks one explicitly. With ``variable=False`` every epoch is the same.
    """

    def __init__(self, data: torch.Tensor, bptt: int, *, variable: bool = False, seed: int = 0,
                 p_full: float = 0.95, sigma: float = 5.0, min_len: int = 5, max_len: int | None = None,
                 device: torch.device | str | None = None) -> None:
        if data.dim() != 2:
            raise ValueError(f"data must be (B, N), got shape {tuple(data.shape)}")
        if data.shape[1] < 2:
            raise ValueError(f"each row needs at least 2 tokens (an input and its target), got N={data.shape[1]}")
        if bptt < 1:
            raise ValueError(f"bptt must be >= 1, got {bptt}")
        if variable and not (1 <= min_len and (max_len is None or max_len >= min_len)):
            raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
        self.data = data.to(device) if device is not None else data  # (B, N)
        self.bptt, self.variable, self.seed = int(bptt), bool(variable), int(seed)
        self.p_full, self.sigma, self.min_len, self.max_len = float(p_full), float(sigma), int(min_len), max_len
        self.epoch = 0

    @property
    def batch_size(self) -> int:
        return self.data.shape[0]

    @property
    def tokens(self) -> int:
        """Number of predicted tokens per epoch, ``B * (N - 1)`` (the divisor of a per-token loss)."""
        return self.data.shape[0] * (self.data.shape[1] - 1)

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter()`` give epoch ``epoch`` (only matters with ``variable=True``)."""
        self.epoch = int(epoch)

    def spans(self, epoch: int | None = None) -> list[tuple[int, int]]:
        """``(start, T)`` of every window of ``epoch`` (default: the current one); starts are time steps."""
        last = self.data.shape[1] - 1  # inputs run over time steps 0 .. N-2, targets over 1 .. N-1
        if not self.variable:
            return [(s, min(self.bptt, last - s)) for s in range(0, last, self.bptt)]
        rng = np.random.default_rng([self.seed, self.epoch if epoch is None else int(epoch)])
        out: list[tuple[int, int]] = []
        s = 0
        while s < last:
            chunk = max(16, 2 * (last - s) // max(1, self.bptt // 2))
            base = np.where(rng.random(chunk) < self.p_full, self.bptt, self.bptt / 2.0)
            lengths = np.maximum(self.min_len, rng.normal(base, self.sigma).astype(np.int64))
            if self.max_len is not None:
                lengths = np.minimum(lengths, self.max_len)
            for t in lengths.tolist():
                t = min(t, last - s)
                out.append((s, t))
                s += t
                if s >= last:
                    break
        return out

    def __len__(self) -> int:
        if not self.variable:
            return -(-(self.data.shape[1] - 1) // self.bptt)
        return len(self.spans())

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        spans = self.spans()
        self.epoch += 1
        return self._windows(spans)

    def _windows(self, spans: list[tuple[int, int]]) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        data = self.data
        for s, t in spans:
            x = data[:, s: s + t].contiguous()  # (B, T) inputs
            y = data[:, s + 1: s + 1 + t].contiguous()  # (B, T) targets: the next token of each input
            yield x, y

    def __repr__(self) -> str:
        kind = f"variable (seed={self.seed}, epoch={self.epoch})" if self.variable else "fixed"
        return (f"BPTTBatches(B={self.batch_size}, N={self.data.shape[1]}, bptt={self.bptt}, {kind}, "
                f"device={self.data.device})")


class LMStream:
    """A corpus as one contiguous 1-D LongTensor of ids, ``(L,)``, ready for truncated BPTT.

    ``len(stream)`` is the number of ids ``L``; :meth:`bptt_batches` gives the training windows.
    """

    def __init__(self, ids: Any, vocab: Vocab | None = None) -> None:
        self.ids = _as_ids(ids)  # (L,)
        self.vocab = vocab
        if self.ids.numel():
            lo, hi = int(self.ids.min()), int(self.ids.max())
            if lo < 0 or (vocab is not None and hi >= len(vocab)):
                raise ValueError(f"ids must lie in [0, {len(vocab) if vocab else 'V'}), got min {lo}, max {hi}")

    def __len__(self) -> int:
        return self.ids.numel()

    @property
    def num_tokens(self) -> int:
        """Number of ids in the stream, ``L`` (same as ``len(stream)``)."""
        return self.ids.numel()

    def batchify(self, batch_size: int) -> torch.Tensor:
        """``(B, N)``: see :func:`batchify`."""
        return batchify(self.ids, batch_size)

    def bptt_batches(self, *, bptt: int, batch_size: int, variable: bool = False, seed: int = 0,
                     device: torch.device | str | None = None, **kwargs: Any) -> BPTTBatches:
        """Windows ``(x, y)``, each ``(B, T)``, over :meth:`batchify` ``(batch_size)``; see :class:`BPTTBatches`.

        ``bptt`` and ``batch_size`` are keyword-only: both are small ints, and swapping them would still train.
        ``kwargs`` (``p_full``, ``sigma``, ``min_len``, ``max_len``) tune the variable-length schedule.
        """
        return BPTTBatches(self.batchify(batch_size), bptt, variable=variable, seed=seed, device=device, **kwargs)

    def __repr__(self) -> str:
        v = f", vocab={len(self.vocab)}" if self.vocab is not None else ""
        return f"LMStream(tokens={len(self)}{v})"


def lm_stream(lines: Iterable[Sequence[str]], vocab: Vocab, limit: int | None = None) -> LMStream:
    """Encode lines of tokens (e.g. :func:`shoulders.text.wikitext2`) into one :class:`LMStream`.

    Lines are concatenated as they are: end them with ``<eos>`` yourself (``wikitext2`` already does).
    ``limit`` keeps only the first ``limit`` tokens of the stream (smaller runs; ``None`` keeps all).
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    it = iter(lines)
    first = next(it, None)
    if first is None:
        return LMStream(torch.empty(0, dtype=torch.long), vocab)
    if isinstance(first, str):
        raise TypeError("lm_stream expects lines of tokens (list[list[str]]), got a str line; tokenize each "
                        "line first, e.g. [words(line) + ['<eos>'] for line in text.split('\\n')]")
    tokens = chain(first, chain.from_iterable(it))
    if limit is not None:
        tokens = islice(tokens, limit)
    return LMStream(vocab.encode_array(tokens), vocab)

"""shoulders.text LM streams: batchify and (variable-length) truncated-BPTT windows."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from shoulders.text import BPTTBatches, LMStream, Vocab, batchify, lm_stream


def test_batchify_rows_are_contiguous_segments_and_tail_is_dropped():
    ids = torch.arange(13)
    data = batchify(ids, 3)
    assert data.shape == (3, 4) and data.dtype == torch.long
    assert data.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]  # 12 dropped
    assert batchify(np.arange(12), 1).shape == (1, 12)
    assert batchify(list(range(12)), 12).shape == (12, 1)


def test_batchify_matches_pytorch_examples_time_major():
    ids = torch.randint(100, (1003,))
    bsz = 7
    ref = ids[: ids.numel() // bsz * bsz].view(bsz, -1).t().contiguous()  # word_language_model/main.py
    torch.testing.assert_close(batchify(ids, bsz), ref.t())


def test_batchify_errors():
    with pytest.raises(ValueError):
        batchify(torch.arange(3), 4)
    with pytest.raises(ValueError):
        batchify(torch.arange(3), 0)
    with pytest.raises(ValueError):
        batchify(torch.zeros(2, 3, dtype=torch.long), 1)
    with pytest.raises(TypeError):
        batchify(torch.rand(10), 2)


@pytest.mark.parametrize("L, B, bptt", [(1000, 4, 35), (1001, 5, 10), (64, 2, 31), (64, 2, 1), (50, 1, 100)])
def test_bptt_windows(L, B, bptt):
    ids = torch.randint(1000, (L,))
    data = batchify(ids, B)  # (B, N)
    N = data.shape[1]
    batches = LMStream(ids).bptt_batches(bptt=bptt, batch_size=B)
    windows = list(batches)
    assert len(windows) == len(batches) == -(-(N - 1) // bptt)
    for k, (x, y) in enumerate(windows):
        T = x.shape[1]
        assert x.shape == y.shape == (B, T) and x.dtype == y.dtype == torch.long
        assert T == bptt or (k == len(windows) - 1 and 1 <= T < bptt)  # only the last may be shorter
        assert torch.equal(y[:, :-1], x[:, 1:])  # y[:, t] == x[:, t+1]
        if k + 1 < len(windows):
            assert torch.equal(y[:, -1], windows[k + 1][0][:, 0])  # last target == next window's first input
    xs = torch.cat([x for x, _ in windows], dim=1)  # (B, N-1)
    ys = torch.cat([y for _, y in windows], dim=1)
    torch.testing.assert_close(xs, data[:, :-1])  # row b of window k+1 continues row b of window k
    torch.testing.assert_close(ys, data[:, 1:])
    for b in range(B):  # ... and each row is one contiguous stretch of the original stream
        torch.testing.assert_close(xs[b], ids[b * N: (b + 1) * N - 1])
    assert sum(y.numel() for _, y in windows) == batches.tokens == B * (N - 1)


def test_windows_match_pytorch_examples_get_batch():
    ids = torch.randint(50, (997,))
    bsz, bptt = 6, 20
    source = ids[: ids.numel() // bsz * bsz].view(bsz, -1).t().contiguous()  # (N, B)
    ours = list(LMStream(ids).bptt_batches(bptt=bptt, batch_size=bsz))
    for k, i in enumerate(range(0, source.size(0) - 1, bptt)):
        seq_len = min(bptt, len(source) - 1 - i)
        data, target = source[i: i + seq_len], source[i + 1: i + 1 + seq_len].reshape(-1)
        x, y = ours[k]
        torch.testing.assert_close(x, data.t())
        torch.testing.assert_close(y.t().reshape(-1), target)
    assert len(ours) == k + 1


def test_variable_bptt_is_reproducible_per_epoch_and_covers_everything():
    ids = torch.arange(20_000) % 997
    stream = LMStream(ids)
    a = stream.bptt_batches(bptt=70, batch_size=4, variable=True, seed=3)
    b = stream.bptt_batches(bptt=70, batch_size=4, variable=True, seed=3)
    c = stream.bptt_batches(bptt=70, batch_size=4, variable=True, seed=4)
    e0 = a.spans()
    assert len(a) == len(e0)
    ea = [[x.shape[1] for x, _ in a] for _ in range(3)]  # three epochs
    eb = [[x.shape[1] for x, _ in b] for _ in range(3)]
    assert ea == eb  # same seed -> same epochs
    assert ea[0] != ea[1] != ea[2]  # boundaries move between epochs
    assert ea[0] != [t for _, t in c.spans(0)]  # another seed, another schedule
    assert a.epoch == 3
    a.set_epoch(1)
    assert [x.shape[1] for x, _ in a] == ea[1]
    N = 5000
    for lengths in ea:
        assert sum(lengths) == N - 1 and min(lengths[:-1]) >= 5
        assert any(t < 50 for t in lengths) and any(t > 70 for t in lengths)  # bptt/2 draws and spread
    for x, y in a:  # still a correct shift inside every window
        assert torch.equal(y[:, :-1], x[:, 1:])
    xs = torch.cat([x for x, _ in a], dim=1)
    torch.testing.assert_close(xs, batchify(ids, 4)[:, :-1])


def test_variable_bptt_length_distribution():
    lengths = [t for _, t in BPTTBatches(torch.zeros(1, 200_001, dtype=torch.long), 70, variable=True).spans()]
    lengths = np.array(lengths[:-1])
    full = lengths[lengths > 52]  # the N(70, 5) draws; N(35, 5) ones are below
    assert 0.93 < full.size / lengths.size < 0.97
    assert abs(full.mean() - 69.5) < 0.5 and 4 < full.std() < 6  # int() truncates: mean ~ 69.5
    capped = BPTTBatches(torch.zeros(1, 10_001, dtype=torch.long), 70, variable=True, max_len=72, min_len=40)
    assert all(40 <= t <= 72 for _, t in capped.spans()[:-1])


def test_fixed_windows_do_not_depend_on_epoch():
    batches = LMStream(torch.arange(500)).bptt_batches(bptt=35, batch_size=3)
    first = [x.clone() for x, _ in batches]
    second = [x for x, _ in batches]
    assert all(torch.equal(p, q) for p, q in zip(first, second))


def test_lm_stream_from_lines():
    lines = [["a", "b", "<eos>"], ["<eos>"], ["c", "zzz", "<eos>"]]
    vocab = Vocab.build(lines[:2] + [["c", "<eos>"]], specials=["<eos>"])
    stream = lm_stream(lines, vocab)
    assert isinstance(stream, LMStream) and len(stream) == 7 and stream.ids.dtype == torch.long
    assert vocab.decode(stream.ids) == ["a", "b", "<eos>", "<eos>", "c", "<unk>", "<eos>"]
    assert stream.ids.is_contiguous() and stream.ids.dim() == 1
    assert len(lm_stream([], vocab)) == 0
    assert lm_stream(lines, vocab, limit=4).ids.tolist() == stream.ids[:4].tolist()
    assert lm_stream(lines, vocab, limit=100).num_tokens == 7 and lm_stream(lines, vocab, limit=0).num_tokens == 0
    with pytest.raises(TypeError, match="tokenize"):
        lm_stream(["a b c"], vocab)
    with pytest.raises(ValueError):
        LMStream([0, 1, len(vocab)], vocab)
    with pytest.raises(ValueError):
        LMStream([0, -1])


def test_bptt_and_batch_size_cannot_be_swapped_silently():
    with pytest.raises(TypeError):
        LMStream(torch.arange(100)).bptt_batches(20, 4)  # keyword-only


def test_bptt_errors():
    with pytest.raises(ValueError):
        LMStream(torch.arange(10)).bptt_batches(bptt=0, batch_size=2)
    with pytest.raises(ValueError):
        LMStream(torch.arange(3)).bptt_batches(bptt=5, batch_size=2)  # N = 1: no target

"""shoulders.text padding and masks, checked against scaled_dot_product_attention."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from shoulders.text import attention_mask, causal_mask, pad_sequences, padding_mask

SEQS = [[5, 6, 7], [8], [], [1, 2, 3, 4, 9]]


def test_pad_right():
    x, lengths = pad_sequences(SEQS, pad_id=0)
    assert x.dtype == lengths.dtype == torch.long and x.shape == (4, 5)
    assert x.tolist() == [[5, 6, 7, 0, 0], [8, 0, 0, 0, 0], [0, 0, 0, 0, 0], [1, 2, 3, 4, 9]]
    assert lengths.tolist() == [3, 1, 0, 5]


def test_pad_left():
    x, lengths = pad_sequences(SEQS, pad_id=-1, side="left")
    assert x.tolist() == [[-1, -1, 5, 6, 7], [-1, -1, -1, -1, 8], [-1] * 5, [1, 2, 3, 4, 9]]
    assert lengths.tolist() == [3, 1, 0, 5]


def test_pad_max_len_pads_up_and_truncates():
    x, lengths = pad_sequences(SEQS, 0, max_len=4)
    assert x.tolist() == [[5, 6, 7, 0], [8, 0, 0, 0], [0, 0, 0, 0], [1, 2, 3, 4]]
    assert lengths.tolist() == [3, 1, 0, 4]
    x, _ = pad_sequences(SEQS, 0, max_len=4, side="left", truncate="left")  # keep the most recent context
    assert x.tolist() == [[0, 5, 6, 7], [0, 0, 0, 8], [0, 0, 0, 0], [2, 3, 4, 9]]
    x, lengths = pad_sequences([[1, 2]], 0, max_len=6)
    assert x.tolist() == [[1, 2, 0, 0, 0, 0]] and lengths.tolist() == [2]
    with pytest.raises(ValueError):
        pad_sequences(SEQS, 0, side="middle")


def test_pad_accepts_tensors_and_arrays_and_empty_batches():
    x, lengths = pad_sequences([torch.tensor([1, 2]), np.array([3]), (4, 5, 6)], 0)
    assert x.tolist() == [[1, 2, 0], [3, 0, 0], [4, 5, 6]]
    x, lengths = pad_sequences([], 0)
    assert x.shape == (0, 0) and lengths.shape == (0,)


def test_padding_mask_matches_a_loop():
    lengths = torch.tensor([3, 1, 0, 5])
    for side in ("right", "left"):
        mask = padding_mask(lengths, 6, side=side)
        assert mask.dtype == torch.bool and mask.shape == (4, 6)
        for b, n in enumerate(lengths.tolist()):
            expect = [t < n for t in range(6)] if side == "right" else [t >= 6 - n for t in range(6)]
            assert mask[b].tolist() == expect
        x, lens = pad_sequences(SEQS, -1, side=side)
        assert torch.equal(padding_mask(lens, x.shape[1], side=side), x != -1)
    assert padding_mask([2, 4]).shape == (2, 4)  # T defaults to the longest
    with pytest.raises(ValueError):
        padding_mask([5], 3)


def test_causal_mask_is_lower_triangle():
    m = causal_mask(4)
    assert m.dtype == torch.bool and m.shape == (4, 4)
    for i in range(4):
        for j in range(4):
            assert bool(m[i, j]) == (j <= i)  # query i sees keys up to itself


def test_causal_mask_equals_is_causal_in_sdpa():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 7, 8, generator=g, dtype=torch.float64) for _ in range(3))
    a = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(7))
    b = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(a, b)
    # and it must matter: the inverted mask (the nn.MultiheadAttention convention) gives something else
    c = F.scaled_dot_product_attention(q, k, v, attn_mask=~causal_mask(7) | torch.eye(7, dtype=torch.bool))
    assert not torch.allclose(a, c)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_attention_mask_equals_unpadded_attention(causal, side):
    g = torch.Generator().manual_seed(1)
    lengths = [5, 2, 0, 4]
    H, T, D = 2, 5, 4
    q, k, v = (torch.randn(len(lengths), H, T, D, generator=g, dtype=torch.float64) for _ in range(3))
    mask = attention_mask(lengths, T, causal=causal, side=side)
    assert mask.shape == (len(lengths), 1, T, T) and mask.dtype == torch.bool
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, H, T, D)
    assert not out.isnan().any()  # pad queries attend themselves: no all -inf rows
    real = padding_mask(lengths, T, side=side)
    for b, n in enumerate(lengths):
        if n == 0:
            continue
        sl = real[b]
        ref = F.scaled_dot_product_attention(q[b:b + 1, :, sl], k[b:b + 1, :, sl], v[b:b + 1, :, sl], is_causal=causal)
        torch.testing.assert_close(out[b:b + 1, :, sl], ref)

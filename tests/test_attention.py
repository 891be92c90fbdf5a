"""shoulders.models.attention: eq. 1 written out vs torch's fused kernel, multi-head attention vs
nn.MultiheadAttention with the same weights, masks, and the KV cache."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from shoulders.config import ConfigError
from shoulders.models.attention import (KVCache, MultiHeadAttention, combine_masks, key_padding_mask, merge_heads,
                                        scaled_dot_product_attention, split_heads)
from shoulders.text.pad import attention_mask, padding_mask

pytestmark = pytest.mark.usefixtures("one_thread")


def qkv(B=2, H=3, Tq=5, Tk=5, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, H, Tq, d, generator=g), torch.randn(B, H, Tk, d, generator=g),
            torch.randn(B, H, Tk, d, generator=g))


def test_explicit_attention_is_eq1_by_hand():
    q, k, v = qkv(B=1, H=1, Tq=2, Tk=3, d=2)
    out, w = scaled_dot_product_attention(q, k, v)
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / 2 ** 0.5
    expected = torch.exp(scores) / torch.exp(scores).sum(-1, keepdim=True)
    torch.testing.assert_close(w, expected)
    torch.testing.assert_close(out, expected @ v)


@pytest.mark.parametrize("case", ["none", "padding", "causal", "padding+causal", "float", "cross-padding",
                                  "rectangular-causal"])
def test_explicit_attention_equals_torch_sdpa(case):
    B, T = 3, 6
    q, k, v = qkv(B=B, Tq=T, Tk=T)
    lengths = [6, 4, 2]
    mask, causal = None, False
    if case == "padding":
        mask = key_padding_mask(padding_mask(lengths, T))  # (B, 1, 1, T)
    elif case == "causal":
        causal = True
    elif case == "padding+causal":
        mask = attention_mask(lengths, T, causal=True)  # (B, 1, T, T)
    elif case == "float":
        mask = torch.randn(B, 1, T, T)
    elif case == "cross-padding":
        q = q[:, :, :4]
        mask = key_padding_mask(padding_mask(lengths, T))
    elif case == "rectangular-causal":  # torch aligns is_causal top-left when T_q != T_k; so do we
        q, causal = q[:, :, :4], True
    ours, w = scaled_dot_product_attention(q, k, v, mask=mask, causal=causal)
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))  # every row is a distribution
    if mask is not None and mask.dtype == torch.bool:
        assert (w[~mask.expand_as(w)] == 0).all()  # hidden keys get exactly zero weight
    if causal:
        lower = torch.ones(w.shape[-2:], dtype=torch.bool).tril()
        assert (w[..., ~lower] == 0).all() and (w[..., lower] > 0).all()


def test_explicit_attention_rejects_mismatched_shapes():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="do not fit"):
        scaled_dot_product_attention(q, k[..., :3], v)
    with pytest.raises(ValueError, match="do not fit"):
        scaled_dot_product_attention(q, k, v[:, :, :4])


def test_split_and_merge_heads_are_inverse_and_slice_features():
    x = torch.arange(2 * 3 * 8, dtype=torch.float).view(2, 3, 8)
    h = split_heads(x, 4)  # (B, H, T, d_k)
    assert h.shape == (2, 4, 3, 2)
    torch.testing.assert_close(h[1, 2, 0], x[1, 0, 4:6])  # head 2 sees features 4..5
    torch.testing.assert_close(merge_heads(h), x)


def test_heads_must_divide_d_model():
    with pytest.raises(ConfigError, match="multiple of n_heads"):
        MultiHeadAttention(10, 3)


def copy_into_torch(ours: MultiHeadAttention) -> nn.MultiheadAttention:
    ref = nn.MultiheadAttention(ours.d_model, ours.n_heads, batch_first=True)
    with torch.no_grad():
        if ours.cross:
            ref.in_proj_weight.copy_(torch.cat([ours.q.weight, ours.kv.weight]))
            ref.in_proj_bias.copy_(torch.cat([ours.q.bias, ours.kv.bias]))
        else:
            ref.in_proj_weight.copy_(ours.qkv.weight)
            ref.in_proj_bias.copy_(ours.qkv.bias)
        ref.out_proj.weight.copy_(ours.out.weight)
        ref.out_proj.bias.copy_(ours.out.bias)
    return ref.eval()


def test_self_attention_equals_nn_multihead_attention_with_padding_and_causal_masks():
    torch.manual_seed(0)
    ours = MultiHeadAttention(16, 4).eval()
    ref = copy_into_torch(ours)
    x = torch.randn(3, 7, 16)
    keep = padding_mask([7, 5, 3], 7)  # (B, T) True = real
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    y, w = ours(x, mask=key_padding_mask(keep), causal=True, need_weights=True)
    # torch's masks mean the opposite: True = ignore
    y_ref, w_ref = ref(x, x, x, key_padding_mask=~keep, attn_mask=~causal, average_attn_weights=False)
    torch.testing.assert_close(y, y_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w, w_ref, atol=1e-6, rtol=1e-5)
    y_fast, none = ours(x, mask=key_padding_mask(keep), causal=True)  # the fused path
    assert none is None
    torch.testing.assert_close(y_fast, y_ref, atol=1e-5, rtol=1e-5)


def test_cross_attention_equals_nn_multihead_attention():
    torch.manual_seed(1)
    ours = MultiHeadAttention(12, 3, cross=True).eval()
    ref = copy_into_torch(ours)
    x, memory = torch.randn(2, 4, 12), torch.randn(2, 6, 12)
    keep = padding_mask([6, 2], 6)
    y, _ = ours(x, memory, mask=key_padding_mask(keep))
    y_ref, _ = ref(x, memory, memory, key_padding_mask=~keep)
    torch.testing.assert_close(y, y_ref, atol=1e-5, rtol=1e-5)


def test_returning_weights_does_not_change_the_output():
    torch.manual_seed(2)
    mha = MultiHeadAttention(8, 2).eval()
    x = torch.randn(2, 5, 8)
    fast, _ = mha(x, causal=True)
    slow, w = mha(x, causal=True, need_weights=True)
    torch.testing.assert_close(fast, slow, atol=1e-6, rtol=1e-5)
    assert w.shape == (2, 2, 5, 5)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 2, 5))


def test_memory_and_self_attention_are_not_mixed_up():
    with pytest.raises(ValueError, match="needs memory"):
        MultiHeadAttention(8, 2, cross=True)(torch.randn(1, 3, 8))
    with pytest.raises(ValueError, match="takes no memory"):
        MultiHeadAttention(8, 2)(torch.randn(1, 3, 8), torch.randn(1, 3, 8))
    with pytest.raises(ValueError, match="d_model=8"):
        MultiHeadAttention(8, 2)(torch.randn(1, 3, 6))


def test_combine_masks_aligns_the_causal_rule_to_the_last_queries():
    m = combine_masks(None, True, 2, 4, torch.device("cpu"))  # 2 new queries after 2 cached keys
    assert m.tolist() == [[True, True, True, False], [True, True, True, True]]
    assert combine_masks(None, True, 1, 4, torch.device("cpu")) is None  # one decoding step sees everything
    assert combine_masks(None, False, 3, 3, torch.device("cpu")) is None


def test_kv_cache_step_by_step_equals_full_causal_attention():
    torch.manual_seed(3)
    mha = MultiHeadAttention(8, 2).eval()
    x = torch.randn(2, 6, 8)
    full, _ = mha(x, causal=True)
    cache = KVCache()
    steps = [mha(x[:, :3], causal=True, cache=cache.layer("a"))[0]]  # a prompt of 3, then one at a time
    steps += [mha(x[:, t:t + 1], causal=True, cache=cache.layer("a"))[0] for t in range(3, 6)]
    assert cache.length("a") == 6 and cache.length("b") == 0
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    cache.reorder(torch.tensor([1, 1]))
    torch.testing.assert_close(cache.layer("a")["k"][0], cache.layer("a")["k"][1])

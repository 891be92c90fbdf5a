"""shoulders.models.tdmca: local and memory-compressed attention reduce to full attention in their limits, keep
their shapes, and the causal variants never see the future."""
from __future__ import annotations

import pytest
import torch

from shoulders.config import ConfigError
from shoulders.models.attention import MultiHeadAttention
from shoulders.models.tdmca import (LocalAttention, MemoryCompressedAttention, causal_compressed_attention,
                                   causal_compressed_attention_written_out, causal_compressed_mask, local_attention,
                                   tdmca_layers)
from shoulders.models.transformer_blocks import BlockConfig

pytestmark = pytest.mark.usefixtures("one_thread")

D, H = 16, 4


def full_twin(module: MultiHeadAttention) -> MultiHeadAttention:
    full = MultiHeadAttention(D, H).eval()
    full.qkv.load_state_dict(module.qkv.state_dict())
    full.out.load_state_dict(module.out.state_dict())
    return full


def x_of(T=11, B=2, seed=0):
    return torch.randn(B, T, D, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("T", [7, 12])
def test_shapes_are_kept(causal, T):
    torch.manual_seed(0)
    x = x_of(T)
    for attn in (LocalAttention(D, H, block_size=5), MemoryCompressedAttention(D, H, compression=3)):
        y, w = attn.eval()(x, causal=causal)
        assert y.shape == x.shape and w is None and torch.isfinite(y).all()
    mca = MemoryCompressedAttention(D, H, compression=3)
    assert mca.compress(torch.randn(2, H, T, D // H), mca.compress_k).shape == (2, H, -(-T // 3), D // H)


@pytest.mark.parametrize("causal", [False, True])
def test_compression_one_is_full_attention(causal):
    torch.manual_seed(1)
    mca = MemoryCompressedAttention(D, H, compression=1).eval()
    x = x_of()
    torch.testing.assert_close(mca(x, causal=causal)[0], full_twin(mca)(x, causal=causal)[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_one_block_local_attention_is_full_attention(causal):
    torch.manual_seed(2)
    local = LocalAttention(D, H, block_size=11).eval()
    x = x_of(11)
    torch.testing.assert_close(local(x, causal=causal)[0], full_twin(local)(x, causal=causal)[0],
                               atol=1e-5, rtol=1e-5)
    local.block_size = 4  # same weights, smaller blocks: no longer full attention
    assert not torch.allclose(local(x, causal=causal)[0], full_twin(local)(x, causal=causal)[0], atol=1e-3)


def test_local_attention_stays_inside_its_block():
    q, k, v = (torch.randn(1, 1, 8, 4, generator=torch.Generator().manual_seed(s)) for s in range(3))
    y = local_attention(q, k, v, block_size=4)
    v2 = v.clone()
    v2[:, :, 4:] += 1.0  # change only the second block's values
    y2 = local_attention(q, k, v2, block_size=4)
    torch.testing.assert_close(y[:, :, :4], y2[:, :, :4])
    assert not torch.allclose(y[:, :, 4:], y2[:, :, 4:])


@pytest.mark.parametrize("make", [lambda: LocalAttention(D, H, block_size=4),
                                  lambda: MemoryCompressedAttention(D, H, compression=3)])
def test_causal_variants_never_see_the_future(make):
    torch.manual_seed(3)
    attn = make().eval()
    x = x_of(13)
    for t in (0, 4, 8, 11):  # first token, inside a window, at a window edge, near the end
        x2 = x.clone()
        x2[:, t + 1:] = torch.randn_like(x2[:, t + 1:])
        torch.testing.assert_close(attn(x, causal=True)[0][:, :t + 1], attn(x2, causal=True)[0][:, :t + 1])


@pytest.mark.parametrize("T,c,chunk", [(1, 3, 256), (2, 3, 256), (13, 3, 4), (13, 3, 256), (30, 2, 7),
                                         (31, 4, 8), (25, 1, 5), (64, 3, 1)])
def test_fused_causal_rule_agrees_with_the_written_out_one(T, c, chunk):
    """The fused chunked kernel and the written-out softmax give the same outputs and the same gradients."""
    g = torch.Generator().manual_seed(T * 100 + c)
    q, k, v = (torch.randn(2, H, T, D // H, generator=g, requires_grad=True) for _ in range(3))
    M = -(-T // c)
    kc, vc = (torch.randn(2, H, M, D // H, generator=g, requires_grad=True) for _ in range(2))
    fast = causal_compressed_attention(q, k, v, kc, vc, c, query_chunk=chunk)
    slow = causal_compressed_attention_written_out(q, k, v, kc, vc, c)
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-5)
    grad = torch.randn(fast.shape, generator=g)
    g_fast = torch.autograd.grad(fast, (q, k, v, kc, vc), grad)
    g_slow = torch.autograd.grad(slow, (q, k, v, kc, vc), grad)
    for a, b in zip(g_fast, g_slow):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_the_module_runs_either_version_with_the_same_answer():
    torch.manual_seed(6)
    fused = MemoryCompressedAttention(D, H, compression=3, query_chunk=6).eval()
    written = MemoryCompressedAttention(D, H, compression=3, written_out=True).eval()
    written.load_state_dict(fused.state_dict())
    x = x_of(20)
    torch.testing.assert_close(fused(x, causal=True)[0], written(x, causal=True)[0], atol=1e-5, rtol=1e-5)


def test_causal_mask_of_a_chunk():
    """Queries 6..8 (window 2 of c=3) see slots 0 and 1 and their own window's raw keys up to themselves."""
    mask = causal_compressed_mask(6, 9, slots=2, compression=3)
    assert mask.tolist() == [[True, True, True, False, False],
                             [True, True, True, True, False],
                             [True, True, True, True, True]]
    mask = causal_compressed_mask(3, 9, slots=2, compression=3)  # queries 3..8: window 1 sees only slot 0
    assert mask[:3, :2].tolist() == [[True, False]] * 3 and mask[3:, :2].all()
    assert not mask[:3, 2 + 3:].any() and not mask[3:, 2:2 + 3].any()  # never another window's raw keys


def test_memory_compressed_attention_is_not_full_attention_when_compressing():
    torch.manual_seed(4)
    mca = MemoryCompressedAttention(D, H, compression=3).eval()
    x = x_of(12)
    assert not torch.allclose(mca(x)[0], full_twin(mca)(x)[0], atol=1e-3)
    assert not torch.allclose(mca(x, causal=True)[0], full_twin(mca)(x, causal=True)[0], atol=1e-3)


def test_tdmca_stack_alternates_and_runs_causally():
    torch.manual_seed(5)
    cfg = BlockConfig(d_model=D, n_heads=H, d_ff=32, dropout=0.0, causal=True, norm_first=True)
    layers = tdmca_layers(cfg, "LMLML", block_size=4, compression=2).eval()
    kinds = [type(layer.self_attn).__name__ for layer in layers]
    assert kinds == ["LocalAttention", "MemoryCompressedAttention"] * 2 + ["LocalAttention"]
    x = x_of(10)
    y = x
    for layer in layers:
        y = layer(y)[0]
    assert y.shape == x.shape
    x2 = x.clone()
    x2[:, 6:] = 0.0
    y2 = x2
    for layer in layers:
        y2 = layer(y2)[0]
    torch.testing.assert_close(y[:, :6], y2[:, :6])


def test_bad_arguments_are_refused():
    with pytest.raises(ConfigError, match="pattern"):
        tdmca_layers(BlockConfig(d_model=D, n_heads=H), "LXM")
    with pytest.raises(ConfigError, match="compression"):
        MemoryCompressedAttention(D, H, compression=0)
    with pytest.raises(ConfigError, match="query_chunk"):
        MemoryCompressedAttention(D, H, query_chunk=0)
    with pytest.raises(ConfigError, match="block_size"):
        LocalAttention(D, H, block_size=0)
    with pytest.raises(ValueError, match="no mask"):
        LocalAttention(D, H)(x_of(), need_weights=True)

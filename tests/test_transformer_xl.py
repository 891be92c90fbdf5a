"""Transformer-XL (shoulders.models.transformer_xl): the relative-position shift against its direct gather, the
memory (segment recurrence) against one pass over the whole text, stop-gradient, streaming evaluation, and the
recipe's budget against GPT's."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import shoulders as sh
from shoulders.config import ConfigError
from shoulders.models.transformer_xl import (TransformerXLConfig, TransformerXLLM, causal_memory_mask, rel_shift,
                                             rel_shift_naive, relative_encoding, stream_nll, update_memory)
from shoulders.recipes.gpt import GPTPretrainingConfig
from shoulders.recipes.transformer_xl import TransformerXLPretrainingConfig, recompute_nll

pytestmark = pytest.mark.usefixtures("one_thread")

ATOL = 1e-5
V = 50


@torch.no_grad()
def randomise(model: torch.nn.Module, scale: float = 0.2) -> torch.nn.Module:
    """Every tensor random (biases, u, v and LayerNorms too): attention far from uniform, so context matters."""
    g = torch.Generator().manual_seed(1)
    for name, p in model.named_parameters():
        noise = torch.randn(p.shape, generator=g)
        p.copy_(1.0 + 0.2 * noise if "norm" in name and name.endswith("weight") else scale * noise)
    return model


def tiny(**kw) -> TransformerXLLM:
    base = dict(vocab_size=V, d_model=32, n_layers=2, n_heads=4, d_ff=64, seg_len=4, mem_len=4, dropout=0.0)
    torch.manual_seed(0)
    return randomise(TransformerXLLM(TransformerXLConfig(**{**base, **kw}))).eval()


def ids(B: int = 2, T: int = 12, seed: int = 2) -> torch.Tensor:
    return torch.randint(V, (B, T), generator=torch.Generator().manual_seed(seed))


def segmented_logits(model: TransformerXLLM, x: torch.Tensor, seg_len: int, mem_len: int) -> torch.Tensor:
    memory, out = None, []
    for s in range(0, x.shape[1], seg_len):
        h, memory = model.hidden(x[:, s: s + seg_len], memory, mem_len)
        out.append(F.linear(h, model.embed.weight, model.out_bias))
    return torch.cat(out, dim=1)


# -- relative positions -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("q_len,k_len", [(1, 1), (4, 4), (3, 7), (4, 12), (5, 6)])
def test_rel_shift_equals_the_naive_gather(q_len, k_len):
    x = torch.randn(2, 3, q_len, q_len + k_len)
    assert torch.equal(rel_shift(x, k_len), rel_shift_naive(x, k_len))


@pytest.mark.parametrize("q_len,k_len", [(4, 4), (3, 7), (4, 12)])
def test_rel_shift_reads_the_distance_from_query_to_key(q_len, k_len):
    # column p of the scores holds distance k_len - p (relative_encoding's rows)
    x = (k_len - torch.arange(q_len + k_len, dtype=torch.float32)).expand(q_len, -1)
    i = torch.arange(q_len)[:, None]
    j = torch.arange(k_len)[None, :]
    want = ((k_len - q_len + i) - j).float()  # query i stands at position k_len - q_len + i
    assert torch.equal(rel_shift(x, k_len), want)
    assert torch.equal(rel_shift_naive(x, k_len), want)


def test_relative_encoding_rows_are_sinusoids_of_the_distances():
    q_len, k_len, d = 3, 5, 8
    r = relative_encoding(q_len, k_len, d)
    assert r.shape == (q_len + k_len, d)
    inv_freq = 1.0 / 10_000 ** (torch.arange(0, d, 2).float() / d)
    for p in range(q_len + k_len):
        angle = (k_len - p) * inv_freq
        assert torch.allclose(r[p], torch.cat([angle.sin(), angle.cos()]), atol=1e-6)
    assert torch.equal(r[k_len], torch.cat([torch.zeros(d // 2), torch.ones(d // 2)]))  # distance 0
    assert math.isclose(r[0, 0].item(), math.sin(k_len), abs_tol=1e-6)  # fastest frequency is 1


def test_relative_encoding_clamp_len_caps_the_distance():
    q_len, k_len, d, c = 5, 6, 8, 2  # distances 6 .. -4
    r = relative_encoding(q_len, k_len, d, clamp_len=c)
    row = {k_len - p: r[p] for p in range(q_len + k_len)}
    for dist in (6, 5, 4, 3):
        assert torch.equal(row[dist], row[2])
    for dist in (-3, -4):
        assert torch.equal(row[dist], row[-2])
    assert torch.equal(row[1], relative_encoding(q_len, k_len, d)[k_len - 1])  # inside the cap: unchanged
    assert not torch.allclose(relative_encoding(q_len, k_len, d)[0], row[2])


def test_causal_memory_mask_small_example():
    want = torch.tensor([[1, 1, 1, 0, 0],
                         [1, 1, 1, 1, 0],
                         [1, 1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(causal_memory_mask(3, 2), want)
    assert torch.equal(causal_memory_mask(2, 0), torch.tensor([[True, False], [True, True]]))


# -- memory ----------------------------------------------------------------------------------------------------------
def test_update_memory_keeps_the_last_mem_len_states_detached():
    memory = torch.randn(2, 3, 4)
    hidden = torch.randn(2, 4, 4, requires_grad=True)
    new = update_memory(memory, hidden, 5)
    assert torch.equal(new, torch.cat([memory, hidden], 1)[:, -5:])
    assert not new.requires_grad
    assert torch.equal(update_memory(None, hidden, 2), hidden[:, -2:])
    # a memory longer than what there is keeps all of it
    assert torch.equal(update_memory(None, hidden, 6), hidden)
    assert torch.equal(update_memory(memory, hidden, 10), torch.cat([memory, hidden], 1))
    assert update_memory(memory, hidden, 0).shape == (2, 0, 4)
    assert update_memory(None, hidden, 0).shape == (2, 0, 4)


@pytest.mark.parametrize("T", [12, 11])
@torch.no_grad()
def test_segments_with_full_memory_equal_one_pass_over_the_text(T):
    model = tiny()
    x = ids(T=T)
    whole = model.logits(x)
    assert torch.allclose(segmented_logits(model, x, 4, mem_len=T), whole, atol=ATOL)
    assert torch.allclose(segmented_logits(model, x, 3, mem_len=T), whole, atol=ATOL)
    # a shorter memory forgets: the later segments differ, the first does not
    short = segmented_logits(model, x, 4, mem_len=2)
    assert torch.allclose(short[:, :4], whole[:, :4], atol=ATOL)
    assert (short[:, 4:] - whole[:, 4:]).abs().max() > 1e-3


@torch.no_grad()
def test_forward_with_state_scores_the_segment_in_its_context():
    model = tiny(mem_len=8)
    x_all = ids(T=9)
    x, y = x_all[:, :-1], x_all[:, 1:]
    whole = model.logits(x)  # (B, 8, V)
    first = model(x[:, :4], y[:, :4], return_state=True)
    assert first["state"].shape == (2, 2, 4, 32)  # (n_layers, B, M, d)
    second = model(x[:, 4:], y[:, 4:], state=first["state"])
    want = F.cross_entropy(whole[:, 4:].flatten(0, 1), y[:, 4:].flatten())
    assert abs(second.item() - want.item()) < ATOL
    assert abs(model(x[:, 4:], y[:, 4:]).item() - want.item()) > 1e-4  # without the memory it differs


def test_no_gradient_flows_into_the_memory():
    model = tiny().train()  # dropout 0: train mode computes what eval mode does
    x = ids(T=9)
    x1, y1, x2, y2 = x[:, :4], x[:, 1:5], x[:, 4:8], x[:, 5:9]
    first = model(x1, y1, return_state=True)
    state = first["state"]
    assert first["loss"].requires_grad and not state.requires_grad
    model(x2, y2, state=state).backward()
    grads = [p.grad.clone() for p in model.parameters()]
    # the second loss's gradient is the one it has with a memory that never had a graph
    model.zero_grad()
    with torch.no_grad():
        fresh = model(x1, y1, return_state=True)["state"]
    model(x2, y2, state=fresh).backward()
    for g, p in zip(grads, model.parameters()):
        assert torch.allclose(g, p.grad, atol=1e-6)
    first["loss"].backward()  # the first segment's graph is intact (never backpropagated through)


# -- streaming evaluation ----------------------------------------------------------------------------------------
@torch.no_grad()
def test_stream_nll_without_memory_is_the_sum_of_independent_segments():
    model = tiny()
    text = ids(B=1, T=14).flatten()  # 13 targets: segments of 4, 4, 4, 1
    nll, n = stream_nll(model, text, seg_len=4, mem_len=0)
    assert n == 13
    x, y = text[None, :-1], text[None, 1:]
    want = sum(model(x[:, s: s + 4], y[:, s: s + 4]).item() * y[:, s: s + 4].numel() for s in range(0, 13, 4))
    assert math.isclose(nll, want, rel_tol=1e-5)
    with_memory, _ = stream_nll(model, text, seg_len=4, mem_len=8)
    assert abs(with_memory - nll) > 1e-3


@torch.no_grad()
def test_stream_nll_with_a_long_memory_is_one_pass():
    model = tiny()
    text = ids(B=1, T=14).flatten()
    nll, n = stream_nll(model, text, seg_len=4, mem_len=16)
    logp = model.logits(text[None, :-1]).log_softmax(-1)[0]
    want = -logp.gather(-1, text[1:, None]).sum().item()
    assert n == 13 and math.isclose(nll, want, rel_tol=1e-5)


@torch.no_grad()
def test_stream_nll_in_several_streams_counts_and_scores_each_stream():
    model = tiny()
    text = ids(B=1, T=24).flatten()  # 23 targets -> 3 streams of 7, the last 2 dropped
    nll, n = stream_nll(model, text, seg_len=3, mem_len=3, batch_size=3)
    assert n == 21
    parts = [stream_nll(model, text[b * 7: (b + 1) * 7 + 1], seg_len=3, mem_len=3) for b in range(3)]
    assert [c for _, c in parts] == [7, 7, 7]
    assert math.isclose(nll, sum(v for v, _ in parts), rel_tol=1e-5)
    with pytest.raises(ValueError):
        stream_nll(model, text[:3], seg_len=3, mem_len=3, batch_size=3)


@torch.no_grad()
def test_recompute_nll_is_one_window_per_target():
    model = tiny()
    text = ids(B=1, T=10).flatten()
    context = 3
    nll, n = recompute_nll(model, text, context)
    want = 0.0
    for t in range(1, text.numel()):  # target text[t] after the (at most) `context` tokens before it
        window = text[max(0, t - context): t]
        want -= model.logits(window[None])[0, -1].log_softmax(-1)[text[t]].item()
    assert n == 9 and math.isclose(nll, want, rel_tol=1e-5)
    assert not math.isclose(nll, stream_nll(model, text, 3, 0)[0], rel_tol=1e-3)  # not the disjoint cut


# -- configs -------------------------------------------------------------------------------------------------------
def test_config_errors():
    with pytest.raises(ConfigError):
        TransformerXLConfig(d_model=30, n_heads=4)
    with pytest.raises(ConfigError):
        TransformerXLConfig(mem_len=-1)
    with pytest.raises(ConfigError):
        TransformerXLConfig(clamp_len=-1)
    with pytest.raises(ConfigError):
        TransformerXLConfig(d_model=0)
    TransformerXLConfig(mem_len=0).validate()


@pytest.mark.parametrize("scale", sh.SCALES)
def test_recipe_presets_validate_and_match_gpt_budget(scale):
    xl = TransformerXLPretrainingConfig.preset(scale)
    xl.validate()
    xl.model_config(xl.vocab_size).validate()
    gpt = GPTPretrainingConfig.preset(scale)
    assert (xl.steps, xl.lr, xl.warmup) == (gpt.steps, gpt.lr, gpt.warmup)
    assert xl.batch_size * xl.seg_len == gpt.batch_size * gpt.max_len  # the same tokens per step
    # the context a token sees while training: GPT's window at smoke and full; at cpu a memory of four segments
    # of 32 (Transformer-XL's own point, and what lets the page's memory curve fall for more than one segment)
    assert xl.seg_len + xl.mem_len == (gpt.max_len if scale != "cpu" else gpt.max_len + xl.seg_len)
    assert xl.vocab_size == gpt.vocab_size
    x, y = TransformerXLPretrainingConfig.preset("smoke").example_batch()
    assert x.shape == y.shape and torch.equal(x[:, 1:], y[:, :-1])

"""shoulders.models.transformer (+ _blocks, _decode): the layers against torch's, the paper's formulas, masking
(causal, padding), label smoothing, and decoding (KV cache, greedy vs beam)."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from shoulders.config import ConfigError
from shoulders.models.attention import KVCache
from shoulders.models.transformer import Transformer, TransformerConfig, label_smoothing_loss
from shoulders.models.transformer_blocks import (BlockConfig, Encoder, EncoderLayer, LearnedPositions,
                                                 SinusoidalPositions, copy_into_torch_encoder_layer,
                                                 sinusoidal_encoding)
from shoulders.models.transformer_decode import beam_search, greedy_decode, length_penalty
from shoulders.recipes import translation

pytestmark = pytest.mark.usefixtures("one_thread")

PAD, BOS, EOS = 0, 2, 3


def tiny_cfg(**kw) -> TransformerConfig:
    base = dict(src_vocab=23, tgt_vocab=19, d_model=16, n_heads=4, d_ff=32, enc_layers=2, dec_layers=2,
                dropout=0.0, max_len=40, max_extra_len=8)
    return TransformerConfig(**{**base, **kw})


def tiny_model(seed=0, **kw) -> Transformer:
    torch.manual_seed(seed)
    model = tiny_cfg(tie_output=False, **kw).build().eval()
    with torch.no_grad():  # a random but decisive output layer, so decoding explores many tokens (and <eos>)
        model.generator.weight.normal_(0, 1.0)
    return model


def ids(rows, pad=PAD):
    T = max(len(r) for r in rows)
    return torch.tensor([r + [pad] * (T - len(r)) for r in rows])


# -- pieces --------------------------------------------------------------------------------------------------

def test_sinusoidal_encoding_is_the_papers_formula():
    d, T = 10, 7
    pe = sinusoidal_encoding(T, d)
    for pos in range(T):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    assert sinusoidal_encoding(3, 5).shape == (3, 5)  # an odd width: the last dimension is a sin
    torch.testing.assert_close(SinusoidalPositions(d, 20)(3, offset=4), pe[4:7])


def test_positions_refuse_to_run_past_max_len():
    for pos in (SinusoidalPositions(8, 10), LearnedPositions(8, 10)):
        assert pos(10).shape == (10, 8)
        with pytest.raises(ValueError, match="max_len=10"):
            pos(3, offset=8)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_equals_torch_transformer_encoder_layer(norm_first, activation):
    torch.manual_seed(0)
    cfg = BlockConfig(d_model=16, n_heads=4, d_ff=24, dropout=0.0, activation=activation, norm_first=norm_first)
    ours = EncoderLayer(cfg).eval()
    ref = nn.TransformerEncoderLayer(16, 4, 24, dropout=0.0, activation=activation, batch_first=True,
                                     norm_first=norm_first).eval()
    with torch.no_grad():
        for n in (1, 2):  # give the norms non-trivial scales so their place matters
            getattr(ours, f"norm{n}").weight.uniform_(0.5, 1.5)
            getattr(ours, f"norm{n}").bias.uniform_(-0.5, 0.5)
    copy_into_torch_encoder_layer(ours, ref)
    x = torch.randn(2, 5, 16)
    keep = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    y, _ = ours(x, mask=keep[:, None, None, :])
    y_ref = ref(x, src_key_padding_mask=~keep)
    torch.testing.assert_close(y[keep], y_ref[keep], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_post_ln_and_pre_ln_put_the_norm_where_they_say(norm_first):
    torch.manual_seed(1)
    layer = EncoderLayer(BlockConfig(d_model=8, n_heads=2, d_ff=16, dropout=0.0, norm_first=norm_first)).eval()
    x = torch.randn(1, 4, 8)
    attn = lambda h: layer.self_attn(h)[0]  # noqa: E731
    if norm_first:  # x + Sublayer(LN(x))
        h = x + attn(layer.norm1(x))
        expected = h + layer.ffn(layer.norm2(h))
    else:  # LN(x + Sublayer(x)), the paper
        h = layer.norm1(x + attn(x))
        expected = layer.norm2(h + layer.ffn(h))
    torch.testing.assert_close(layer(x)[0], expected)
    other = EncoderLayer(BlockConfig(d_model=8, n_heads=2, d_ff=16, dropout=0.0, norm_first=not norm_first)).eval()
    other.load_state_dict(layer.state_dict())
    assert not torch.allclose(other(x)[0], expected, atol=1e-3)  # the two orders really differ


def test_block_config_errors_are_clear():
    with pytest.raises(ConfigError, match="multiple of n_heads"):
        BlockConfig(d_model=10, n_heads=4)
    with pytest.raises(ConfigError, match="activation"):
        BlockConfig(activation="swish")
    with pytest.raises(ConfigError, match="share_embeddings"):
        tiny_cfg(share_embeddings=True)
    with pytest.raises(ConfigError, match="multiple of n_heads"):
        tiny_cfg(d_model=18)
    with pytest.raises(ConfigError, match="special ids"):
        tiny_cfg(bos_id=0)


def test_causal_encoder_stack_never_looks_ahead():  # the GPT use of the block
    torch.manual_seed(2)
    enc = Encoder(BlockConfig(d_model=8, n_heads=2, d_ff=16, dropout=0.0, causal=True, norm_first=True), 2).eval()
    x = torch.randn(1, 6, 8)
    y = enc(x)[0]
    x2 = x.clone()
    x2[:, 4:] = torch.randn(1, 2, 8)
    y2 = enc(x2)[0]
    torch.testing.assert_close(y[:, :4], y2[:, :4])
    assert not torch.allclose(y[:, 4:], y2[:, 4:])


# -- the encoder-decoder ----------------------------------------------------------------------------------------

def test_embeddings_tied_and_shared():
    m = tiny_cfg(tie_output=True).build()
    assert m.generator.weight is m.tgt_embed.weight and m.src_embed is not m.tgt_embed
    s = tiny_cfg(src_vocab=19, share_embeddings=True).build()
    assert s.src_embed is s.tgt_embed is not None and s.generator.weight is s.src_embed.weight
    assert s.num_parameters() < m.num_parameters()


def test_decoder_output_at_t_ignores_later_target_tokens():
    model = tiny_model()
    src = torch.tensor([[5, 6, 7, 8]])
    tgt = torch.tensor([[BOS, 9, 10, 11, 12]])
    changed = tgt.clone()
    changed[0, 3:] = torch.tensor([14, 15])
    a, b = model(src, tgt), model(src, changed)
    torch.testing.assert_close(a[:, :3], b[:, :3])
    assert not torch.allclose(a[:, 3:], b[:, 3:])


def test_padding_does_not_change_real_outputs():
    model = tiny_model()
    src, tgt = [5, 6, 7], [BOS, 9, 10]
    alone = model(torch.tensor([src]), torch.tensor([tgt]))
    batch_src = ids([src, [4, 5, 6, 7, 8, 9]])  # row 0 gets 3 pads in the source
    batch_tgt = ids([tgt, [BOS, 4, 5, 6, 7, 8, 9]])  # and 4 in the target
    padded = model(batch_src, batch_tgt)
    torch.testing.assert_close(padded[0, :3], alone[0], atol=1e-5, rtol=1e-5)
    enc_alone = model.encode(torch.tensor([src])).memory
    enc_padded = model.encode(batch_src).memory
    torch.testing.assert_close(enc_padded[0, :3], enc_alone[0], atol=1e-5, rtol=1e-5)


def test_attention_weights_for_every_layer_and_head_leave_the_output_unchanged():
    model = tiny_model()
    src, tgt = ids([[5, 6, 7, 8], [5, 6]]), ids([[BOS, 9, 10], [BOS, 9]])
    before = model(src, tgt)
    maps = model.attention_weights(src, tgt)
    assert [tuple(w.shape) for w in maps["encoder"]] == [(2, 4, 4, 4)] * 2
    assert [tuple(w.shape) for w in maps["decoder"]] == [(2, 4, 3, 3)] * 2
    assert [tuple(w.shape) for w in maps["cross"]] == [(2, 4, 3, 4)] * 2
    for w in maps["encoder"] + maps["decoder"] + maps["cross"]:
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
    assert (maps["cross"][0][1, :, :, 2:] == 0).all()  # no attention on source padding
    assert (maps["decoder"][0][0].triu(1) == 0).all()  # nor on the future
    torch.testing.assert_close(model(src, tgt), before)


def test_forward_with_targets_is_the_label_smoothed_loss_over_real_tokens():
    model = tiny_model()
    src, tgt_in, tgt_out = tiny_cfg().example_batch(3)
    out = model(src, tgt_in, tgt_out)
    logits = model(src, tgt_in)
    expected = F.cross_entropy(logits.transpose(1, 2), tgt_out, ignore_index=PAD, label_smoothing=0.1)
    torch.testing.assert_close(out["loss"], expected)
    assert out["tokens"].item() == int((tgt_out != PAD).sum())


# -- label smoothing ------------------------------------------------------------------------------------------

def test_label_smoothing_matches_the_closed_form_and_torch():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 6, 10, generator=g)
    target = torch.randint(1, 10, (4, 6), generator=g)
    target[1, 3:] = 0  # padding
    eps, K = 0.2, 10
    logp = logits.log_softmax(-1)
    nll = -logp.gather(-1, target[..., None]).squeeze(-1)
    closed = (1 - eps) * nll - eps * logp.sum(-1) / K
    keep = target != 0
    ours = label_smoothing_loss(logits, target, eps, ignore_index=0)
    torch.testing.assert_close(ours, closed[keep].mean())
    torch.testing.assert_close(ours, F.cross_entropy(logits.transpose(1, 2), target, ignore_index=0,
                                                     label_smoothing=eps))
    # no smoothing mass on <pad>: uniform over the other K - 1 classes
    excl = label_smoothing_loss(logits, target, eps, ignore_index=0, exclude_index=0)
    closed_excl = (1 - eps) * nll - eps * (logp.sum(-1) - logp[..., 0]) / (K - 1)
    torch.testing.assert_close(excl, closed_excl[keep].mean())
    assert not torch.allclose(excl, ours)
    torch.testing.assert_close(label_smoothing_loss(logits, target, 0.0),
                               F.cross_entropy(logits.transpose(1, 2), target))
    with pytest.raises(ValueError, match="class axis"):
        label_smoothing_loss(logits, target[:, :3])


# -- decoding ---------------------------------------------------------------------------------------------------

def test_kv_cached_steps_give_the_same_logits_as_the_full_decoder():
    model = tiny_model()
    src = ids([[5, 6, 7, 8, 9], [4, 5]])
    tgt = torch.tensor([[BOS, 9, 10, 11, 12, 13], [BOS, 4, 4, 5, 6, 7]])
    enc = model.encode(src)
    full = model.decode(tgt, enc)[0]
    cache = KVCache()
    steps = [model.decode(tgt[:, t:t + 1], enc, cache)[0] for t in range(tgt.shape[1])]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


def test_greedy_decoding_with_and_without_cache_and_beam_of_one_agree():
    model = tiny_model(seed=3)
    src = ids([[5, 6, 7, 8, 9], [4, 5], [10, 11, 12]])
    greedy = greedy_decode(model, src)
    assert greedy == greedy_decode(model, src, use_cache=False)
    assert greedy == beam_search(model, src, beam_size=1)
    assert all(EOS not in hyp and len(hyp) <= src.shape[1] + 8 for hyp in greedy)
    assert len({tuple(h) for h in greedy}) > 1  # not a degenerate model


def test_greedy_stops_at_eos():
    model = tiny_model()
    with torch.no_grad():
        model.generator.weight.zero_()
        model.generator.weight[EOS] = 0.0
    model.generator.register_forward_hook(lambda m, i, out: out + F.one_hot(torch.tensor(EOS), 19) * 10.0)
    assert greedy_decode(model, ids([[5, 6]])) == [[]]


def test_beam_search_finds_a_better_scored_hypothesis_than_greedy():
    model = tiny_model(seed=4)
    src = ids([[5, 6, 7, 8, 9, 10], [4, 5, 6], [11, 12, 13, 14]])

    def score(hyps, alpha):  # length-normalised log-probability of each finished hypothesis
        out = []
        for b, hyp in enumerate(hyps):
            tgt = torch.tensor([[BOS] + hyp])
            logp = model(src[b:b + 1], tgt).log_softmax(-1)[0]
            nxt = hyp + [EOS]
            total = sum(logp[t, y].item() for t, y in enumerate(nxt))
            out.append(total / length_penalty(len(nxt), alpha))
        return out

    beam = beam_search(model, src, beam_size=4, alpha=0.6, max_len=60)
    greedy = greedy_decode(model, src, max_len=60)
    assert beam == beam_search(model, src, beam_size=4, alpha=0.6, max_len=60, use_cache=False)
    for b_score, g_score in zip(score(beam, 0.6), score(greedy, 0.6)):
        assert b_score >= g_score - 1e-4


def test_a_tiny_model_learns_to_copy(one_thread):
    import shoulders as sh

    torch.manual_seed(0)
    cfg = tiny_cfg(src_vocab=12, tgt_vocab=12, d_model=32, d_ff=64, enc_layers=1, dec_layers=1, n_heads=4,
                   label_smoothing=0.0, lr=3e-3)
    model = cfg.build()
    g = torch.Generator().manual_seed(0)
    batches = []
    for _ in range(8):
        y = torch.randint(4, 12, (32, 5), generator=g)
        batches.append((y, torch.cat([torch.full((32, 1), BOS), y], 1), torch.cat([y, torch.full((32, 1), EOS)], 1)))
    sh.train.fit(model, batches, translation.optimizer(model, cfg), steps=200, progress=False, device="cpu")
    src = torch.tensor([[4, 7, 9, 11, 5], [10, 10, 6, 8, 4]])
    assert greedy_decode(model, src) == src.tolist()


def test_beam_search_cache_follows_the_reranked_beams():
    model = tiny_model(seed=5)
    # make <eos> rare, so hypotheses grow long and beams are re-ranked (and their caches reordered) many times
    model.generator.register_forward_hook(lambda m, i, out: out - 4.0 * F.one_hot(torch.tensor(EOS), 19))
    src = ids([[5, 6, 7, 8, 9, 10], [4, 5, 6], [11, 12, 13, 14]])
    cached = beam_search(model, src, beam_size=3, max_len=12)
    assert cached == beam_search(model, src, beam_size=3, max_len=12, use_cache=False)
    assert max(len(h) for h in cached) >= 6


def test_collate_makes_teacher_forcing_batches():
    cfg = tiny_cfg()
    src, tgt_in, tgt_out = cfg.collate([([5, 6, 7], [8, 9]), ([5], [10, 11, 12])])
    assert src.tolist() == [[5, 6, 7], [5, PAD, PAD]]
    assert tgt_in.tolist() == [[BOS, 8, 9, PAD], [BOS, 10, 11, 12]]
    assert tgt_out.tolist() == [[8, 9, EOS, PAD], [10, 11, 12, EOS]]
    assert tiny_model()(src, tgt_in, tgt_out)["tokens"].item() == 7

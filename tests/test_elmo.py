"""ELMo's biLM (Peters et al. 2018): character ids, the char-CNN token encoder and its highway layers, no peeking
in either direction (padding included), the shared softmax against a hand-computed NLL, the scalar mix against its
closed form, a one-batch overfit and the config's errors."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import shoulders as sh
from shoulders.config import ConfigError
from shoulders.models.elmo import (IGNORE, BiLM, CharCNN, ELMoConfig, Highway, ScalarMix, bilm_targets,
                                   reverse_padded, word_mask)
from shoulders.text import Vocab, char_ids, char_table
from shoulders.text.lm_data import unigram_log_probs
from shoulders.text.word_chars import BOS_CHAR, BOW, EOW, NO_WORD, PAD_CHAR

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

V = 40
WORDS = [f"w{i}" if i % 3 else f"word-{i}é" for i in range(V)]  # ASCII and two-byte characters, various lengths


def tiny(**kw) -> ELMoConfig:
    base = dict(vocab_size=V, max_chars=8, char_dim=4, filters=((1, 4), (2, 4), (3, 8)), n_highway=1, proj_dim=6,
                lstm_dim=10, n_layers=2, dropout=0.0, div_value=2.0, batch_size=2, bptt=6)
    return ELMoConfig(**{**base, **kw})


def build(**kw) -> BiLM:
    sh.seed(0)
    return tiny(**kw).build().eval()


TABLE = char_table(WORDS, 8)  # (V, 8)


def chars_of(ids: torch.Tensor) -> torch.Tensor:
    return TABLE[ids]  # (B, T) -> (B, T, C)


# ---------------------------------------------------------------------------------------------------- char ids
def test_char_ids_layout():
    c = char_ids(["ab", "é"], max_chars=6)
    assert c.dtype == torch.long and c.shape == (2, 6)
    assert c[0].tolist() == [BOW, ord("a") + 1, ord("b") + 1, EOW, PAD_CHAR, PAD_CHAR]
    assert c[1].tolist() == [BOW, 0xC3 + 1, 0xA9 + 1, EOW, PAD_CHAR, PAD_CHAR]  # é is two UTF-8 bytes
    assert char_ids(["<S>"], 5)[0].tolist() == [BOW, BOS_CHAR, EOW, PAD_CHAR, PAD_CHAR]  # ELMo's sentence marker
    assert int(c.min()) > NO_WORD  # 0 is kept for padded positions


def test_char_ids_unicode_truncation_and_unseen_words():
    word = "日本語テキスト"  # 21 UTF-8 bytes
    c = char_ids([word, "x" * 100, "never-seen-𝔘"], max_chars=10)
    body = [b + 1 for b in word.encode("utf-8")[:8]]
    assert c[0].tolist() == [BOW, *body, EOW]  # cut to max_chars - 2 bytes, EOW kept
    assert c[1].tolist() == [BOW] + [ord("x") + 1] * 8 + [EOW]
    assert (c[2] < 262).all() and c[2, 0] == BOW and EOW in c[2].tolist()


def test_char_ids_errors():
    with pytest.raises(ValueError, match="empty word"):
        char_ids(["a", ""], 5)
    with pytest.raises(ValueError, match="max_chars"):
        char_ids(["a"], 2)
    with pytest.raises(TypeError, match="list of words"):
        char_ids("word", 5)
    with pytest.raises(TypeError, match="must be a str"):
        char_ids(["a", 3], 5)


def test_char_table_indexes_a_batch_of_word_ids():
    vocab = Vocab.build(["the", "cat", "the", "sat"], specials=["<pad>"])
    table = char_table(vocab, 7, pad_token="<pad>")
    assert table.shape == (len(vocab), 7)
    ids = torch.tensor([[vocab["the"], vocab["sat"], vocab["<pad>"]]])
    batch = table[ids]  # (1, 3, 7)
    assert batch.shape == (1, 3, 7)
    assert torch.equal(batch[0, :2], char_ids(["the", "sat"], 7))
    assert (batch[0, 2] == NO_WORD).all() and word_mask(batch).tolist() == [[True, True, False]]
    with pytest.raises(ValueError, match="pad_token"):
        char_table(["a"], 5, pad_token="<pad>")


# --------------------------------------------------------------------------------------------- token encoder
def test_highway_matches_its_closed_form():
    sh.seed(0)
    hw = Highway(3, 1)
    assert (hw.T[0].bias < 0).all()  # gates start closed: mostly carry
    x = torch.randn(5, 3)
    t = torch.sigmoid(x @ hw.T[0].weight.T + hw.T[0].bias)
    want = t * torch.relu(x @ hw.H[0].weight.T + hw.H[0].bias) + (1 - t) * x
    torch.testing.assert_close(hw(x), want)
    assert torch.equal(Highway(3, 0)(x), x)


def test_char_cnn_shapes_and_padding():
    cfg = tiny()
    sh.seed(0)
    enc = CharCNN(cfg)
    chars = chars_of(torch.tensor([[1, 2, 3], [4, 5, 6]]))
    chars[1, 2] = NO_WORD  # a padded position
    x = enc(chars)
    assert x.shape == (2, 3, cfg.proj_dim)
    assert (x[1, 2] == 0).all() and (x[0, 2] != 0).any()
    # each word is encoded on its own: the same word anywhere gives the same vector
    torch.testing.assert_close(enc(chars_of(torch.tensor([[3]])))[0, 0], x[0, 2])
    # the max-pooled feature width is the sum of the filter counts
    assert enc.proj.in_features == cfg.n_filters == 16
    with pytest.raises(ValueError, match="chars"):
        enc(torch.zeros(2, 3, 5, dtype=torch.long))  # max_chars is 8


# ----------------------------------------------------------------------------------------------------- the biLM
def test_bilm_layers_shapes():
    model = build()
    ids = torch.randint(V, (2, 5))
    layers = model.layers(chars_of(ids))
    P = model.cfg.proj_dim
    assert layers.shape == (model.cfg.n_layers + 1, 2, 5, 2 * P) and model.cfg.output_dim == 2 * P
    torch.testing.assert_close(layers[0, ..., :P], layers[0, ..., P:])  # h_0 = [x; x]
    torch.testing.assert_close(layers[0, ..., :P], model.token_encoder(chars_of(ids)))


def test_second_layer_has_a_residual_connection():
    """h_2 = LSTMP_2(h_1) + h_1 (ELMo's residual from the first to the second layer), h_1 = LSTMP_1(x)."""
    model = build()
    x = model.token_encoder(chars_of(torch.randint(V, (2, 5))))
    for stack in (model.forward_lm, model.backward_lm):
        h1, h2 = stack(x)
        torch.testing.assert_close(h1, stack.lstms[0](x)[0])
        torch.testing.assert_close(h2, stack.lstms[1](h1)[0] + h1)
        assert stack.lstms[0].proj_size == model.cfg.proj_dim and stack.lstms[0].hidden_size == model.cfg.lstm_dim
    assert model.forward_lm.lstms[0].weight_hh_l0 is not model.backward_lm.lstms[0].weight_hh_l0


def test_reverse_padded_reverses_within_each_length():
    x = torch.arange(10).view(2, 5)
    r = reverse_padded(x, torch.tensor([5, 3]))
    assert r.tolist() == [[4, 3, 2, 1, 0], [7, 6, 5, 8, 9]]
    assert torch.equal(reverse_padded(r, torch.tensor([5, 3])), x)


def halves(model: BiLM, chars: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    P = model.cfg.proj_dim
    layers = model.layers(chars)[1:]  # (L, B, T, 2P): the LSTM layers
    return layers[..., :P], layers[..., P:]


def test_no_peeking_in_either_direction():
    """->h at t depends on words 1..t only; <-h at t on words t..T only. The perturbation of the other side must
    change the other direction, so that the test cannot pass by looking at a constant."""
    model = build()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(V, (3, 9), generator=g)
    t0 = 4
    fwd, bwd = halves(model, chars_of(ids))

    later = ids.clone()
    later[:, t0 + 1:] = (ids[:, t0 + 1:] + 1 + torch.randint(V - 1, later[:, t0 + 1:].shape, generator=g)) % V
    f2, b2 = halves(model, chars_of(later))
    torch.testing.assert_close(f2[:, :, : t0 + 1], fwd[:, :, : t0 + 1], rtol=0, atol=0)  # the future is unseen
    assert (b2[:, :, t0] - bwd[:, :, t0]).abs().amax() > 1e-4  # ... but the backward LM reads it

    earlier = ids.clone()
    earlier[:, :t0] = (ids[:, :t0] + 1 + torch.randint(V - 1, earlier[:, :t0].shape, generator=g)) % V
    f3, b3 = halves(model, chars_of(earlier))
    torch.testing.assert_close(b3[:, :, t0:], bwd[:, :, t0:], rtol=0, atol=0)  # the past is unseen backwards
    assert (f3[:, :, t0] - fwd[:, :, t0]).abs().amax() > 1e-4  # ... but the forward LM reads it


def test_padding_changes_nothing_and_must_be_on_the_right():
    """A row padded to a longer batch gives the same layers as the row alone: the backward LM starts at the
    row's last word, not at the padding."""
    model = build()
    ids = torch.randint(V, (1, 4))
    alone = model.layers(chars_of(ids))  # (L+1, 1, 4, 2P)
    padded = torch.cat([chars_of(ids), torch.zeros(1, 3, 8, dtype=torch.long)], 1)  # (1, 7, C)
    batch = torch.cat([padded, chars_of(torch.randint(V, (1, 7)))])  # (2, 7, C): a full row beside it
    out = model.layers(batch)
    torch.testing.assert_close(out[:, :1, :4], alone)
    assert (out[:, 0, 4:] == 0).all()
    gap = batch.clone()
    gap[1, 2] = NO_WORD  # padding in the middle of a row
    with pytest.raises(ValueError, match="end of each row"):
        model.layers(gap)


def hand_nll(model: BiLM, h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """-log P(y) from the whole distribution: (n, P), (n,) -> (n,); also checks that it sums to one."""
    log_p = model.out.log_prob(h) if model.adaptive else torch.log_softmax(model.out(h), -1)  # (n, |V|)
    torch.testing.assert_close(torch.logsumexp(log_p, -1), torch.zeros(len(h)), atol=1e-5, rtol=0)
    return -log_p.gather(1, y.unsqueeze(1)).squeeze(1)


@pytest.mark.parametrize("cutoffs", [None, (5, 20)], ids=["full", "adaptive"])
def test_loss_is_the_mean_nll_of_both_directions(cutoffs):
    model = build(adaptive_cutoffs=cutoffs)
    assert model.adaptive == (cutoffs is not None)
    g = torch.Generator().manual_seed(2)
    words, fwd_t, bwd_t = bilm_targets(torch.randint(V, (2, 7), generator=g))  # T = 5
    chars = chars_of(words)
    chars[1, 4] = NO_WORD  # row 1 has 4 words
    fwd_t, bwd_t = fwd_t.clone(), bwd_t.clone()
    fwd_t[0, 2] = IGNORE
    out = model(chars, fwd_t, bwd_t)
    _, forward, backward, mask = model.encode(chars)
    keep_f = mask & (fwd_t != IGNORE)
    keep_b = mask
    want_f = hand_nll(model, forward[-1][keep_f], fwd_t[keep_f]).mean()
    want_b = hand_nll(model, backward[-1][keep_b], bwd_t[keep_b]).mean()
    torch.testing.assert_close(out["fwd_loss"], want_f)
    torch.testing.assert_close(out["bwd_loss"], want_b)
    torch.testing.assert_close(out["loss"], (want_f + want_b) / 2)
    assert out["tokens"] == 9 and out["loss"].requires_grad
    per_token = model.token_nll(chars, fwd_t)  # (B, T), 0 where not predicted
    assert per_token.shape == (2, 5) and per_token[0, 2] == 0 and per_token[1, 4] == 0
    torch.testing.assert_close(per_token.sum() / keep_f.sum(), want_f)
    torch.testing.assert_close(model.token_nll(chars, bwd_t, "backward").sum() / keep_b.sum(), want_b)
    with pytest.raises(ValueError, match="direction"):
        model.token_nll(chars, fwd_t, "both")


def test_bilm_targets_are_the_neighbours():
    ids = torch.tensor([[10, 11, 12, 13, 14]])
    words, fwd, bwd = bilm_targets(ids)
    assert words.tolist() == [[11, 12, 13]] and fwd.tolist() == [[12, 13, 14]] and bwd.tolist() == [[10, 11, 12]]
    with pytest.raises(ValueError, match="T \\+ 2"):
        bilm_targets(torch.tensor([[1, 2]]))


def test_bad_targets_are_named():
    model = build()
    chars = chars_of(torch.randint(V, (2, 5)))
    ok = torch.randint(V, (2, 5))
    with pytest.raises(ValueError, match="targets_fwd"):
        model(chars, torch.full((2, 5), V), ok)
    with pytest.raises(ValueError, match="targets_bwd"):
        model(chars, ok, ok[:, :4])
    with pytest.raises(ValueError, match="nothing to predict"):
        model(chars, torch.full((2, 5), IGNORE), ok)


@pytest.mark.parametrize("cutoffs", [None, (5, 20)], ids=["full", "adaptive"])
def test_init_unigram_starts_the_shared_softmax_at_the_unigram_model(cutoffs):
    model = build(adaptive_cutoffs=cutoffs)
    counts = torch.arange(V, 0, -1)
    model.init_unigram_(counts)
    log_p = unigram_log_probs(counts).float()
    if cutoffs is None:
        torch.testing.assert_close(model.output_bias.detach(), log_p)
    else:
        torch.testing.assert_close(model.out.head.bias.detach()[:5], log_p[:5])


def test_one_batch_overfit_through_fit():
    cfg = ELMoConfig.preset("smoke", vocab_size=V, adaptive_cutoffs=(10, 25), batch_size=4, bptt=12)
    sh.seed(0)
    model = cfg.build()
    ids = torch.randint(V, (4, 14), generator=torch.Generator().manual_seed(3))
    words, fwd, bwd = bilm_targets(ids)
    batch = (char_table(WORDS, cfg.max_chars)[words], fwd, bwd)
    hist = sh.train.fit(model, [batch], torch.optim.Adam(model.parameters(), lr=1e-2), steps=100, progress=False,
                        device="cpu")
    _, losses = hist.series("loss")
    assert losses[-1] < 0.25 * losses[0], (losses[0], losses[-1])
    assert hist.last("fwd_loss") < 0.25 * losses[0] and hist.last("bwd_loss") < 0.25 * losses[0]


# ----------------------------------------------------------------------------------------------- the scalar mix
def test_scalar_mix_is_the_softmax_weighted_sum():
    torch.manual_seed(0)
    mix = ScalarMix(3)
    with torch.no_grad():
        mix.s.copy_(torch.tensor([0.5, -1.0, 2.0]))
        mix.gamma.fill_(1.7)
    h = torch.randn(3, 2, 4, 5)
    w = torch.exp(mix.s.detach()) / torch.exp(mix.s.detach()).sum()
    want = 1.7 * (w[0] * h[0] + w[1] * h[1] + w[2] * h[2])
    torch.testing.assert_close(mix(h), want)
    weights, gamma = mix.weights()
    torch.testing.assert_close(weights, w)
    assert gamma == pytest.approx(1.7) and not weights.requires_grad
    assert torch.equal(ScalarMix(3).weights()[0], torch.full((3,), 1 / 3))  # starts at equal weights, gamma 1

    mix(h).pow(2).sum().backward()
    assert mix.s.grad is not None and mix.s.grad.abs().sum() > 0
    assert mix.gamma.grad is not None and mix.gamma.grad.abs() > 0


def test_scalar_mix_layer_norm_over_unmasked_positions():
    torch.manual_seed(0)
    mix = ScalarMix(2, do_layer_norm=True)
    with torch.no_grad():
        mix.s.copy_(torch.tensor([0.3, -0.2]))
    h = torch.randn(2, 3, 4, 5) * 3 + 1
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
    h[:, ~mask] = 100.0  # padding values must not enter the statistics
    out = mix(h, mask)
    w = torch.softmax(mix.s.detach(), 0)
    words = [h[j][mask] for j in range(2)]  # (N, D) each: the unmasked positions
    normed = [F.layer_norm(x, x.shape, eps=1e-12) for x in words]  # one mean and variance per layer
    torch.testing.assert_close(out[mask], w[0] * normed[0] + w[1] * normed[1])
    assert (out[~mask] == 0).all()
    # without the flag nothing is normalised
    torch.testing.assert_close(ScalarMix(2)(h, mask)[mask], 0.5 * (words[0] + words[1]))
    with pytest.raises(ValueError, match="layers must be"):
        mix(h[:1])


def test_scalar_mix_over_bilm_layers():
    model = build()
    chars = chars_of(torch.randint(V, (2, 5)))
    mix = ScalarMix(model.cfg.n_layers + 1, do_layer_norm=True)
    out = mix(model.layers(chars), word_mask(chars))
    assert out.shape == (2, 5, model.cfg.output_dim)


# ----------------------------------------------------------------------------------------------------- config
@pytest.mark.parametrize("changes, field", [
    (dict(max_chars=2), "max_chars"),
    (dict(filters=()), "filters"),
    (dict(filters=((0, 4),)), "filters"),
    (dict(filters=((9, 4),)), "filters"),  # wider than max_chars=8
    (dict(proj_dim=0), "proj_dim"),
    (dict(lstm_dim=0), "lstm_dim"),
    (dict(n_layers=0), "n_layers"),
    (dict(n_highway=-1), "n_highway"),
    (dict(dropout=1.0), "dropout"),
    (dict(adaptive_cutoffs=(20, 10)), "adaptive_cutoffs"),
    (dict(adaptive_cutoffs=(5, V)), "adaptive_cutoffs"),
    (dict(adaptive_cutoffs=(5, 10, 20), div_value=2.0), "div_value"),  # the last tail would get 6 // 8 = 0 dims
    (dict(vocab_size=0), "vocab_size"),
    (dict(lr=0.0), "lr"),
])
def test_config_errors_name_the_field(changes, field):
    with pytest.raises(ConfigError, match=field):
        tiny(**changes)


def test_presets_and_batches():
    cfg = tiny(filters=[[1, 4], [2, 4]], adaptive_cutoffs=[5, 20])  # lists, as a config read back from JSON
    assert cfg.filters == ((1, 4), (2, 4)) and cfg.adaptive_cutoffs == (5, 20)
    full = ELMoConfig.preset("full")
    assert (full.char_dim, full.n_filters, full.n_highway, full.proj_dim, full.lstm_dim, full.n_layers) == (
        16, 2048, 2, 512, 4096, 2)
    for name in sh.SCALES:
        c = ELMoConfig.preset(name)
        chars, fwd, bwd = c.step_batch()
        assert chars.shape == (c.batch_size, c.bptt, c.max_chars) and fwd.shape == bwd.shape == (c.batch_size, c.bptt)
        assert word_mask(chars).all() and int(fwd.max()) < c.vocab_size
        ex = c.example_batch()
        assert ex[0].shape[:2] == ex[1].shape == ex[2].shape

"""Bengio et al.'s NNLM and the n-gram windows it trains on: shapes, the paper's parameter count, the forward
formula y = b + Wx + U tanh(d + Hx), one-batch overfit, and the window batches."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import shoulders as sh
from shoulders.models.nnlm import NNLM, NNLMConfig, nnlm_param_count
from shoulders.text import LMStream, Vocab
from shoulders.text.windows import ngram_batches, sliding_windows, window_batches


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def small(**kw) -> NNLMConfig:
    return NNLMConfig(**{**dict(vocab_size=50, n=4, emb_dim=6, hidden=7, batch_size=8), **kw})


def test_shapes_and_loss():
    cfg = small()
    model = cfg.build()
    x, y = cfg.example_batch(5)
    assert x.shape == (5, 3) and y.shape == (5,)
    logits = model.logits(x)
    assert logits.shape == (5, 50)
    loss = model(x, y)
    assert loss.shape == () and torch.isfinite(loss)
    torch.testing.assert_close(loss, F.cross_entropy(logits, y))


@pytest.mark.parametrize("direct", [True, False])
@pytest.mark.parametrize("V, n, m, h", [(50, 4, 6, 7), (1000, 6, 60, 50), (17, 2, 3, 1)])
def test_parameter_count_is_bengios_formula(direct, V, n, m, h):
    model = NNLM(NNLMConfig(vocab_size=V, n=n, emb_dim=m, hidden=h, direct=direct))
    count = sum(p.numel() for p in model.parameters())
    if direct:  # Bengio et al. 2003, sec. 2
        expected = V * (1 + n * m + h) + h * (1 + (n - 1) * m)
    else:  # the same without W's |V|(n-1)m
        expected = V * (1 + m + h) + h * (1 + (n - 1) * m)
    assert count == expected == nnlm_param_count(V, n, m, h, direct)
    assert (model.W is not None) == direct


def test_forward_is_the_papers_formula():
    cfg = small()
    sh.seed(1)
    model = cfg.build()
    x, _ = cfg.example_batch(4)
    C, H, d = model.C.weight, model.H.weight, model.H.bias
    U, b, W = model.U.weight, model.U.bias, model.W.weight
    feats = torch.cat([C[x[:, i]] for i in range(x.shape[1])], dim=1)  # (B, (n-1)m)
    y = b + feats @ W.T + torch.tanh(d + feats @ H.T) @ U.T
    torch.testing.assert_close(model.logits(x), y)
    model_nw = small(direct=False).build()
    model_nw.load_state_dict({k: v for k, v in model.state_dict().items() if not k.startswith("W.")})
    torch.testing.assert_close(model_nw.logits(x), y - feats @ W.T)


@pytest.mark.parametrize("direct", [True, False])
def test_one_batch_overfit(direct):
    sh.seed(0)
    cfg = small(direct=direct, vocab_size=40, hidden=32, emb_dim=16)
    model = cfg.build()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(40, (16, cfg.n), generator=g)
    batch = (ids[:, :-1], ids[:, -1])
    opt = torch.optim.Adam(model.parameters(), lr=3e-2)
    hist = sh.train.fit(model, [batch], opt, steps=150, progress=False, device="cpu")
    losses = hist.series("loss")[1]
    assert losses[-1] < 0.1 * losses[0], (losses[0], losses[-1])


def test_sliding_windows_and_ngram_batches():
    ids = torch.arange(10, 20)
    w = sliding_windows(ids, 3)
    assert w.shape == (8, 3) and w[0].tolist() == [10, 11, 12] and w[-1].tolist() == [17, 18, 19]
    b = ngram_batches(ids, 3, batch_size=3, shuffle=False)
    batches = list(b)
    assert len(batches) == len(b) == 3
    x, y = batches[0]
    assert x.tolist() == [[10, 11], [11, 12], [12, 13]] and y.tolist() == [12, 13, 14]
    assert torch.cat([y for _, y in batches]).tolist() == list(range(12, 20))
    # pad: every token of the stream is a target once
    padded = ngram_batches(ids, 3, batch_size=4, shuffle=False, pad=0)
    xs, ys = zip(*padded)
    assert torch.cat(ys).tolist() == list(range(10, 20))
    assert xs[0][0].tolist() == [0, 0] and xs[0][1].tolist() == [0, 10]
    # shuffled: the same pairs in another order, reproducible from torch's generator
    torch.manual_seed(0)
    a = list(ngram_batches(ids, 3, batch_size=3))
    torch.manual_seed(0)
    a2 = list(ngram_batches(ids, 3, batch_size=3))
    assert all(torch.equal(p[0], q[0]) for p, q in zip(a, a2))
    pairs = sorted((tuple(x.tolist()), int(y)) for xb, yb in a for x, y in zip(xb, yb))
    assert pairs == sorted((tuple(x.tolist()), int(y)) for xb, yb in batches for x, y in zip(xb, yb))
    wb = list(window_batches(ids, 5, batch_size=4, shuffle=False))
    assert [t.shape for t in wb] == [(4, 5), (2, 5)]


def test_config_batches_pad_with_eos_for_evaluation():
    vocab = Vocab(["<unk>", "<eos>", "a", "b"])
    stream = LMStream(torch.tensor([2, 3, 2, 1, 3]), vocab)
    cfg = small(n=3, vocab_size=4, eval_batch_size=100)
    (x, y), = list(cfg.batches(stream, train=False))
    assert y.tolist() == [2, 3, 2, 1, 3] and x[0].tolist() == [1, 1]
    assert sum(b[1].numel() for b in cfg.batches(stream)) == 3  # training: no padding, shuffled


def test_config_errors():
    with pytest.raises(sh.config.ConfigError):
        NNLMConfig(n=1)
    with pytest.raises(sh.config.ConfigError):
        NNLMConfig(dropout=1.0)


def test_unigram_bias_starts_the_model_at_the_unigram_model():
    from shoulders.models.nnlm import init_unigram_bias_
    cfg = small(direct=False)
    model = cfg.build()
    counts = torch.arange(50.0)
    init_unigram_bias_(model.output_bias, counts)
    assert model.output_bias is model.U.bias
    with torch.no_grad():
        model.U.weight.zero_()
    x, _ = cfg.example_batch(3)
    expected = (counts + 1) / (counts.sum() + 50)  # add-one unigram
    torch.testing.assert_close(model.logits(x).softmax(-1), expected.expand(3, 50).float())
    with pytest.raises(ValueError):
        init_unigram_bias_(model.output_bias, torch.ones(49))


def test_token_logprobs_give_the_perplexity_and_follow_the_stream():
    from shoulders.evaluate.perplexity import perplexity, token_logprobs
    sh.seed(0)
    cfg = small(n=3, vocab_size=4, eval_batch_size=3)
    model = cfg.build()
    stream = LMStream(torch.tensor([2, 3, 2, 1, 3, 0, 2]), Vocab(["<unk>", "<eos>", "a", "b"]))
    lp = token_logprobs(model, cfg.batches(stream, train=False))
    assert lp.dtype == np.float64 and lp.shape == (7,)  # one per token of the stream, <eos>-padded windows
    ctx = torch.tensor([[1, 1], [1, 2], [2, 3], [3, 2], [2, 1], [1, 3], [3, 0]])
    expected = model.logits(ctx).log_softmax(-1)[torch.arange(7), stream.ids]
    np.testing.assert_allclose(lp, expected.detach().double().numpy(), rtol=1e-6)
    assert math.isclose(math.exp(-lp.mean()), perplexity(model, cfg.batches(stream, train=False)), rel_tol=1e-5)


def test_interpolation_of_two_models_against_the_closed_form():
    from shoulders.evaluate.perplexity import fit_interpolation, interpolate, interpolated_perplexity
    # two kinds of token, equally many: model a gives them 0.5 and 0.1, model b 0.1 and 0.4. The likelihood's
    # derivative  d1 / (b1 + lam d1) + d2 / (b2 + lam d2) = 0  (d = a - b)  gives lam* = -(d1 b2 + d2 b1) / (2 d1 d2)
    pa, pb = np.array([0.5, 0.1] * 50), np.array([0.1, 0.4] * 50)
    d1, d2, b1, b2 = 0.4, -0.3, 0.1, 0.4
    lam_star = -(d1 * b2 + d2 * b1) / (2 * d1 * d2)  # 13/24
    lam = fit_interpolation(np.log(pa), np.log(pb))
    assert lam == pytest.approx(lam_star, abs=1e-9)
    mix = lam_star * pa + (1 - lam_star) * pb
    np.testing.assert_allclose(interpolate(np.log(pa), np.log(pb), lam_star), np.log(mix), rtol=1e-12)
    expected_ppl = ((lam_star * 0.5 + (1 - lam_star) * 0.1) * (lam_star * 0.1 + (1 - lam_star) * 0.4)) ** -0.5
    assert interpolated_perplexity(np.log(pa), np.log(pb), lam) == pytest.approx(expected_ppl, rel=1e-12)
    # the ends: lam = 1 and 0 are the models themselves; the mixture at lam* beats both
    assert interpolated_perplexity(np.log(pa), np.log(pb), 1.0) == pytest.approx((0.5 * 0.1) ** -0.5)
    assert interpolated_perplexity(np.log(pa), np.log(pb), 0.0) == pytest.approx((0.1 * 0.4) ** -0.5)
    assert expected_ppl < min((0.5 * 0.1) ** -0.5, (0.1 * 0.4) ** -0.5)
    # a model that is better on every token takes all the weight; one that is never better, none
    assert fit_interpolation(np.log(pa), np.log(pa / 2)) == 1.0
    assert fit_interpolation(np.log(pa / 2), np.log(pa)) == 0.0
    # EM (deleted interpolation) converges to the same weight
    em = 0.5
    for _ in range(2_000):
        r = em * pa / (em * pa + (1 - em) * pb)
        em = r.mean()
    assert em == pytest.approx(lam, abs=1e-6)
    # a token that one model rules out (P = 0, ln P = -inf) is fine as long as the other allows it
    # (derivative 1/lam - 0.3/(0.4 - 0.3 lam) = 0 at lam = 2/3)
    assert fit_interpolation(np.log([0.5, 0.1]), [-np.inf, np.log(0.4)]) == pytest.approx(2 / 3, abs=1e-9)
    with pytest.raises(ValueError):
        interpolate(np.log(pa), np.log(pb[:-1]), 0.5)
    with pytest.raises(ValueError):
        interpolate(np.log(pa), np.log(pb), 1.5)


def test_importance_sampling_loss_is_the_estimate_its_docstring_states():
    """Bengio & Senecal's estimate: ln((1/k) sum_i e^{y_{j_i}} / Q(j_i)) - y_w with j_i drawn from Q."""
    sh.seed(0)
    cfg = small(direct=True, samples=7)
    model = cfg.build()
    counts = torch.arange(1.0, 51.0)
    model.init_unigram_(counts)
    torch.testing.assert_close(model.proposal.sum(), torch.tensor(1.0))
    torch.testing.assert_close(model.proposal.log(), model.output_bias.detach())  # Q = the starting unigram model
    x, y = cfg.example_batch(4)
    torch.manual_seed(3)
    loss = model.sampled_loss(x, y)
    torch.manual_seed(3)
    drawn = torch.multinomial(model.proposal, 7, replacement=True)
    logits = model.logits(x)
    log_z = torch.logsumexp(logits[:, drawn] - model.proposal[drawn].log(), dim=1) - math.log(7)
    torch.testing.assert_close(loss, (log_z - logits[torch.arange(4), y]).mean())
    # training mode uses it, evaluation mode always the exact cross-entropy
    torch.manual_seed(3)
    torch.testing.assert_close(model(x, y), loss)
    model.eval()
    torch.testing.assert_close(model(x, y), F.cross_entropy(logits, y))
    # with many samples the estimate approaches the exact loss
    model.train()
    with torch.no_grad():
        exact, estimate = F.cross_entropy(logits, y), model.sampled_loss(x, y, samples=200_000)
    assert abs(float(estimate) - float(exact)) < 0.02
    with pytest.raises(sh.config.ConfigError):
        small(samples=0)


def test_importance_sampling_trains_the_exact_loss_down():
    sh.seed(0)
    cfg = small(vocab_size=40, hidden=32, emb_dim=16, samples=16)
    model = cfg.build()
    model.init_unigram_(torch.ones(40))
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(40, (16, cfg.n), generator=g)
    x, y = ids[:, :-1], ids[:, -1]
    before = float(F.cross_entropy(model.logits(x), y).detach())
    sh.train.fit(model, [(x, y)], torch.optim.Adam(model.parameters(), lr=3e-2), steps=150, progress=False,
                 device="cpu")
    model.eval()
    assert float(model(x, y).detach()) < 0.2 * before

"""Bengio et al.'s NNLM and the n-gram windows it trains on: shapes, the paper's parameter count, the forward
formula y = b + Wx + U tanh(d + Hx), one-batch overfit, and the window batches."""
from __future__ import annotations

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

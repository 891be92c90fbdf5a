"""GloVe: 1/d co-occurrence counts by hand, the weighting f, the loss formula, and training that learns."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from shoulders.config import ConfigError
from shoulders.models import glove
from shoulders.recipes import word_vectors as wv


def test_cooccurrence_by_hand():
    # "a b c a" with window 2:  d=1: (a,b) (b,c) (c,a);  d=2: (a,c) (b,a)   -- each counted both ways
    ids = torch.tensor([0, 1, 2, 0])
    X = glove.cooccurrence(ids, window=2, num_words=3).to_dense()
    want = torch.tensor([
        [0.0, 1.0 + 0.5, 1.0 + 0.5],  # a-b: d=1 (1) + d=2 (b..a: 1/2); a-c: d=1 (c,a) + d=2 (a,c)
        [1.5, 0.0, 1.0],
        [1.5, 1.0, 0.0],
    ], dtype=torch.float64)
    torch.testing.assert_close(X, want)
    torch.testing.assert_close(X, X.T)


def test_cooccurrence_window_lines_and_asymmetric():
    ids = torch.tensor([0, 1, 2, 3])
    sentence = torch.tensor([0, 0, 1, 1])
    X = glove.cooccurrence(ids, window=3, sentence=sentence, num_words=4).to_dense()
    assert X[1, 2] == 0 and X[0, 3] == 0  # never across lines
    assert X[0, 1] == 1 and X[2, 3] == 1
    Y = glove.cooccurrence(torch.tensor([0, 1, 1]), window=2, symmetric=False, num_words=2).to_dense()
    torch.testing.assert_close(Y, torch.tensor([[0.0, 1.5], [0.0, 1.0]], dtype=torch.float64))


def test_cooccurrence_matches_a_python_loop():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(7, (60,), generator=g)
    X = glove.cooccurrence(ids, window=4, num_words=7).to_dense()
    ref = torch.zeros(7, 7, dtype=torch.float64)
    seq = ids.tolist()
    for i, w in enumerate(seq):
        for d in range(1, 5):
            if i + d < len(seq):
                ref[w, seq[i + d]] += 1 / d
                ref[seq[i + d], w] += 1 / d
    torch.testing.assert_close(X, ref)


def test_weighting_function():
    x = torch.tensor([0.0, 1.0, 50.0, 100.0, 1000.0])
    want = torch.tensor([0.0, 0.01 ** 0.75, 0.5 ** 0.75, 1.0, 1.0])
    torch.testing.assert_close(glove.glove_weight(x), want)
    torch.testing.assert_close(glove.glove_weight(torch.tensor([5.0]), x_max=10, alpha=1.0), torch.tensor([0.5]))


def test_loss_is_equation_8(one_thread):
    torch.manual_seed(0)
    cfg = glove.GloVeConfig(dim=3, vocab_size=5)
    model = cfg.build()
    i, j, x = torch.tensor([0, 1, 4]), torch.tensor([2, 2, 0]), torch.tensor([3.0, 150.0, 1.0])
    W, Wt = model.W.weight.detach(), model.W_tilde.weight.detach()
    b, bt = model.b.weight.detach()[:, 0], model.b_tilde.weight.detach()[:, 0]
    total = 0.0
    for a, c, v in zip(i.tolist(), j.tolist(), x.tolist()):
        f = min(1.0, (v / 100.0) ** 0.75)
        total += f * (float(W[a] @ Wt[c]) + float(b[a]) + float(bt[c]) - torch.log(torch.tensor(v)).item()) ** 2
    assert float(model(i, j, x).detach()) == pytest.approx(total / 3, rel=1e-5)
    torch.testing.assert_close(model.vectors(), W + Wt)


def test_training_recovers_a_low_rank_log_matrix(one_thread):
    """X built from log X = u v^T + 3 exactly: AdaGrad drives the weighted loss near zero."""
    g = torch.Generator().manual_seed(0)
    V = 12
    u, v = torch.randn(V, 2, generator=g), torch.randn(V, 2, generator=g)
    logX = (u @ v.T + 3.0).double()
    rows, cols = torch.meshgrid(torch.arange(V), torch.arange(V), indexing="ij")
    cooc = glove.Cooccurrence(rows.flatten(), cols.flatten(), logX.exp().flatten(), V)
    cfg = glove.GloVeConfig(dim=4, vocab_size=V, lr=0.1, batch_size=72)
    torch.manual_seed(0)
    model = cfg.build(V)
    hist = wv.train_glove(model, cooc, cfg, epochs=150, progress=False, device="cpu")
    losses = hist.series("loss")[1]
    assert losses[-1] < 0.01 * losses[0] and losses[-1] < 0.02, (losses[0], losses[-1])


def test_config_errors():
    with pytest.raises(ConfigError):
        glove.GloVeConfig(alpha=0)
    with pytest.raises(ConfigError):
        glove.GloVeConfig(x_max=-1)


def test_the_glove_giant_trains_once_and_loads_the_same_vectors(tmp_path, monkeypatch, one_thread):
    import shoulders as sh

    monkeypatch.setenv("SHOULDERS_GIANTS", str(tmp_path / "giants"))
    cfg = glove.GloVeConfig.preset("smoke").replace(train_tokens=30_000, epochs=3)
    first = sh.giants.load("glove", cfg, progress=False)
    assert first.trained and len(first.tokenizer) == first.model.W.num_embeddings
    loss = first.history.series("loss")[1]
    assert loss[-1] < loss[0], "GloVe's weighted least squares did not fall"
    second = sh.giants.load("glove", cfg, progress=False)
    assert not second.trained and second.tokenizer.tokens == first.tokenizer.tokens
    assert torch.equal(second.model.vectors(), first.model.vectors())
    assert "the" in second.tokenizer and second.model.vectors().shape == (len(second.tokenizer), cfg.dim)


def test_glove_sst_reads_sst_training_sentences_first_then_the_corpus():
    from shoulders import data
    from shoulders.giants import get

    sst = data.sst_trees("train")[0]
    wiki = wv.corpus_lines("wikitext-2")
    lines = wv.corpus_lines("wikitext-2+sst")
    assert len(lines) == len(sst) + len(wiki)
    assert lines[0] == sst[0].split() and lines[len(sst) - 1] == sst[-1].split() and lines[len(sst)] == wiki[0]
    with pytest.raises(ValueError, match="corpus must be one of"):
        wv.corpus_lines("wikitext-2+imdb")
    with pytest.raises(ConfigError, match="corpus must be one of"):
        glove.GloVeConfig(corpus="sst")
    # the glove_sst giant is chapter 5's GloVe at every scale but for the added text
    for scale in glove.GloVeConfig.presets:
        cfg, plain = glove.GloVeSSTConfig.preset(scale), glove.GloVeConfig.preset(scale)
        assert cfg.corpus == plain.corpus + "+sst", scale
        assert dataclasses.asdict(cfg.replace(corpus=plain.corpus)) == dataclasses.asdict(plain), scale
    assert get("glove_sst").config is glove.GloVeSSTConfig and get("cove_small").base == "glove"
    # words reviews are made of, missing from WikiText-2 at min_count 5, are counted now
    smoke = wv.prepare(glove.GloVeSSTConfig.preset("smoke"))
    assert "pretentious" in smoke.vocab and "n't" in smoke.vocab

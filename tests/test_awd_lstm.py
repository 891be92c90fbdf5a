"""AWD-LSTM (Merity et al. 2018): DropConnect masks the hidden-to-hidden weights only and is off in eval mode,
locked dropout keeps one mask across time, embedding dropout drops whole words, AR and TAR are their closed forms,
eval mode is a plain stack of torch's LSTMs, and the state carries across windows."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import shoulders as sh
from shoulders.config import ConfigError
from shoulders.models.awd_lstm import AWDLSTMConfig, embedding_dropout, locked_dropout
from shoulders.train import CarryState, fit

QUIET = dict(dropout=0.0, dropout_e=0.0, dropout_i=0.0, dropout_h=0.0, wdrop=0.0, alpha=0.0, beta=0.0)
TINY = dict(vocab_size=30, emb_dim=6, hidden=10, layers=3, adaptive_cutoffs=None, batch_size=4, bptt=7)


def make(**kw):
    torch.manual_seed(0)
    return AWDLSTMConfig(**{**TINY, **kw}).build()


def ids(B=4, T=7, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(30, (B, T + 1), generator=g)


def test_layer_widths_and_weight_tying():
    m = make()
    assert [(r.input_size, r.hidden_size) for r in m.rnns] == [(6, 10), (10, 10), (10, 6)]
    assert m.out.weight is m.embed.weight
    untied = make(tie_weights=False, adaptive_cutoffs=(10, 20), div_value=2.0)
    assert untied.adaptive and len(untied.layer_groups()) == 4


def test_eval_mode_is_a_plain_stack_of_torch_lstms():
    m = make(**{k: 0.5 for k in ("dropout", "dropout_e", "dropout_i", "dropout_h", "wdrop")}).eval()
    w = ids()
    x = w[:, :-1]
    h = F.embedding(x, m.embed.weight)
    for rnn in m.rnns:
        h, _ = nn.LSTM.forward(rnn, h)
    want = F.cross_entropy(m.out(h).flatten(0, 1), w[:, 1:].flatten())
    out = m(x, w[:, 1:])
    assert torch.allclose(out["loss"], want, atol=1e-6) and out["ar"] == 0 and out["tar"] == 0
    assert torch.equal(m(x, w[:, 1:])["loss"], out["loss"]), "eval mode must be deterministic"


def test_dropconnect_masks_the_hidden_to_hidden_weights_only():
    m = make(**{**QUIET, "wdrop": 0.5}).train()
    w = ids(B=8, T=12)
    torch.manual_seed(3)
    m(w[:, :-1], w[:, 1:])["loss"].backward()
    for rnn in m.rnns:
        hh, ih = rnn.weight_hh_l0.grad, rnn.weight_ih_l0.grad
        share = float((hh == 0).float().mean())
        assert 0.35 < share < 0.65, f"about half of W_hh's entries must be dropped, got {share:.2f}"
        assert float((ih == 0).float().mean()) < 0.05, "W_ih must not be masked"
    a = m(w[:, :-1], w[:, 1:])["loss"]
    b = m(w[:, :-1], w[:, 1:])["loss"]
    assert not torch.equal(a, b), "a new mask every forward pass in training"
    before = {k: v.clone() for k, v in m.state_dict().items()}
    m(w[:, :-1], w[:, 1:])
    assert all(torch.equal(v, before[k]) for k, v in m.state_dict().items()), "the parameters are never overwritten"


def test_locked_dropout_uses_one_mask_across_time():
    torch.manual_seed(0)
    x = torch.ones(3, 9, 16)
    y = locked_dropout(x, 0.5, training=True)
    assert torch.equal(y, y[:, :1].expand_as(y)), "every time step must share the mask"
    assert set(y.unique().tolist()) == {0.0, 2.0}
    assert torch.equal(locked_dropout(x, 0.5, training=False), x)


def test_embedding_dropout_drops_whole_words():
    torch.manual_seed(0)
    weight = torch.randn(50, 4)
    words = torch.arange(50).repeat(2, 1)  # every word twice
    e = embedding_dropout(weight, words, 0.5, training=True)  # (2, 50, 4)
    dropped = (e == 0).all(-1)  # (2, 50)
    assert torch.equal(dropped[0], dropped[1]) and 10 < int(dropped[0].sum()) < 40
    kept = ~dropped[0]
    assert torch.allclose(e[0, kept], 2 * weight[kept])
    assert torch.equal(embedding_dropout(weight, words, 0.5, training=False), F.embedding(words, weight))


def test_ar_and_tar_are_their_closed_forms():
    m = make(**{**QUIET, "alpha": 2.0, "beta": 1.0}).train()   # no dropout: dropped == raw
    w = ids()
    x, y = w[:, :-1], w[:, 1:]
    out = m(x, y)
    h = m.encode(x)["raw"][-1].detach()  # (B, T, emb_dim)
    assert out["ar"] == pytest.approx(float(2.0 * h.pow(2).mean()), rel=1e-5)
    assert out["tar"] == pytest.approx(float((h[:, 1:] - h[:, :-1]).pow(2).mean()), rel=1e-5)
    assert out["loss"].item() == pytest.approx(float(out["lm_loss"] + out["ar"] + out["tar"]), rel=1e-6)


def test_the_state_carries_across_windows_like_one_long_window():
    m = make(**QUIET).eval()
    w = ids(T=12)
    whole = m.logits(w[:, :12])[0]
    first, state = m.logits(w[:, :5])
    second, _ = m.logits(w[:, 5:12], state)
    assert len(state) == 6 and state[0].shape == (1, 4, 10) and state[-1].shape == (1, 4, 6)
    assert torch.allclose(torch.cat([first, second], 1), whole, atol=1e-5)
    with pytest.raises(ValueError, match="h_1, c_1"):
        m.encode(w[:, :5], state[:2])


def test_fit_with_carried_state_and_variable_bptt_learns(one_thread):
    cfg = AWDLSTMConfig(**{**TINY, **QUIET, "emb_dim": 16, "hidden": 16, "tie_weights": False, "wdrop": 0.2,
                           "dropout_h": 0.1, "alpha": 0.1, "beta": 0.1})
    sh.seed(0)
    m = cfg.build()
    stream = torch.arange(600) % 7 + 3                  # a periodic text: learnable
    batches = sh.text.stream.BPTTBatches(sh.text.stream.batchify(stream, 4), bptt=7, variable=True)
    carry = CarryState()
    hist = fit(m, batches, sh.train.adamw(m, lr=2e-2), steps=150, loss_fn=carry, callbacks=[carry], progress=False)
    _, lm = hist.series("lm_loss")
    assert lm[-5:].mean() < 0.5 * lm[:5].mean(), "the AWD-LSTM did not learn a periodic stream"
    assert "ar" in hist and "tar" in hist


@pytest.mark.parametrize("change, field", [(dict(layers=1), "layers"), (dict(wdrop=1.0), "wdrop"),
                                           (dict(alpha=-1.0), "alpha"),
                                           (dict(adaptive_cutoffs=(10, 20)), "tie_weights")])
def test_config_errors_name_the_field(change, field):
    with pytest.raises(ConfigError, match=field):
        AWDLSTMConfig(**{**TINY, **change})


def test_a_short_pretraining_beats_the_unigram_model_and_caches_as_a_giant(tmp_path, monkeypatch, one_thread):
    monkeypatch.setenv("SHOULDERS_GIANTS", str(tmp_path / "giants"))
    cfg = AWDLSTMConfig.preset("smoke").replace(steps=120, train_tokens=40_000, eval_tokens=4_000, max_vocab=2_000,
                                                adaptive_cutoffs=(500,))
    first = sh.giants.load("awd_lstm", cfg, progress=False)
    assert first.trained
    m = first.metrics
    assert m["valid_ppl"] < 0.9 * m["valid_ppl_unigram"], m
    assert {"lm_loss", "ar", "tar", "val_ppl"} <= set(first.history.keys())
    second = sh.giants.load("awd_lstm", cfg, progress=False)
    assert not second.trained and len(second.tokenizer) == second.model.cfg.vocab_size
    for k, v in first.model.state_dict().items():
        assert torch.equal(v, second.model.state_dict()[k])
    x, y = cfg.example_batch()
    assert sh.evaluate.perplexity(second.model, [(x % 2_000, y % 2_000)]) > 1.0   # a dict-returning model scores
    assert second.snapshot_steps == [100]  # the smoke preset keeps step 100: chapter 11's pre-training curve
    early = second.snapshot(100)
    assert any(not torch.equal(v, early.state_dict()[k]) for k, v in second.model.state_dict().items())
    with pytest.raises(ConfigError, match="snapshots"):
        cfg.replace(snapshots=(500,)).validate()


def test_training_windows_vary_in_length_and_evaluation_windows_do_not():
    cfg = AWDLSTMConfig(**{**TINY, "bptt": 20, "batch_size": 2})
    stream = sh.text.LMStream(torch.arange(2_000) % 30, None)
    train = {x.shape[1] for x, _ in cfg.batches(stream)}
    evaluation = {x.shape[1] for x, _ in cfg.batches(stream, train=False)}
    assert len(train) > 3 and max(evaluation) == 20 and len(evaluation) <= 2   # every window but the last: 20

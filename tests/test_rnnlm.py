"""Recurrent LMs (Elman RNN LM, LSTM LM): shapes, tied weights, one-batch overfit, and truncated BPTT with the
hidden state carried across windows -- continued exactly, detached, reset per epoch, checkpointed -- in training
(:class:`CarryState` inside ``fit``) and in evaluation (``perplexity(carry_state=True)``)."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import shoulders as sh
from shoulders.models.rnnlm import LSTMLM, RNNLM, LSTMLMConfig, RNNLMConfig
from shoulders.train import CarryState, detach_state
from shoulders.text import LMStream


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

V = 30
CONFIGS = {
    "rnn": lambda **kw: RNNLMConfig(**{**dict(vocab_size=V, emb_dim=8, hidden=8, layers=1, dropout=0.0,
                                                tie_weights=False, batch_size=3, bptt=4), **kw}),
    "lstm": lambda **kw: LSTMLMConfig(**{**dict(vocab_size=V, emb_dim=8, hidden=8, layers=2, dropout=0.0,
                                                  tie_weights=False, batch_size=3, bptt=4), **kw}),
}
KINDS = sorted(CONFIGS)


def make(kind: str, **kw):
    sh.seed(0)
    return CONFIGS[kind](**kw).build()


def first(state):
    return state if isinstance(state, torch.Tensor) else state[0]


@pytest.mark.parametrize("kind", KINDS)
def test_shapes(kind):
    model = make(kind, layers=2)
    x = torch.randint(V, (3, 5))
    logits, state = model.logits(x)
    assert logits.shape == (3, 5, V)
    assert first(state).shape == (2, 3, 8)
    assert isinstance(model, RNNLM if kind == "rnn" else LSTMLM)
    assert isinstance(state, torch.Tensor) == (kind == "rnn")
    loss = model(x, x)
    assert loss.shape == ()
    out = model(x, x, state=state, return_state=True)
    assert set(out) == {"loss", "state"} and out["loss"].shape == ()


def test_elman_is_a_tanh_rnn():
    model = make("rnn")
    assert isinstance(model.rnn, torch.nn.RNN) and model.rnn.nonlinearity == "tanh"
    x = torch.randint(V, (2, 3))
    e = model.embed(x)
    W_ih, W_hh, b = model.rnn.weight_ih_l0, model.rnn.weight_hh_l0, model.rnn.bias_ih_l0 + model.rnn.bias_hh_l0
    h = torch.zeros(2, 8)
    for t in range(3):  # h_t = tanh(W_ih e_t + W_hh h_{t-1} + b)
        h = torch.tanh(e[:, t] @ W_ih.T + h @ W_hh.T + b)
    torch.testing.assert_close(model.logits(x)[0][:, -1], model.out(h))


def test_lstm_keeps_its_public_names():
    model = make("lstm", tie_weights=True)
    keys = set(model.state_dict())
    assert {"embed.weight", "out.weight", "out.bias", "lstm.weight_ih_l0", "lstm.weight_hh_l1"} <= keys
    assert isinstance(model.lstm, torch.nn.LSTM)
    for s in sh.SCALES:  # chapter 0's presets are unchanged
        LSTMLMConfig.preset(s)
    assert LSTMLMConfig.preset("smoke").max_vocab == 10_000 and LSTMLMConfig.preset("full").hidden == 650


@pytest.mark.parametrize("kind", KINDS)
def test_tied_weights_are_one_tensor(kind):
    tied, untied = make(kind, tie_weights=True), make(kind, tie_weights=False)
    assert tied.out.weight is tied.embed.weight
    assert untied.out.weight is not untied.embed.weight
    n_tied = sum(p.numel() for p in tied.parameters())
    n_untied = sum(p.numel() for p in untied.parameters())
    assert n_untied - n_tied == V * 8
    # the gradient of the shared matrix is the sum of its two uses (input lookup + output layer)
    untied.load_state_dict(tied.state_dict())  # tied's state dict holds E under both names
    torch.testing.assert_close(untied.out.weight, untied.embed.weight)
    x, y = torch.randint(V, (3, 5)), torch.randint(V, (3, 5))
    tied(x, y).backward()
    untied(x, y).backward()
    torch.testing.assert_close(tied.embed.weight.grad, untied.embed.weight.grad + untied.out.weight.grad)
    unused = sorted(set(range(V)) - set(x.flatten().tolist()))
    assert tied.embed.weight.grad[unused].abs().sum() > 0  # rows never looked up still learn, through the output
    with pytest.raises(sh.config.ConfigError):
        CONFIGS[kind](tie_weights=True, emb_dim=8, hidden=16)


def assert_overfits_one_batch(model):
    """150 Adam steps on one random (4, 8) batch must cut the loss tenfold."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(V, (4, 9), generator=g)
    opt = torch.optim.Adam(model.parameters(), lr=3e-2)
    hist = sh.train.fit(model, [(ids[:, :-1], ids[:, 1:])], opt, steps=150, clip=1.0, progress=False, device="cpu")
    losses = hist.series("loss")[1]
    assert losses[-1] < 0.1 * losses[0], (losses[0], losses[-1])


@pytest.mark.parametrize("kind", KINDS)
def test_one_batch_overfit(kind):
    assert_overfits_one_batch(make(kind, hidden=32, emb_dim=32, layers=1))


def stream_and_windows(T: int = 4, n_windows: int = 3, B: int = 3):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(V, (B * (T * n_windows + 1),), generator=g)
    stream = LMStream(ids)
    batches = stream.bptt_batches(bptt=T, batch_size=B)
    data = stream.batchify(B)  # (B, N): the long sequences the windows cut
    assert len(batches) == n_windows
    return batches, data[:, :-1], data[:, 1:]


@pytest.mark.parametrize("kind", KINDS)
def test_windows_with_carried_state_equal_one_long_forward(kind):
    model = make(kind)
    batches, x_all, _ = stream_and_windows()
    long_logits, long_state = model.logits(x_all)
    pieces, state = [], None
    for x, _ in batches:
        logits, state = model.logits(x, detach_state(state))
        pieces.append(logits)
    torch.testing.assert_close(torch.cat(pieces, dim=1), long_logits)
    torch.testing.assert_close(first(state), first(long_state))
    zero_start = model.logits(list(batches)[1][0])[0]
    assert not torch.allclose(zero_start, pieces[1])  # a fresh zero state would differ


@pytest.mark.parametrize("kind", KINDS)
def test_carried_state_is_detached(kind):
    model = make(kind)  # untied: the embedding rows of a window get gradient only through its own lookups
    T = 4
    x1 = torch.randint(0, 10, (3, T))  # window 1 uses words 0..9, window 2 words 10..29
    x2 = torch.randint(10, V, (3, T))
    y1, y2 = torch.randint(V, (3, T)), torch.randint(V, (3, T))
    carry = CarryState()
    carry.on_fit_start(None)
    carry(model, (x1, y1))
    assert first(carry.state).grad_fn is None and not first(carry.state).requires_grad
    model.zero_grad()
    carry(model, (x2, y2))["loss"].backward()
    grad = model.embed.weight.grad
    assert grad[:10].abs().sum() == 0  # no gradient reaches the words of the previous window
    assert grad[10:].abs().sum() > 0
    # without the detach, the same loss does reach them: the test above can fail
    model.zero_grad()
    logits, _ = model.logits(torch.cat([x1, x2], dim=1))
    F.cross_entropy(logits[:, T:].flatten(0, 1), y2.flatten()).backward()
    assert model.embed.weight.grad[:10].abs().sum() > 0


@pytest.mark.parametrize("kind", KINDS)
def test_fit_carries_the_state_and_resets_each_epoch(kind):
    model = make(kind)
    batches, x_all, y_all = stream_and_windows(T=4, n_windows=3)
    with torch.no_grad():
        logits, _ = model.logits(x_all)
        per_token = F.cross_entropy(logits.transpose(1, 2), y_all, reduction="none")  # (B, N-1)
        expected = [per_token[:, s: s + 4].mean().item() for s in (0, 4, 8)]
    carry = CarryState()
    opt = torch.optim.SGD(model.parameters(), lr=0.0)  # weights fixed: the losses show what state each window had
    hist = sh.train.fit(model, batches, opt, steps=4, loss_fn=carry, callbacks=[carry], progress=False, device="cpu")
    losses = hist.series("loss")[1].tolist()
    assert losses[:3] == pytest.approx(expected, rel=1e-5)  # windows 2, 3 continue the rows of windows 1, 2
    assert losses[3] == pytest.approx(expected[0], rel=1e-5)  # a new epoch starts from zeros again
    assert hist.last("tokens") == 4 * 3 * 4
    with pytest.raises(RuntimeError, match="callbacks"):
        sh.train.fit(model, batches, opt, steps=1, loss_fn=CarryState(), progress=False, device="cpu")


def test_carried_state_resumes_exactly(tmp_path):
    batches, _, _ = stream_and_windows(T=4, n_windows=5)

    def run(steps, folder):
        model = make("lstm")
        torch.manual_seed(0)
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        carry = CarryState()
        sh.train.fit(model, batches, opt, steps=steps, loss_fn=carry, callbacks=[carry], progress=False,
                     device="cpu", checkpoint=folder, seed=0)
        return model, carry

    straight, c1 = run(4, tmp_path / "a")
    run(2, tmp_path / "b")
    resumed, c2 = run(4, tmp_path / "b")
    for p, q in zip(straight.parameters(), resumed.parameters()):
        assert torch.equal(p, q)
    assert torch.equal(first(c1.state), first(c2.state))


@pytest.mark.parametrize("kind", KINDS)
def test_stateful_perplexity_equals_one_long_sequence(kind):
    model = make(kind)
    batches, x_all, y_all = stream_and_windows()
    with torch.no_grad():
        logits, _ = model.logits(x_all)
        long_ppl = math.exp(F.cross_entropy(logits.flatten(0, 1), y_all.flatten()).item())
    assert sh.evaluate.perplexity(model, batches, carry_state=True) == pytest.approx(long_ppl, rel=1e-5)
    assert sh.evaluate.perplexity(model, batches) != pytest.approx(long_ppl, rel=1e-5)


def test_presets_batches_are_bptt_windows():
    cfg = RNNLMConfig.preset("smoke", vocab_size=V, adaptive_cutoffs=None)  # V is too small for its cutoffs
    stream = LMStream(torch.randint(V, (cfg.batch_size * 100,)))
    x, y = next(iter(cfg.batches(stream)))
    assert x.shape == y.shape == (cfg.batch_size, cfg.bptt)


# --- the adaptive softmax output layer (Grave et al. 2017) ---------------------------------------------------

def adaptive(kind: str = "lstm", **kw):
    return make(kind, emb_dim=16, hidden=16, adaptive_cutoffs=(8, 20), div_value=2.0, **kw)


@pytest.mark.parametrize("kind", KINDS)
def test_adaptive_softmax_is_a_normalised_distribution_and_its_loss(kind):
    model = adaptive(kind).eval()
    g = torch.Generator().manual_seed(2)
    x, y = torch.randint(V, (3, 5), generator=g), torch.randint(V, (3, 5), generator=g)
    log_p, state = model.logits(x)  # (B, T, |V|)
    assert log_p.shape == (3, 5, V)
    torch.testing.assert_close(log_p.exp().sum(-1), torch.ones(3, 5))
    expected = F.nll_loss(log_p.flatten(0, 1), y.flatten())
    torch.testing.assert_close(model(x, y), expected)
    out = model(x, y, return_state=True)
    torch.testing.assert_close(first(out["state"]), first(state))


def test_adaptive_softmax_costs_fewer_parameters_than_the_full_one():
    full = make("lstm", vocab_size=V, emb_dim=16, hidden=16)
    cheap = adaptive()

    def n(m):
        return sum(p.numel() for p in m.out.parameters())

    assert n(cheap) < n(full)


def test_init_unigram_puts_the_head_at_the_unigram_model():
    model = adaptive().eval()
    counts = torch.arange(V, 0, -1) ** 2  # frequency-ordered, as Vocab.build orders words
    model.init_unigram_(counts)
    with torch.no_grad():
        model.out.head.weight.zero_()  # leave only the biases: the head's softmax is then exactly its bias
    log_p = model.logits(torch.zeros(1, 1, dtype=torch.long))[0][0, 0]
    unigram = sh.text.unigram_log_probs(counts).float()
    torch.testing.assert_close(log_p[:8], unigram[:8])  # the head words: P(w) itself
    for a, b in ((8, 20), (20, V)):  # each tail cluster gets its total probability
        torch.testing.assert_close(log_p[a:b].exp().sum(), unigram[a:b].exp().sum())
    full = make("lstm", vocab_size=V)
    full.init_unigram_(counts)
    torch.testing.assert_close(full.out.bias.double(), sh.text.unigram_log_probs(counts), rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeError, match="init_unigram_"):  # (an AttributeError would be swallowed by nn.Module)
        model.output_bias


def test_adaptive_softmax_overfits_one_batch():
    assert_overfits_one_batch(adaptive())


@pytest.mark.parametrize("bad, match", [
    (dict(adaptive_cutoffs=(8, 20), tie_weights=True), "tie_weights"),
    (dict(adaptive_cutoffs=(20, 8)), "increase"),
    (dict(adaptive_cutoffs=(8, V)), "increase"),
    (dict(adaptive_cutoffs=()), "increase"),
])
def test_adaptive_softmax_config_errors(bad, match):
    with pytest.raises(sh.config.ConfigError, match=match):
        LSTMLMConfig(**{**dict(vocab_size=V, emb_dim=16, hidden=16, tie_weights=False), **bad})

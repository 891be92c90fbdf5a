"""ELMo added to a task model (Peters et al. 2018, §3.3): the frozen biLM stays fixed while the mix learns, padding
changes nothing, pooling is the masked max, unseen words get ELMo vectors from their spelling, and the mix's
weights are logged by a Probe in the form the layer-weight widget reads."""
from __future__ import annotations

import pytest
import torch

import shoulders as sh
from shoulders import heads
from shoulders.models.elmo import ELMoConfig
from shoulders.models.elmo_task import ContextualEncoder
from shoulders.text.word_chars import char_table
from shoulders.train import Probe, adamw, fit

WORDS = ["<pad>", "the", "film", "was", "great", "awful", "plot", "zyzzyva", "qwxkj"]
BILM = dict(vocab_size=20, max_chars=10, char_dim=4, filters=((1, 4), (2, 4), (3, 8)), n_highway=1, proj_dim=6,
            lstm_dim=12, n_layers=2, dropout=0.3, adaptive_cutoffs=None)


def make(bilm: bool = True, **kw) -> ContextualEncoder:
    torch.manual_seed(0)
    vectors = torch.randn(len(WORDS), 5)
    vectors[0] = 0
    lm = ELMoConfig(**BILM).build() if bilm else None
    table = char_table(WORDS, BILM["max_chars"], pad_token="<pad>") if bilm else None
    return ContextualEncoder(vectors, hidden=7, bilm=lm, char_table=table, dropout=0.0, **kw)


def ids(*rows: list[int]) -> torch.Tensor:
    T = max(map(len, rows))
    return torch.tensor([r + [0] * (T - len(r)) for r in rows])


@pytest.mark.parametrize("bilm, output_mix, d", [(False, False, 14), (True, False, 14), (True, True, 26)])
def test_shapes_and_width(bilm, output_mix, d):
    enc = make(bilm, output_mix=output_mix)
    out = enc(ids([1, 2, 3, 4], [1, 6]))
    assert enc.d_model == d and out.hidden.shape == (2, 4, d) and out.pooled.shape == (2, d)
    assert torch.all(out.hidden[1, 2:] == 0)


def test_pooled_is_the_max_over_the_words_only():
    enc = make().eval()
    out = enc(ids([1, 2, 3, 4], [1, 6]))
    assert torch.allclose(out.pooled[0], out.hidden[0].amax(0))
    assert torch.allclose(out.pooled[1], out.hidden[1, :2].amax(0))    # not the zeros at the padding


def test_padding_changes_nothing():
    enc = make().eval()
    alone = enc(ids([1, 6, 5]))
    padded = enc(ids([1, 2, 3, 4, 5, 2], [1, 6, 5]))
    assert torch.allclose(alone.hidden[0], padded.hidden[1, :3], atol=1e-6)
    assert torch.allclose(alone.pooled[0], padded.pooled[1], atol=1e-6)


def test_the_bilm_is_frozen_and_stays_in_eval_mode_while_the_mix_learns():
    enc = make()
    head = heads.SequenceClassifier(enc, 2)
    before = {k: v.clone() for k, v in enc.bilm.state_dict().items()}
    batch = {"input_ids": ids([1, 2, 3, 4], [1, 2, 3, 5], [6, 3, 4], [6, 3, 5]), "labels": torch.tensor([1, 0, 1, 0])}
    head.train()
    assert not enc.bilm.training and enc.training
    opt = adamw(head, lr=1e-2)
    for _ in range(3):
        opt.zero_grad()
        head(**batch)["loss"].backward()
        opt.step()
    for k, v in enc.bilm.state_dict().items():
        assert torch.equal(v, before[k]), f"the frozen biLM changed: {k}"
    w, gamma = enc.mix.weights()
    assert not torch.allclose(w, torch.full_like(w, 1 / 3)) or gamma != 1.0, "the mix did not learn"
    assert all(not p.requires_grad for p in enc.bilm.parameters())
    assert not enc.words.weight.requires_grad


def test_the_layer_cache_gives_the_biLM_layers_once_per_sentence():
    cache: dict = {}
    cached, plain = make(layer_cache=cache).eval(), make().eval()
    batch = ids([1, 2, 3, 4], [1, 6, 5], [1, 2, 3, 4])   # the first sentence twice
    mask = batch != 0
    want = plain.elmo_layers(batch, mask)
    got = cached.elmo_layers(batch, mask)
    assert len(cache) == 2 and all(v.dtype == torch.float16 for v in cache.values())
    assert got.shape == want.shape and torch.allclose(got, want, atol=2e-3, rtol=1e-2)
    assert torch.all(got[:, 1, 3:] == 0)
    # a second batch in another order and padding reads the cache: the biLM is not run again
    seen = []
    cached.bilm.layers = lambda *a, **k: seen.append(1)  # would fail the call below if it ran
    again = cached.elmo_layers(ids([1, 6, 5], [1, 2, 3, 4]), ids([1, 6, 5], [1, 2, 3, 4]) != 0)
    assert not seen and torch.equal(again[:, 0, :3], got[:, 1, :3]) and torch.equal(again[:, 1], got[:, 0])
    assert torch.allclose(cached(batch).hidden, plain(batch).hidden, atol=1e-2)


def test_unknown_words_get_elmo_vectors_from_their_spelling():
    enc = make().eval()
    # "zyzzyva" and "qwxkj" share a zero word vector, and the biLM's softmax never saw them: only ELMo tells them apart
    enc.words.weight.data[7:] = 0
    a, b = enc(ids([1, 7])).hidden[0, 1], enc(ids([1, 8])).hidden[0, 1]
    assert not torch.allclose(a, b)
    plain = make(bilm=False).eval()
    plain.words.weight.data[7:] = 0
    assert torch.allclose(plain(ids([1, 7])).hidden[0, 1], plain(ids([1, 8])).hidden[0, 1])


def test_clear_errors():
    with pytest.raises(ValueError, match="char_table"):
        ContextualEncoder(torch.zeros(4, 3), 5, bilm=ELMoConfig(**BILM).build())
    with pytest.raises(ValueError, match="output_mix and layer_cache need a biLM"):
        ContextualEncoder(torch.zeros(4, 3), 5, output_mix=True)
    with pytest.raises(ValueError, match="need a biLM"):
        ContextualEncoder(torch.zeros(4, 3), 5, layer_cache={})
    with pytest.raises(ValueError, match="words first"):
        make(layer_cache={}).elmo_layers(ids([1, 2]), torch.tensor([[False, True]]))
    with pytest.raises(ValueError, match="at least one word"):
        make()(ids([1, 2], [0, 0]))
    with pytest.raises(ValueError, match="input_ids"):
        make()(torch.tensor([[1, 99]]))


def test_a_probe_logs_the_mix_for_the_widget_and_a_tagger_learns(one_thread):
    enc = make(output_mix=True)
    head = heads.TokenTagger(enc, 3)
    x = ids([1, 2, 3, 4], [1, 6, 3, 5], [2, 3, 4])
    labels = torch.where(x == 0, torch.full_like(x, -100), x % 3)
    hist = fit(head, [{"input_ids": x, "labels": labels}], adamw(head, lr=3e-2), steps=40, progress=False,
               callbacks=[Probe(lambda m: m.encoder.mix_logs(), every=10)])
    trace = sh.viz.mix_trace(hist)
    assert list(trace["steps"]) == [10, 20, 30, 40] and trace["weights"].shape == (4, 3)
    assert sh.viz.mix_trace(hist, prefix="mix_out")["gamma"].shape == (4,)
    assert hist.last("loss") < 0.3 * hist.series("loss")[1][0], "the tagger did not learn its one batch"
    with pytest.raises(ValueError, match="every"):
        Probe(lambda m: {}, every=0)

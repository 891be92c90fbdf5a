"""fastText: FNV-1a, character n-grams, hashed bigrams, the classifier, and subword vectors for unseen words."""
from __future__ import annotations

import pytest
import torch

from shoulders.config import ConfigError
from shoulders.models import fasttext as ft
from shoulders.models.negative_sampling import NegativeSampling
from shoulders.recipes import word_vectors as wv
from shoulders.text.vocab import Vocab


def test_fnv1a_reference_values():
    assert ft.fnv1a("") == 2166136261  # the offset basis
    assert ft.fnv1a("a") == 0xE40C292C  # published FNV-1a 32-bit test vector
    assert ft.fnv1a("foobar") == 0xBF9CF968
    # fastText sign-extends bytes >= 0x80 (int8_t), so "é" differs from plain FNV-1a
    plain = 2166136261
    for byte in "é".encode():
        plain = ((plain ^ byte) * 16777619) & 0xFFFFFFFF
    assert ft.fnv1a("é") != plain


def test_char_ngrams_of_where_is_the_papers_example():
    assert ft.char_ngrams("where", 3, 3) == ["<wh", "whe", "her", "ere", "re>", "<where>"]
    grams = ft.char_ngrams("where")  # n = 3..6
    assert len(grams) == len(set(grams)) == 5 + 4 + 3 + 2 + 1
    assert "<her" not in grams and "her" in grams  # the paper's point: <her> (the word) differs from her
    assert ft.char_ngrams("her", 3, 6)[-1] == "<her>" and ft.char_ngrams("her", 3, 6).count("<her>") == 1


def test_bigram_hashing():
    V, buckets = 10, 1000
    ids = ft.bigram_ids(["the", "cat", "sat"], V, buckets)
    assert len(ids) == 2 and all(V <= i < V + buckets for i in ids)
    h = (ft.fnv1a("the") * 116049371 + ft.fnv1a("cat")) % 2**64
    assert ids[0] == V + h % buckets
    assert ft.bigram_ids(["cat", "the"], V, buckets)[0] != ids[0]  # order matters
    assert ft.bigram_ids(["the", "cat", "sat"], V, buckets) == ids  # deterministic
    vocab = Vocab.build([["the", "cat"]], unk=None)
    flat, offsets = ft.encode_texts([["the", "cat", "zzz"], ["cat"]], vocab, buckets=buckets)
    assert offsets.tolist() == [0, 4]
    assert flat[:2].tolist() == [vocab["the"], vocab["cat"]]  # "zzz" is dropped as a word ...
    assert flat[2].item() == len(vocab) + h % buckets  # ... but still forms a bigram
    assert len(flat) == 2 + 2 + 1


@pytest.mark.parametrize("loss", ["softmax", "hs"])
def test_classifier_learns_word_order_with_bigrams(loss, one_thread):
    """Labels decided by the order of two words: only bigrams can tell "a b" from "b a"."""
    texts = [["a", "b"], ["b", "a"]] * 16
    labels = torch.tensor([0, 1] * 16)
    vocab = Vocab.build(texts, unk=None)
    results = {}
    for ngrams in (1, 2):
        torch.manual_seed(0)
        cfg = ft.FastTextConfig(num_labels=2, dim=8, buckets=64, word_ngrams=ngrams, loss=loss, vocab_size=len(vocab),
                                batch_size=8)
        ids, offsets = ft.encode_texts(texts, vocab, cfg.buckets, ngrams)
        model = cfg.build(torch.bincount(labels))
        opt = torch.optim.Adam(model.parameters(), lr=0.1)
        batches = list(ft.ClassificationBatches(ids, offsets, labels, batch_size=8))
        for _ in range(30):
            for b in batches:
                opt.zero_grad()
                model(*b).backward()
                opt.step()
        results[ngrams] = float((model.predict(ids, offsets) == labels).float().mean())
    assert results[2] == 1.0 and results[1] == 0.5, results


def test_classification_batches_regroup_the_texts():
    ids, offsets = torch.arange(10), torch.tensor([0, 3, 4, 8])
    batches = ft.ClassificationBatches(ids, offsets, torch.tensor([0, 1, 0, 1]), batch_size=3, shuffle=False)
    (i1, o1, l1), (i2, o2, l2) = list(batches)
    assert i1.tolist() == list(range(8)) and o1.tolist() == [0, 3, 4] and l1.tolist() == [0, 1, 0]
    assert i2.tolist() == [8, 9] and o2.tolist() == [0]


def _subword_model(**kw):
    cfg = ft.SubwordConfig(**{**dict(dim=8, buckets=500, negatives=2, min_count=1, sample=0, batch_words=32,
                                      lr=0.1), **kw})
    return cfg


def test_subword_rows_and_oov_vector(one_thread):
    torch.manual_seed(0)
    cfg = _subword_model()
    words = ["where", "here", "there"]
    model = cfg.build(words, [10, 5, 3])
    rows = model.subwords.rows("where")
    assert rows[0] == 0 and len(rows) == 1 + 14  # its id + the 5 + 4 + 3 + 2 n-grams of <where>, n = 3..6
    assert all(3 <= r < 3 + 500 for r in rows[1:])
    ids, offsets = model.bags(torch.tensor([0, 2]))
    assert offsets.tolist() == [0, len(rows)] and ids[: len(rows)].tolist() == rows
    oov = model.word_vector("wherever")  # never seen: its n-grams still give a vector
    assert oov.shape == (8,) and oov.abs().sum() > 0
    assert "wherever" not in model.subwords.index
    torch.testing.assert_close(model.word_vector("there"), model.vectors()[2])


def test_subword_sgd_step_is_fasttexts_rule(one_thread):
    """The output layer takes the autograd step; every input row of a centre's bag takes -lr * dL/dh of that
    centre (fastText's ``Model::update`` for skip-gram), i.e. |bag| times the gradient of the mean."""
    torch.manual_seed(0)
    model = _subword_model().build(["ab", "abc", "bcd", "x"], [4, 3, 2, 1])
    torch.nn.init.normal_(model.out.weight)
    x, y = torch.tensor([0, 1, 1, 3]), torch.tensor([2, 3, 0, 1])
    noise = torch.tensor([[3, 2], [0, 0], [1, 2], [2, 3]])
    h = model.hidden(x)
    h.retain_grad()
    loss = model.out.loss(h, y, noise=noise) * 4
    loss.backward()
    before = {k: p.detach().clone() for k, p in model.named_parameters()}
    expected_in = before["embed.weight"].clone()
    for i, word in enumerate(x.tolist()):
        for row in model.subwords.rows(model.subwords.words[word]):
            expected_in[row] -= 0.3 * h.grad[i]
    grad_in = model.embed.weight.grad
    assert not torch.allclose(expected_in, before["embed.weight"] - 0.3 * grad_in)  # not the mean's gradient
    got = model.sgd_step(x, y, lr=0.3, noise=noise)
    torch.testing.assert_close(got, loss.detach())
    torch.testing.assert_close(model.out.weight.detach(), before["out.weight"] - 0.3 * model.out.weight.grad)
    torch.testing.assert_close(model.embed.weight.detach(), expected_in)


def test_subword_training_shares_ngrams(one_thread):
    """'walking' and 'talking' appear in different contexts but share n-grams; after training on a tiny corpus
    the loss falls and an unseen 'stalking' is closer to them than to 'xyz'."""
    g = torch.Generator().manual_seed(0)
    lines = []
    for _ in range(200):
        r = float(torch.rand((), generator=g))
        lines.append(["p", "walking", "q"] if r < 0.4 else ["p", "talking", "q"] if r < 0.8 else ["u", "xyz", "v"])
    cfg = _subword_model(epochs=10)
    corpus = wv.prepare(cfg, lines)
    model = cfg.build(corpus.vocab.tokens, corpus.counts)
    assert isinstance(model.out, NegativeSampling)  # the shared sampler, not a copy
    hist = wv.train_word2vec(model, corpus, cfg, progress=False)
    assert hist.series("loss")[1][-1] < hist.series("loss")[1][0]
    unit = torch.nn.functional.normalize
    s = unit(model.word_vector("stalking"), dim=0)
    walk, xyz = unit(model.word_vector("walking"), dim=0), unit(model.word_vector("xyz"), dim=0)
    assert float(s @ walk) > float(s @ xyz)


def test_config_errors():
    with pytest.raises(ConfigError):
        ft.SubwordConfig(arch="cbow")
    with pytest.raises(ConfigError):
        ft.SubwordConfig(minn=4, maxn=3)
    with pytest.raises(ConfigError):
        ft.FastTextConfig(loss="nce")
    with pytest.raises(ConfigError):
        ft.FastTextConfig(word_ngrams=3)


def test_train_classifier_with_sgd_and_linear_decay(one_thread):
    texts = [["good", "film"], ["bad", "film"], ["good", "plot"], ["bad", "plot"]] * 8
    labels = torch.tensor([1, 0, 1, 0] * 8)
    vocab = Vocab.build(texts, unk=None)
    cfg = ft.FastTextConfig(num_labels=2, dim=8, buckets=32, vocab_size=len(vocab), lr=0.5, epochs=40, batch_size=8)
    ids, offsets = ft.encode_texts(texts, vocab, cfg.buckets)
    torch.manual_seed(0)
    model = cfg.build()
    hist = wv.train_classifier(model, ft.ClassificationBatches(ids, offsets, labels, cfg.batch_size), cfg,
                               progress=False, device="cpu")
    assert len(hist) == 40 * 4 and hist.last("lr/0") < 0.01
    assert bool((model.predict(ids, offsets) == labels).all())

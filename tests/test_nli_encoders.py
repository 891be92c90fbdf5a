"""Chapter 8's recipe: labelled-pair batches, the GloVe input table, the three encoder kinds, multi-task training
that learns and keeps InferSent's word vectors fixed, the NLI accuracy, the SNLI pairs read from the mirror."""
from __future__ import annotations

import math

import pytest
import torch

import shoulders as sh
from shoulders.config import ConfigError
from shoulders.recipes.nli_encoders import (ENCODERS, NLIPairs, SupervisedEncodersConfig, build_encoder,
                                            encode_seconds, glove_inputs, nli_accuracy, nli_pairs, task_losses,
                                            train_multitask)
from shoulders.recipes.sentence_vectors import SENTENCE_SPECIALS
from shoulders.text.sentences import SentencePairBatches
from shoulders.train.history import History


def tiny_cfg(**kw) -> SupervisedEncodersConfig:
    base = dict(vocab_size=30, hidden=8, mlp=8, max_len=6, nli_source="dev", epochs=1, batch_size=4, seeds=(0,),
                qt_block=4, dan_hidden=8, dan_layers=2, dan_buckets=50, tf_layers=1, tf_heads=2, tf_ff=16,
                speed_lengths=(3, 6), speed_batch=2, lr=1e-2)
    return SupervisedEncodersConfig(**{**base, **kw})


def tiny_inputs(d=6):
    words = ["<unk>"] + [f"w{i}" for i in range(40)]
    vectors = torch.randn(len(words), d, generator=torch.Generator().manual_seed(0))
    return glove_inputs(vectors, words, 30)


def test_pair_batches_cover_every_pair_once_an_epoch_with_their_labels():
    a = [[i + 10] * (1 + i % 3) for i in range(10)]  # the first id tells the pair
    b = [[i + 10, 5, 6, 7, 8, 9, 9] for i in range(10)]
    batches = SentencePairBatches(a, b, list(range(10)), batch_size=4, pad_id=0, unk_id=1, max_len=5, seed=3)
    seen = []
    for x, y, labels in batches:
        assert x.shape[0] == y.shape[0] == labels.shape[0] <= 4 and y.shape[1] == 5  # cut at max_len
        assert torch.equal(x[:, 0] - 10, labels) and torch.equal(y[:, 0] - 10, labels)
        assert x.shape[1] == int((x != 0).sum(1).max())  # padded to the longest sentence of the batch
        seen += labels.tolist()
    assert sorted(seen) == list(range(10)) and len(batches) == 3
    assert [lab.tolist() for *_, lab in batches] == [lab.tolist() for *_, lab in batches]  # a seed fixes the order
    empty = SentencePairBatches([[]], [[4]], [0], 1, 0, 1, 5)
    assert next(iter(empty))[0].tolist() == [[1]]  # an empty sentence is one unknown word
    with pytest.raises(ValueError, match="as many"):
        SentencePairBatches(a, b[:-1], list(range(10)), 4, 0, 1, 5)


def test_glove_inputs_put_the_specials_first_with_zero_rows():
    words = ["<unk>", "the", "a", "<pad>", "cat"]
    vectors = torch.arange(10.0).view(5, 2)
    vocab, table = glove_inputs(vectors, words, vocab_size=2)
    assert vocab.tokens == list(SENTENCE_SPECIALS) + ["the", "a"] and vocab["<pad>"] == 0
    assert torch.equal(table[: len(SENTENCE_SPECIALS)], torch.zeros(4, 2))
    assert torch.equal(table[vocab["the"]], vectors[1]) and torch.equal(table[vocab["a"]], vectors[2])
    assert vocab.encode(["cat"]) == [vocab.unk_id]
    with pytest.raises(ValueError, match="one row per word"):
        glove_inputs(vectors[:4], words, 2)


@pytest.mark.parametrize("kind", ENCODERS)
def test_every_encoder_kind_reads_the_glove_table(kind, one_thread):
    cfg = tiny_cfg()
    vocab, table = tiny_inputs()
    enc = build_encoder(kind, cfg, table)
    out = enc(torch.tensor([[5, 6, 7], [8, 9, 0]]))
    assert out.shape == (2, enc.dim)
    if kind == "bilstm":
        assert torch.equal(enc.embed.weight, table) and not enc.embed.weight.requires_grad  # InferSent: fixed
    elif kind == "dan":
        assert torch.equal(enc.embed.weight[: len(vocab)], table) and enc.dim == 2 * cfg.hidden
    else:
        assert torch.allclose(enc.embed.weight * math.sqrt(table.shape[1]), table, atol=1e-6)
    with pytest.raises(ValueError, match="encoder must be"):
        build_encoder("cnn", cfg, table)


def synthetic_pairs(n=64, seed=0):
    """Label 0 when the hypothesis starts with the premise's first word, 1 when with word 20, 2 otherwise."""
    g = torch.Generator().manual_seed(seed)
    a, b, y = [], [], []
    for _ in range(n):
        p = torch.randint(5, 20, (4,), generator=g).tolist()
        label = int(torch.randint(3, (1,), generator=g))
        first = p[0] if label == 0 else 20 if label == 1 else 21
        a.append(p)
        b.append([first] + torch.randint(5, 20, (3,), generator=g).tolist())
        y.append(label)
    return NLIPairs(a, b, y)


def test_multitask_training_learns_nli_and_keeps_infersents_words_fixed(one_thread):
    sh.seed(0)
    cfg = tiny_cfg(epochs=25)
    vocab, table = tiny_inputs()
    pairs = synthetic_pairs()
    before = nli_accuracy(train_multitask(build_encoder("bilstm", cfg, table), ("nli",), cfg.replace(epochs=1),
                                          vocab, pairs, progress=False)[0], pairs, cfg, vocab)
    model, history, seconds = train_multitask(build_encoder("bilstm", cfg, table), ("nli",), cfg, vocab, pairs,
                                              progress=False)
    after = nli_accuracy(model, pairs, cfg, vocab)
    assert after > max(before, 80.0) and seconds > 0
    assert torch.equal(model.encoder.embed.weight, table)  # frozen GloVe inputs did not move
    losses = history.series("loss")[1]
    assert losses[-5:].mean() < losses[:5].mean()


def test_multitask_needs_each_tasks_data_and_alternates(one_thread):
    cfg = tiny_cfg()
    vocab, table = tiny_inputs()
    docs = [[[5, 6, 7], [8, 9], [10, 11, 12], [13, 14]], [[15, 16], [17, 18, 19], [6, 7]]]
    with pytest.raises(ValueError, match="context encoder"):
        train_multitask(build_encoder("dan", cfg, table), ("nli", "qt"), cfg, vocab, synthetic_pairs(), docs,
                        progress=False)
    model, history, _ = train_multitask(build_encoder("dan", cfg, table), ("nli", "qt"), cfg, vocab,
                                        synthetic_pairs(8), docs, context_encoder=build_encoder("dan", cfg, table),
                                        progress=False)
    assert len(history.series("loss")[1]) == 2 * 2  # two NLI batches, each followed by one Quick-thoughts block
    assert model.encode(torch.tensor([[5, 6]])).shape == (1, model.encoder.dim)


def test_encode_seconds_per_length(one_thread):
    cfg = tiny_cfg()
    _, table = tiny_inputs()
    times = encode_seconds(build_encoder("dan", cfg, table), table.shape[0], (3, 6), batch=2, repeats=1)
    assert list(times) == [3, 6] and all(t > 0 for t in times.values())


def test_configs_validate_and_name_bad_values():
    for scale in sh.SCALES:
        SupervisedEncodersConfig.preset(scale).validate()
    with pytest.raises(ConfigError, match="nli_source"):
        SupervisedEncodersConfig(nli_source="test").validate()
    with pytest.raises(ConfigError, match="poolings"):
        SupervisedEncodersConfig(poolings=("sum",)).validate()


def test_nli_pairs_from_the_mirror_are_drawn_from_dev_and_scored_on_test():
    vocab, _ = tiny_inputs()
    pairs = nli_pairs(SupervisedEncodersConfig.preset("smoke").replace(nli_train=300), vocab)
    assert len(pairs["train"]) == 300 and len(pairs["test"]) == 9_824
    assert set(pairs["train"].labels) == {0, 1, 2}


def test_task_losses_split_a_mixtures_interleaved_steps():
    h = History()
    for t, v in enumerate([1.0, 4.0, 0.9, 3.9, 0.8, 3.8]):  # nli, qt, nli, qt, ...
        h.log(t + 1, loss=v)
    split = task_losses(h, ("nli", "qt"), tiny_cfg())
    assert split["nli"][1].tolist() == [1.0, 0.9, 0.8] and split["qt"][1].tolist() == [4.0, 3.9, 3.8]
    assert split["qt"][0].tolist() == [2, 4, 6]
    assert task_losses(h, ("qt",), tiny_cfg())["qt"][1].tolist() == [1.0, 4.0, 0.9, 3.9, 0.8, 3.8]

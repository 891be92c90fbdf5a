"""Chapters 7-8's sentence encoders: the recurrent trunk (padding never reaches a vector; the last state
is the state at each sentence's own end), Skip-thoughts' conditional decoder GRU against the paper's eqs. 4-6 written
out, Quick-thoughts' loss against a hand computation, both learning a batch, and the sentence/neighbour batches."""
from __future__ import annotations

import math
import random

import pytest
import torch

from shoulders.config import ConfigError
from shoulders.models.infersent import InferSentConfig
from shoulders.models.quick_thoughts import QuickThoughtsConfig, neighbour_loss
from shoulders.models.sentence_encoders import RecurrentSentenceEncoder, pool_states
from shoulders.models.skip_thoughts import SkipThoughtsConfig
from shoulders.models.universal_encoder import (BIGRAM_HASH_PRIME, DeepAveragingNetwork, TransformerSentenceEncoder,
                                                hashed_bigrams)
from shoulders.recipes.sentence_vectors import (neural_encoder, sentence_corpus, train_quick_thoughts,
                                                train_skip_thoughts)
from shoulders.text.sentences import NeighbourBlocks, NeighbourTriples, split_sentences, wikitext_documents


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("pooling", ["last", "max", "mean"])
def test_padding_never_reaches_the_vector(cell, bidirectional, pooling, one_thread):
    torch.manual_seed(0)
    enc = RecurrentSentenceEncoder(20, 6, 5, cell, bidirectional, pooling).eval()
    ids = torch.tensor([[3, 4, 5, 0, 0], [7, 8, 9, 10, 11]])
    wider = torch.cat([ids, torch.zeros(2, 4, dtype=torch.long)], 1)
    alone = enc(ids[:1, :3])  # the first sentence without any padding
    torch.testing.assert_close(enc(ids), enc(wider))
    torch.testing.assert_close(enc(ids)[:1], alone)
    assert enc(ids).shape == (2, enc.dim) and enc.dim == 5 * (2 if bidirectional else 1)
    with pytest.raises(ValueError, match="at least one word"):
        enc(torch.tensor([[0, 0]]))


def test_pool_states_ignores_masked_positions():
    states = torch.tensor([[[1.0, -2.0], [3.0, 0.0], [100.0, 100.0]]])  # (1, 3, 2): the last one is padding
    mask = torch.tensor([[True, True, False]])
    assert torch.equal(pool_states(states, mask, "max"), torch.tensor([[3.0, 0.0]]))
    assert torch.equal(pool_states(states, mask, "mean"), torch.tensor([[2.0, -1.0]]))
    with pytest.raises(ValueError, match="max"):
        pool_states(states, mask, "sum")


def test_skip_thoughts_decoder_is_the_papers_conditional_gru(one_thread):
    """A GRU fed [x ; h_i] adds C_r h_i, C_z h_i and C h_i to its gates (eqs. 4-6): one step written out."""
    torch.manual_seed(0)
    cfg = SkipThoughtsConfig(vocab_size=30, d_embed=4, hidden=3)
    gru = cfg.build().decoders["next"]
    x, h_i, h_prev = torch.randn(1, 4), torch.randn(1, 3), torch.randn(1, 3)
    W_ih, U, b_ih, b_hh = gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0
    W, C = W_ih[:, :4], W_ih[:, 4:]  # word weights and the thought's weights, stacked r, z, n
    (Wr, Wz, Wn), (Cr, Cz, Cn), (Ur, Uz, Un) = W.chunk(3), C.chunk(3), U.chunk(3)
    (br, bz, bn), (cr, cz, cn) = b_ih.chunk(3), b_hh.chunk(3)
    r = torch.sigmoid(x @ Wr.T + h_prev @ Ur.T + h_i @ Cr.T + br + cr)
    z = torch.sigmoid(x @ Wz.T + h_prev @ Uz.T + h_i @ Cz.T + bz + cz)
    hbar = torch.tanh(x @ Wn.T + h_i @ Cn.T + bn + r * (h_prev @ Un.T + cn))  # torch's reset placement
    want = z * h_prev + (1 - z) * hbar  # torch's z is the paper's 1 - z_t
    got, _ = gru(torch.cat([x, h_i], -1)[:, None], h_prev[None])
    torch.testing.assert_close(got[:, 0], want)


def test_quick_thoughts_loss_by_hand():
    u = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    v = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, -1.0]])
    positive = torch.tensor([[False, True, False], [True, False, True], [False, True, False]])
    s = (u @ v.T).tolist()  # row i scores every candidate j != i
    row0 = -(s[0][1] - math.log(math.exp(s[0][1]) + math.exp(s[0][2])))
    lse1 = math.log(math.exp(s[1][0]) + math.exp(s[1][2]))
    row1 = -0.5 * ((s[1][0] - lse1) + (s[1][2] - lse1))
    row2 = -(s[2][1] - math.log(math.exp(s[2][0]) + math.exp(s[2][1])))
    torch.testing.assert_close(neighbour_loss(u, v, positive), torch.tensor((row0 + row1 + row2) / 3))
    # a row without a context sentence is left out of the mean
    lonely = positive.clone()
    lonely[2] = False
    torch.testing.assert_close(neighbour_loss(u, v, lonely), torch.tensor((row0 + row1) / 2))
    with pytest.raises(ValueError, match="its own context"):
        neighbour_loss(u, v, positive | torch.eye(3, dtype=torch.bool))


@pytest.mark.parametrize("which", ["skip", "quick"])
def test_one_batch_overfit(which, one_thread):
    torch.manual_seed(0)
    cfg = (SkipThoughtsConfig if which == "skip" else QuickThoughtsConfig)(vocab_size=40, d_embed=16, hidden=32)
    model = cfg.build()
    batch = cfg.example_batch(6)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = float(model(*batch).detach())
    # the lowest loss there is: Skip-thoughts can predict every word; Quick-thoughts spreads its target evenly over a
    # sentence's k context sentences, so a row's cross-entropy cannot fall below log k
    floor = 0.0 if which == "skip" else float(batch[1].sum(1).float().log().mean())
    for _ in range(60):
        opt.zero_grad()
        loss = model(*batch)
        loss.backward()
        opt.step()
    assert float(loss.detach()) - floor < 0.2 * (first - floor)
    if which == "quick":
        assert model.encode(batch[0]).shape == (6, 64)  # [f(s) ; g(s)]


def test_configs_name_bad_values():
    with pytest.raises(ConfigError, match="sizes"):
        SkipThoughtsConfig(hidden=0)
    with pytest.raises(ConfigError, match="batch_size"):
        QuickThoughtsConfig(batch_size=1)


def test_sentences_and_documents_from_wikitext_lines():
    assert split_sentences("It is . U.S. is big ! And".split()) == [["It", "is", "."], ["U.S.", "is", "big", "!"],
                                                                     ["And"]]
    lines = [[], "= A =".split(), "One two three . Four five six .".split(), "= = Sub = =".split(),
             "Seven eight nine . Ten eleven twelve . Hi .".split(), "= B =".split(), "Lonely one here .".split()]
    docs = wikitext_documents(lines, min_len=3)
    # a heading at any level ends a document; "Hi ." is too short; B has one sentence: no neighbours, dropped
    assert docs == [[["One", "two", "three", "."], ["Four", "five", "six", "."]],
                    [["Seven", "eight", "nine", "."], ["Ten", "eleven", "twelve", "."]]]


def test_neighbour_triples_frame_the_neighbours():
    docs = [[[5], [6, 7], [8]], [[9], [10]]]  # the second document has no middle sentence
    triples = NeighbourTriples(docs, 8, pad_id=0, bos_id=1, eos_id=2, max_len=5, seed=0)
    (cur, prev, nxt), = list(triples)
    assert len(triples) == 1
    assert cur.tolist() == [[6, 7]] and prev.tolist() == [[1, 5, 2]] and nxt.tolist() == [[1, 8, 2]]


def test_neighbour_blocks_mark_context_sentences_of_the_same_document():
    docs = [[[3], [4], [5]], [[6], [7]]]
    batches = NeighbourBlocks(docs, batch_size=5, pad_id=0, max_len=4, context=1, seed=0)
    blocks = list(batches)
    assert len(blocks) == len(batches) == 1
    assert len(NeighbourBlocks(docs, batch_size=4, pad_id=0, max_len=4)) == 1  # a last block of one is dropped
    assert len(NeighbourBlocks(docs, batch_size=3, pad_id=0, max_len=4)) == 2
    ids, positive = blocks[0]
    first = ids[:, 0].tolist()
    doc_of = {3: 0, 4: 0, 5: 0, 6: 1, 7: 1}
    for i in range(5):
        for j in range(5):
            same = doc_of[first[i]] == doc_of[first[j]]
            assert bool(positive[i, j]) == (same and abs(first[i] - first[j]) == 1)


def test_recipes_train_time_and_encode(one_thread):
    rng = random.Random(0)
    lines = []
    for a in range(12):  # articles whose sentences follow a pattern: sentence k uses words k*5 .. k*5+4
        lines.append(f"= Article {a} =".split())
        lines.append(" ".join(" ".join(rng.choices([f"w{k * 5 + j}" for j in range(5)], k=4)) + " ."
                              for k in range(6)).split())
    corpus = sentence_corpus(50, lines)
    assert len(corpus.docs) == 12 and corpus.sentences == 72 and corpus.vocab["<pad>"] == 0
    for train, cfg in ((train_skip_thoughts, SkipThoughtsConfig(vocab_size=50, d_embed=8, hidden=16, batch_size=16,
                                                                epochs=8, lr=1e-2)),
                       (train_quick_thoughts, QuickThoughtsConfig(vocab_size=50, d_embed=8, hidden=16, batch_size=12,
                                                                  epochs=8, lr=1e-2))):
        model, history, per_epoch = train(cfg, corpus, progress=False)
        losses = history.series("loss")[1]
        assert losses[-3:].mean() < losses[:3].mean() and per_epoch > 0
        vectors = neural_encoder(model, corpus.vocab)(["w0 w1 w2 .", "w25 w26 unknownword ."])
        assert vectors.shape == (2, 16 if isinstance(cfg, SkipThoughtsConfig) else 32)  # QT: [f(s) ; g(s)]
        assert torch.isfinite(vectors).all()
    with pytest.raises(ValueError, match="words but the model"):
        train_skip_thoughts(SkipThoughtsConfig(vocab_size=10, d_embed=4, hidden=4), corpus, progress=False)


# -- chapter 8's encoders: InferSent's classifier, the DAN and the Transformer encoder ------------------------------
def test_dan_averages_words_and_bigrams_of_the_real_words_only(one_thread):
    torch.manual_seed(0)
    dan = DeepAveragingNetwork(10, 4, 8, 6, layers=2, buckets=7)
    ids = torch.tensor([[3, 4, 5, 0, 0]])
    rows, both = hashed_bigrams(ids, ids != 0, 10, 7)
    assert both.tolist() == [[True, True, False, False]]
    assert rows[0, 0] == 10 + (3 * BIGRAM_HASH_PRIME + 4) % 7
    want = dan.embed.weight[[3, 4, 5, int(rows[0, 0]), int(rows[0, 1])]].mean(0)
    torch.testing.assert_close(dan.average(ids)[0], want)
    torch.testing.assert_close(dan(ids), dan(ids[:, :3]))  # padding changes nothing
    assert dan(ids).shape == (1, 6)


def test_transformer_encoder_sums_over_words_divided_by_sqrt_length(one_thread):
    torch.manual_seed(0)
    enc = TransformerSentenceEncoder(12, d_model=8, n_heads=2, d_ff=16, layers=1, dropout=0.0).eval()
    ids = torch.tensor([[3, 4, 5, 6, 0, 0], [7, 8, 9, 10, 11, 2]])
    torch.testing.assert_close(enc(ids)[:1], enc(ids[:1, :4]))  # padding changes nothing
    # the sentence vector is the sum of its 4 positions' top states divided by sqrt(4)
    x = enc.embed(ids[:1, :4]) * math.sqrt(8) + enc.positions(4)
    h, _ = enc.encoder(x)
    torch.testing.assert_close(enc(ids[:1, :4])[0], h[0].sum(0) / 2.0)


def test_nli_classifier_reads_pair_features_of_one_encoder(one_thread):
    torch.manual_seed(0)
    cfg = InferSentConfig(vocab_size=30, d_embed=8, hidden=6, mlp=10)
    model = cfg.build()
    assert model.classifier[1].in_features == 4 * 12  # [u, v, |u - v|, u * v] of a 2 x 6 BiLSTM-max
    p, h, y = cfg.example_batch(5)
    u, v = model.encoder(p), model.encoder(h)
    torch.testing.assert_close(model.logits(p, h), model.classifier(torch.cat([u, v, (u - v).abs(), u * v], -1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = float(model(p, h, y).detach())
    for _ in range(50):
        opt.zero_grad()
        loss = model(p, h, y)
        loss.backward()
        opt.step()
    assert float(loss.detach()) < 0.2 * first
    with pytest.raises(ConfigError, match="pooling"):
        InferSentConfig(pooling="sum")


@pytest.mark.parametrize("name", ["skip_thoughts", "quick_thoughts"])
def test_the_sentence_giants_train_once_and_encode_the_same(name, tmp_path, monkeypatch, one_thread):
    import shoulders as sh

    monkeypatch.setenv("SHOULDERS_GIANTS", str(tmp_path / "giants"))
    lines = [line for a in range(6) for line in (f"= A{a} =".split(), "one two three . four five six . seven eight "
                                                 "nine . ten one two .".split())]
    corpus = sentence_corpus(30, lines)
    cls = SkipThoughtsConfig if name == "skip_thoughts" else QuickThoughtsConfig
    cfg = cls(vocab_size=30, d_embed=8, hidden=8, batch_size=8, epochs=1)
    first = sh.giants.load(name, cfg, progress=False, corpus=corpus)
    assert first.trained and first.metrics["seconds_per_epoch"] > 0
    second = sh.giants.load(name, cfg, progress=False)
    assert not second.trained and second.tokenizer.tokens == corpus.vocab.tokens
    again = neural_encoder(second.model, second.tokenizer)(["one two three ."])
    torch.testing.assert_close(again, neural_encoder(first.model, corpus.vocab)(["one two three ."]))


def test_multitask_encoder_shares_one_encoder_and_alternates_tasks(one_thread):
    from shoulders.models.multitask import MultiTaskEncoder, TaggedBatches

    torch.manual_seed(0)
    enc = RecurrentSentenceEncoder(30, 8, 6, "lstm", True, "max")
    g = RecurrentSentenceEncoder(30, 8, 6, "lstm", True, "max")
    model = MultiTaskEncoder(enc, nli_hidden=10, context_encoder=g)
    assert model.nli.encoder is enc
    nli = InferSentConfig(vocab_size=30).example_batch(4)
    qt = QuickThoughtsConfig(vocab_size=30).example_batch(5)
    batches = TaggedBatches({"nli": [nli, nli], "qt": [qt]}, every={"qt": 2})
    seen = [b[0] for b in batches]
    assert seen == ["nli", "qt", "qt", "nli", "qt", "qt"] and len(batches) == 6
    before = {k: v.clone() for k, v in enc.state_dict().items()}
    model("qt", *qt).backward()  # the QT loss reaches the shared encoder ...
    assert enc.rnn.weight_hh_l0.grad is not None and model.nli.classifier[1].weight.grad is None  # ... not NLI's head
    assert all(torch.equal(v, before[k]) for k, v in enc.state_dict().items())
    with pytest.raises(ValueError, match="task"):
        model("lm", *qt)
    with pytest.raises(ValueError, match="context encoder"):
        MultiTaskEncoder(enc)

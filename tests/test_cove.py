"""Chapter 9's CoVe: the translation giants' recipe (GloVe copied into the frozen source side, held-out BLEU), the
two vocabularies' file, the pair batches, Tatoeba's held-out split, and CoVe in the task model -- the MT-LSTM
frozen (bit-identical after training the task model) and equal to the encoder it came from."""
from __future__ import annotations

import copy
import types
from collections import Counter

import pytest
import torch

from shoulders.config import ConfigError
from shoulders.heads import SequenceClassifier
from shoulders.models.elmo_task import ContextualEncoder
from shoulders.models.seq2seq import MTLSTM, Seq2SeqConfig
from shoulders.recipes import cove
from shoulders.text.pair_batches import PairBatches
from shoulders.text.pair_vocab import PairVocab
from shoulders.text.vocab import Vocab, VocabFileError
from shoulders.text.word_tokenizer import WordTokenizer


def _pair_vocab():
    return PairVocab(WordTokenizer.build(["a man rides a horse ."]), WordTokenizer.build(["ein mann reitet ."]))


def test_pair_vocab_round_trip_and_bad_files(tmp_path):
    tok = _pair_vocab()
    path = tok.save(tmp_path / "vocab.json")
    back = PairVocab.load(path)
    assert back.source.tokens == tok.source.tokens and back.target.tokens == tok.target.tokens
    assert back.target.encode_words(["mann", "pferd"])[0] == [tok.target.vocab["mann"], tok.target.unk_id]
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(VocabFileError, match="not a pair vocabulary"):
        PairVocab.load(tmp_path / "bad.json")
    (tmp_path / "nospecials.json").write_text('{"format": "shoulders.pair_vocab/1", "source": ["a"], '
                                              '"target": ["<pad>", "<unk>", "<S>", "</S>"]}')
    with pytest.raises(VocabFileError, match="source vocabulary"):
        PairVocab.load(tmp_path / "nospecials.json")


def test_pair_batches_cover_every_pair_once_a_pass_in_similar_lengths(one_thread):
    torch.manual_seed(0)
    pairs = [([5] * n, [6] * (n + 1)) for n in range(1, 201)]
    cfg = Seq2SeqConfig(src_vocab=10, tgt_vocab=10)
    batches = PairBatches(pairs, 16, cfg.collate, pool=5)
    seen = []
    for src, tgt_in, tgt_out in batches:
        lengths = (src != cfg.pad_id).sum(1)
        assert int(lengths.max() - lengths.min()) < 16 * 5  # sorted inside pools of 5 batches
        assert torch.equal(tgt_in[:, 0], torch.full((src.shape[0],), cfg.bos_id))
        seen += lengths.tolist()
    assert sorted(seen) == list(range(1, 201)) and len(batches) == 13
    with pytest.raises(ValueError, match="no training pairs"):
        PairBatches([], 16, cfg.collate)


def test_contextualise_is_the_encoder_on_its_own_vectors(one_thread):
    torch.manual_seed(0)
    enc = MTLSTM(12, 6, 5).eval()
    src = torch.tensor([[4, 5, 6, 0], [7, 8, 9, 10]])
    H, (h, _) = enc(src)
    H2, (h2, _) = enc.contextualise(enc.words(src), torch.tensor([3, 4]))
    torch.testing.assert_close(H, H2)
    torch.testing.assert_close(h, h2)
    with pytest.raises(ValueError, match=r"\(B, S, 6\)"):
        enc.contextualise(torch.zeros(2, 4, 5), torch.tensor([3, 4]))


def test_cove_stays_frozen_while_the_task_model_trains(one_thread):
    torch.manual_seed(0)
    glove = torch.randn(30, 8)
    glove[0] = 0  # padding
    mt = MTLSTM(30, 8, 6)
    mt.train()  # as a reader might hand it over: the task model must put it in eval mode and keep it there
    before = copy.deepcopy(mt.state_dict())
    head = SequenceClassifier(ContextualEncoder(glove, 7, dropout=0.3, cove=mt), 2, dropout=0.3)
    assert head.encoder.d_model == 14
    opt = torch.optim.Adam([p for p in head.parameters() if p.requires_grad], lr=1e-2)
    x = torch.randint(1, 30, (16, 9))
    y = (x[:, 0] % 2).long()
    for _ in range(5):
        opt.zero_grad()
        head(input_ids=x, labels=y)["loss"].backward()
        opt.step()
    head.train()
    assert not mt.training and not any(p.requires_grad for p in mt.parameters())
    assert all(torch.equal(before[k], v) for k, v in mt.state_dict().items())  # bit-identical
    # the CoVe half of the input is MT-LSTM(GloVe(w)) of the task's own table
    seen = {}
    head.encoder.lstm.register_forward_pre_hook(lambda m, a: seen.update(x=a[0]))  # returns None: args unchanged
    head.eval()
    head.encoder(x[:2, :4])
    packed = seen["x"]
    r, _ = torch.nn.utils.rnn.pad_packed_sequence(packed, batch_first=True)
    torch.testing.assert_close(r[..., 8:], mt.contextualise(glove[x[:2, :4]], torch.tensor([4, 4]))[0])
    with pytest.raises(ValueError, match="8-d"):
        ContextualEncoder(torch.randn(30, 5), 7, cove=mt)


def test_tatoeba_held_out_sentences_never_train(one_thread):
    cfg = cove.CoVeLargeConfig.preset("smoke", train_pairs=None)
    data = cove.translation_data(cfg)
    train = {" ".join(s) for s in data["train"][0]}
    held = {" ".join(s) for split in ("valid", "test") for s in data[split][0]}
    assert len(data["test"][0]) > 1_000 and len(data["train"][0]) > 150_000
    assert not train & held  # a sentence with several translations sits on one side only
    assert all(w == w.lower() for t in data["train"][1][:200] for w in t)  # the target is lower-cased


def _glove_base(words, dim):
    vocab = Vocab.build([words], specials=["<unk>"], unk="<unk>")
    table = torch.randn(len(vocab), dim)
    return types.SimpleNamespace(tokenizer=vocab, model=types.SimpleNamespace(vectors=lambda: table)), table


def test_giant_recipe_translates_with_glove_frozen_in_the_source(one_thread):
    cfg = Seq2SeqConfig(src_vocab=400, tgt_vocab=400, d_word=8, d_tgt=8, hidden=8, steps=20, batch_size=16,
                        train_pairs=300, eval_pairs=20, eval_every=10, dropout=0.0, max_extra_len=5)
    data = cove.translation_data(cfg)
    words = [w for w, _ in Counter(w for s in data["train"][0] for w in s).most_common(50)]  # all in the vocabulary
    base, table = _glove_base(words, 8)
    art = cove.train_giant(cfg, base=base, progress=False)
    tok, model = art.tokenizer, art.model
    i = tok.source.vocab[words[3]]
    assert torch.equal(model.encoder.words.weight[i], table[base.tokenizer[words[3]]])  # GloVe, unchanged
    assert not model.encoder.words.weight.requires_grad
    assert set(art.metrics) >= {"test_bleu", "test_bleu_copy", "val_loss", "val_bleu"}
    assert art.history.series("val_loss")[0].tolist() == [10, 20]  # evaluated every eval_every updates
    rebuilt = cove.build(cfg, tok)
    rebuilt.load_state_dict(model.state_dict())  # what a cached giant is loaded into
    with pytest.raises(ConfigError, match="GloVe's dimension"):
        cove.train_giant(cfg.replace(d_word=6), base=base, progress=False)


def test_configs():
    with pytest.raises(ConfigError, match="corpus"):
        Seq2SeqConfig(corpus="wmt")
    for scale in ("smoke", "cpu", "full"):
        assert cove.CoVeLargeConfig.preset(scale).corpus == "tatoeba"
        assert Seq2SeqConfig.preset(scale).corpus == "multi30k"
    with pytest.raises(ConfigError, match="sst2_train"):
        cove.CoVeTaskConfig(sst2_train=0)


def test_cove_cache_and_mean(one_thread):
    """Cached CoVe equals CoVe computed on every batch (to float16); ``cove_mean`` is the mean over the task's
    words, and subtracting it centres the task model's CoVe input."""
    torch.manual_seed(0)
    glove = torch.randn(30, 8)
    glove[0] = 0
    mt = MTLSTM(30, 8, 6)
    inputs = [[4, 5, 6], [7, 8, 9, 10, 11], [12, 13]]
    mean = cove.cove_mean(mt, glove, inputs, pad_id=0, batch_size=2)
    every = torch.cat([mt.contextualise(glove[torch.tensor([ids])], torch.tensor([len(ids)]))[0][0] for ids in inputs])
    torch.testing.assert_close(mean, every.mean(0))
    cache: dict = {}
    plain = ContextualEncoder(glove, 5, cove=mt, cove_mean=mean).eval()
    cached = ContextualEncoder(glove, 5, cove=mt, cove_mean=mean, cove_cache=cache).eval()
    x = torch.tensor([[7, 8, 9, 10, 11], [4, 5, 6, 0, 0]])
    want = plain.cove_vectors(x, x != 0)
    for _ in range(2):  # the second call reads the cache
        torch.testing.assert_close(cached.cove_vectors(x, x != 0), want, atol=2e-3, rtol=0)
    assert len(cache) == 2 and torch.equal(want[1, 3:], torch.zeros(2, 12))
    centred = torch.cat([want[0], want[1, :3]])
    assert centred.mean(0).abs().max() < every.mean(0).abs().max()  # less offset than raw CoVe of these words
    with pytest.raises(ValueError, match="cove_mean"):
        ContextualEncoder(glove, 5, cove_mean=mean)
    with pytest.raises(ValueError, match=r"\(12,\)"):
        ContextualEncoder(glove, 5, cove=mt, cove_mean=torch.zeros(5))

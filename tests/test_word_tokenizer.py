"""Whole-word tokens behind WordPiece's interface: the task features, the padding and the heads work unchanged for
ELMo's task models (the packing tokens are the biLM's sentence markers)."""
from __future__ import annotations

import pytest
import torch

from shoulders import heads
from shoulders.models.elmo import ELMoConfig
from shoulders.models.elmo_task import ContextualEncoder
from shoulders.recipes.finetune import FeatureBatches, predict
from shoulders.text import task_features as tasks
from shoulders.text.vocab import Vocab
from shoulders.text.word_chars import BOS_CHAR, EOS_CHAR, char_table
from shoulders.text.word_tokenizer import WordTokenizer

TEXTS = ["a fine film", "a dull film", "the plot is fine"]


def test_build_encode_decode():
    tok = WordTokenizer.build(TEXTS)
    assert tok.tokens[:4] == ["<pad>", "<unk>", "<S>", "</S>"] and tok.pad_id == 0
    assert tok.tokens[4:6] == ["a", "film"] or tok.tokens[4:6] == ["film", "a"]   # most frequent first
    ids = tok.encode("a superb film")
    assert ids[1] == tok.unk_id and tok.decode([tok.cls_id, *ids, tok.sep_id, tok.pad_id]) == "a <unk> film"
    assert tok.encode_words(["fine", "plot"]) == ([tok.vocab["fine"], tok.vocab["plot"]], [0, 1])
    with pytest.raises(ValueError, match="lacks"):
        WordTokenizer(Vocab.build([["a"]]))


def test_pairs_are_wrapped_in_the_bilm_sentence_markers():
    tok = WordTokenizer.build(TEXTS)
    f = tasks.classification_features(tok, ["a fine film"], ["the plot"], [1], max_len=16)[0]
    assert tok.decode(f["input_ids"]) == "a fine film the plot"
    assert f["input_ids"][0] == tok.cls_id and f["input_ids"].count(tok.sep_id) == 2
    table = char_table(tok.tokens, 10, pad_token=tok.PAD)
    assert table[tok.cls_id, 1] == BOS_CHAR and table[tok.sep_id, 1] == EOS_CHAR and not table[tok.pad_id].any()


def test_tagging_features_label_every_word_and_predictions_come_back_per_word():
    tok = WordTokenizer.build(TEXTS)
    tag_to_id = {"O": 0, "B-x": 1}
    sents = [(["a", "fine", "film"], ["O", "B-x", "O"]), (["plot"], ["B-x"])]
    feats = tasks.tagging_features(tok, sents, tag_to_id, max_len=8)
    assert feats[0]["labels"] == [-100, 0, 1, 0, -100] and feats[0]["n_cut"] == 0
    assert tasks.tagging_predictions(feats, [torch.tensor(f["labels"]).clamp(min=0) for f in feats],
                                     ["O", "B-x"]) == [["O", "B-x", "O"], ["B-x"]]


def test_features_batch_into_an_elmo_task_model():
    tok = WordTokenizer.build(TEXTS)
    cfg = ELMoConfig(vocab_size=12, max_chars=10, char_dim=4, filters=((1, 4), (2, 4)), n_highway=1, proj_dim=4,
                     lstm_dim=8, n_layers=2, dropout=0.0, adaptive_cutoffs=None)
    enc = ContextualEncoder(torch.randn(len(tok), 5), 6, bilm=cfg.build(),
                            char_table=char_table(tok.tokens, cfg.max_chars, pad_token=tok.PAD), pad_id=tok.pad_id)
    head = heads.SequenceClassifier(enc, 2)
    feats = tasks.classification_features(tok, TEXTS, None, [1, 0, 1], max_len=16)
    batch = next(iter(FeatureBatches(feats, 3, tok.pad_id, keys=["input_ids", "attention_mask", "labels"])))
    assert head(**batch)["logits"].shape == (3, 2)
    one = predict(head, feats[:1], tok.pad_id)[0]
    assert torch.allclose(one, predict(head, feats, tok.pad_id)[0], atol=1e-6)   # padding changes nothing

"""The ELMo giant's recipe: windows that tile the text in both directions, the per-direction perplexity against
closed forms, and a short pre-training on WikiText-2 that beats the unigram model and caches as a giant."""
from __future__ import annotations

import math

import pytest
import torch

import shoulders as sh
from shoulders.config import ConfigError
from shoulders.models.elmo import ELMoConfig
from shoulders.recipes.elmo import (BiLMWindows, ELMoTaskConfig, build, direction_perplexity, sentence_layers,
                                    task_vectors, train_giant)
from shoulders.text.lm_data import LMCorpus
from shoulders.text.stream import lm_stream
from shoulders.text.vocab import Vocab
from shoulders.text.word_chars import char_ids, char_table
from shoulders.text.word_tokenizer import WordTokenizer

TINY = dict(vocab_size=50, max_chars=8, char_dim=4, filters=((1, 4), (2, 4)), n_highway=1, proj_dim=8, lstm_dim=16,
            n_layers=2, dropout=0.0, adaptive_cutoffs=None, batch_size=4, bptt=5, steps=30, warmup=3, lr=1e-2)


def test_windows_tile_the_text_and_every_word_is_a_target_once_per_direction():
    N, T, B = 203, 5, 4
    ids = torch.arange(N)
    table = torch.arange(N)[:, None].repeat(1, 3)           # "characters" that spell the id, to read it back
    batches = BiLMWindows(ids, table, batch_size=B, bptt=T)
    for epoch in range(3):
        torch.manual_seed(epoch)
        words, n_batches = [], 0
        for b in batches:
            w = b["chars"][..., 0]                           # (B, T)
            assert b["chars"].shape[1:] == (T, 3)
            assert torch.equal(b["targets_fwd"], w + 1) and torch.equal(b["targets_bwd"], w - 1)
            words += w.flatten().tolist()
            n_batches += 1
        assert n_batches == len(batches)                    # the same number of batches every pass
        assert len(words) == len(set(words)), "a word was an input twice in one pass"
        assert (len(batches) - 1) * B * T < len(words) <= len(batches) * B * T
        offset = min(words) - 1                             # windows start at offset + k*T (word 1 of T + 2)
        assert 0 <= offset < T
        runs = sorted(words)
        assert runs == list(range(runs[0], runs[0] + len(runs))), "windows must tile a stretch of text"
        assert runs[-1] + 1 < N, "a forward target beyond the stream"


def test_windows_refuse_a_stream_too_short():
    with pytest.raises(ValueError, match="2 \\* bptt"):
        BiLMWindows(torch.arange(10), torch.zeros(10, 3, dtype=torch.long), batch_size=2, bptt=5)


def _uniform_model(vocab_size: int) -> torch.nn.Module:
    model = ELMoConfig(**TINY).replace(vocab_size=vocab_size).build()
    with torch.no_grad():
        model.out.weight.zero_()
        model.out.bias.zero_()
    return model


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_a_model_that_knows_nothing_has_the_vocabulary_size_as_perplexity(direction):
    V = 37
    words = [f"w{i}" for i in range(V)]
    table = char_table(words, TINY["max_chars"])
    ids = torch.randint(V, (131,), generator=torch.Generator().manual_seed(0))
    ppl = direction_perplexity(_uniform_model(V), ids, table, bptt=5, direction=direction, batch_size=3)
    assert ppl == pytest.approx(V, rel=1e-5)
    with pytest.raises(ValueError, match="direction"):
        direction_perplexity(_uniform_model(V), ids, table, bptt=5, direction="sideways")


def test_perplexity_counts_every_window_and_only_the_windows_tokens():
    V, T = 11, 4
    table = char_table([f"w{i}" for i in range(V)], TINY["max_chars"])
    model = ELMoConfig(**TINY).replace(vocab_size=V).build().eval()
    ids = torch.randint(V, (4 * T + 3,), generator=torch.Generator().manual_seed(1))
    n = (len(ids) - 1) // T
    total = 0.0
    for k in range(n):                                        # by hand, one window at a time
        w = ids[k * T:k * T + T + 1]
        with torch.no_grad():
            total += float(model.token_nll(table[w[:-1]][None], w[1:][None]).sum())
    expected = math.exp(total / (n * T))
    assert direction_perplexity(model, ids, table, bptt=T, batch_size=2) == pytest.approx(expected, rel=1e-5)


def test_a_short_pretraining_beats_the_unigram_model_and_caches_as_a_giant(tmp_path, monkeypatch, one_thread):
    monkeypatch.setenv("SHOULDERS_GIANTS", str(tmp_path / "giants"))
    cfg = ELMoConfig.preset("smoke").replace(steps=100, train_tokens=40_000, eval_tokens=4_000, max_vocab=2_000,
                                             adaptive_cutoffs=(500,))
    first = sh.giants.load("elmo", cfg, progress=False)
    assert first.trained
    m = first.metrics
    assert m["valid_ppl_forward"] < 0.9 * m["valid_ppl_unigram"], m
    assert m["valid_ppl_backward"] < 0.9 * m["valid_ppl_unigram"], m
    assert first.history.last("val_ppl") == pytest.approx(m["valid_ppl_forward"], rel=1e-4)
    assert isinstance(first.tokenizer, Vocab) and len(first.tokenizer) == first.model.cfg.vocab_size
    second = sh.giants.load("elmo", cfg, progress=False)
    assert not second.trained
    for k, v in first.model.state_dict().items():
        assert torch.equal(v, second.model.state_dict()[k])
    table = char_table(second.tokenizer, cfg.max_chars)
    assert table.shape == (len(second.tokenizer), cfg.max_chars)
    assert build(cfg, second.tokenizer).layers(table[None, :7]).shape == (cfg.n_layers + 1, 1, 7, 2 * cfg.proj_dim)


def test_train_giant_takes_the_pages_corpus(one_thread):
    cfg = ELMoConfig(**TINY)
    lines = [["the", "cat", "sat", "on", "the", "mat", "."]] * 40
    vocab = Vocab.build(lines, specials=["<unk>"], unk="<unk>")
    corpus = LMCorpus(vocab, {"train": lines, "valid": lines[:5]},
                      {"train": lm_stream(lines, vocab), "valid": lm_stream(lines[:5], vocab)})
    art = train_giant(cfg.replace(steps=80), corpus=corpus, progress=False)
    assert art.metrics["valid_ppl_forward"] < 2.0 < art.metrics["valid_ppl_unigram"], art.metrics


def test_task_vectors_look_words_up_then_their_lower_case_else_zero():
    glove_vocab = Vocab.build([["the", "film", "paris", "<unk>"]], specials=["<unk>"], unk="<unk>")
    table = torch.arange(len(glove_vocab) * 2, dtype=torch.float).view(-1, 2) + 1
    tok = WordTokenizer.build(["The film in Paris", "zzz"])
    vecs, found = task_vectors(tok, glove_vocab, table)
    assert vecs.shape == (len(tok), 2)
    assert torch.equal(vecs[tok.vocab["The"]], table[glove_vocab["the"]])     # lower-cased fallback
    assert torch.equal(vecs[tok.vocab["film"]], table[glove_vocab["film"]])
    assert not vecs[tok.vocab["zzz"]].any() and not vecs[tok.vocab["in"]].any() and not vecs[tok.pad_id].any()
    assert found == pytest.approx(3 / 5)                                      # The, film, Paris of 5 words
    with pytest.raises(ValueError, match="vectors must be"):
        task_vectors(tok, glove_vocab, table[:2])


def test_sentence_layers_are_each_sentence_read_on_its_own():
    torch.manual_seed(0)
    model = ELMoConfig(**TINY).build()
    model.train()
    sents = [["the", "play", "opened"], ["a", "Broadway", "play", "closed", "early", "."], ["zyzzyva"]]
    out = sentence_layers(model, sents, batch_size=2)              # batches of 2: padding in the first batch
    assert model.training, "the model's mode is restored"
    assert [tuple(h.shape) for h in out] == [(3, 3, 16), (3, 6, 16), (3, 1, 16)]
    for words, h in zip(sents, out):
        alone = model.eval().layers(char_ids(words, TINY["max_chars"])[None])[:, 0]   # (L+1, n, 2P), no padding
        assert torch.allclose(h, alone, atol=1e-5)
    same = sentence_layers(model, [["the", "play", "was", "good"], ["the", "play", "was", "awful", "!"]])
    P = TINY["proj_dim"]
    assert torch.equal(same[0][1:, :3, :P], same[1][1:, :3, :P])   # forward: only the shared words so far
    assert not torch.allclose(same[0][1:, :3, P:], same[1][1:, :3, P:])   # backward: has read the endings
    with pytest.raises(ValueError, match="at least one word"):
        sentence_layers(model, [["a"], []])


def test_the_task_config_hands_its_optimiser_settings_to_finetuning():
    cfg = ELMoTaskConfig.preset("cpu", lr=3e-3, batch_size=16, weight_decay=0.1, warmup_frac=0.2)
    ft = cfg.finetuning()
    assert (ft.lr, ft.scratch_lr, ft.batch_size, ft.weight_decay, ft.warmup_frac) == (3e-3, 3e-3, 16, 0.1, 0.2)
    assert ft.steps_for(8_544, cfg.sst5_epochs) == math.ceil(cfg.sst5_epochs * 8_544 / 16)   # no cap, no floor
    assert ELMoTaskConfig.preset("full").cache_layers is False and ELMoTaskConfig.preset("cpu").seeds == 3
    for bad in (dict(hidden=0), dict(dropout=1.0), dict(snli_epochs=0.0), dict(sst5_train=0)):
        with pytest.raises(ConfigError):
            ELMoTaskConfig.preset("smoke", **bad)

"""Chapter 16's machinery: the word-vector task model, the three ways (what each trains), the runs over budgets
and seeds, and the results ladder read from the ledger -- never from literals."""
from __future__ import annotations

import types

import pytest
import torch
from torch.testing import assert_close

from shoulders.config import ConfigError
from shoulders.evaluate import ladder, ledger
from shoulders.models.bag_of_vectors import BagOfVectors
from shoulders.models.bert import BertConfig, BertModel
from shoulders.recipes import three_ways as tw
from shoulders.recipes.finetune import finetune
from shoulders.recipes.gpt_transfer import GPTFinetuningConfig
from shoulders.text.word_tokenizer import WordTokenizer

WORDS = "good bad fine awful great poor nice dull fun grim".split()


def tiny_task(n: int = 40, held: int = 12, name: str = "toy") -> tw.Task:
    g = torch.Generator().manual_seed(0)
    texts, labels = [], []
    for i in range(n + held):
        picks = torch.randint(0, len(WORDS), (4,), generator=g).tolist()
        texts.append(" ".join(WORDS[j] for j in picks))
        labels.append(int(sum(j % 2 == 0 for j in picks) >= 2))  # more even-indexed ("positive") words
    return tw.Task(name, "dev accuracy %", "dev", 2, (texts[:n], None, labels[:n]),
                   (texts[n:], None, labels[n:]))


def tiny_bert_contender(task: tw.Task, cfg: tw.ThreeWaysConfig) -> tuple[tw.Contender, BertModel]:
    tok = WordTokenizer.build(task.train[0] + task.held[0])
    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=len(tok), d_model=16, n_layers=3, n_heads=2, d_ff=32, max_len=32))
    giant = types.SimpleNamespace(name="bert", model=types.SimpleNamespace(bert=bert), tokenizer=tok)
    return tw.bert_contender(giant, cfg), bert


def test_bag_of_vectors_is_the_mean_and_pairs_are_infersent_features():
    V = torch.randn(6, 4)
    ids = torch.tensor([[0, 1, 2, 5], [3, 5, 5, 5]])  # 5 pads
    out = BagOfVectors(V, pad_id=5)(ids)
    assert_close(out.pooled[0], V[[0, 1, 2]].mean(0))
    assert_close(out.pooled[1], V[3])
    pair = BagOfVectors(V, pair=True, pad_id=5)
    types_ = torch.tensor([[0, 0, 1, 0], [0, 1, 0, 0]])
    got = pair(torch.tensor([[0, 1, 2, 5], [3, 4, 5, 5]]), token_type_ids=types_).pooled  # (2, 16)
    u, v = V[[0, 1]].mean(0), V[2]
    assert_close(got[0], torch.cat([u, v, (u - v).abs(), u * v]))
    assert pair.d_model == 16
    with pytest.raises(ValueError, match="token_type_ids"):
        pair(ids)
    assert not BagOfVectors(V, train_words=False).words.weight.requires_grad
    assert BagOfVectors(V).words.weight.requires_grad


def test_top_way_trains_only_the_top_layer_and_the_head_and_never_the_giant():
    cfg = tw.ThreeWaysConfig.preset("smoke")
    task = tiny_task()
    c, bert = tiny_bert_contender(task, cfg)
    giant_before = {k: v.clone() for k, v in bert.state_dict().items()}
    head = tw.head_for(c, "top", False, 2, top_layers=1)
    before = {k: v.clone() for k, v in head.state_dict().items()}
    finetune(head, c.features(*task.train), c.pad_id, cfg.finetuning(), lr=1e-2, steps=3, progress=False)
    changed = {k for k, v in head.state_dict().items() if not torch.equal(v, before[k])}
    assert changed, "nothing trained"
    for k in changed:
        assert k.startswith(("encoder.encoder.layers.2.", "encoder.pooler.", "classifier.")), k
    assert any(k.startswith("encoder.encoder.layers.2.") for k in changed)
    assert all(torch.equal(v, giant_before[k]) for k, v in bert.state_dict().items()), "the giant itself changed"
    full = tw.head_for(c, "full", False, 2)
    assert all(torch.equal(full.encoder.state_dict()[k], v) for k, v in giant_before.items())
    scratch = tw.head_for(c, "scratch", False, 2)
    assert not torch.equal(scratch.encoder.embeddings.word.weight, bert.embeddings.word.weight)
    with pytest.raises(ValueError, match="no fine-tuning way"):
        tw.head_for(tw.Contender("x", "x", "sentence encoder", encode=lambda s: torch.zeros(len(s), 2)), "full",
                    False, 2)


def test_run_fills_every_way_budget_and_seed_and_samples_are_nested():
    cfg = tw.ThreeWaysConfig.preset("smoke", budgets=(10, 20), steps=(2, 2), seeds=2, l2_grid=(1e-2, 1.0),
                                     probe_iter=20)
    task = tiny_task()
    c, _ = tiny_bert_contender(task, cfg)
    assert c.ways == tw.WAYS
    assert task.sample(10, 1) == task.sample(20, 1)[:10] and task.sample(10, 0) != task.sample(10, 1)
    res = tw.run([c], {"toy": task}, cfg, progress=False)
    assert set(res) == {("toy", "BERT", w, n) for w in tw.WAYS for n in (10, 20)}
    for r in res.values():
        assert len(r["scores"]) == 2 and all(0 <= s <= 100 for s in r["scores"])
    md = tw.table(res, "toy", 20, [c], task.majority())
    assert md.count("\n") == 3 and "majority class" in md


def test_frozen_features_are_each_examples_own_vectors_encoded_fewest_words_first():
    seen: list[list[str]] = []

    def encode(texts):  # a sentence's vector: its word count and its first word's length, so rows can be told apart
        seen.append(list(texts))
        return torch.tensor([[len(t.split()), len(t.split()[0])] for t in texts], dtype=torch.float64)

    c = tw.Contender("x", "x", "sentence encoder", encode=encode)
    a = ["a much longer first sentence here", "short one", "mid size sentence", "short one"]
    b = ["tiny", "a rather long hypothesis to read", "two words", "four words in it"]
    task = tw.Task("pairs", "accuracy %", "test", 3, (a, b, [0, 1, 2, 0]), (b[:2], a[:2], [1, 2]))
    pool, held = tw._vectors(c, task, [2, 0, 1, 3])
    lengths = [[len(t.split()) for t in texts] for texts in seen]
    assert lengths == [sorted(n) for n in lengths] and len(seen[0]) == 7  # each distinct sentence once, shortest first

    def vec(t):
        return torch.tensor([len(t.split()), len(t.split()[0])], dtype=torch.float32)

    def infersent(u, v):
        return torch.cat([u, v, (u - v).abs(), u * v])

    assert_close(pool, torch.stack([infersent(vec(a[i]), vec(b[i])) for i in (2, 0, 1, 3)]))
    assert_close(held, torch.stack([infersent(vec(b[i]), vec(a[i])) for i in (0, 1)]))


def test_each_network_fine_tunes_at_its_own_chapters_rates_and_its_twin_at_the_scratch_rate():
    cfg = tw.ThreeWaysConfig.preset("cpu", budgets=(10,), steps=(2,), seeds=1, l2_grid=(1e-2,), probe_iter=5)
    assert cfg.rates == "chapters"
    gpt = GPTFinetuningConfig.preset("cpu")
    assert gpt.lr != gpt.scratch_lr and cfg.network_rates(GPTFinetuningConfig) == (gpt.lr, gpt.scratch_lr)
    shared = cfg.replace(rates="shared", lr=7e-4)
    assert shared.network_rates(GPTFinetuningConfig) == (7e-4, 7e-4)
    with pytest.raises(ConfigError, match="rates must be one of"):
        tw.ThreeWaysConfig.preset("cpu", rates="mine")
    task = tiny_task()
    c, _ = tiny_bert_contender(task, cfg)
    c.lr, c.scratch_lr = 3e-3, 1e-3  # what each run trained at comes back with it, and goes to the ledger
    res = tw.run([c], {"toy": task}, cfg, ways=("top", "full", "scratch"), progress=False)
    assert {w: r["lr"] for (_, _, w, _), r in res.items()} == {"top": 3e-3, "full": 3e-3, "scratch": 1e-3}
    # "fitted": every seed's training loss below its own sample's label-blind loss
    assert tw.fitted({"train_loss": [0.5, 0.6], "prior": [0.69, 0.65]})
    assert not tw.fitted({"train_loss": [0.5, 0.66], "prior": [0.69, 0.65]})
    with pytest.raises(ValueError, match="ways must be among"):
        tw.run([c], {"toy": task}, cfg, ways=("all",), progress=False)


def test_slow_to_fit_exceptions_are_checked_ways_and_tasks_given_more_updates():
    # page 16 skips these in its fit check at the page's updates and checks them instead with k times the updates:
    # an exception must name a way and task the page checks, and give strictly more updates
    names = {"word2vec", "GloVe", "fastText", "AWD-LSTM (ULMFiT)", "GPT", "BERT", "XLNet"}
    seen = 0
    for scale in ("smoke", "cpu", "full"):
        page = tw.ThreeWaysConfig.preset(scale).page
        for giant, way, task, k in page["slow_to_fit"]:
            assert giant in names and way in page["fits_ways"] and task in page["fits_labels"], (scale, giant)
            assert isinstance(k, int) and k >= 2, (scale, giant, k)
            seen += 1
    assert seen == 1  # XLNet's top layer on SNLI at cpu (measured: see the preset)


def test_probe_penalty_is_chosen_without_held_out_labels():
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(60, 5, generator=g), torch.randint(0, 2, (60,), generator=g)
    hx = torch.randn(30, 5, generator=g)
    cfg = tw.ThreeWaysConfig.preset("smoke", l2_grid=(1e-4, 1e-2, 1.0))
    _, l2a = tw._probe_score(x, y, hx, torch.zeros(30, dtype=torch.long), cfg, 2)
    _, l2b = tw._probe_score(x, y, hx, torch.ones(30, dtype=torch.long), cfg, 2)
    assert l2a == l2b


def test_ladders_come_from_ledger_entries_not_literals(tmp_path):
    path = tmp_path / "ledger.jsonl"
    rows = ladder.climb(ladder.LM_RUNGS, scale="cpu", split="valid", path=path)
    assert all(e is None for _, e in rows), "an empty ledger must give an empty ladder"
    assert "not in the ledger" in ladder.table(rows)
    ngram, gpt = ladder.LM_RUNGS[0], ladder.LM_RUNGS[4]
    for r, value in ((ngram, 321.0), (gpt, 123.4), (gpt, 111.1)):  # the second GPT entry is newer: it wins
        ledger.record(r.metric, value, model=r.model, task=r.task, split="valid", chapter=r.chapter, scale="cpu",
                      machine="test", higher_is_better=False, path=path)
    ledger.record(gpt.metric, 99.0, model=gpt.model, task=gpt.task, split="valid", chapter=gpt.chapter,
                  scale="smoke", machine="test", higher_is_better=False, path=path)  # another scale: not read
    got = {r.label: (e["value"] if e else None) for r, e in ladder.climb(ladder.LM_RUNGS, scale="cpu", split="valid",
                                                                           path=path)}
    assert got[ngram.label] == 321.0 and got[gpt.label] == 111.1
    assert sum(v is not None for v in got.values()) == 2
    assert all(e is None for _, e in ladder.climb(ladder.LM_RUNGS, scale="cpu", split="test", path=path))


def test_recorded_three_ways_results_are_what_the_transfer_ladder_reads(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOULDERS_LEDGER", str(tmp_path / "ledger.jsonl"))
    cfg = tw.ThreeWaysConfig.preset("smoke", budgets=(10,), steps=(2,), seeds=2, l2_grid=(1e-2,), probe_iter=20)
    task = tiny_task(name="SST-2")
    c, _ = tiny_bert_contender(task, cfg)
    res = tw.run([c], {"SST-2": task}, cfg, progress=False)
    tw.record(res, [c], {"SST-2": task})
    rows = ladder.climb(ladder.transfer_rungs(10, [("BERT", "full"), ("BERT", "frozen")]), scale="smoke")
    for (rung, entry), way in zip(rows, ("full", "frozen")):
        assert entry is not None and entry["values"] == res["SST-2", "BERT", way, 10]["scores"]
        assert entry["extra"]["way"] == way and entry["extra"]["budget"] == 10

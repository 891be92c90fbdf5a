"""The fine-tuning recipe of chapter 14: batches, predictions in input order, the label-blind loss, the table row."""
from __future__ import annotations

import math
import random
import sys

import numpy as np
import pytest
import torch

from shoulders import heads
from shoulders.models.bert import BertConfig, BertModel
from shoulders.recipes.finetune import (BertFinetuningConfig, FeatureBatches, accuracy, beats_spread, compare,
                                        describe, finetune, label_budget_curve, label_sample, predict, prior_loss,
                                        record_row, rows_from_ledger, seed_samples, set_trainable, shoulders_table)
from shoulders.train.forked import fork_context


def _features(n: int = 40, seed: int = 0) -> list[dict]:
    """Sentences of 2-9 tokens; label 1 when token 7 occurs (learnable from the input), with bookkeeping keys."""
    r = random.Random(seed)
    out = []
    for _ in range(n):
        body = [r.randrange(5, 12) for _ in range(r.randrange(2, 10))]
        ids = [2, *body, 3]
        out.append({"input_ids": ids, "token_type_ids": [0] * len(ids), "labels": int(7 in body),
                    "word_ids": list(range(len(ids)))})
    return out


def test_prior_loss_is_the_entropy_of_the_labels():
    assert prior_loss([0, 1, 0, 1]) == pytest.approx(math.log(2))
    assert prior_loss([2, 2, 2]) == pytest.approx(0.0)
    p = torch.tensor([0.5, 0.25, 0.25])
    assert prior_loss([0, 0, 1, 2], 5) == pytest.approx(float(-(p * p.log()).sum()))


def test_feature_batches_keep_only_the_model_arguments_and_cover_every_feature():
    feats = _features(50)
    batches = FeatureBatches(feats, 8, pad_id=0, keys=["input_ids", "token_type_ids", "attention_mask", "labels"])
    seen = 0
    for b in batches:
        assert set(b) == {"input_ids", "token_type_ids", "attention_mask", "labels"}
        lengths = b["attention_mask"].sum(1)
        assert int(lengths.max() - lengths.min()) <= 7
        seen += len(b["labels"])
    assert seen == 50 and len(batches) == 7
    with pytest.raises(ValueError, match="no training features"):
        FeatureBatches([], 8, 0)


def test_predict_returns_outputs_in_input_order_and_cut_to_length():
    torch.manual_seed(0)
    enc = BertModel(BertConfig.named("tiny", vocab_size=20, max_len=32))
    feats = _features(12)
    tagger = heads.TokenTagger(enc, 3)
    tags = predict(tagger, feats, 0, per_token=True, batch_size=5)
    for f, t in zip(feats, tags):
        assert t.shape == (len(f["input_ids"]), 3)
        alone = tagger.eval()(torch.tensor([f["input_ids"]]))[0]
        torch.testing.assert_close(t, alone, atol=1e-5, rtol=1e-5)  # padding in the batch changed nothing
    clf = heads.SequenceClassifier(enc, 2)
    rows = predict(clf, feats, 0, batch_size=5)
    assert all(r.shape == (2,) for r in rows)
    # no autograd graph behind the outputs: a row holding its batch's graph keeps all its activations alive
    assert not any(t.requires_grad or t.grad_fn is not None for t in tags + rows)
    assert torch.is_grad_enabled()


def test_finetune_learns_and_compare_builds_a_row():
    torch.manual_seed(0)
    cfg = BertFinetuningConfig.preset("smoke", batch_size=8, epochs=15.0, max_steps=100, lr=3e-3, scratch_lr=3e-3)
    feats = _features(64)
    make = lambda enc: heads.SequenceClassifier(enc, 2, dropout=0.0)  # noqa: E731
    build = lambda: BertModel(BertConfig.named("tiny", vocab_size=20, max_len=32, dropout=0.0,  # noqa: E731
                                               attn_dropout=0.0))

    def acc(head):
        logits = torch.stack(predict(head, feats, 0))
        return 100 * float((logits.argmax(-1) == torch.tensor([f["labels"] for f in feats])).float().mean())

    prior = prior_loss([f["labels"] for f in feats])
    row = compare(make, {"pre-trained": build, "from scratch": build}, feats, 0, cfg, acc,
                  {"pre-trained": 3e-3, "from scratch": 3e-3}, metric="acc", baseline=50.0, prior=prior)
    for name in ("pre-trained", "from scratch"):
        assert row[name]["steps"] == 100  # 15 epochs of 64 / 8 = 120, capped by max_steps
        assert row[name]["train_loss"] < prior - 0.1, "the head must fit a learnable toy task"
    same = ("score", "train_loss", "steps")  # same seed, same initialisation: the two runs are identical
    assert [row["pre-trained"][k] for k in same] == [row["from scratch"][k] for k in same]
    assert "acc pre-trained" in describe("toy", row) and "| toy | acc |" in shoulders_table({"toy": row})
    seeds = compare(make, {"pre-trained": build, "from scratch": build}, feats, 0, cfg, acc,
                    {"pre-trained": 3e-3, "from scratch": 3e-3}, metric="acc", baseline=50.0, prior=prior,
                    steps=10, seeds=[0, 1])
    runs = seeds["pre-trained"]["scores"]
    one = compare(make, {"pre-trained": build}, feats, 0, cfg, acc, {"pre-trained": 3e-3}, metric="acc",
                  baseline=50.0, prior=prior, steps=10, seeds=[1])
    assert len(runs) == 2 and runs[1] == one["pre-trained"]["score"], "run i of the list is the run with seed i"
    assert seeds["pre-trained"]["score"] == pytest.approx(sum(runs) / 2)
    assert f"({min(runs):.1f}-{max(runs):.1f})" in shoulders_table({"toy": seeds})
    assert "mean and range of 2 seeds" in describe("toy", seeds)
    named = {"metric": "acc", "baseline": 50.0, "prior": prior, "train examples": 64,
             "GloVe + ELMo": seeds["pre-trained"], "GloVe": seeds["from scratch"]}
    pair = ("GloVe + ELMo", "GloVe")
    assert "acc (mean and range of 2 seeds) GloVe + ELMo" in describe("toy", named, pair)
    header = shoulders_table({"toy": named}, pair).splitlines()[0]
    assert header.startswith("| task | metric | baseline | GloVe | GloVe + ELMo |")
    assert "histories" not in seeds["pre-trained"]
    probed = compare(make, {"pre-trained": build}, feats, 0, cfg, acc, {"pre-trained": 3e-3}, metric="acc",
                     baseline=50.0, prior=prior, steps=10, seeds=[1, 0],
                     probe=lambda head: {"w_norm": head.classifier.weight.norm()}, probe_every=4)
    assert probed["pre-trained"]["scores"] == [runs[1], runs[0]], "a probe must not change the runs"
    hists = probed["pre-trained"]["histories"]
    assert len(hists) == 2 and list(hists[0].series("w_norm")[0]) == [4, 8, 10]
    norms = hists[0].series("w_norm")[1]
    assert norms[0] != norms[-1], "the probe must read the model as it trains"
    with pytest.raises(ValueError, match="at least one seed"):
        compare(make, {"x": build}, feats, 0, cfg, acc, {"x": 1e-3}, metric="acc", baseline=50.0, prior=prior, seeds=[])
    frozen = make(build())
    set_trainable(frozen, "frozen")
    before = [p.detach().clone() for p in frozen.encoder.parameters()]
    finetune(frozen, feats, 0, cfg, steps=5, progress=False)
    assert all(torch.equal(a, p) for a, p in zip(before, frozen.encoder.parameters())), "frozen must stay fixed"



def test_label_sample_is_nested_per_seed_and_checks_the_budget():
    assert label_sample(10, 10, 0) != list(range(10)) and sorted(label_sample(10, 10, 0)) == list(range(10))
    assert label_sample(50, 5, 3) == label_sample(50, 20, 3)[:5]  # a seed's smaller budget lies in its larger one
    assert label_sample(50, 20, 3) == label_sample(50, 20, 3) != label_sample(50, 20, 4)
    assert label_sample(50, 20, 1) == np.random.default_rng(1).permutation(50)[:20].tolist()  # chapter 16's draw
    for n in (0, 51):
        with pytest.raises(ValueError, match=f"budget of {n} labels cannot be drawn from 50"):
            label_sample(50, n, 0)


def test_seed_samples_draw_each_seeds_own_sample_and_keep_the_whole_pool_in_order():
    pool = _features(30)
    own = seed_samples(pool, 12, range(3))
    assert list(own) == [0, 1, 2] and all(len(v) == 12 for v in own.values())
    assert all(own[s] == [pool[i] for i in label_sample(30, 12, s)] for s in own) and own[0] != own[1]
    assert seed_samples(pool, 5, [2])[2] == own[2][:5]  # nested, as label_sample
    assert all(v == pool for v in seed_samples(pool, 30, [0, 1]).values()), "the whole pool is no draw"
    with pytest.raises(ValueError, match="budget of 31 labels cannot be drawn from 30"):
        seed_samples(pool, 31, [0])


def test_compare_with_a_sample_per_seed_trains_each_seed_on_its_own():
    """``features`` as a function of the seed: each seed's runs are those of compare on that seed's sample alone."""
    torch.manual_seed(0)
    cfg = BertFinetuningConfig.preset("smoke", batch_size=8, max_steps=12, lr=3e-3)
    pool = _features(60)
    parts = {s: [pool[i] for i in label_sample(len(pool), 24, s)] for s in (0, 1)}
    make = lambda enc: heads.SequenceClassifier(enc, 2, dropout=0.0)  # noqa: E731
    build = lambda: BertModel(BertConfig.named("tiny", vocab_size=20, max_len=32, dropout=0.0,  # noqa: E731
                                               attn_dropout=0.0))
    acc = lambda head: accuracy(head, pool, 0)  # noqa: E731
    kw = dict(metric="acc", baseline=50.0, prior=0.69, steps=12)
    both = compare(make, {"a": build}, parts.__getitem__, 0, cfg, acc, {"a": 3e-3}, seeds=[0, 1], **kw)
    alone = [compare(make, {"a": build}, parts[s], 0, cfg, acc, {"a": 3e-3}, seeds=[s], **kw)["a"] for s in (0, 1)]
    assert both["a"]["scores"] == [r["score"] for r in alone] and both["train examples"] == 24
    same = compare(make, {"a": build}, parts[0], 0, cfg, acc, {"a": 3e-3}, seeds=[1], **kw)["a"]
    assert (same["score"], same["train_loss"]) != (alone[1]["score"], alone[1]["train_loss"]), \
        "seed 1's own sample must change its run"


@pytest.mark.skipif(fork_context() is None or sys.platform == "darwin", reason="compare forks only where it is safe")
def test_compare_on_forked_workers_gives_the_runs_in_order_their_numbers_and_random_state(two_threads):
    """cfg.workers=2: the encoders x seeds runs go to two forked processes; the row holds the same scores and losses
    (to float rounding: one thread sums in another order than two), the probes' histories come back, and the random
    state after the call is the one the runs in order leave behind (later code draws the same numbers)."""
    cfg = BertFinetuningConfig.preset("smoke", batch_size=8, epochs=1.0, max_steps=None, min_steps=6, lr=3e-3,
                                      scratch_lr=3e-3)
    feats = _features(32)
    make = lambda enc: heads.SequenceClassifier(enc, 2)  # noqa: E731  (dropout: the runs draw random numbers)
    build = lambda: BertModel(BertConfig.named("tiny", vocab_size=20, max_len=32))  # noqa: E731
    acc = lambda head: accuracy(head, feats, 0)  # noqa: E731
    rows, after = {}, {}
    for w in (1, 2):  # two workers of one thread each
        torch.manual_seed(123)
        rows[w] = compare(make, {"a": build, "b": build}, feats, 0, cfg.replace(workers=w), acc,
                          {"a": 3e-3, "b": 1e-3}, metric="acc", baseline=50.0, prior=0.69, seeds=[2, 0],
                          probe=lambda head: {"w_norm": head.classifier.weight.norm()}, probe_every=3)
        after[w] = (torch.rand(3), np.random.rand(), random.random())
    for e in ("a", "b"):
        one, two = rows[1][e], rows[2][e]
        assert one["scores"] == two["scores"] and one["steps"] == two["steps"] == 6
        assert two["train_loss"] == pytest.approx(one["train_loss"], abs=1e-5)
        assert [h.series("w_norm")[0].tolist() for h in two["histories"]] == [[3, 6], [3, 6]]
    assert rows[1]["a"]["train_loss"] != rows[1]["b"]["train_loss"], "the encoders' runs must differ (their rates do)"
    assert torch.equal(after[1][0], after[2][0]) and after[1][1:] == after[2][1:]
    with pytest.raises(ValueError, match="workers must be positive"):
        cfg.replace(workers=0)


def test_beats_spread_needs_the_worst_seed_above_the_best_control_seed():
    row = {"pre-trained": {"scores": [80.0, 79.5, 81.0]}, "from scratch": {"scores": [79.4, 78.0, 79.0]},
           "GloVe": {"scores": [79.5, 70.0]}}
    assert beats_spread(row)                                   # 79.5 > 79.4
    assert not beats_spread(row, ("from scratch", "pre-trained"))
    assert not beats_spread(row, ("pre-trained", "GloVe"))     # a tie of the worst and the best is not a win
    means_apart = {"pre-trained": {"scores": [82.0, 78.0]}, "from scratch": {"scores": [79.0, 79.0]}}
    assert not beats_spread(means_apart)                       # a higher mean (80 vs 79) is not enough
    with pytest.raises(KeyError):
        beats_spread(row, ("pre-trained", "GloVe + ELMo"))


def test_config_checks_and_steps():
    cfg = BertFinetuningConfig.preset("cpu")
    assert cfg.steps_for(10_000) == math.ceil(cfg.epochs * 10_000 / cfg.batch_size)
    assert cfg.steps_for(10_000_000) == cfg.max_steps
    assert cfg.steps_for(1) == cfg.min_steps > math.ceil(cfg.epochs / cfg.batch_size)  # a few labels, many epochs
    assert cfg.steps_for(3_200, epochs=5.0) == 500
    with pytest.raises(ValueError, match="warmup_frac"):
        cfg.replace(warmup_frac=1.5)


def test_a_row_round_trips_through_the_ledger(tmp_path, monkeypatch):
    """One page records its rows, another rebuilds the same table from the ledger (the newest entry wins)."""
    monkeypatch.setenv("SHOULDERS_LEDGER", str(tmp_path / "ledger.jsonl"))
    row = {"metric": "F1", "baseline": 5.3, "prior": 2.1, "train examples": 400, "seeds": [0, 1],
           "pre-trained": {"score": 7.5, "scores": [7.0, 8.0], "train_loss": 1.5, "seconds": 3.0, "steps": 60},
           "from scratch": {"score": 6.5, "scores": [6.0, 7.0], "train_loss": 1.7, "seconds": 2.0, "steps": 60}}
    stale = {**row, "pre-trained": {**row["pre-trained"], "score": 1.0}}
    record_row("squad-1.1", stale, model="BERT-tiny", split="dev", chapter="14c")
    entries = record_row("squad-1.1", row, model="BERT-tiny", split="dev", chapter="14c")
    assert [e["model"] for e in entries] == ["BERT-tiny, pre-trained", "BERT-tiny, from scratch"]
    assert entries[0]["values"] == [7.0, 8.0] and entries[0]["seeds"] == [0, 1] and entries[0]["wall_time_s"] == 6.0
    back = rows_from_ledger("14c")
    assert back == {"squad-1.1": row}
    assert shoulders_table(back) == shoulders_table({"squad-1.1": row})
    assert rows_from_ledger("14c", scale="full") == {} and rows_from_ledger("other") == {}


def test_label_budget_curve_gives_each_seed_its_own_sample_of_each_budget():
    cfg = BertFinetuningConfig.preset("smoke", batch_size=8, epochs=1.0, max_steps=None, min_steps=4, lr=3e-3,
                                      scratch_lr=3e-3)
    feats = _features(48)
    make = lambda enc: heads.SequenceClassifier(enc, 2, dropout=0.0)  # noqa: E731
    build = lambda: BertModel(BertConfig.named("tiny", vocab_size=20, max_len=32))  # noqa: E731
    seen = []

    def acc(head):
        seen.append(head)
        logits = torch.stack(predict(head, feats, 0))
        return 100 * float((logits.argmax(-1) == torch.tensor([f["labels"] for f in feats])).float().mean())

    assert acc(make(build())) == accuracy(seen[-1], feats, 0)  # the package's helper scores the same way
    seen.clear()
    curve = label_budget_curve(make, {"a": build, "b": build}, feats, 0, cfg, acc, {"a": 3e-3, "b": 3e-3},
                               budgets=[8, 48], metric="acc", baseline=50.0, seeds=[0, 1])
    assert curve["budgets"] == [8, 48] and curve["seeds"] == [0, 1] and len(curve["rows"]) == 2
    small, large = curve["rows"]
    assert small["train examples"] == 8 and large["train examples"] == 48
    assert small["a"]["steps"] == 4 and large["a"]["steps"] == 6  # max(cfg.min_steps, 1 epoch of 48 / 8)
    assert len(small["a"]["scores"]) == 2 and len(seen) == 2 * 2 * 2  # budgets x encoders x seeds
    own = seed_samples(feats, 8, [0, 1])
    assert own[0] != own[1] and own[0] != feats[:8]
    assert small["prior"] == pytest.approx(sum(prior_loss([f["labels"] for f in own[s]]) for s in (0, 1)) / 2)
    assert small["prior"] != pytest.approx(prior_loss([f["labels"] for f in feats[:8]])), "not one shared prefix"
    again = compare(make, {"a": build}, own.__getitem__, 0, cfg, acc, {"a": 3e-3}, metric="acc", baseline=50.0,
                    steps=4, seeds=[0, 1])
    assert again["a"]["scores"] == small["a"]["scores"], "each seed trains on its own sample (seed_samples)"
    assert large["prior"] == pytest.approx(prior_loss([f["labels"] for f in feats]))
    with pytest.raises(ValueError, match="budgets must increase strictly within 1..48"):
        label_budget_curve(make, {"a": build}, feats, 0, cfg, acc, {"a": 1e-3}, budgets=[48, 8], metric="acc",
                           baseline=50.0)
    with pytest.raises(ValueError, match="budgets must increase strictly"):
        label_budget_curve(make, {"a": build}, feats, 0, cfg, acc, {"a": 1e-3}, budgets=[100], metric="acc",
                           baseline=50.0)

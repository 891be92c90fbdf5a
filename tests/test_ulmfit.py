"""ULMFiT (Howard & Ruder 2018): concat pooling reads only real tokens, BPT3C's windows equal one pass and send
gradients only through the last max_len tokens, consecutive layer groups' rates differ by exactly 2.6 under STLR,
under gradual unfreezing only the top k groups change in stage k, and stage 2 lowers the task text's perplexity."""
from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pytest
import torch

from shoulders import seed as sh_seed
from shoulders.config import ConfigError
from shoulders.models.awd_lstm import AWDLSTMConfig
from shoulders.models.ulmfit import PoolingClassifier, concat_pool
from shoulders.recipes import ulmfit as U
from shoulders.recipes.finetune import accuracy, compare
from shoulders.text import LMStream, ptb_to_wikitext
from shoulders.text.bert_inputs import collate
from shoulders.train import Callback
from shoulders.train import schedules as S

QUIET = dict(dropout=0.0, dropout_e=0.0, dropout_i=0.0, dropout_h=0.0, wdrop=0.0, alpha=0.0, beta=0.0)
TINY = dict(vocab_size=40, emb_dim=6, hidden=10, layers=3, adaptive_cutoffs=None, batch_size=4, bptt=8,
            variable_bptt=False)
CFG = dataclasses.replace(U.ULMFiTConfig(), lm_epochs=1.0, lm_min_steps=12, lm_batch_size=4, batch_size=8,
                          min_steps=1, seeds=1, budgets=(8,), ablation_labels=8)


def lm(**kw):
    torch.manual_seed(0)
    return AWDLSTMConfig(**{**TINY, **kw}).build()


def classifier(bptt=70, max_len=1_400, **kw):
    return PoolingClassifier(lm(**kw), n_classes=2, hidden=5, bptt=bptt, max_len=max_len)


def feature(ids, label=0):
    return {"input_ids": list(ids), "token_type_ids": [0] * len(ids), "labels": label}


def test_concat_pool_is_last_max_and_mean_over_real_tokens():
    h = torch.randn(2, 5, 3)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    got = concat_pool(h, mask)
    for b, n in enumerate((3, 5)):
        real = h[b, :n]
        want = torch.cat([real[-1], real.max(0).values, real.mean(0)])
        torch.testing.assert_close(got[b], want)
    with pytest.raises(ValueError, match="no real tokens"):
        concat_pool(h, torch.zeros(2, 5, dtype=torch.bool))


def test_a_sentence_gets_the_same_logits_alone_or_padded_in_a_batch():
    clf = classifier().eval()
    short, long = feature([3, 4, 5]), feature([6, 7, 8, 9, 10, 11, 12])
    alone = clf(**{k: v for k, v in collate([short], 0).items() if k != "labels"})
    batch = collate([short, long], 0)
    together = clf(batch["input_ids"], attention_mask=batch["attention_mask"])
    torch.testing.assert_close(together[0], alone[0], atol=1e-6, rtol=1e-5)


def test_bpt3c_windows_read_the_text_like_one_pass():
    clf = classifier().eval()
    x = torch.randint(40, (3, 23), generator=torch.Generator().manual_seed(1))
    whole = clf.states(x)
    clf.bptt = 4  # six windows, the state carried from each to the next
    torch.testing.assert_close(clf.states(x), whole, atol=1e-6, rtol=1e-5)


def test_bpt3c_sends_gradients_through_the_last_max_len_tokens_only():
    clf = classifier(bptt=2, max_len=4, **QUIET).train()
    x = torch.arange(10, 30).view(2, 10)  # every position of each row its own word: 10 ... 19 and 20 ... 29
    clf(x, labels=torch.tensor([0, 1]))["loss"].backward()
    rows = clf.encoder.embed.weight.grad.abs().sum(1)  # (V,)
    assert bool((rows[10:16] == 0).all() and (rows[20:26] == 0).all()), "the first six tokens run without autograd"
    assert bool((rows[16:20] > 0).all() and (rows[26:30] > 0).all()), "the last four (max_len) tokens get gradients"


def test_ptb_tokens_are_recut_the_way_wikitext_writes_them():
    assert ptb_to_wikitext("It does n't feel `` old-fashioned '' .".split()) == [
        "It", "doesn", "'t", "feel", '"', "old", "@-@", "fashioned", '"', "."]
    assert ptb_to_wikitext("ca n't wo n't 1,000 2.5 ` x".split()) == [
        "can", "'t", "won", "'t", "1", "@,@", "000", "2", "@.@", "5", "'", "x"]


def stream(n=1_200, seed=0):
    """A learnable text: the sequence 1 2 3 ... 9 repeated, with a random word now and then."""
    g = torch.Generator().manual_seed(seed)
    ids = (torch.arange(n) % 9) + 1
    noise = torch.rand(n, generator=g) < 0.1
    ids[noise] = torch.randint(10, 40, (int(noise.sum()),), generator=g)
    return LMStream(ids)


def test_stage_2_rates_are_2_6_apart_follow_stlr_and_lower_the_task_perplexity(one_thread):
    model = lm(**QUIET)
    before = U.task_perplexity(model, stream(seed=1), batch_size=4)
    cfg = dataclasses.replace(CFG, lm_lr=2e-2, lm_epochs=4.0)
    stage = U.finetune_lm(model, stream(), cfg)
    after = U.task_perplexity(model, stream(seed=1), batch_size=4)
    assert after < 0.7 * before, f"stage 2 must learn the task's text: {before:.1f} -> {after:.1f}"
    h = stage.history
    steps, top = h.series(f"lr/{len(stage.groups) - 1}")
    want = cfg.lm_lr * S.stlr(len(steps), cfg.cut_frac, cfg.ratio).curve(steps)
    np.testing.assert_allclose(top, want, rtol=1e-12)  # STLR, eq. 3
    first = {name: i for i, name in reversed(list(enumerate(stage.groups)))}  # one optimiser group per layer group
    names = ["embedding", "LSTM 1", "LSTM 2", "LSTM 3"]
    assert sorted(first, key=first.get) == names
    for lower, upper in zip(names, names[1:]):
        ratio = h.series(f"lr/{first[upper]}")[1] / h.series(f"lr/{first[lower]}")[1]
        np.testing.assert_allclose(ratio, 2.6, rtol=1e-12)  # eq. 2: eta^(l-1) = eta^l / 2.6


class Params(Callback):
    """Every parameter after every update."""

    def __init__(self):
        self.after: list[dict[str, torch.Tensor]] = []

    def on_fit_start(self, run):
        self.after.append({k: v.detach().clone() for k, v in run.model.named_parameters()})

    def on_step_end(self, run, logs):
        self.after.append({k: v.detach().clone() for k, v in run.model.named_parameters()})


@pytest.mark.parametrize("workers", [1, 2])
def test_finetune_lms_runs_each_stage_2_from_its_seed_and_leaves_the_start(two_threads, workers):
    """Several stage 2s at once (in order, or two forked workers): each equals finetune_lm run alone from the same
    seed, the start is unchanged, and the ablation's switch still changes its run."""
    start = lm(alpha=0.0, beta=0.0)  # dropouts on: the seed must fix their masks
    before = copy.deepcopy(start.state_dict())
    cfg = dataclasses.replace(CFG, workers=workers)
    runs = {"page": {}, "flat": {"discriminative": False}}
    tuned = U.finetune_lms({name: (start, stream(), kw) for name, kw in runs.items()}, cfg, seed=3)
    assert all(torch.equal(before[k], v) for k, v in start.state_dict().items()), "the start must stay as it was"
    for name, kwargs in runs.items():
        alone = copy.deepcopy(start)
        sh_seed(3)
        U.finetune_lm(alone, stream(), cfg, **kwargs)
        got = tuned[name][0].state_dict()
        assert not tuned[name][0].training
        for k, v in alone.state_dict().items():
            torch.testing.assert_close(got[k], v, rtol=1e-5, atol=1e-6, msg=f"{name}: {k}")
    page, flat = (tuned[n][0].state_dict() for n in runs)
    assert any(not torch.allclose(page[k], flat[k]) for k in page), "discriminative=False must change the run"


def test_under_gradual_unfreezing_stage_k_changes_only_the_top_k_groups(one_thread):
    clf = classifier(**QUIET)
    feats = [feature(torch.randint(1, 40, (6,)).tolist(), i % 2) for i in range(32)]
    cfg = dataclasses.replace(CFG, unfreeze_share=1.0, lr=1e-2)
    record = Params()
    steps, groups = 15, clf.layer_groups()
    every = cfg.unfreeze_every(steps, len(groups))
    assert every == 3
    hist = U.train_classifier(clf, feats, 0, cfg.finetuning(), steps=steps, ulmfit=cfg, callbacks=[record],
                              progress=False, device="cpu")
    names = U.layer_group_names(clf)
    owner = {}
    for g, name in zip(groups, names):
        for p in g.parameters():
            owner[id(p)] = name
    by_name = {k: owner[id(p)] for k, p in clf.named_parameters() if id(p) in owner}
    for t in range(1, steps + 1):
        changed = {by_name[k] for k in by_name if not torch.equal(record.after[t][k], record.after[t - 1][k])}
        k = min(1 + (t - 1) // every, len(groups))
        assert changed == set(names[len(names) - k:]), f"update {t}: {sorted(changed)} changed, want the top {k}"
    assert hist.series("unfrozen")[1].tolist() == [1, 2, 3, 4, 5]
    # one slanted triangle per stage (the authors' code) over the discriminative rates
    steps_, top = hist.series(f"lr/{len(hist.lr_keys()) - 1}")
    np.testing.assert_allclose(top, cfg.lr * S.stlr_cycles(every, len(groups), steps).curve(steps_), rtol=1e-12)


def test_the_classifier_learns_a_word_rule_and_compare_runs_the_given_trainer(one_thread):
    g = torch.Generator().manual_seed(0)
    feats = []
    for i in range(160):
        ids = torch.randint(10, 40, (7,), generator=g).tolist()
        ids[int(torch.randint(7, (1,), generator=g))] = 1 + i % 2  # word 1 or 2 decides the label
        feats.append(feature(ids, i % 2))
    cfg = dataclasses.replace(CFG, epochs=12.0)
    called = []

    def trainer(*args, **kw):
        called.append(True)
        return U.train_classifier(*args, ulmfit=cfg, **kw)

    row = compare(U.classifier_maker(cfg, 2), {"ULMFiT": lambda: lm(**QUIET)}, feats[:120], 0, cfg.finetuning(),
                  lambda h: accuracy(h, feats[120:], 0), {"ULMFiT": 1e-2}, metric="accuracy", baseline=50.0,
                  prior=math.log(2), trainers={"ULMFiT": trainer}, device="cpu")
    assert called and row["ULMFiT"]["score"] >= 90.0, row["ULMFiT"]


def test_layer_groups_and_names():
    clf = classifier()
    assert U.layer_group_names(clf) == ["embedding", "LSTM 1", "LSTM 2", "LSTM 3", "head"]
    assert clf.encoder.out is None and len(clf.layer_groups()) == 5
    untied = lm(tie_weights=False, adaptive_cutoffs=(10, 20), div_value=2.0)
    assert U.layer_group_names(untied)[-1] == "LSTM 3 + softmax"


@pytest.mark.parametrize("change, field", [({"ablation_labels": 50}, "ablation_labels"),
                                           ({"budgets": (300, 100)}, "budgets"),
                                           ({"unfreeze_share": 0.0}, "unfreeze_share"),
                                           ({"cut_frac": 1.0}, "cut_frac"),
                                           ({"vocab_min_count": -1}, "vocab_min_count"),
                                           ({"workers": 0}, "workers")])
def test_config_errors_name_the_field(change, field):
    with pytest.raises(ConfigError, match=field):
        dataclasses.replace(U.ULMFiTConfig(), **change).validate()


def test_drop_mult_scales_the_heads_and_the_encoders_dropouts():
    """fastai's drop_mult, a lever of benchmarks/ulmfit_levers.py: every dropout of stage 3 times one number."""
    enc = lm()
    same = U.classifier_maker(CFG, 2)(enc)
    assert same.encoder.cfg is enc.cfg and [m.p for m in same.head if isinstance(m, torch.nn.Dropout)] == [0.4, 0.1]
    half = U.classifier_maker(CFG.replace(drop_mult=0.5), 2)(lm())
    assert [m.p for m in half.head if isinstance(m, torch.nn.Dropout)] == [0.2, 0.05]
    assert [getattr(half.encoder.cfg, k) for k in U.DROPOUTS] == [getattr(enc.cfg, k) * 0.5 for k in U.DROPOUTS]
    assert min(getattr(enc.cfg, k) for k in U.DROPOUTS) > 0, "the test needs every dropout on"
    with pytest.raises(ConfigError, match="drop_mult"):
        CFG.replace(drop_mult=0.0)


def test_stage_three_runs_two_at_a_time_at_cpu_only():
    """The cpu page hands compare's runs to two forked workers; smoke (CI, beside other notebooks) and full (a GPU)
    run them in order."""
    assert [U.ULMFiTConfig.preset(s).finetuning().workers for s in ("smoke", "cpu", "full")] == [1, 2, 1]


def test_features_and_stream_use_wikitext_words():
    from shoulders.text import Vocab

    vocab = Vocab.build([["<eos>", "It", "doesn", "'t", "work", "."]], specials=["<unk>"], unk="<unk>")
    stream_ = U.task_stream(["It does n't work ."], vocab)
    assert vocab.decode(stream_.ids.tolist()) == ["It", "doesn", "'t", "work", ".", "<eos>"]
    f = U.classifier_features(["It does n't work .", "Unheard-of"], [1, 0], vocab)
    assert f[0]["input_ids"] == vocab.encode(["It", "doesn", "'t", "work", "."]) and f[0]["labels"] == 1
    assert f[1]["input_ids"] == [vocab.unk_id] * 3
    marked = U.classifier_features(["It does n't work ."], [1], vocab, mark_start=True)[0]  # the boundary first
    assert marked["input_ids"] == vocab.encode(["<eos>", "It", "doesn", "'t", "work", "."])
    assert marked["token_type_ids"] == [0] * 6
    with pytest.raises(ValueError, match="labels"):
        U.classifier_features(["a"], [0, 1], vocab)


@pytest.mark.parametrize("softmax", [dict(tie_weights=True, adaptive_cutoffs=None),
                                     dict(tie_weights=False, adaptive_cutoffs=None),
                                     dict(tie_weights=False, adaptive_cutoffs=(3, 6), div_value=2.0)])
def test_task_vocabulary_adds_the_task_words_at_the_mean_of_the_rows(softmax):
    from shoulders.text import Vocab

    vocab = Vocab.build([["<eos>", "the", "film", "is", "good", "."]], specials=["<unk>"], unk="<unk>")
    giant = lm(**{**softmax, "vocab_size": len(vocab)}).eval()
    text = ["the film is engrossing .", "an engrossing , watchable film", "watchable", "unfunny"]
    grown_lm, grown = U.task_vocabulary(giant, vocab, text, min_count=2)
    # the giant's words keep their ids; the task's words seen twice follow, most frequent first (ties by spelling)
    assert grown.tokens == vocab.tokens + ["engrossing", "watchable"] and grown.unk_id == vocab.unk_id
    assert grown_lm.cfg.vocab_size == len(grown) and giant.cfg.vocab_size == len(vocab)   # the giant is untouched
    old, new = giant.state_dict(), grown_lm.state_dict()
    grew = [k for k in old if old[k].shape != new[k].shape]
    assert "embed.weight" in grew and (softmax["tie_weights"] or any(k.startswith("out.") for k in grew))
    for k in old:
        torch.testing.assert_close(new[k][:len(old[k])], old[k], rtol=0, atol=0)
        if k in grew:
            torch.testing.assert_close(new[k][len(old[k]):], old[k].mean(0).expand(2, *old[k].shape[1:]))
    # the LSTMs read the giant's words as before
    x = torch.tensor([vocab.encode(["the", "film", "is", "good"])])
    for a, b in zip(giant.encode(x)["raw"], grown_lm.eval().encode(x)["raw"]):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert U.task_vocabulary(giant, vocab, text, min_count=1)[1].tokens[-1] == "unfunny"
    same_lm, same = U.task_vocabulary(giant, vocab, text, min_count=0)
    assert same == vocab and same_lm is not giant and same_lm.cfg == giant.cfg
    with pytest.raises(ValueError, match="min_count"):
        U.task_vocabulary(giant, vocab, text, min_count=-1)

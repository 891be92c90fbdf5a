"""Further masked-LM pre-training on a task's own text (Gururangan et al. 2020, TAPT): the batches read the texts
as fine-tuning does and never predict a special token, the stage learns the task's text, the giant is untouched."""
from __future__ import annotations

import random

import pytest
import torch

from shoulders.config import ConfigError
from shoulders.recipes.bert import BertPretrainingConfig, PretrainingBatches, evaluate_pretraining, fixed_eval_batches
from shoulders.recipes.bert_in_domain import InDomainConfig, TaskTextBatches, further_pretrain, held_out_batches
from shoulders.text.bert_inputs import IGNORE
from shoulders.text.task_features import classification_features
from shoulders.text.wordpiece import WordPiece

WORDS = ("the film is a quiet triumph . a dull and tired mess . the cast is wonderful and the script sharp . "
         "an ugly , boring film . it is funny , warm and wise . the plot is thin and the jokes are stale .").split()


def _texts(n: int, seed: int) -> list[str]:
    """``n`` review-like sentences drawn from a fixed set of six (a task's small, repetitive text)."""
    sentences = " ".join(WORDS).split(" . ")
    r = random.Random(seed)
    return [r.choice(sentences).strip(" .") + " ." for _ in range(n)]


@pytest.fixture(scope="module")
def tok() -> WordPiece:
    return WordPiece.train(_texts(200, 0), vocab_size=80)


@pytest.fixture(scope="module")
def base() -> BertPretrainingConfig:
    return BertPretrainingConfig(size="tiny", vocab_size=80, max_len=16, positions=32, batch_size=8, steps=10,
                                 warmup=1, eval_pairs=32, eval_every=5)


def test_config_keeps_the_giants_recipe_and_refuses_bad_settings(base):
    cfg = InDomainConfig(steps=50, lr=3e-4, warmup_frac=0.1, batch_size=4, max_len=24, eval_pairs=16, eval_every=25)
    p = cfg.pretraining(base)
    assert (p.steps, p.lr, p.warmup, p.batch_size, p.max_len, p.long_len, p.snapshots) == (50, 3e-4, 5, 4, 24, None, ())
    assert (p.size, p.positions, p.mask_prob, p.weight_decay, p.adam_eps) == (base.size, base.positions,
                                                                            base.mask_prob, base.weight_decay,
                                                                            base.adam_eps)
    with pytest.raises(ConfigError, match="positions"):
        InDomainConfig(max_len=64).pretraining(base)
    for bad in (dict(steps=0), dict(warmup_frac=1.0), dict(lr=0.0), dict(batch_size=0)):
        with pytest.raises(ConfigError):
            InDomainConfig(**bad)
    for scale in ("smoke", "cpu", "full"):
        assert InDomainConfig.preset(scale).max_len <= BertPretrainingConfig.preset(scale).positions


def test_batches_read_the_texts_as_fine_tuning_does_and_mask_only_words(tok, base):
    cfg = InDomainConfig(batch_size=8, max_len=16).pretraining(base)
    texts = _texts(64, 1)
    features = classification_features(tok, texts, None, None, 16)
    data = TaskTextBatches(features, tok, cfg)
    batches = list(data)
    assert len(batches) == 8 and all("nsp_labels" not in b for b in batches)
    seen = sorted(tuple(torch.where(b["mlm_labels"][i] != IGNORE, b["mlm_labels"][i], b["input_ids"][i])
                        [b["attention_mask"][i]].tolist()) for b in batches for i in range(len(b["input_ids"])))
    assert seen == sorted(tuple(f["input_ids"]) for f in features), "one pass: every text once, as fine-tuning reads it"
    for b in batches:
        chosen = b["mlm_labels"] != IGNORE
        assert chosen.any(dim=1).all(), "every text has something to predict"
        assert not (chosen & ~b["attention_mask"]).any()
        assert not torch.isin(b["mlm_labels"][chosen], torch.tensor([tok.cls_id, tok.sep_id, tok.pad_id])).any()
        assert (b["token_type_ids"] == 0).all()
    first = [f["input_ids"] for f in data.pairs(random.Random(0))]
    assert first != [f["input_ids"] for f in data.pairs(random.Random(1))], "each pass is shuffled anew"
    with pytest.raises(ValueError, match="at least one"):
        TaskTextBatches([], tok, cfg)


def test_held_out_accuracy_has_no_nsp_without_pairs(tok, base):
    cfg = InDomainConfig(batch_size=8, max_len=16, eval_pairs=16).pretraining(base)
    held = fixed_eval_batches(classification_features(tok, _texts(40, 2), None, None, 16), tok, cfg,
                              batches=TaskTextBatches)
    assert sum(len(b["input_ids"]) for b in held) == 16
    model = base.build()
    metrics = evaluate_pretraining(model.eval(), held)
    assert set(metrics) == {"mlm_acc", "mlm_loss"}
    docs = [[tok.encode(s) for s in _texts(6, d)] for d in range(8)]
    with_pairs = evaluate_pretraining(model, fixed_eval_batches(docs, tok, base, batches=PretrainingBatches))
    assert set(with_pairs) == {"mlm_acc", "mlm_loss", "nsp_acc"}


def test_further_pretraining_learns_the_task_text_and_leaves_the_giant_alone(tok, base):
    torch.manual_seed(0)
    giant = base.build()
    before = {k: v.clone() for k, v in giant.state_dict().items()}
    cfg = InDomainConfig(steps=80, lr=2e-3, warmup_frac=0.1, batch_size=16, max_len=16, eval_pairs=64, eval_every=40)
    held = held_out_batches(tok, _texts(64, 4), cfg, base)
    assert sum(len(b["input_ids"]) for b in held) == 64
    start = evaluate_pretraining(giant.eval(), held)
    adapted, history = further_pretrain(giant, tok, _texts(400, 3), cfg, base, eval_batches=held, progress=False)
    assert all(torch.equal(before[k], v) for k, v in giant.state_dict().items()), "the giant must not change"
    assert adapted is not giant and history.last_step() == 80
    end = evaluate_pretraining(adapted.eval(), held)
    assert end["mlm_loss"] < start["mlm_loss"] - 1.0, (start, end)
    assert end["mlm_acc"] > start["mlm_acc"] + 0.2, (start, end)
    assert history.last("val_mlm_loss") == pytest.approx(end["mlm_loss"])
    with pytest.raises(ValueError, match="texts"):
        further_pretrain(giant, tok, [], cfg, base)

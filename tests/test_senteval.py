"""The small SentEval (shoulders.evaluate.senteval): InferSent's pair features, the penalty chosen on validation and
scored on test, the floors it must meet (a constant encoder scores the majority class exactly; a bag of words finds
a word that decides the label; the pair features find "same sentence or not", which neither vector alone shows),
the clear errors of a broken encoder, and the splits it reads from the offline mirror."""
from __future__ import annotations

import random

import pytest
import torch

from shoulders.config import ConfigError
from shoulders.data import mirror_folder
from shoulders.evaluate.probe import fit_probe, linear_probe
from shoulders.evaluate.senteval import (SentEvalConfig, SentSplit, SentTask, bag_of_vectors, evaluate_encoder,
                                         ledger_results, load_tasks, pair_features, results_table)

WORDS = [f"w{i}" for i in range(40)]


def _sentiment_split(n: int, seed: int) -> SentSplit:
    """Sentences of 6 filler words and one of 'good' / 'bad', the label: a word that decides it."""
    rng = random.Random(seed)
    labels = [rng.random() < 0.4 for _ in range(n)]
    text = [" ".join(rng.sample(WORDS, 6) + ["good" if y else "bad"]) for y in labels]
    return SentSplit(text, [int(y) for y in labels])


def _same_split(n: int, seed: int) -> SentSplit:
    """Pairs labelled 1 when the two sentences are equal: only their difference shows it."""
    rng = random.Random(seed)
    a, b, y = [], [], []
    for _ in range(n):
        s = " ".join(rng.sample(WORDS, 3))
        same = rng.random() < 0.5
        a.append(s)
        b.append(s if same else " ".join(rng.sample(WORDS, 3)))
        y.append(int(same))
    return SentSplit(a, y, b)


VOCAB = {w: i for i, w in enumerate(WORDS + ["good", "bad"])}
VECTORS = torch.randn(len(VOCAB), 16, generator=torch.Generator().manual_seed(0))
CFG = SentEvalConfig.preset("smoke", l2_grid=(1e-4, 1e-1, 10.0), max_iter=100)


def test_pair_features_are_u_v_absolute_difference_and_product():
    u, v = torch.tensor([[1.0, -2.0]]), torch.tensor([[3.0, 1.0]])
    assert torch.equal(pair_features(u, v), torch.tensor([[1.0, -2.0, 3.0, 1.0, 2.0, 3.0, 3.0, -2.0]]))
    with pytest.raises(ValueError, match=r"\(N, d\)"):
        pair_features(u, v[:, :1])


def test_bag_of_words_finds_the_deciding_word_and_a_constant_encoder_scores_the_majority_exactly():
    task = SentTask("toy", 2, _sentiment_split(400, 0), _sentiment_split(200, 1), _sentiment_split(300, 2))
    got = evaluate_encoder(bag_of_vectors(VECTORS, VOCAB), {"toy": task}, CFG, progress=False)["toy"]
    assert got.test > 95.0 and got.majority < 70.0
    const = evaluate_encoder(lambda s: torch.ones(len(s), 4), {"toy": task}, CFG, progress=False)["toy"]
    assert const.test == pytest.approx(task.majority())  # standardised constant features are zero: the bias decides


def test_the_pair_features_learn_same_or_not_which_the_concatenation_alone_does_not():
    task = SentTask("same", 2, _same_split(1_500, 0), _same_split(300, 1), _same_split(500, 2))
    assert task.pair
    got = evaluate_encoder(bag_of_vectors(VECTORS, VOCAB), {"same": task}, CFG, progress=False)["same"]
    assert got.test > 90.0 and got.dim == 16
    # the same linear model on [u, v] only: equality is not linear in the two vectors
    enc = bag_of_vectors(VECTORS, VOCAB)
    x = {k: torch.cat([enc(s.a), enc(s.b)], -1) for k, s in task.splits().items()}
    plain = linear_probe(x["train"], torch.tensor(task.train.labels), x["test"], torch.tensor(task.test.labels))
    assert plain < 75.0 < got.test


def test_the_penalty_with_the_best_validation_accuracy_is_kept_and_the_smaller_wins_a_tie():
    task = SentTask("toy", 2, _sentiment_split(200, 0), _sentiment_split(200, 1), _sentiment_split(200, 2))
    got = evaluate_encoder(bag_of_vectors(VECTORS, VOCAB), {"toy": task}, CFG, progress=False)["toy"]
    assert set(got.valid_by_l2) == set(CFG.l2_grid)
    best = max(got.valid_by_l2.values())
    assert got.valid == best and got.l2 == min(l2 for l2, a in got.valid_by_l2.items() if a == best)
    # the huge penalty leaves the weights near zero: it must not be the one chosen here
    assert got.valid_by_l2[10.0] <= best and got.l2 != 10.0
    x = torch.randn(50, 3)
    assert fit_probe(x, (x[:, 0] > 0).long(), l2=10.0).weight.abs().max() < fit_probe(
        x, (x[:, 0] > 0).long(), l2=1e-4).weight.abs().max()


def test_each_distinct_sentence_is_encoded_once():
    task = SentTask("same", 2, _same_split(100, 0), _same_split(50, 1), _same_split(50, 2))
    seen: list[str] = []

    def encode(sentences):
        seen.extend(sentences)
        return bag_of_vectors(VECTORS, VOCAB)(sentences)

    evaluate_encoder(encode, {"same": task}, CFG, progress=False)
    assert len(seen) == len(set(seen)) == len(task.sentences())


def test_a_broken_encoder_is_a_clear_error():
    task = SentTask("toy", 2, _sentiment_split(50, 0), _sentiment_split(20, 1), _sentiment_split(20, 2))
    with pytest.raises(ValueError, match="one vector per sentence"):
        evaluate_encoder(lambda s: torch.zeros(len(s) + 1, 4), {"toy": task}, CFG, progress=False)

    def nan_for_good(sentences):
        out = torch.zeros(len(sentences), 4)
        out[[i for i, s in enumerate(sentences) if "good" in s]] = float("nan")
        return out

    with pytest.raises(ValueError, match="NaN.*good"):
        evaluate_encoder(nan_for_good, {"toy": task}, CFG, progress=False)
    with pytest.raises(ValueError, match="both name and chapter"):
        evaluate_encoder(lambda s: torch.zeros(len(s), 4), {"toy": task}, CFG, name="x", progress=False)


def test_config_and_split_errors_name_the_cause():
    with pytest.raises(ConfigError, match="tasks"):
        SentEvalConfig(tasks=("sst2", "mrpc"))
    with pytest.raises(ConfigError, match="snli_source"):
        SentEvalConfig(snli_source="test")
    with pytest.raises(ConfigError, match="disjoint"):
        SentEvalConfig(snli_train=0)
    with pytest.raises(ValueError, match="one label"):
        SentSplit(["a", "b"], [1])


def test_results_table_has_a_row_per_encoder_and_the_majority_floor():
    task = SentTask("toy", 2, _sentiment_split(100, 0), _sentiment_split(50, 1), _sentiment_split(50, 2))
    res = {"bag": evaluate_encoder(bag_of_vectors(VECTORS, VOCAB), {"toy": task}, CFG, progress=False)}
    table = results_table(res)
    assert "| bag | 16 |" in table and f"| majority class | — | {task.majority():.1f} |" in table


def test_ledger_results_read_back_the_newest_test_accuracy_of_the_chapter_at_the_scale(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOULDERS_LEDGER", str(tmp_path / "ledger.jsonl"))
    task = SentTask("toy", 2, _sentiment_split(100, 0), _sentiment_split(50, 1), _sentiment_split(50, 2))
    assert ledger_results("07_x", scale="smoke") == {}
    const = evaluate_encoder(lambda s: torch.ones(len(s), 4), {"toy": task}, CFG, name="bag", chapter="07_x",
                             scale="smoke", progress=False)
    bag = evaluate_encoder(bag_of_vectors(VECTORS, VOCAB), {"toy": task}, CFG, name="bag", chapter="07_x",
                           scale="smoke", progress=False)  # the same name again: the newer entry wins
    evaluate_encoder(lambda s: torch.ones(len(s), 4), {"toy": task}, CFG, name="bag", chapter="07_x",
                     scale="cpu", progress=False)  # another scale
    evaluate_encoder(lambda s: torch.ones(len(s), 4), {"toy": task}, CFG, name="other", chapter="08_y",
                     scale="smoke", progress=False)  # another chapter
    assert const["toy"].test != bag["toy"].test
    assert ledger_results("07_x", scale="smoke") == {"bag": {"toy": pytest.approx(bag["toy"].test)}}
    assert ledger_results("07_x", scale="cpu") == {"bag": {"toy": pytest.approx(const["toy"].test)}}


@pytest.mark.skipif(mirror_folder("sst-trees") is None or mirror_folder("snli") is None,
                    reason="no sst-trees / snli in the offline mirror: set SHOULDERS_DATA_MIRROR")
def test_smoke_splits_from_the_mirror():
    tasks = load_tasks(SentEvalConfig.preset("smoke"))
    sizes = {n: tuple(len(s.a) for s in t.splits().values()) for n, t in tasks.items()}
    assert sizes == {"sst2": (2_000, 872, 1_000), "sst5": (2_000, 1_101, 1_000), "snli": (2_000, 1_000, 2_000)}
    assert {t.classes for t in tasks.values()} == {2, 5, 3} and tasks["snli"].pair and not tasks["sst2"].pair
    train = set(zip(tasks["snli"].train.a, tasks["snli"].train.b))
    assert not train & set(zip(tasks["snli"].valid.a, tasks["snli"].valid.b))  # disjoint parts of SNLI dev
    assert load_tasks(SentEvalConfig.preset("smoke"))["snli"].train.a == tasks["snli"].train.a  # the seed fixes them

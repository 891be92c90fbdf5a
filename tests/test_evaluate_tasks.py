"""Classification accuracy and the majority baseline, SQuAD v1.1 EM/F1 and entity-level F1 against
hand-computed values."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from shoulders.evaluate import accuracy, entity_f1, majority_baseline, squad_em_f1, squad_normalize


def test_accuracy_of_labels_and_of_scores():
    assert accuracy([1, 0, 2, 2], [1, 1, 2, 0]) == 0.5
    assert accuracy(torch.tensor([1, 0, 2]), np.array([1, 0, 2])) == 1.0
    scores = torch.tensor([[0.1, 0.9], [2.0, -1.0], [0.3, 0.4]])  # (N, C): argmax 1, 0, 1
    assert accuracy(scores, torch.tensor([1, 1, 1])) == pytest.approx(2 / 3)
    assert accuracy(scores.numpy(), [1, 0, 1]) == 1.0
    assert accuracy(["pos", "neg"], ["pos", "pos"]) == 0.5
    with pytest.raises(ValueError, match="2 predictions but 3"):
        accuracy([1, 0], [1, 0, 1])
    with pytest.raises(ValueError):
        accuracy([], [])


def test_majority_baseline_predicts_the_training_majority():
    train = [0, 1, 1, 1, 2]  # majority: 1
    assert majority_baseline(train, [1, 0, 1, 2]) == 0.5
    assert majority_baseline(train, [0, 0]) == 0.0  # the eval set's own majority is not used
    assert majority_baseline([0, 1, 1, 0], [0, 1, 1]) == pytest.approx(1 / 3)  # a tie: the label met first
    dev = torch.tensor([1, 0, 0, 1, 0])  # (dev, dev): the share of the largest class
    assert majority_baseline(dev, dev) == pytest.approx(3 / 5)
    with pytest.raises(ValueError):
        majority_baseline([], [0])


@pytest.mark.parametrize("text, expected", [
    ("The Denver Broncos", "denver broncos"),     # article and case
    ("Broncos!", "broncos"),                      # punctuation
    ("  a   cat,  an owl\tthe end ", "cat owl end"),  # articles as words, whitespace collapsed
    ("banana theatre", "banana theatre"),         # only whole words a/an/the go
    ("The-end", "theend"),                        # punctuation goes first, so 'the' is no longer a word
    ("“Hi”", "“hi”"),                             # only ASCII punctuation is removed (string.punctuation)
    ("the", ""),
])
def test_squad_normalize(text, expected):
    assert squad_normalize(text) == expected


def one(pred, refs):
    return squad_em_f1([pred], [refs])


def test_squad_articles_and_punctuation_match_exactly():
    assert one("The Denver Broncos.", ["Denver Broncos"]) == {"exact_match": 100.0, "f1": 100.0}


def test_squad_partial_overlap():
    # pred {denver, broncos, team}, ref {denver, broncos}: P = 2/3, R = 1, F1 = 2PR/(P+R) = 0.8
    out = one("Denver Broncos team", ["the Denver Broncos"])
    assert out["exact_match"] == 0.0
    assert out["f1"] == pytest.approx(80.0)


def test_squad_overlap_counts_repeated_tokens_once_each():
    # pred [cat, cat, cat] vs ref [cat]: overlap min(3, 1) = 1, P = 1/3, R = 1, F1 = 0.5
    assert one("the cat cat cat", ["a cat"])["f1"] == pytest.approx(50.0)


def test_squad_takes_the_best_reference():
    # "in 1990" vs "1990": P 1/2, R 1 -> 2/3; vs "in the year 1990" = [in, year, 1990]: P 1, R 2/3 -> 0.8
    out = one("in 1990", ["1990", "in the year 1990"])
    assert out["exact_match"] == 0.0
    assert out["f1"] == pytest.approx(80.0)
    assert one("1990", ["in the year 1990", "1990."])["exact_match"] == 100.0


def test_squad_empty_prediction():
    assert one("", ["Denver"]) == {"exact_match": 0.0, "f1": 0.0}
    # v1.1's quirk: both sides normalise to "" -> exact match, but F1 has no common token -> 0
    assert one("The", ["the."]) == {"exact_match": 100.0, "f1": 0.0}


def test_squad_averages_over_questions_in_percent():
    out = squad_em_f1(["Denver Broncos", "Denver Broncos team", "nothing"],
                      [["Denver Broncos"], ["the Denver Broncos"], ["Carolina"]])
    assert out["exact_match"] == pytest.approx(100 / 3)
    assert out["f1"] == pytest.approx((100 + 80 + 0) / 3)


def test_squad_rejects_bad_inputs():
    with pytest.raises(ValueError):
        squad_em_f1(["a"], [["a"], ["b"]])
    with pytest.raises(ValueError):
        squad_em_f1(["a"], [[]])
    with pytest.raises(TypeError):
        squad_em_f1(["a"], ["a"])  # a bare string per question, not a list of answers


TRUE = [["B-PER", "I-PER", "O", "B-LOC", "O", "B-ORG", "I-ORG"],
        ["O", "B-MISC", "I-MISC", "O"],
        ["B-LOC", "O"],
        ["B-PER"]]
PRED = [["B-PER", "I-PER", "O", "B-ORG", "O", "B-ORG", "O"],  # PER right; LOC typed ORG; ORG boundary short
        ["O", "I-MISC", "I-MISC", "O"],                       # I- without B-: conlleval reads MISC(1, 2), right
        ["O", "I-LOC"],                                       # LOC(1, 1): a false positive, LOC(0, 0) missed
        ["O"]]                                                # PER missed


def test_entity_f1_by_hand():
    # true entities: PER(0-1) LOC(3) ORG(5-6) | MISC(1-2) | LOC(0) | PER(0)                 -> 6
    # predicted:     PER(0-1) ORG(3) ORG(5)   | MISC(1-2) | LOC(1)                           -> 5
    # exactly right (span and type): PER(0-1), MISC(1-2)                                     -> 2
    out = entity_f1(TRUE, PRED)
    p, r = 2 / 5, 2 / 6
    assert out["precision"] == pytest.approx(p)
    assert out["recall"] == pytest.approx(r)
    assert out["f1"] == pytest.approx(2 * p * r / (p + r))  # 4/11
    # per type: PER 1 right of 1 predicted / 2 true -> 2/3; MISC 1/1/1 -> 1; LOC and ORG none right -> 0
    assert out["per_type"] == pytest.approx({"PER": 2 / 3, "MISC": 1.0, "LOC": 0.0, "ORG": 0.0})


def test_entity_f1_perfect_and_empty():
    assert entity_f1(TRUE, TRUE)["f1"] == 1.0
    out = entity_f1(TRUE, [["O"] * len(s) for s in TRUE])  # nothing predicted: 0, not a warning or NaN
    assert (out["precision"], out["recall"], out["f1"]) == (0.0, 0.0, 0.0)


def test_entity_f1_rejects_misaligned_sequences():
    with pytest.raises(ValueError):
        entity_f1([["B-PER", "O"]], [["B-PER"]])

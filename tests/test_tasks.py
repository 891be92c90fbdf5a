"""BERT's fine-tuning tasks: the readers of shoulders.data (counts against the registry) and the features of
shoulders.text.task_features per task."""
from __future__ import annotations

import functools
import re
import string
import unicodedata
from collections import Counter
import numpy as np
import pytest
import torch

from shoulders.data import SNLI_LABELS, WNUT17_TAGS, copa, copa_split, mirror_root, snli, squad, sst2, wnut17
from shoulders.text.bert_inputs import collate
from shoulders.text.task_features import (
    SquadExample, choice_features, classification_features, span_features, span_predictions, split_articles,
    squad_examples, tagging_features, tagging_predictions,
)

MIRROR = mirror_root()  # SHOULDERS_DATA_MIRROR, as the package reads it


def _in_mirror(name: str, filename: str) -> bool:
    return MIRROR is not None and (MIRROR / name / filename).is_file()


def _needs(name: str, filename: str):
    return pytest.mark.skipif(not _in_mirror(name, filename), reason=f"no {name}/{filename} in the offline mirror: "
                              "set SHOULDERS_DATA_MIRROR to the book's shared/data folder")


needs_sst2 = _needs("sst2-glue", "train.tsv")
needs_snli = _needs("snli", "snli_1.0_dev.jsonl.gz")
needs_wnut = _needs("wnut17", "wnut17train.conll")
needs_squad = _needs("squad-v1.1", "dev-v1.1.json")
needs_copa = _needs("copa-balanced", "balanced-copa-dev-all.xml")


class ChunkTokenizer:
    """Test double with the WordPiece members: lower-case, punctuation split off, words cut into 3-letter pieces.

    ``"Broncos."`` -> ``bro ##nco ##s .``; format characters (zero-width space, ...) vanish as in BERT's cleaning,
    so a word made only of them has no piece. Ids are handed out on first sight.
    """

    def __init__(self):
        self.names = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        self.vocab = {t: i for i, t in enumerate(self.names)}
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = range(5)

    @functools.lru_cache(maxsize=None)  # noqa: B019 (one small object per test)
    def _word(self, word: str) -> tuple[str, ...]:
        word = "".join(c for c in word.lower() if unicodedata.category(c) != "Cf")
        pieces: list[str] = []
        for part in re.findall(r"\w+|[^\w\s]", word):
            pieces += [part[:3]] + ["##" + part[i:i + 3] for i in range(3, len(part), 3)]
        return tuple(pieces)

    def tokenize(self, text: str) -> list[str]:
        return [p for word in text.split() for p in self._word(word)]

    def _ids(self, pieces: tuple[str, ...] | list[str]) -> list[int]:
        for p in pieces:
            if p not in self.vocab:
                self.vocab[p] = len(self.names)
                self.names.append(p)
        return [self.vocab[p] for p in pieces]

    def encode(self, text: str) -> list[int]:
        return self._ids(self.tokenize(text))

    def encode_words(self, words: list[str]) -> tuple[list[int], list[int]]:
        ids, index = [], []
        for w, word in enumerate(words):
            pieces = self._ids(self._word(word))
            ids += pieces
            index += [w] * len(pieces)
        return ids, index

    def decode(self, ids: list[int]) -> str:
        return " ".join(self.names[i] for i in ids).replace(" ##", "")


@pytest.fixture
def tok():
    return ChunkTokenizer()


@pytest.fixture(scope="module")
def wordpiece():
    """The book's WordPiece, trained on 300 SQuAD paragraphs and the WNUT-17 training words (2,000 pieces)."""
    wp = pytest.importorskip("shoulders.text.wordpiece")
    if not (_in_mirror("squad-v1.1", "dev-v1.1.json") and _in_mirror("wnut17", "wnut17train.conll")):
        pytest.skip("no SQuAD / WNUT-17 in the offline mirror: set SHOULDERS_DATA_MIRROR to the book's shared/data")
    contexts = sorted({e.context for e in squad_examples(squad("dev", root=MIRROR / "squad-v1.1"))})[:300]
    tweets = [" ".join(w) for w, _ in wnut17("train", root=MIRROR / "wnut17")]
    return wp.WordPiece.train(contexts + tweets, vocab_size=2_000)


@pytest.fixture(params=["double", "wordpiece"])
def any_tok(request):
    return ChunkTokenizer() if request.param == "double" else request.getfixturevalue("wordpiece")


def normalize_answer(s: str) -> str:
    """The SQuAD v1.1 evaluation script's normalisation: lower case, no punctuation, articles or extra spaces."""
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", s).split())


# ------------------------------------------------------------------------------------------------------ readers

@needs_sst2
def test_sst2_counts():
    train, dev = sst2("train", root=MIRROR / "sst2-glue"), sst2("dev", root=MIRROR / "sst2-glue")
    assert (len(train[0]), len(train[1]), len(dev[0]), len(dev[1])) == (67_349, 67_349, 872, 872)
    assert set(train[1]) == set(dev[1]) == {0, 1}
    assert train[0][0] == "hide new secretions from the parental units" and train[1][0] == 0
    assert dev[0][0] == "it 's a charming and often affecting journey ." and dev[1][0] == 1
    with pytest.raises(ValueError):
        sst2("test", root=MIRROR / "sst2-glue")


@needs_snli
def test_snli_counts_without_unlabelled_pairs(tmp_path):
    p, h, y = snli("dev", root=MIRROR / "snli")
    assert len(p) == len(h) == len(y) == 9_842  # 10,000 minus 158 pairs with gold_label "-"
    assert Counter(SNLI_LABELS[i] for i in y) == {"entailment": 3_329, "neutral": 3_235, "contradiction": 3_278}
    assert p[0] == "Two women are embracing while holding to go packages." and SNLI_LABELS[y[0]] == "neutral"
    assert len(snli("test", root=MIRROR / "snli")[2]) == 9_824  # 10,000 minus 176
    with pytest.raises(FileNotFoundError, match=r"snli_1\.0_train\.jsonl.*snli_1\.0\.zip"):
        snli("train", root=MIRROR / "snli")
    (tmp_path / "snli_1.0_train.jsonl").write_text(  # a training file put next to them is read
        '{"gold_label": "entailment", "sentence1": "A b.", "sentence2": "C d."}\n'
        '{"gold_label": "-", "sentence1": "E.", "sentence2": "F."}\n', encoding="utf-8")
    assert snli("train", root=tmp_path) == (["A b."], ["C d."], [0])


@needs_wnut
def test_wnut17_counts_and_tags():
    data = {s: wnut17(s, root=MIRROR / "wnut17") for s in ("train", "dev", "test")}
    assert {s: len(v) for s, v in data.items()} == {"train": 3_394, "dev": 1_009, "test": 1_287}
    assert {s: sum(len(w) for w, _ in v) for s, v in data.items()} == {"train": 62_730, "dev": 15_733,
                                                                       "test": 23_394}
    assert all(len(w) == len(t) and w for v in data.values() for w, t in v)
    assert all(word.strip() for v in data.values() for w, _ in v for word in w)  # the lone-tab lines split
    used = {tag for v in data.values() for _, t in v for tag in t}
    assert used == set(WNUT17_TAGS) and len(WNUT17_TAGS) == 13 and WNUT17_TAGS[0] == "O"
    words, tags = data["train"][0]
    assert words[:3] == ["@paulwalk", "It", "'s"] and tags[14:17] == ["B-location", "I-location", "I-location"]


@needs_squad
def test_squad_counts():
    articles = squad("dev", root=MIRROR / "squad-v1.1")
    paragraphs = [p for a in articles for p in a["paragraphs"]]
    examples = squad_examples(articles)
    assert (len(articles), len(paragraphs), len(examples)) == (48, 2_067, 10_570)
    assert len({e.qid for e in examples}) == 10_570
    assert examples[0].answers[0] == "Denver Broncos" and examples[0].answer_starts[0] == 177
    assert all(e.context[s:s + len(a)] == a for e in examples for a, s in zip(e.answers, e.answer_starts))
    with pytest.raises(FileNotFoundError, match=r"squad-v1\.1-train: .*train-v1\.1\.json is missing"):
        squad("train", root=MIRROR / "squad-v1.1")  # the training set is the full-scale entry squad-v1.1-train
    with pytest.raises(ValueError, match="split"):
        squad("test", root=MIRROR / "squad-v1.1")


@needs_copa
def test_copa_items():
    items = copa(root=MIRROR / "copa-balanced")
    assert len(items) == 1_000 and sum(i["mirrored"] for i in items) == 500
    original = Counter((i["question"], i["label"]) for i in items if not i["mirrored"])
    assert original == {("cause", 0): 123, ("cause", 1): 127, ("effect", 0): 120, ("effect", 1): 130}
    first = items[0]
    assert first == {"id": 1, "premise": "My body cast a shadow over the grass.", "choice1": "The sun was rising.",
                     "choice2": "The grass was cut.", "question": "cause", "label": 0, "mirrored": False, "pair": 1}
    mirror = next(i for i in items if i["id"] == 1001)  # same alternatives, the other one is right
    assert (mirror["choice1"], mirror["choice2"], mirror["mirrored"]) == (first["choice2"], first["choice1"], True)
    assert mirror["pair"] == 1


@needs_copa
def test_copa_split_keeps_each_pair_on_one_side():
    items = copa(root=MIRROR / "copa-balanced")
    train, held = copa_split(items, 500, seed=0)
    assert len(train) == 500 and len(held) == 500
    assert sorted(i["id"] for i in train + held) == sorted(i["id"] for i in items)  # a partition
    assert not {i["pair"] for i in train} & {i["pair"] for i in held}  # no pair cut in two
    assert copa_split(items, 500, seed=0) == (train, held) and copa_split(items, 500, seed=1) != (train, held)
    assert len(copa_split(items, 301)[0]) == 300  # whole pairs only
    # the random split this replaces cut most pairs in two
    order = np.random.default_rng(0).permutation(len(items))
    old_train = {items[i]["pair"] for i in order[:500]}
    assert len(old_train & {items[i]["pair"] for i in order[500:]}) > 200
    with pytest.raises(ValueError, match="n_train must be between 0 and the 1000 items"):
        copa_split(items, 1001)


def test_split_articles_disjoint_deterministic_covering():
    articles = [{"title": f"t{i}"} for i in range(48)]
    train, held = split_articles(articles, 0.25, seed=3)
    titles = lambda part: [a["title"] for a in part]  # noqa: E731
    assert len(held) == 12 and len(train) == 36
    assert not set(titles(train)) & set(titles(held))
    assert sorted(titles(train) + titles(held)) == sorted(titles(articles))
    assert split_articles(articles, 0.25, seed=3) == (train, held)
    assert titles(split_articles(articles, 0.25, seed=4)[1]) != titles(held)
    assert titles(train) == [t for t in titles(articles) if t in titles(train)]  # original order kept
    with pytest.raises(ValueError):
        split_articles(articles, 1.0)


# ----------------------------------------------------------------------------------------------------- features

def test_classification_features_single_and_pair(tok):
    single = classification_features(tok, ["a good film", "bad"], None, [1, 0], max_len=7)
    assert tok.tokenize("a good film") == ["a", "goo", "##d", "fil", "##m"]
    assert single[0]["input_ids"] == [tok.cls_id, *tok.encode("a good film"), tok.sep_id]
    assert single[0]["token_type_ids"] == [0] * 7 and single[0]["labels"] == 1
    assert single[1]["input_ids"] == [tok.cls_id, *tok.encode("bad"), tok.sep_id]
    pair = classification_features(tok, ["a man sleeps"], ["someone rests"], [2], max_len=12)[0]
    a, b = tok.encode("a man sleeps"), tok.encode("someone rests")
    assert (len(a), len(b)) == (4, 5)
    assert pair["input_ids"] == [tok.cls_id, *a, tok.sep_id, *b, tok.sep_id]
    assert pair["token_type_ids"] == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    cut = classification_features(tok, ["a man sleeps"], ["someone rests"], None, max_len=11)[0]
    assert cut["input_ids"] == [tok.cls_id, *a, tok.sep_id, *b[:4], tok.sep_id]  # the longer text lost a piece
    assert "labels" not in cut
    batch = collate(single, tok.pad_id)
    assert batch["input_ids"].shape == (2, 7) and batch["labels"].tolist() == [1, 0]
    assert batch["attention_mask"].tolist()[1] == [True] * 3 + [False] * 4


def test_tagging_first_subword_hand_case(tok):
    words, tags = ["Empire", "State", "is", "big"], ["B-location", "I-location", "O", "O"]
    tag_to_id = {t: i for i, t in enumerate(WNUT17_TAGS)}
    f = tagging_features(tok, [(words, tags)], tag_to_id, max_len=32)[0]
    # [CLS] emp ##ire sta ##te is big [SEP]
    assert tok.tokenize(" ".join(words)) == ["emp", "##ire", "sta", "##te", "is", "big"]
    assert f["word_ids"] == [-1, 0, 0, 1, 1, 2, 3, -1]
    b, i, o = tag_to_id["B-location"], tag_to_id["I-location"], tag_to_id["O"]
    assert f["labels"] == [-100, b, -100, i, -100, o, o, -100]
    assert (f["n_words"], f["n_cut"]) == (4, 0)
    short = tagging_features(tok, [(words, tags)], tag_to_id, max_len=5)[0]  # room for 3 pieces: emp ##ire sta
    assert short["labels"] == [-100, b, -100, i, -100] and short["n_cut"] == 2
    assert tagging_predictions([short], [[0, b, 0, i, 0]], WNUT17_TAGS) == [["B-location", "I-location", "O", "O"]]


@needs_wnut
def test_tagging_predictions_invert_tagging_features(any_tok):
    tok = any_tok
    sentences = wnut17("dev", root=MIRROR / "wnut17")
    tag_to_id = {t: i for i, t in enumerate(WNUT17_TAGS)}
    features = tagging_features(tok, sentences, tag_to_id, max_len=512)
    assert sum(f["n_cut"] for f in features) == 0
    gold = [list(t) for _, t in sentences]
    labels = collate(features, tok.pad_id)["labels"]  # (N, T): the gold ids at first pieces
    assert tagging_predictions(features, labels, WNUT17_TAGS) == gold
    logits = torch.nn.functional.one_hot(labels.clamp(min=0), len(WNUT17_TAGS)).float()  # (N, T, K)
    assert tagging_predictions(features, logits, dict(enumerate(WNUT17_TAGS))) == gold
    per_feature = [row[:len(f["input_ids"])] for row, f in zip(logits, features)]  # (T_i, K) each, as predict gives
    assert tagging_predictions(features, per_feature, WNUT17_TAGS) == gold
    # truncated: the words that lost their first piece come back as "O", and they are exactly the counted ones
    short = tagging_features(tok, sentences, tag_to_id, max_len=16)
    back = tagging_predictions(short, collate(short, tok.pad_id)["labels"], WNUT17_TAGS)
    cut = [sum(1 for p, g in zip(b, g_) if p != g) for b, g_ in zip(back, gold)]
    assert sum(f["n_cut"] for f in short) > 1_000
    assert all(c <= f["n_cut"] for c, f in zip(cut, short)) and sum(cut) > 0
    assert all(b[len(b) - f["n_cut"]:] == ["O"] * f["n_cut"] for b, f in zip(back, short))
    assert all(b[:len(b) - f["n_cut"]] == g[:len(g) - f["n_cut"]] for b, g, f in zip(back, gold, short))


def test_span_features_hand_case(tok):
    context = "The quick brown fox jumps over the lazy dog near the (old) riverbank today."
    start = context.index("old")
    ex = SquadExample("Which bank?", context, ["old"], [start], "q1")
    features = span_features(tok, [ex], max_len=12, doc_stride=3, max_query_len=3)
    q = tok.encode("Which bank?")[:3]
    assert len(q) == 3 and all(len(f["input_ids"]) <= 12 for f in features)
    ids, _ = tok.encode_words(context.split())
    windows = [f["input_ids"][len(q) + 2:-1] for f in features]
    assert all(w == ids[3 * k:3 * k + len(w)] for k, w in enumerate(windows))  # stride 3
    assert windows[-1][-1] == ids[-1] and len(features) > 3  # the last window reaches the end
    inside = [f for f in features if f["start_positions"] > 0]
    assert inside and all(f["input_ids"][f["start_positions"]] == tok.encode("old")[0] for f in inside)
    assert all(f["start_positions"] == f["end_positions"] for f in inside)  # "(old)" -> "old" alone
    assert any(f["start_positions"] == f["end_positions"] == 0 for f in features)
    batch = collate(features, tok.pad_id)
    assert batch["start_positions"].tolist() == [f["start_positions"] for f in features]
    assert batch["word_ids"].shape == batch["input_ids"].shape == (len(features), 12)
    for f in features:
        assert f["token_type_ids"] == [0] * (len(q) + 2) + [1] * (len(f["input_ids"]) - len(q) - 2)
        assert f["word_ids"][:len(q) + 2] == [-1] * (len(q) + 2) and f["word_ids"][-1] == -1
    # every context piece has its most context in exactly one window
    owners = Counter(3 * k + p - (len(q) + 2) for k, f in enumerate(features)
                     for p, m in enumerate(f["max_context"]) if m)
    assert owners == Counter(range(len(ids)))
    # predictions: the question and the tokens outside the context are never chosen; the words come back whole
    f = inside[0]
    s_logits = [[0.0] * len(g["input_ids"]) for g in features]
    e_logits = [[0.0] * len(g["input_ids"]) for g in features]
    k = features.index(f)
    s_logits[k][1] = e_logits[k][1] = 100.0  # inside the question
    s_logits[k][f["start_positions"]] = e_logits[k][f["end_positions"]] = 10.0
    assert span_predictions(features, s_logits, e_logits, [ex]) == {"q1": "(old)"}  # whole words
    assert span_predictions(features, s_logits, e_logits, [ex], tok=tok) == {"q1": "old"}  # get_final_text


def test_span_predictions_max_answer_len(tok):
    context = "one two six ten red big"
    ex = SquadExample("q?", context, ["two"], [4], "q")
    (f,) = span_features(tok, [ex], max_len=64)
    T = len(f["input_ids"])
    s, e = torch.zeros(1, T), torch.zeros(1, T)
    offset = len(tok.encode("q?")) + 2
    s[0, offset] = 5.0  # "one"
    e[0, offset + 5] = 5.0  # "big": six pieces from "one"
    e[0, offset + 1] = 1.0  # "two"
    assert tok.tokenize(context) == context.split()
    assert span_predictions([f], s, e, [ex])["q"] == context
    assert span_predictions([f], [s[0].tolist()], e.numpy(), [ex])["q"] == context  # lists, arrays, tensors
    assert span_predictions([f], s, e, [ex], max_answer_len=5)["q"] == "one two"


@needs_squad
def test_span_features_recover_every_squad_answer(any_tok):
    tok = any_tok
    examples = squad_examples(squad("dev", root=MIRROR / "squad-v1.1"))
    features = span_features(tok, examples)  # max_len 384, stride 128, question <= 64 pieces
    by_example: dict[int, list] = {}
    for f in features:
        by_example.setdefault(f["example_index"], []).append(f)
    assert sorted(by_example) == list(range(len(examples)))
    assert len(features) > len(examples)  # some contexts need more than one window
    for i, fs in by_example.items():  # the windows step by 128 pieces and reach the end of the context
        ids, _ = tok.encode_words(examples[i].context.split())
        windows = [f["input_ids"][f["token_type_ids"].index(1):-1] for f in fs]
        assert all(w == ids[128 * k:128 * k + len(w)] for k, w in enumerate(windows))
        assert 128 * (len(fs) - 1) + len(windows[-1]) == len(ids)
    # per question, the window that holds the answer and owns its start: its gold positions, decoded
    chosen: dict[int, dict] = {}
    for f in features:
        if f["start_positions"] > 0 and f["max_context"][f["start_positions"]]:
            chosen.setdefault(f["example_index"], f)
    assert len(chosen) >= 0.99 * len(examples)
    kept = list(chosen.values())
    gold = [normalize_answer(examples[f["example_index"]].answers[0]) for f in kept]
    words = [examples[f["example_index"]].context.split()[f["word_ids"][f["start_positions"]]:
                                                          f["word_ids"][f["end_positions"]] + 1] for f in kept]
    whole = sum(normalize_answer(" ".join(w)) == g for w, g in zip(words, gold))
    assert 0.97 * len(kept) <= whole < 0.99 * len(kept)  # whole words: "20–18" is not the answer "18"
    s_logits = [[0.0] * len(f["input_ids"]) for f in kept]
    e_logits = [[0.0] * len(f["input_ids"]) for f in kept]
    for f, s, e in zip(kept, s_logits, e_logits):
        s[f["start_positions"]] = e[f["end_positions"]] = 10.0
    longest = max(f["end_positions"] - f["start_positions"] + 1 for f in kept)
    predictions = span_predictions(kept, s_logits, e_logits, examples, max_answer_len=longest, tok=tok)
    right = sum(normalize_answer(predictions[examples[f["example_index"]].qid]) == g for f, g in zip(kept, gold))
    print(f"{len(kept)} of {len(examples)} answers in a window; recovered {right} (whole words {whole})")
    assert right >= 0.99 * len(kept), f"{right} of {len(kept)} (whole words: {whole})"


def test_choice_features_shape_and_connective(tok):
    items = [{"premise": "My body cast a shadow.", "choice1": "The sun rose.", "choice2": "The grass was cut.",
              "question": "cause", "label": 0},
             {"premise": "I dropped the glass.", "choice1": "It shattered.", "choice2": "It floated.",
              "question": "effect", "label": 1}]
    features = choice_features(tok, items, max_len=24)
    assert [f["labels"] for f in features] == [0, 1] and all(len(f["choices"]) == 2 for f in features)
    first = features[0]["choices"][0]
    a = tok.encode("My body cast a shadow.")
    assert first["input_ids"] == [tok.cls_id, *a, tok.sep_id, *tok.encode("because The sun rose."), tok.sep_id]
    assert first["token_type_ids"][:len(a) + 2] == [0] * (len(a) + 2) and first["token_type_ids"][-1] == 1
    second = features[1]["choices"][1]
    assert tok.decode(second["input_ids"]) == "[CLS] i dropped the glass . [SEP] so it floated . [SEP]"
    batch = collate(features, tok.pad_id)
    T = max(len(c["input_ids"]) for f in features for c in f["choices"])
    assert batch["input_ids"].shape == batch["attention_mask"].shape == (2, 2, T)
    assert batch["labels"].tolist() == [0, 1]
    assert all(len(c["input_ids"]) <= 8 for f in choice_features(tok, items, max_len=8) for c in f["choices"])


@needs_copa
def test_choice_features_on_copa(tok):
    items = copa(root=MIRROR / "copa-balanced")
    features = choice_features(tok, items, max_len=64)
    assert len(features) == 1_000
    first_b = [c["input_ids"][c["token_type_ids"].index(1)] for f in features for c in f["choices"]]
    expected = [tok.encode("because" if i["question"] == "cause" else "so")[0] for i in items for _ in range(2)]
    assert first_b == expected and Counter(i["question"] for i in items) == {"cause": 500, "effect": 500}
    assert all(max(len(c["input_ids"]) for c in f["choices"]) < 64 for f in features)  # nothing cut at 64

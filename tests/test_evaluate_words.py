"""Word-vector evaluation: 3CosAdd analogies, Spearman similarity, nearest neighbours, group precision, and
gensim's data files (read by shoulders.data.word_tests)."""
from __future__ import annotations

import math

import pytest
import torch

from shoulders import evaluate
from shoulders.data import word_tests
from shoulders.evaluate.words import _word_index

# a toy space where king - man + woman = queen and paris - france + italy = rome exactly
WORDS = ["king", "queen", "man", "woman", "paris", "france", "rome", "italy", "Apple", "apple"]
VECS = torch.tensor([
    [1.0, 1.0, 0.0, 0.0],  # king   = royal + male
    [1.0, 0.0, 1.0, 0.0],  # queen  = royal + female
    [0.0, 1.0, 0.0, 0.0],  # man
    [0.0, 0.0, 1.0, 0.0],  # woman
    [0.0, 0.0, 0.0, 1.0],  # paris
    [0.0, 0.0, 0.0, 0.5],  # france
    [0.3, 0.0, 0.0, 1.0],  # rome
    [0.3, 0.0, 0.0, 0.5],  # italy
    [0.0, 0.1, 0.1, 0.1],  # Apple
    [0.1, 0.1, 0.1, 0.1],  # apple
])


def test_analogy_3cosadd_on_known_answers():
    qs = [("capital-world", ("france", "paris", "italy", "rome")),
          ("family", ("man", "king", "woman", "queen")),
          ("gram-plural", ("man", "woman", "king", "queen")),  # king - man + woman: queen
          ("gram-plural", ("man", "woman", "paris", "king")),  # wrong on purpose: the answer is not king
          ("family", ("man", "king", "dog", "queen"))]  # 'dog' is unknown: not covered
    r = evaluate.analogy(VECS, WORDS, qs)
    assert r["total"] == 5 and r["covered"] == 4 and r["coverage"] == pytest.approx(0.8)
    assert r["correct"] == 3 and r["accuracy"] == pytest.approx(0.75)
    assert r["semantic"] == pytest.approx(1.0) and r["syntactic"] == pytest.approx(0.5)
    assert r["sections"]["family"] == (1, 1)


def test_analogy_excludes_the_question_words_and_restricts():
    # without excluding a, b, c the nearest to b - a + c would often be b or c itself
    qs = [("x", ("man", "king", "woman", "queen"))]
    assert evaluate.analogy(VECS, WORDS, qs)["accuracy"] == 1.0
    r = evaluate.analogy(VECS, WORDS, qs, restrict=3)  # queen... is row 1, woman row 3: not covered
    assert r["covered"] == 0 and r["coverage"] == 0.0


def test_case_folding_takes_the_first_row():
    rows = _word_index(WORDS, lower=True)
    assert rows["apple"] == 8  # "Apple" (row 8) comes first
    assert _word_index(WORDS, lower=False)["apple"] == 9


def test_spearman_against_scipy():
    stats = pytest.importorskip("scipy.stats")
    g = torch.Generator().manual_seed(0)
    for _ in range(5):
        x = torch.randint(0, 6, (40,), generator=g).double()  # many ties
        y = x + torch.randn(40, generator=g, dtype=torch.float64)
        assert evaluate.spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert evaluate.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        evaluate.spearman([1], [2])


def test_word_similarity_coverage_and_sign():
    pairs = [("king", "queen", 8.0), ("king", "man", 6.0), ("paris", "woman", 0.5), ("king", "unicorn", 9.0)]
    r = evaluate.word_similarity(VECS, WORDS, pairs)
    assert r["pairs"] == 3 and r["total"] == 4 and r["coverage"] == pytest.approx(0.75)
    cos = lambda a, b: float(torch.nn.functional.cosine_similarity(VECS[a], VECS[b], dim=0))  # noqa: E731
    want = evaluate.spearman([cos(0, 1), cos(0, 2), cos(4, 3)], [8.0, 6.0, 0.5])
    assert r["spearman"] == pytest.approx(want)


def test_nearest_neighbors():
    nn = evaluate.nearest_neighbors(VECS, WORDS, "paris", k=2)
    assert [w for w, _ in nn] == ["france", "rome"] and nn[0][1] == pytest.approx(1.0)
    assert evaluate.nearest_neighbors(VECS, WORDS, VECS[6], k=1)[0][0] == "rome"  # a vector: nothing excluded
    with pytest.raises(KeyError):
        evaluate.nearest_neighbors(VECS, WORDS, "unicorn")


def test_gensim_files():
    pytest.importorskip("gensim")
    qs = word_tests.read_analogies()
    assert len(qs) == 19544 and qs[0] == ("capital-common-countries", ("Athens", "Greece", "Baghdad", "Iraq"))
    assert sum(s.startswith("gram") for s, _ in qs) == 10675  # Mikolov et al. 2013a: 8869 semantic, 10675 syntactic
    ws = word_tests.read_similarity(str(word_tests.gensim_test_file("wordsim353")))
    sl = word_tests.read_similarity("simlex999")  # a name means gensim's copy
    assert len(ws) == 353 and len(sl) == 999
    assert word_tests.read_analogies(word_tests.gensim_test_file("questions-words")) == qs
    with pytest.raises(ValueError):
        word_tests.gensim_test_file("toefl")
    # the old names under shoulders.evaluate stay, for the chapters that call them there
    assert evaluate.read_analogies is word_tests.read_analogies and evaluate.gensim_test_file("wordsim353").is_file()


def test_readers_on_small_files(tmp_path):
    (tmp_path / "q.txt").write_text(": capital\nAthens Greece Rome Italy\n: gram1-x\na b c d\n", encoding="utf-8")
    assert word_tests.read_analogies(tmp_path / "q.txt") == [("capital", ("Athens", "Greece", "Rome", "Italy")),
                                                             ("gram1-x", ("a", "b", "c", "d"))]
    (tmp_path / "s.tsv").write_text("# comment\ncup\tmug\t8.5\nbig large 9\n", encoding="utf-8")
    assert word_tests.read_similarity(tmp_path / "s.tsv") == [("cup", "mug", 8.5), ("big", "large", 9.0)]
    (tmp_path / "bad.txt").write_text("a b c\n", encoding="utf-8")
    with pytest.raises(ValueError, match="4 words"):
        word_tests.read_analogies(tmp_path / "bad.txt")


def test_group_precision_closed_form():
    # group 1 (a, b, c) sits along e0 with a distractor d *on* e0, nearer to each of them than they are to each
    # other: with k = 2 each of a, b, c has d and one group word as neighbours -> 3 hits of 6. Group 2 (x, y, z)
    # is alone along e1: 6 of 6. Pooled over words: 9 / 12.
    e = torch.eye(8)
    vecs = torch.stack([e[0] + 0.01 * e[2], e[0] + 0.02 * e[3], e[0] + 0.03 * e[4], e[0],
                        e[1], e[1] + 0.1 * e[5], e[1] + 0.2 * e[6], e[7]])
    words = ["a", "b", "c", "d", "x", "y", "z", "w"]
    groups = [("a", "b", "c"), ("x", "y", "z")]
    assert evaluate.group_precision(vecs, words, k=2, groups=groups) == pytest.approx(9 / 12)
    assert evaluate.group_precision(vecs, words, k=1, groups=groups) == pytest.approx(3 / 6)  # a, b, c -> d
    # k = 3: a, b, c find d and both others (3 x 2 hits); x, y, z both others and one outsider (3 x 2): 12 / 18
    assert evaluate.group_precision(vecs, words, k=3, groups=groups) == pytest.approx(12 / 18)
    mapping = {w: i for i, w in enumerate(words)}  # token -> row works as well as a list
    assert evaluate.group_precision(vecs, mapping, k=2, groups=groups) == pytest.approx(9 / 12)
    # a group with fewer than 3 words in the vocabulary is left out; none left -> NaN
    assert evaluate.group_precision(vecs, words, k=2, groups=[("a", "b", "c"), ("x", "y", "unknown")]) == 0.5
    assert math.isnan(evaluate.group_precision(vecs, words, groups=[("a", "b", "nope")]))


def test_group_precision_default_groups_and_case():
    # months along one direction, number words along another: every neighbour is in the group, P@5 = 1. The
    # vocabulary is lower case (text8): the group words are found by their lowercased form.
    g = torch.Generator().manual_seed(0)
    months, numbers = [w.lower() for w in evaluate.GROUPS[0]], list(evaluate.GROUPS[1])
    filler = [f"w{i}" for i in range(30)]
    words = months + numbers + filler
    vecs = torch.randn(len(words), 16, generator=g) * 0.05
    vecs[: len(months), 0] += 1.0
    vecs[len(months): len(months) + len(numbers), 1] += 1.0
    vecs[len(months) + len(numbers):] += torch.randn(len(filler), 16, generator=g)
    assert evaluate.group_precision(vecs, words) == pytest.approx(1.0)
    # an exact casing wins over the lowercased one: "May" (the month, row 0) and "may" (the verb, far away)
    cased = ["May", "may"] + [w.capitalize() for w in months if w != "may"] + numbers + filler
    vecs2 = torch.cat([vecs[:1], 5 * torch.randn(1, 16, generator=g), vecs[1:]])
    assert evaluate.group_precision(vecs2, cased) == pytest.approx(1.0)
    # random vectors: about (group size - 1) / |V|
    rand = torch.randn(2000, 16, generator=g)
    assert evaluate.group_precision(rand, words + [f"r{i}" for i in range(2000 - len(words))]) < 0.1


def test_analogy_agrees_with_gensim():
    """Our scorer and gensim's evaluate_word_analogies give the same accuracy on random vectors."""
    gensim_models = pytest.importorskip("gensim.models")
    qs = evaluate.read_analogies()
    words = sorted({w.lower() for _, q in qs[:2000] for w in q})[:150] + ["zz"]
    g = torch.Generator().manual_seed(0)
    vecs = torch.randn(len(words), 8, generator=g)
    kv = gensim_models.KeyedVectors(8)
    kv.add_vectors(words, vecs.numpy())
    path = evaluate.gensim_test_file("questions-words")
    ours = evaluate.analogy(vecs, words)
    theirs, sections = kv.evaluate_word_analogies(str(path), case_insensitive=True)
    total = next(s for s in sections if s["section"] == "Total accuracy")
    assert ours["covered"] == len(total["correct"]) + len(total["incorrect"]) > 0
    assert ours["accuracy"] == pytest.approx(theirs)

"""Word-vector evaluation: 3CosAdd analogies, Spearman similarity, nearest neighbours, gensim's data files."""
from __future__ import annotations

import pytest
import torch

from shoulders import evaluate

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
    rows = evaluate._word_index(WORDS, lower=True)
    assert rows["apple"] == 8  # "Apple" (row 8) comes first
    assert evaluate._word_index(WORDS, lower=False)["apple"] == 9


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
    qs = evaluate.read_analogies()
    assert len(qs) == 19544 and qs[0] == ("capital-common-countries", ("Athens", "Greece", "Baghdad", "Iraq"))
    assert sum(s.startswith("gram") for s, _ in qs) == 10675  # Mikolov et al. 2013a: 8869 semantic, 10675 syntactic
    ws = evaluate.read_similarity(str(evaluate.gensim_test_file("wordsim353")))
    sl = evaluate.read_similarity(str(evaluate.gensim_test_file("simlex999")))
    assert len(ws) == 353 and len(sl) == 999
    with pytest.raises(ValueError):
        evaluate.gensim_test_file("toefl")


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

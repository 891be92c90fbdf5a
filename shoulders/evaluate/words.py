"""Word vectors judged the way chapters 4-6 (word2vec, GloVe, fastText) and their papers judge them.

* :func:`analogy` -- Mikolov et al. (2013a, sec. 4.1) answer "a is to b as c is to ?" with the word closest in
  cosine to b - a + c, excluding a, b and c (3CosAdd, as Levy & Goldberg 2014 name it), on questions-words.txt;
* :func:`word_similarity` -- the Spearman correlation of cosine similarities with human ratings (Finkelstein et al.
  2001, WordSim-353; Hill et al. 2015, SimLex-999), the measure of Pennington et al. (2014, Table 3) and
  Bojanowski et al. (2017, Table 2);
* :func:`nearest_neighbors` -- the k most cosine-similar words, as in the neighbour tables of Collobert et al.
  (2011) and Mikolov et al. (2013b);
* :func:`group_precision` -- the book's own quick check: do months and number words find each other among their
  k nearest neighbours?

The test files themselves (gensim's copies) are read by :mod:`shoulders.data.word_tests`.
"""
from __future__ import annotations

import os
from typing import Iterable, Mapping, Sequence

import torch

from ..data.word_tests import GENSIM_TEST_FILES, gensim_test_file, read_analogies, read_similarity

__all__ = ["GENSIM_TEST_FILES", "GROUPS", "analogy", "gensim_test_file", "group_precision", "nearest_neighbors",
           "read_analogies", "read_similarity", "spearman", "word_similarity"]

def _word_index(words: Iterable[str] | Mapping[str, int], lower: bool) -> dict[str, int]:
    """word -> row. With ``lower``, each lowercased form maps to its first row (vocabularies are sorted by
    descending count, so the most frequent casing wins, as in gensim's ``case_insensitive``)."""
    items = words.items() if hasattr(words, "items") else ((w, i) for i, w in enumerate(words))
    index: dict[str, int] = {}
    for w, i in sorted(items, key=lambda wi: wi[1]):
        index.setdefault(w.lower() if lower else w, int(i))
    return index


def _unit_rows(vectors: torch.Tensor) -> torch.Tensor:
    v = torch.as_tensor(vectors).detach().float()
    return v / v.norm(dim=1, keepdim=True).clamp(min=1e-12)  # (V, d)


@torch.no_grad()
def analogy(vectors: torch.Tensor, words: Iterable[str] | Mapping[str, int],
            questions: str | os.PathLike | list | None = None, restrict: int | None = None, lower: bool = True,
            batch_size: int = 512) -> dict:
    """3CosAdd analogy accuracy: d* = argmax_{x not in {a, b, c}} cos(x, b - a + c), over unit vectors.

    ``vectors`` (V, d); ``words`` the token of each row (a list, or token -> row); ``questions`` a
    questions-words file or a list of ``(section, (a, b, c, d))`` (default: gensim's questions-words.txt).
    Only the ``restrict`` first rows (the most frequent words) are candidates and may appear in a question; a
    question with a word outside them is *not covered* and is left out of the accuracy. Sections whose name
    starts with ``gram`` are syntactic, the rest semantic (Mikolov et al. 2013a, Table 1).

    Returns ``accuracy`` (over covered questions), ``coverage`` (covered / all), ``semantic``, ``syntactic``,
    ``correct``, ``covered``, ``total`` and ``sections`` {name: (correct, covered)}.
    """
    qs = read_analogies(questions) if questions is None or isinstance(questions, (str, os.PathLike)) \
        else list(questions)
    W = _unit_rows(vectors)
    if restrict is not None:
        W = W[:restrict]
    index = {w: i for w, i in _word_index(words, lower).items() if i < W.shape[0]}
    norm = (lambda w: w.lower()) if lower else (lambda w: w)
    sections: dict[str, list[int]] = {}
    rows, secs = [], []
    for sec, q in qs:
        sections.setdefault(sec, [0, 0])
        ids = [index.get(norm(w)) for w in q]
        if all(i is not None for i in ids):
            rows.append(ids)
            secs.append(sec)
    ids = torch.tensor(rows, dtype=torch.long).reshape(-1, 4).to(W.device)  # (Q, 4)
    hits = torch.zeros(ids.shape[0], dtype=torch.bool, device=W.device)
    for s in range(0, ids.shape[0], batch_size):
        q = ids[s: s + batch_size]
        target = W[q[:, 1]] - W[q[:, 0]] + W[q[:, 2]]  # (b, d): b - a + c
        scores = target @ W.T  # (b, V)
        scores.scatter_(1, q[:, :3], float("-inf"))  # exclude a, b, c
        hits[s: s + batch_size] = scores.argmax(1) == q[:, 3]
    for sec, h in zip(secs, hits.tolist()):
        sections[sec][0] += int(h)
        sections[sec][1] += 1

    def acc(names: list[str]) -> float:
        c, n = sum(sections[k][0] for k in names), sum(sections[k][1] for k in names)
        return c / n if n else float("nan")

    syn = [k for k in sections if k.startswith("gram")]
    sem = [k for k in sections if not k.startswith("gram")]
    covered = int(ids.shape[0])
    return {"accuracy": int(hits.sum()) / covered if covered else float("nan"),
            "coverage": covered / len(qs) if qs else float("nan"), "semantic": acc(sem), "syntactic": acc(syn),
            "correct": int(hits.sum()), "covered": covered, "total": len(qs),
            "sections": {k: tuple(v) for k, v in sections.items()}}


def _ranks(x: torch.Tensor) -> torch.Tensor:
    """1-based ranks of a 1-D tensor, ties getting the average of their ranks (float64)."""
    x = torch.as_tensor(x, dtype=torch.float64)
    order = torch.argsort(x, stable=True)
    ranks = torch.empty_like(x)
    ranks[order] = torch.arange(1, x.numel() + 1, dtype=torch.float64)
    values, inverse = torch.unique(x, return_inverse=True)
    total = torch.zeros_like(values).index_add_(0, inverse, ranks)
    count = torch.zeros_like(values).index_add_(0, inverse, torch.ones_like(ranks))
    return (total / count)[inverse]


def spearman(x: Iterable[float], y: Iterable[float]) -> float:
    """Spearman's rho (Spearman 1904): the Pearson correlation of the (tie-averaged) ranks of x and y."""
    x, y = torch.as_tensor(list(x), dtype=torch.float64), torch.as_tensor(list(y), dtype=torch.float64)
    if x.shape != y.shape or x.numel() < 2:
        raise ValueError(f"need two equally long sequences of >= 2 numbers, got {x.numel()} and {y.numel()}")
    rx, ry = _ranks(x), _ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denom = (rx.norm() * ry.norm()).item()
    return float((rx @ ry).item() / denom) if denom > 0 else float("nan")


@torch.no_grad()
def word_similarity(vectors: torch.Tensor, words: Iterable[str] | Mapping[str, int],
                    dataset: str | os.PathLike | list = "wordsim353", lower: bool = True,
                    restrict: int | None = None) -> dict:
    """Spearman correlation between cosine similarity and human scores on ``dataset``: ``"wordsim353"``,
    ``"simlex999"`` (gensim's copies), a file path, or a list of ``(w1, w2, score)``. Pairs with a word outside
    the vocabulary (or the ``restrict`` first rows) are left out; ``coverage`` says how many were kept.

    Returns ``spearman``, ``coverage``, ``pairs`` (covered) and ``total``.
    """
    pairs = read_similarity(dataset) if isinstance(dataset, (str, os.PathLike)) else list(dataset)
    W = _unit_rows(vectors)
    if restrict is not None:
        W = W[:restrict]
    index = {w: i for w, i in _word_index(words, lower).items() if i < W.shape[0]}
    norm = (lambda w: w.lower()) if lower else (lambda w: w)
    model, human = [], []
    for a, b, s in pairs:
        ia, ib = index.get(norm(a)), index.get(norm(b))
        if ia is not None and ib is not None:
            model.append(float(W[ia] @ W[ib]))
            human.append(s)
    rho = spearman(model, human) if len(model) >= 2 else float("nan")
    return {"spearman": rho, "coverage": len(model) / len(pairs) if pairs else float("nan"), "pairs": len(model),
            "total": len(pairs)}


@torch.no_grad()
def nearest_neighbors(vectors: torch.Tensor, words: Sequence[str], query: str | torch.Tensor, k: int = 10,
                      exclude_query: bool = True) -> list[tuple[str, float]]:
    """The ``k`` words (rows of ``vectors``, tokens ``words``) with the highest cosine similarity to ``query``
    (a word of ``words`` or a vector (d,)), as ``(word, cosine)``, best first. An unknown word is a KeyError."""
    W = _unit_rows(vectors)
    words = list(words)
    if isinstance(query, str):
        try:
            qi = words.index(query)
        except ValueError:
            raise KeyError(f"{query!r} is not in the vocabulary") from None
        q = W[qi]
    else:
        qi = None
        q = torch.as_tensor(query, dtype=torch.float32).to(W.device)
        q = q / q.norm().clamp(min=1e-12)
    sims = W @ q  # (V,)
    if qi is not None and exclude_query:
        sims[qi] = float("-inf")
    top = torch.topk(sims, min(k, sims.numel() - (qi is not None and exclude_query)))
    return [(words[i], float(s)) for s, i in zip(top.values.tolist(), top.indices.tolist())]


# Two closed classes every corpus of the book has in plenty; their members should be each other's neighbours.
GROUPS: tuple[tuple[str, ...], ...] = (
    tuple("January February March April May June July August September October November December".split()),
    tuple("one two three four five six seven eight nine ten".split()),
)


@torch.no_grad()
def group_precision(vectors: torch.Tensor, words: Iterable[str] | Mapping[str, int], k: int = 5,
                    groups: Iterable[Sequence[str]] = GROUPS) -> float:
    """Precision@k of word groups: for each word of each group (default :data:`GROUPS`: the months, the number
    words one-ten), the share of its ``k`` nearest neighbours by cosine (itself excluded) that belong to its group,
    averaged over the words. Random vectors score about (group size - 1) / |V|, i.e. ~0; chapters 4-6 print it
    as "groups P@k" beside the analogy and similarity scores.

    A group word is found in ``words`` (a list, or token -> row) as written, else by its lowercased form (text8
    is all lower case), taking the first, most frequent, row. A group with fewer than 3 words in the vocabulary
    is left out; with none left the result is NaN.
    """
    U = _unit_rows(vectors)  # (V, d)
    exact, folded = _word_index(words, lower=False), _word_index(words, lower=True)
    k = min(k, U.shape[0] - 1)
    hits, n = 0, 0
    for group in groups:
        rows = {exact.get(w, folded.get(w.lower())) for w in group} - {None}
        ids = torch.tensor(sorted(r for r in rows if r < U.shape[0]), dtype=torch.long, device=U.device)  # (g,)
        if len(ids) < 3:
            continue
        sims = U[ids] @ U.T  # (g, V)
        sims[torch.arange(len(ids), device=U.device), ids] = float("-inf")  # a word is not its own neighbour
        top = sims.topk(k, dim=1).indices  # (g, k)
        hits, n = hits + int(torch.isin(top, ids).sum()), n + top.numel()
    return hits / n if n else float("nan")

"""Evaluation the way the papers do it.  This chapter-0 version has perplexity; later chapters add accuracy,
F1, EM, BLEU, analogy and similarity here, one function each."""
from __future__ import annotations

import math
from typing import Iterable

import torch


@torch.no_grad()
def perplexity(model: torch.nn.Module, batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
               device: torch.device | str | None = None, carry_state: bool = False) -> float:
    """exp of the token-weighted mean cross-entropy, PPL = exp(-1/N sum_i log P(w_i | history)).

    ``model(x, y)`` must return the *mean* loss in nats over the ``y.numel()`` targets of the batch; batches are
    weighted by their number of targets, so a shorter last window counts exactly as much as its tokens.

    ``carry_state=True`` is for recurrent LMs over consecutive BPTT windows (``LMStream.bptt_batches``): each
    window starts from the state the previous one ended with (``model(x, y, state=s, return_state=True)``, see
    :mod:`shoulders.models.rnnlm`), so every row is scored as one long sequence, the way the model is trained with
    :class:`~shoulders.models.rnnlm.CarryState`; the first window starts from zeros.
    """
    was_training = model.training
    model.eval()
    dev = torch.device(device) if device is not None else next(model.parameters()).device
    total, count = 0.0, 0
    state = None
    for x, y in batches:
        x, y = x.to(dev), y.to(dev)
        if carry_state:
            out = model(x, y, state=state, return_state=True)
            loss, state = out["loss"], out["state"]
        else:
            loss = model(x, y)
        total += float(loss) * y.numel()
        count += y.numel()
    model.train(was_training)
    if count == 0:
        raise ValueError("perplexity needs at least one batch with targets")
    return math.exp(total / count)


# -- word vectors: analogy, similarity, nearest neighbours (chapters 4-6) -----------------------------------------
# Mikolov et al. (2013a, sec. 4.1) score analogies "a is to b as c is to ?" by the word closest in cosine to
# b - a + c (3CosAdd; Levy & Goldberg 2014 name it), excluding a, b and c; word-similarity sets are scored by the
# Spearman correlation of cosine similarities with human ratings (Finkelstein et al. 2001, WordSim-353; Hill et al.
# 2015, SimLex-999). The three files ship inside the gensim wheel (gensim/test/test_data/).

GENSIM_TEST_FILES = {"questions-words": "questions-words.txt", "wordsim353": "wordsim353.tsv",
                     "simlex999": "simlex999.txt"}


def gensim_test_file(name: str) -> "Path":
    """The path of one of gensim's bundled evaluation files: ``questions-words``, ``wordsim353``, ``simlex999``."""
    import importlib.util
    from pathlib import Path

    if name not in GENSIM_TEST_FILES:
        raise ValueError(f"unknown evaluation set {name!r}; choose one of {sorted(GENSIM_TEST_FILES)}")
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"the {name} file ships inside the gensim wheel: pip install gensim "
                                  "(it is in shoulders' [test] extra)")
    path = Path(list(spec.submodule_search_locations)[0]) / "test" / "test_data" / GENSIM_TEST_FILES[name]
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from this gensim installation")
    return path


def _word_index(words: "Iterable[str] | Mapping[str, int]", lower: bool) -> dict[str, int]:
    """word -> row. With ``lower``, each lowercased form maps to its first row (vocabularies are sorted by
    descending count, so the most frequent casing wins, as in gensim's ``case_insensitive``)."""
    items = words.items() if hasattr(words, "items") else ((w, i) for i, w in enumerate(words))
    index: dict[str, int] = {}
    for w, i in sorted(items, key=lambda wi: wi[1]):
        index.setdefault(w.lower() if lower else w, int(i))
    return index


def _unit_rows(vectors: "torch.Tensor") -> "torch.Tensor":
    v = torch.as_tensor(vectors).detach().float()
    return v / v.norm(dim=1, keepdim=True).clamp(min=1e-12)  # (V, d)


def read_analogies(path: "str | None" = None) -> list[tuple[str, tuple[str, str, str, str]]]:
    """``(section, (a, b, c, d))`` for every question of a questions-words file (default: gensim's copy)."""
    from pathlib import Path

    text = Path(path or gensim_test_file("questions-words")).read_text(encoding="utf-8")
    out, section = [], ""
    for line in text.splitlines():
        if line.startswith(":"):
            section = line[1:].strip()
        elif line.strip():
            parts = line.split()
            if len(parts) != 4:
                raise ValueError(f"an analogy line needs 4 words, got {line!r}")
            out.append((section, tuple(parts)))
    return out


@torch.no_grad()
def analogy(vectors: "torch.Tensor", words: "Iterable[str] | Mapping[str, int]", questions: "str | list | None" = None,
            restrict: "int | None" = None, lower: bool = True, batch_size: int = 512) -> dict:
    """3CosAdd analogy accuracy: d* = argmax_{x not in {a, b, c}} cos(x, b - a + c), over unit vectors.

    ``vectors`` (V, d); ``words`` the token of each row (a list, or token -> row); ``questions`` a
    questions-words file or a list of ``(section, (a, b, c, d))`` (default: gensim's questions-words.txt).
    Only the ``restrict`` first rows (the most frequent words) are candidates and may appear in a question; a
    question with a word outside them is *not covered* and is left out of the accuracy. Sections whose name
    starts with ``gram`` are syntactic, the rest semantic (Mikolov et al. 2013a, Table 1).

    Returns ``accuracy`` (over covered questions), ``coverage`` (covered / all), ``semantic``, ``syntactic``,
    ``correct``, ``covered``, ``total`` and ``sections`` {name: (correct, covered)}.
    """
    qs = read_analogies(questions) if questions is None or isinstance(questions, str) else list(questions)
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

    def acc(names: "list[str]") -> float:
        c, n = sum(sections[k][0] for k in names), sum(sections[k][1] for k in names)
        return c / n if n else float("nan")

    syn = [k for k in sections if k.startswith("gram")]
    sem = [k for k in sections if not k.startswith("gram")]
    covered = int(ids.shape[0])
    return {"accuracy": int(hits.sum()) / covered if covered else float("nan"),
            "coverage": covered / len(qs) if qs else float("nan"), "semantic": acc(sem), "syntactic": acc(syn),
            "correct": int(hits.sum()), "covered": covered, "total": len(qs),
            "sections": {k: tuple(v) for k, v in sections.items()}}


def _ranks(x: "torch.Tensor") -> "torch.Tensor":
    """1-based ranks of a 1-D tensor, ties getting the average of their ranks (float64)."""
    x = torch.as_tensor(x, dtype=torch.float64)
    order = torch.argsort(x, stable=True)
    ranks = torch.empty_like(x)
    ranks[order] = torch.arange(1, x.numel() + 1, dtype=torch.float64)
    values, inverse = torch.unique(x, return_inverse=True)
    total = torch.zeros_like(values).index_add_(0, inverse, ranks)
    count = torch.zeros_like(values).index_add_(0, inverse, torch.ones_like(ranks))
    return (total / count)[inverse]


def spearman(x: "Iterable[float]", y: "Iterable[float]") -> float:
    """Spearman's rho: the Pearson correlation of the (tie-averaged) ranks of x and y."""
    x, y = torch.as_tensor(list(x), dtype=torch.float64), torch.as_tensor(list(y), dtype=torch.float64)
    if x.shape != y.shape or x.numel() < 2:
        raise ValueError(f"need two equally long sequences of >= 2 numbers, got {x.numel()} and {y.numel()}")
    rx, ry = _ranks(x), _ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denom = (rx.norm() * ry.norm()).item()
    return float((rx @ ry).item() / denom) if denom > 0 else float("nan")


def read_similarity(path: "str") -> list[tuple[str, str, float]]:
    """``(word1, word2, score)`` of a tab/space-separated similarity file; ``#`` lines are comments."""
    from pathlib import Path

    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        a, b, s = line.split("\t") if "\t" in line else line.split()
        out.append((a, b, float(s)))
    return out


@torch.no_grad()
def word_similarity(vectors: "torch.Tensor", words: "Iterable[str] | Mapping[str, int]",
                    dataset: "str | list" = "wordsim353", lower: bool = True, restrict: "int | None" = None) -> dict:
    """Spearman correlation between cosine similarity and human scores on ``dataset``: ``"wordsim353"``,
    ``"simlex999"`` (gensim's copies), a file path, or a list of ``(w1, w2, score)``. Pairs with a word outside
    the vocabulary (or the ``restrict`` first rows) are left out; ``coverage`` says how many were kept.

    Returns ``spearman``, ``coverage``, ``pairs`` (covered) and ``total``.
    """
    if isinstance(dataset, str):
        path = gensim_test_file(dataset) if dataset in GENSIM_TEST_FILES else dataset
        pairs = read_similarity(str(path))
    else:
        pairs = list(dataset)
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
def nearest_neighbors(vectors: "torch.Tensor", words: "Sequence[str]", query: "str | torch.Tensor", k: int = 10,
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


# -- translation: corpus BLEU (chapter 12) -------------------------------------------------------------------------
def bleu(hypotheses: "Sequence[str | Sequence[str]]", references: "Sequence[str | Sequence[str]]",
         lowercase: bool = False) -> float:
    """Corpus BLEU (Papineni et al. 2002) of ``hypotheses`` against one reference each, computed by sacreBLEU
    (Post 2018) with its defaults, returned as a float on the 0-100 scale.

    BLEU = BP · exp(1/4 · sum_{n=1..4} log p_n): the n-gram precisions p_n are clipped counts summed over the whole
    corpus (not averaged sentence scores), BP = min(1, exp(1 - r/c)) penalises a corpus shorter than its
    references (r, c: total reference and hypothesis lengths).

    **Tokenisation:** sacreBLEU's standard ``13a`` tokeniser (the one of WMT's ``mteval-v13a.pl``: punctuation
    split off words) runs on each string; a hypothesis or reference given as a list of tokens is first joined with
    single spaces. **Case:** case-sensitive by default, as sacreBLEU; ``lowercase=True`` lower-cases both sides
    first (the book's Multi30k chapter lower-cases its text when tokenising, so its scores are case-insensitive
    in effect). Scores from different tokenisations or casings are not comparable -- say which one you report.
    """
    import sacrebleu

    def text(x: "str | Sequence[str]") -> str:
        return x if isinstance(x, str) else " ".join(x)

    hyps, refs = [text(h) for h in hypotheses], [text(r) for r in references]
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references: give one reference per hypothesis")
    if not hyps:
        raise ValueError("bleu needs at least one hypothesis")
    # force=True: text that is already tokenised is scored as it is, without sacreBLEU's warning about it
    return float(sacrebleu.corpus_bleu(hyps, [refs], lowercase=lowercase, tokenize="13a", force=True).score)


# -- reading comprehension: SQuAD v1.1 exact match and F1 (chapter 14) --------------------------------------------
# Rajpurkar et al. (2016, §6.1) score a predicted answer string against each human answer after normalising both
# (lower case; punctuation and the articles a/an/the removed; whitespace collapsed): exact match (EM) is 1 when the
# normalised strings are equal; F1 treats each as a bag of tokens. A question takes its best score over its
# references, and the corpus score is the mean over questions in percent -- the rules of the official v1.1 script.
_SQUAD_ARTICLES = r"\b(a|an|the)\b"


def squad_normalize(text: str) -> str:
    """SQuAD v1.1's answer normalisation: lower-case, drop ASCII punctuation, drop the words a/an/the, collapse
    whitespace -- in that order (so ``"The-end"`` -> ``"theend"``: the hyphen goes before the article test)."""
    import re
    import string

    text = "".join(ch for ch in text.lower() if ch not in string.punctuation)
    return " ".join(re.sub(_SQUAD_ARTICLES, " ", text).split())


def _squad_f1(prediction: str, reference: str) -> float:
    """Token F1 of one prediction against one reference: the overlap is the multiset intersection of tokens."""
    from collections import Counter

    pred, ref = squad_normalize(prediction).split(), squad_normalize(reference).split()
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:  # also when either side normalises to nothing (v1.1: F1 0 even if both are empty)
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def squad_em_f1(predictions: "Sequence[str]", references: "Sequence[Sequence[str]]") -> dict[str, float]:
    """Exact match and F1, in percent, of one predicted answer per question against that question's references
    (SQuAD v1.1 has 1 answer per training question and 3 per dev question; the best one counts).

    Returns ``{"exact_match": ..., "f1": ...}`` on the 0-100 scale, as the official script prints them.
    """
    if isinstance(references, str) or any(isinstance(r, str) for r in references):
        raise TypeError("references must hold a list of answer strings per question, e.g. [['Denver Broncos']]")
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} reference lists")
    if not predictions:
        raise ValueError("squad_em_f1 needs at least one question")
    em = f1 = 0.0
    for i, (pred, refs) in enumerate(zip(predictions, references)):
        if not refs:
            raise ValueError(f"question {i} has no reference answer")
        em += max(float(squad_normalize(pred) == squad_normalize(r)) for r in refs)
        f1 += max(_squad_f1(pred, r) for r in refs)
    n = len(predictions)
    return {"exact_match": 100.0 * em / n, "f1": 100.0 * f1 / n}


# -- tagging: entity-level precision, recall and F1 (chapter 14, NER) ---------------------------------------------
def entity_f1(true_tags: "Sequence[Sequence[str]]", pred_tags: "Sequence[Sequence[str]]") -> dict:
    """Entity-level precision, recall and F1 of BIO tag sequences, CoNLL style (Tjong Kim Sang & De Meulder 2003):
    an entity counts as found only when its span and its type both match exactly. Computed by seqeval
    (Nakayama 2018) in its default mode, which reads tags as the ``conlleval`` script does -- an ``I-X`` that
    does not follow a ``B-X``/``I-X`` starts a new entity.

    Returns ``precision``, ``recall``, ``f1`` (micro-averaged over entities, fractions in 0-1 as seqeval gives
    them) and ``per_type`` {type: f1}. A score with a zero denominator (no predicted or no true entity) is 0.
    """
    from seqeval.metrics import classification_report, f1_score, precision_score, recall_score

    y_true, y_pred = [list(s) for s in true_tags], [list(s) for s in pred_tags]
    if len(y_true) != len(y_pred):
        raise ValueError(f"{len(y_true)} true sequences but {len(y_pred)} predicted ones")
    for i, (t, p) in enumerate(zip(y_true, y_pred)):
        if len(t) != len(p):
            raise ValueError(f"sequence {i}: {len(t)} true tags but {len(p)} predicted ones")
    kw = {"zero_division": 0}
    report = classification_report(y_true, y_pred, output_dict=True, **kw)
    per_type = {k: float(v["f1-score"]) for k, v in report.items() if not k.endswith(" avg")}
    return {"precision": float(precision_score(y_true, y_pred, **kw)),
            "recall": float(recall_score(y_true, y_pred, **kw)),
            "f1": float(f1_score(y_true, y_pred, **kw)), "per_type": per_type}

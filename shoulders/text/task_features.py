"""BERT's input features for its fine-tuning tasks (Devlin et al. 2019, §4), and the way back from predictions.

Four task shapes (chapter 14; the data comes from :mod:`shoulders.data.sentiment` and :mod:`shoulders.data.tasks`):

* sentence (pair) classification -- SST-2, SNLI: :func:`classification_features`;
* token tagging -- WNUT-17, BERT's first-subword labelling (§5.3): :func:`tagging_features`,
  :func:`tagging_predictions`;
* span extraction -- SQuAD v1.1, windows as in BERT's ``run_squad.py`` (§4.2): :func:`split_articles`,
  :func:`squad_examples`, :func:`span_features`, :func:`best_span`, :func:`span_predictions`;
* multiple choice -- Balanced COPA, standing in for SWAG (§4.4): :func:`choice_features`.

Every ``*_features`` function returns a list of dicts that :func:`shoulders.text.bert_inputs.collate` batches;
``max_len`` counts the special tokens. The tokeniser ``tok`` is a WordPiece-like object with ``encode``,
``encode_words``, ``cls_id``, ``sep_id`` (``pad_id`` for collate, ``decode`` for :func:`span_predictions`), such as
:class:`shoulders.text.wordpiece.WordPiece`.
"""
from __future__ import annotations

import random
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import torch

from .bert_inputs import IGNORE, pack

__all__ = [
    "COPA_CONNECTIVES", "SquadExample", "best_span", "choice_features", "classification_features", "span_features",
    "span_predictions", "split_articles", "squad_examples", "tagging_features", "tagging_predictions",
]


# ------------------------------------------------------------------------------------------------ SQuAD examples
def split_articles(articles: Sequence[Any], eval_fraction: float,
                   seed: int = 0) -> tuple[list[Any], list[Any]]:
    """Split ``articles`` into ``(train, eval)`` by article, so no paragraph is seen on both sides.

    ``round(eval_fraction * len(articles))`` articles (at least one, and at least one left for training), drawn
    by ``random.Random(seed)``, go to ``eval``; both parts keep the original order. Same input, same split.
    """
    if not 0 < eval_fraction < 1:
        raise ValueError(f"eval_fraction must lie strictly between 0 and 1, got {eval_fraction}")
    if len(articles) < 2:
        raise ValueError("split_articles needs at least two articles")
    n_eval = min(max(1, round(eval_fraction * len(articles))), len(articles) - 1)
    chosen = set(random.Random(seed).sample(range(len(articles)), n_eval))
    train = [a for i, a in enumerate(articles) if i not in chosen]
    evaluation = [a for i, a in enumerate(articles) if i in chosen]
    return train, evaluation


class SquadExample(NamedTuple):
    """One question with its paragraph: the unit :func:`span_features` turns into windows."""
    question: str
    context: str
    answers: list[str]
    answer_starts: list[int]
    qid: str


def squad_examples(articles: Sequence[Mapping[str, Any]]) -> list[SquadExample]:
    """Flatten :func:`shoulders.data.squad` articles into one :class:`SquadExample` per question, in file order."""
    return [SquadExample(qa["question"], p["context"], list(qa["answers"]), list(qa["answer_starts"]), qa["id"])
            for article in articles for p in article["paragraphs"] for qa in p["qas"]]


# ---------------------------------------------------------------------------------------------------- features
def classification_features(tok: Any, texts_a: Sequence[str], texts_b: Sequence[str] | None,
                            labels: Sequence[int] | None, max_len: int,
                            layout: Callable[..., tuple[list[int], list[int]]] = pack) -> list[dict[str, Any]]:
    """``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]`` per example (§4.1): ``input_ids``, ``token_type_ids``,
    ``labels``.

    The classifier reads the final ``[CLS]`` vector. Pairs too long for ``max_len`` lose tokens from the longer
    text (:func:`~shoulders.text.bert_inputs.truncate_pair`). ``labels=None`` leaves the key out. ``layout``:
    how ids of A and B become one input, ``layout(a, b, cls_id, sep_id, max_len) -> (ids, segments)`` (XLNet's
    ``A [SEP] B [SEP] [CLS]``: :func:`shoulders.text.xlnet_inputs.pack_xlnet`).
    """
    if texts_b is not None and len(texts_b) != len(texts_a):
        raise ValueError(f"{len(texts_a)} first texts but {len(texts_b)} second texts")
    if labels is not None and len(labels) != len(texts_a):
        raise ValueError(f"{len(texts_a)} texts but {len(labels)} labels")
    features = []
    for i, a in enumerate(texts_a):
        b = None if texts_b is None else tok.encode(texts_b[i])
        ids, segments = layout(tok.encode(a), b, tok.cls_id, tok.sep_id, max_len)
        feature: dict[str, Any] = {"input_ids": ids, "token_type_ids": segments}
        if labels is not None:
            feature["labels"] = int(labels[i])
        features.append(feature)
    return features


def tagging_features(tok: Any, sentences: Sequence[tuple[Sequence[str], Sequence[str] | None]],
                     tag_to_id: Mapping[str, int], max_len: int) -> list[dict[str, Any]]:
    """BERT's first-subword tagging (§5.3): the first piece of each word carries the word's tag, the rest ``-100``.

    Per sentence ``(words, tags)`` (``tags=None`` for unlabelled text: no ``labels`` key) the feature holds
    ``input_ids``, ``token_type_ids``, ``labels`` (``-100`` at ``[CLS]``, ``[SEP]`` and non-first pieces),
    ``word_ids`` (per position the word index, ``-1`` at the special tokens), ``n_words`` and ``n_cut``: the
    words left without a labelled position -- cut off by ``max_len``, or with no piece at all. Their tags are lost
    to the model; :func:`tagging_predictions` gives them ``"O"``, so entity-level scores count them as missed.
    ``sum(f["n_cut"] for f in features)`` is the total.
    """
    features = []
    for words, tags in sentences:
        if tags is not None and len(tags) != len(words):
            raise ValueError(f"{len(words)} words but {len(tags)} tags")
        ids, word_index = tok.encode_words(list(words))
        ids, word_index = list(ids[:max_len - 2]), list(word_index[:max_len - 2])
        input_ids, segments = pack(ids, None, tok.cls_id, tok.sep_id, max_len)
        word_ids = [-1, *word_index, -1]
        firsts = _first_positions(word_ids)
        feature: dict[str, Any] = {"input_ids": input_ids, "token_type_ids": segments}
        if tags is not None:
            labels = [IGNORE] * len(input_ids)
            for w, position in firsts.items():
                labels[position] = tag_to_id[tags[w]]
            feature["labels"] = labels
        feature.update(word_ids=word_ids, n_words=len(words), n_cut=len(words) - len(firsts))
        features.append(feature)
    return features


def _first_positions(word_ids: Sequence[int]) -> dict[int, int]:
    firsts: dict[int, int] = {}
    for position, w in enumerate(word_ids):
        w = int(w)
        if w >= 0 and w not in firsts:
            firsts[w] = position
    return firsts


def tagging_predictions(features: Sequence[Mapping[str, Any]], logits_or_pred_ids: Any,
                        id_to_tag: Sequence[str] | Mapping[int, str]) -> list[list[str]]:
    """One tag per original word from the predictions at each word's first piece; words cut off get ``"O"``.

    ``logits_or_pred_ids``: ``(N, T, K)`` logits or ``(N, T)`` tag ids (a tensor, array or nested lists, ``T`` at
    least each feature's length -- the padded batch is fine), or one ``(T_i, K)`` / ``(T_i,)`` tensor per feature
    (what :func:`shoulders.recipes.finetune.predict` returns), in the order of ``features``.
    """
    x = logits_or_pred_ids
    if isinstance(x, (list, tuple)) and x and isinstance(x[0], torch.Tensor):  # one tensor per feature
        if len(x) != len(features):
            raise ValueError(f"expected {len(features)} per-feature predictions, got {len(x)}")
        rows = [(r.argmax(-1) if r.dim() == 2 else r).tolist() for r in x]
    else:
        preds = x if isinstance(x, torch.Tensor) else torch.as_tensor(x)
        if preds.dim() == 3:
            preds = preds.argmax(-1)  # (N, T)
        if preds.dim() != 2 or preds.shape[0] != len(features):
            raise ValueError(f"expected (N, T) ids or (N, T, K) logits for N={len(features)}, "
                             f"got {tuple(preds.shape)}")
        rows = preds.tolist()
    out = []
    for feature, row in zip(features, rows):
        tags = ["O"] * int(feature["n_words"])
        for w, position in _first_positions(feature["word_ids"]).items():
            tags[w] = id_to_tag[int(row[position])]
        out.append(tags)
    return out


_WORD = re.compile("[^ \t\r\n\u202f]+")


def _context_words(context: str) -> tuple[list[str], list[int]]:
    """BERT's run_squad split: words at whitespace (" \\t\\r\\n" and U+202F), and the word of every character
    (a space belongs to the word before it)."""
    words: list[str] = []
    char_to_word: list[int] = []
    position = 0
    for match in _WORD.finditer(context):
        char_to_word += [len(words) - 1] * (match.start() - position) + [len(words)] * (match.end() - match.start())
        words.append(match.group())
        position = match.end()
    char_to_word += [len(words) - 1] * (len(context) - position)
    return words, char_to_word


def _answer_pieces(tok: Any, example: SquadExample, char_to_word: list[int], word_index: list[int],
                   ids: list[int]) -> tuple[int, int] | None:
    """The first answer's piece span in the context, or ``None`` (no answer, or an answer without pieces)."""
    if not example.answers:
        return None
    text, start_char = example.answers[0], example.answer_starts[0]
    start_word = char_to_word[start_char]
    end_word = char_to_word[min(start_char + len(text), len(char_to_word)) - 1]
    start, end = bisect_left(word_index, start_word), bisect_right(word_index, end_word) - 1  # word_index sorted
    if start > end:
        return None
    # run_squad's _improve_answer_span: "(1895-1943)." holds the answer "1895" in fewer pieces than its word
    answer_ids = list(tok.encode(text))
    for new_start in range(start, end + 1):
        for new_end in range(end, new_start - 1, -1):
            if ids[new_start:new_end + 1] == answer_ids:
                return new_start, new_end
    return start, end


def span_features(tok: Any, examples: Sequence[SquadExample], max_len: int = 384, doc_stride: int = 128,
                  max_query_len: int = 64) -> list[dict[str, Any]]:
    """SQuAD windows as in BERT's ``run_squad.py`` (§4.2): ``[CLS] question [SEP] context window [SEP]``.

    The context is split at whitespace into words, the words into pieces (``tok.encode_words``); the question
    keeps at most ``max_query_len`` pieces. Windows of ``max_len - len(question) - 3`` context pieces start every
    ``doc_stride`` pieces until one reaches the end, so every piece is in some window. Each feature holds
    ``input_ids``, ``token_type_ids``, ``start_positions`` / ``end_positions`` (the first answer's first and last
    piece in this window, narrowed to the answer's own pieces as run_squad's ``_improve_answer_span`` does; both
    0, ``[CLS]``, when the answer is not wholly inside the window), ``example_index`` (into ``examples``),
    ``word_ids`` (per position the context word index, ``-1`` at question and special tokens) and
    ``max_context`` (1 where this window gives the piece its most context -- run_squad's
    ``_check_is_max_context``; only there may a predicted answer start).
    """
    features = []
    cache: dict[str, tuple[list[int], list[int], list[int]]] = {}  # context -> char_to_word, ids, word_index
    for index, example in enumerate(examples):
        if example.context not in cache:
            words, char_to_word = _context_words(example.context)
            ids, word_index = tok.encode_words(words)
            cache[example.context] = char_to_word, list(ids), list(word_index)
        char_to_word, ids, word_index = cache[example.context]
        query = list(tok.encode(example.question))[:max_query_len]
        room = max_len - len(query) - 3
        if room <= 0:
            raise ValueError(f"max_len={max_len} leaves no room for the context after {len(query)} question pieces")
        answer = _answer_pieces(tok, example, char_to_word, word_index, ids)
        windows = []  # (start, length) in context pieces
        start = 0
        while True:
            length = min(room, len(ids) - start)
            windows.append((start, length))
            if start + length >= len(ids):
                break
            start += min(length, doc_stride)
        owner = _max_context_windows(windows, len(ids))
        offset = len(query) + 2  # [CLS] question [SEP]
        for w, (start, length) in enumerate(windows):
            input_ids, segments = pack(query, ids[start:start + length], tok.cls_id, tok.sep_id, max_len)
            word_ids = [-1] * offset + word_index[start:start + length] + [-1]
            max_context = [0] * offset + [int(owner[p] == w) for p in range(start, start + length)] + [0]
            s = e = 0
            if answer is not None and start <= answer[0] and answer[1] < start + length:
                s, e = answer[0] - start + offset, answer[1] - start + offset
            features.append({"input_ids": input_ids, "token_type_ids": segments, "start_positions": s,
                             "end_positions": e, "example_index": index, "word_ids": word_ids,
                             "max_context": max_context})
    return features


def _max_context_windows(windows: list[tuple[int, int]], n: int) -> list[int]:
    """run_squad's ``_check_is_max_context``: per piece, the window where min(left, right) context plus
    0.01 * window length is largest (the first one on ties)."""
    if len(windows) == 1:
        return [0] * n
    best = [float("-inf")] * n
    owner = [-1] * n
    for w, (start, length) in enumerate(windows):
        for p in range(start, start + length):
            score = min(p - start, start + length - 1 - p) + 0.01 * length
            if score > best[p]:
                best[p], owner[p] = score, w
    return owner


def _padded(values: Any, lengths: list[int], fill: float, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``(N, T)`` tensor from an ``(N, T')`` tensor/array or one 1-D sequence per feature (``T = max(lengths)``)."""
    T = max(lengths)
    if isinstance(values, torch.Tensor) or hasattr(values, "shape"):
        values = torch.as_tensor(values, dtype=dtype)
        if values.dim() != 2 or values.shape[0] != len(lengths) or values.shape[1] < T:
            raise ValueError(f"expected ({len(lengths)}, >={T}) values, got {tuple(values.shape)}")
        return values[:, :T]
    rows = [[float(x) for x in row] if isinstance(row, torch.Tensor) else list(row) for row in values]
    if len(rows) != len(lengths) or any(len(row) < n for row, n in zip(rows, lengths)):
        raise ValueError(f"expected {len(lengths)} rows at least as long as their features")
    return torch.tensor([row[:n] + [fill] * (T - n) for row, n in zip(rows, lengths)], dtype=dtype)


def _strip_spaces(text: str) -> tuple[str, list[int]]:
    kept = [(i, c) for i, c in enumerate(text) if not c.isspace()]
    return "".join(c for _, c in kept), [i for i, _ in kept]


def _final_text(tok: Any, words: list[str], pred_ids: list[int]) -> str:
    """run_squad's ``get_final_text``: cut ``words`` (joined by spaces) down to the predicted pieces.

    The decoded pieces of ``words`` and the words themselves are aligned character by character once spaces are
    dropped; where that fails (the tokeniser dropped characters, or made ``[UNK]``) the whole words stay.
    """
    orig_text = " ".join(words)
    pred_text = tok.decode(pred_ids).strip()
    tok_text = tok.decode(tok.encode_words(words)[0]).strip()
    position = tok_text.find(pred_text)
    if not pred_text or position < 0:
        return orig_text
    orig_ns, orig_map = _strip_spaces(orig_text)
    tok_ns, tok_map = _strip_spaces(tok_text)
    if len(orig_ns) != len(tok_ns):
        return orig_text
    tok_to_ns = {s: n for n, s in enumerate(tok_map)}
    end = position + len(pred_text) - 1
    if position not in tok_to_ns or end not in tok_to_ns:
        return orig_text
    return orig_text[orig_map[tok_to_ns[position]]:orig_map[tok_to_ns[end]] + 1]


@torch.no_grad()
def best_span(start_logits: torch.Tensor, end_logits: torch.Tensor, allowed: torch.Tensor | None = None,
              max_answer_len: int = 30) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The span (i, j) maximising s_i + e_j with i <= j < i + ``max_answer_len``, both in ``allowed``
    (Devlin et al. 2019, §4.2; the length cap is ``max_answer_length`` of Google's ``run_squad.py``).

    Args:
        start_logits, end_logits: (B, T).
        allowed: (B, T) bool, True where a token may be part of the answer -- the caller marks the context's
            tokens (not the question, ``[CLS]``, ``[SEP]`` or padding). ``None`` allows every position.
        max_answer_len: the longest span, in tokens.

    Returns:
        ``start`` (B,), ``end`` (B,) long, and ``score`` (B,) = s_start + e_end in float32 (``-inf`` for a row
        with no allowed position, whose span is then (0, 0)). Ties go to the smallest (start, end).
    """
    if max_answer_len < 1:
        raise ValueError(f"max_answer_len must be >= 1, got {max_answer_len}")
    B, T = start_logits.shape
    L = min(max_answer_len, T)
    s, e = start_logits.float(), end_logits.float()
    if allowed is not None:
        a = allowed.bool()
        s, e = s.masked_fill(~a, float("-inf")), e.masked_fill(~a, float("-inf"))
    # for every start i, the best end among i .. i + L - 1: a sliding-window max over e, O(B T L) not O(B T^2)
    padded = torch.cat([e, e.new_full((B, L - 1), float("-inf"))], dim=1)  # (B, T + L - 1)
    best_e, offset = padded.unfold(1, L, 1).max(-1)  # (B, T, L) -> (B, T): max and first argmax (smallest j)
    score, start = (s + best_e).max(-1)  # (B,): the first best start (smallest i) wins ties
    end = start + offset.gather(1, start[:, None])[:, 0]
    return start, end, score


def span_predictions(features: Sequence[Mapping[str, Any]], start_logits: Any, end_logits: Any,
                     examples: Sequence[SquadExample], max_answer_len: int = 30, tok: Any = None) -> dict[str, str]:
    """Answer text per question id: the best span over all windows of its example (BERT §4.2).

    A span scores ``start_logits[s] + end_logits[e]``; it must lie in the context, start where its window has the
    most context for that piece, and span at most ``max_answer_len`` pieces (:func:`best_span`).
    The answer is the original context words from the start piece's word to the end piece's word, joined by
    single spaces. Given the tokeniser ``tok``, it is then cut down to the predicted pieces as run_squad's
    ``get_final_text`` does, so "18" can come out of the word "20–18". ``start_logits``, ``end_logits``:
    ``(N, T)`` (a padded batch is fine) or one 1-D sequence per feature, in the order of ``features``.
    """
    lengths = [len(f["input_ids"]) for f in features]
    S, E = _padded(start_logits, lengths, 0.0), _padded(end_logits, lengths, 0.0)  # (N, T)
    in_context = _padded([f["word_ids"] for f in features], lengths, -1, torch.long) >= 0  # (N, T)
    max_context = _padded([f["max_context"] for f in features], lengths, 0, torch.long) > 0  # (N, T)
    S = S.masked_fill(~max_context, float("-inf"))  # a span starts only where its window has the most context
    starts, ends, scores = [], [], []
    for k in range(0, len(features), 32):  # 32 features at a time, each batch cut to its longest feature
        T = max(lengths[k:k + 32])
        found = best_span(S[k:k + 32, :T], E[k:k + 32, :T], in_context[k:k + 32, :T], max_answer_len)
        for out, part in zip((starts, ends, scores), found):
            out.append(part)
    starts, ends, scores = (torch.cat(parts) for parts in (starts, ends, scores))
    best: dict[int, int] = {}  # example index -> feature index
    for i, f in enumerate(features):
        index = int(f["example_index"])
        if scores[i] > float("-inf") and (index not in best or scores[i] > scores[best[index]]):
            best[index] = i
    answers = {}
    words: dict[str, list[str]] = {}
    for index, example in enumerate(examples):
        if index not in best:
            answers[example.qid] = ""
            continue
        i = best[index]
        s, e = int(starts[i]), int(ends[i])
        if example.context not in words:
            words[example.context] = _context_words(example.context)[0]
        span = words[example.context][features[i]["word_ids"][s]:features[i]["word_ids"][e] + 1]
        answers[example.qid] = " ".join(span) if tok is None else _final_text(tok, span,
                                                                              features[i]["input_ids"][s:e + 1])
    return answers


COPA_CONNECTIVES = {"cause": "because", "effect": "so"}  # how an alternative continues its premise (ours)


def choice_features(tok: Any, copa_items: Sequence[Mapping[str, Any]], max_len: int) -> list[dict[str, Any]]:
    """Two-way multiple choice (BERT's SWAG recipe, §4.4): one ``[CLS] A [SEP] B [SEP]`` per alternative.

    Text A is the premise; text B is the alternative behind a connective -- ``"because"`` when the item asks for
    the cause, ``"so"`` when it asks for the effect. The connective is our choice: in the SWAG recipe the
    candidate continues the premise, and the connective turns a COPA alternative into such a continuation
    ("The man broke his toe. | because he dropped a hammer on his foot."). The alternative keeps its case.
    Feature: ``{"choices": [{"input_ids", "token_type_ids"}] * 2, "labels"}``; a linear layer scores each
    choice's ``[CLS]`` vector and a softmax runs over the two.
    """
    features = []
    for item in copa_items:
        connective = COPA_CONNECTIVES[item["question"]]
        premise = tok.encode(item["premise"])
        choices = []
        for alternative in (item["choice1"], item["choice2"]):
            ids, segments = pack(premise, tok.encode(f"{connective} {alternative}"), tok.cls_id, tok.sep_id, max_len)
            choices.append({"input_ids": ids, "token_type_ids": segments})
        features.append({"choices": choices, "labels": int(item["label"])})
    return features

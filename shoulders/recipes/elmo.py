"""Pre-training ELMo's biLM on WikiText-2 (Peters et al. 2018, §3.1 and §3.4): the book's ELMo giant.

The recipe: WikiText-2's word stream (:func:`shoulders.text.lm_data.wikitext2_corpus`, the vocabulary of chapter
3 in frequency order, as the adaptive softmax needs), every word spelled as characters for the input
(:func:`shoulders.text.word_chars.char_table`), and each pass over the text cut into windows of ``cfg.bptt``
words at a fresh random offset, each window with its neighbours on both sides so that every word is a forward
*and* a backward target once per pass (:class:`BiLMWindows`). The loss is the joint log-likelihood of both
directions (:class:`~shoulders.models.elmo.BiLM`); AdamW with linear warm-up and decay.

Evaluation is the forward direction's perplexity on WikiText-2 validation (:func:`direction_perplexity`), in
windows of ``cfg.bptt`` words read from a zero state -- how the biLM was trained, and a harder test than
chapter 3's, whose LSTM carries its state across the whole text.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import torch

from ..models.elmo import BiLM, ELMoConfig, bilm_targets
from ..text.lm_data import LMCorpus, wikitext2_corpus
from ..text.vocab import Vocab
from ..text.word_chars import char_table
from ..text.word_tokenizer import WordTokenizer
from ..train.loop import fit
from ..train.optimizers import adamw
from ..train.schedules import linear_warmup_decay
from .artefact import Artefact

__all__ = ["BiLMWindows", "build", "direction_perplexity", "task_vectors", "train_giant", "wikitext_for_elmo"]


def wikitext_for_elmo(cfg: ELMoConfig) -> LMCorpus:
    """WikiText-2 train and validation as word streams, with ``cfg``'s limits (the smoke preset's are small)."""
    return wikitext2_corpus(max_vocab=cfg.max_vocab, train_tokens=cfg.train_tokens, eval_tokens=cfg.eval_tokens,
                            splits=("train", "valid"))


def build(cfg: ELMoConfig, vocab: Vocab) -> BiLM:
    """The untrained biLM whose softmax covers ``vocab``: what a cached giant's weights are loaded into."""
    return BiLM(cfg.replace(vocab_size=len(vocab)))


class BiLMWindows:
    """Re-iterable training batches of a word stream: ``{"chars", "targets_fwd", "targets_bwd"}``.

    Each pass starts at a random offset ``s < bptt`` and cuts windows ``ids[s + k*T : s + k*T + T + 2]``
    (``T = bptt``): the middle ``T`` words are the input, the words one step right and left the targets
    (:func:`~shoulders.models.elmo.bilm_targets`), so consecutive windows tile the text and every word is
    predicted once per direction per pass. Windows are shuffled (``fit`` seeds the global RNG per epoch).
    ``ids`` (N,) int64; ``table`` (|V|, C) the characters of every word id.
    """

    def __init__(self, ids: torch.Tensor, table: torch.Tensor, batch_size: int, bptt: int):
        if ids.dim() != 1 or len(ids) < 2 * bptt + 2:
            raise ValueError(f"need a 1-D stream of at least 2 * bptt + 2 = {2 * bptt + 2} ids, got shape "
                             f"{tuple(ids.shape)}")
        self.ids, self.table, self.batch_size, self.bptt = ids, table, batch_size, bptt

    def _windows(self, offset: int) -> int:
        return (len(self.ids) - offset - 2) // self.bptt

    def __len__(self) -> int:
        return math.ceil(self._windows(self.bptt - 1) / self.batch_size)  # the shortest pass

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        T = self.bptt
        offset = int(torch.randint(T, ()))
        n = self._windows(offset)
        starts = offset + T * torch.randperm(n)[:len(self) * self.batch_size]   # same batch count every pass
        span = torch.arange(T + 2)
        for i in range(0, len(starts), self.batch_size):
            ids = self.ids[starts[i:i + self.batch_size, None] + span]          # (B, T + 2)
            words, fwd, bwd = bilm_targets(ids)
            yield {"chars": self.table[words], "targets_fwd": fwd, "targets_bwd": bwd}


@torch.no_grad()
def direction_perplexity(model: BiLM, ids: torch.Tensor, table: torch.Tensor, bptt: int,
                         direction: str = "forward", batch_size: int = 64) -> float:
    """Perplexity of one direction of ``model`` on the stream ``ids``, in consecutive windows of ``bptt`` words
    each read from a zero state (as the biLM was trained). Forward: the window ``ids[kT : kT + T]`` predicts
    ``ids[kT + 1 : kT + T + 1]``; backward: ``ids[kT + 1 : kT + T + 1]`` predicts ``ids[kT : kT + T]``. Every
    token but one end of the stream is predicted once."""
    if direction not in ("forward", "backward"):
        raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")
    was_training = model.training
    model.eval()
    dev = next(model.parameters()).device
    T = bptt
    n = (len(ids) - 1) // T
    rows = ids[:n * T + 1]
    total, count = 0.0, 0
    try:
        for i in range(0, n, batch_size):
            k = torch.arange(i, min(i + batch_size, n))[:, None] * T + torch.arange(T + 1)  # (b, T + 1)
            w = rows[k]
            words, targets = (w[:, :-1], w[:, 1:]) if direction == "forward" else (w[:, 1:], w[:, :-1])
            nll = model.token_nll(table[words].to(dev), targets.to(dev), direction=direction)  # (b, T)
            total += float(nll.double().sum())
            count += targets.numel()
    finally:
        model.train(was_training)
    return math.exp(total / count)


def train_giant(cfg: ELMoConfig, *, corpus: LMCorpus | None = None, device: Any = None, progress: bool = True,
                **fit_kwargs: Any) -> Artefact:
    """Pre-train the biLM on WikiText-2 (``corpus``: the page's :func:`wikitext_for_elmo`, to read it once).

    The output bias starts at the training unigram log-probabilities (as chapter 3's LMs do), so the first
    updates need not learn word frequencies. Every ``cfg.eval_every`` steps the history logs ``val_ppl``, the
    forward direction's validation perplexity. Returns the :class:`~shoulders.recipes.artefact.Artefact` that
    :mod:`shoulders.giants` caches; its tokenizer is the word vocabulary (the characters are derived from it).
    """
    corpus = corpus if corpus is not None else wikitext_for_elmo(cfg)
    model = build(cfg, corpus.vocab)
    model.init_unigram_(corpus.counts())
    table = char_table(corpus.vocab, cfg.max_chars)
    valid = corpus.streams["valid"].ids

    def evaluate(m: BiLM) -> dict[str, float]:
        return {"val_ppl": direction_perplexity(m, valid, table, cfg.bptt)}

    optimizer = adamw(model, lr=cfg.lr, weight_decay=cfg.weight_decay)
    history = fit(model, BiLMWindows(corpus.train.ids, table, cfg.batch_size, cfg.bptt), optimizer,
                  steps=cfg.steps, schedule=linear_warmup_decay(cfg.warmup, cfg.steps), clip=cfg.clip,
                  evaluate=evaluate, eval_every=min(cfg.eval_every, cfg.steps), device=device, progress=progress,
                  **fit_kwargs)
    model = model.cpu()
    metrics = {"valid_ppl_forward": history.last("val_ppl"),  # fit evaluated after the last update
               "valid_ppl_backward": direction_perplexity(model, valid, table, cfg.bptt, "backward"),
               "valid_ppl_unigram": corpus.unigram_perplexity("valid")}
    return Artefact(model=model, history=history, tokenizer=corpus.vocab, metrics=metrics,
                    facts={"training tokens": corpus.train.num_tokens, "vocabulary": len(corpus.vocab),
                           "windows": f"{cfg.bptt} words, zero initial state, a fresh offset every pass"})


def task_vectors(tok: WordTokenizer, vocab: Vocab, vectors: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Context-independent vectors for every word of a task's vocabulary, looked up in a word-vector table
    (``vocab`` and ``vectors`` (|V|, d), e.g. the ``glove`` giant's): the word itself, else its lower-cased form,
    else zeros -- as for the four specials. ELMo's task models read these beside ELMo (Peters et al. 2018, §3.3).

    Returns the (len(tok), d) table and the share of the task's words (specials excluded) that were found.
    """
    if vectors.dim() != 2 or vectors.shape[0] != len(vocab):
        raise ValueError(f"vectors must be (|V| = {len(vocab)}, d), got shape {tuple(vectors.shape)}")
    out = torch.zeros(len(tok), vectors.shape[1], dtype=vectors.dtype)
    found, words = 0, 0
    for i, w in enumerate(tok.tokens):
        if w in WordTokenizer.SPECIALS:
            continue
        words += 1
        for form in (w, w.lower()):
            if form in vocab and form != vocab.unk:
                out[i] = vectors[vocab[form]]
                found += 1
                break
    return out, found / max(words, 1)

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

import dataclasses
import math
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import torch

from ..config import Config, ConfigError
from ..models.elmo import BiLM, ELMoConfig, bilm_targets
from ..text.lm_data import LMCorpus, wikitext2_corpus
from ..text.vocab import Vocab
from ..text.word_chars import char_ids, char_table
from ..text.word_tokenizer import WordTokenizer
from ..train.loop import fit
from ..train.optimizers import adamw
from ..train.schedules import linear_warmup_decay
from .artefact import Artefact
from .finetune import BertFinetuningConfig

__all__ = ["BiLMWindows", "ELMoTaskConfig", "build", "direction_perplexity", "sentence_layers", "task_vectors",
           "train_giant", "wikitext_for_elmo"]


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


@torch.no_grad()
def sentence_layers(model: BiLM, sentences: Sequence[Sequence[str]], batch_size: int = 64) -> list[torch.Tensor]:
    """The biLM's layers h_k,j for every word of every sentence (lists of words, any words: the input is their
    spelling), each sentence read on its own from a zero state: one ``(L + 1, n_words, 2P)`` float tensor per
    sentence, on the CPU. What chapter 10 compares "play" in different sentences with (the paper's Table 4)."""
    if any(len(s) == 0 for s in sentences):
        raise ValueError("every sentence needs at least one word")
    was_training = model.training
    model.eval()
    dev = next(model.parameters()).device
    out: list[torch.Tensor] = []
    try:
        for i in range(0, len(sentences), batch_size):
            part = sentences[i:i + batch_size]
            T = max(len(s) for s in part)
            chars = torch.zeros(len(part), T, model.cfg.max_chars, dtype=torch.long)  # (b, T, C), zero = padding
            for b, words in enumerate(part):
                chars[b, :len(words)] = char_ids(words, model.cfg.max_chars)
            layers = model.layers(chars.to(dev)).float().cpu()  # (L+1, b, T, 2P)
            out += [layers[:, b, :len(words)] for b, words in enumerate(part)]
    finally:
        model.train(was_training)
    return out


@dataclasses.dataclass
class ELMoTaskConfig(Config):
    """Chapter 10's task models with and without ELMo (Peters et al. 2018, sec. 3.3 and 5): their size, how they
    train, how much of each task's data a scale uses, and how many seeds each comparison runs.

    One task model for every task (:class:`~shoulders.models.elmo_task.ContextualEncoder`: a BiLSTM of ``hidden``
    units per direction over [GloVe ; ELMo], max-pooled for sentences) trained by
    :func:`shoulders.recipes.finetune.finetune` with AdamW and a linear warm-up and decay. The paper's task
    models are each task's own state of the art (BCN for SST-5, the TagLM tagger for NER, ESIM for SNLI); ours is
    one small model, so that "with vs without ELMo" is the only difference between two rows.
    """

    hidden: int = 300              # BiLSTM units per direction (the paper's ESIM and BCN use 300)
    dropout: float = 0.5           # on the word vectors, on ELMo and on the BiLSTM output (the paper: 0.5 on ELMo)
    layer_norm: bool = False       # normalise each biLM layer before mixing (ScalarMix's do_layer_norm)
    batch_size: int = 32
    lr: float = 2e-3
    weight_decay: float = 0.0
    warmup_frac: float = 0.1
    max_len: int = 128
    sst5_epochs: float = 8.0
    wnut_epochs: float = 10.0      # WNUT-17's entities are rare: more passes than the sentence tasks
    snli_epochs: float = 4.0
    seeds: int = 3                 # runs per encoder and task (seeds 0, 1, ...): the seed-to-seed spread
    sst5_train: int | None = None  # sentences of SST-5 train (None: all 8,544)
    wnut_train: int | None = None  # sentences of WNUT-17 train (None: all 3,394)
    snli_train: int | None = None  # pairs of the SNLI dev set trained on (None: all 9,842); the test set evaluates
    eval_limit: int | None = None  # evaluate on at most this many examples per task
    cache_layers: bool = True      # compute each sentence's biLM layers once (ContextualEncoder's layer_cache)
    probe_every: int = 25          # log the mix's weights every this many updates (the layer-weight widget)

    page_presets: ClassVar = {
        # chapter 10's checks: the tasks where every +ELMo seed must beat every GloVe-only seed, and how far the
        # learned layer weights must have moved from uniform (max |softmax(s)_j - 1/(L+1)|) for the widget to
        # show a trained mix. Measured at cpu (chapter 10, 2 threads on a 2-core CPU, seeds 0-2, means and ranges):
        # SST-5 dev accuracy 39.6 (39.1-40.0) vs 36.8 (36.1-37.2); WNUT-17 test entity F1 17.4 (16.3-18.4) vs 0.0
        # for every seed; SNLI test accuracy 51.8 (51.5-52.1) vs 48.2 (48.1-48.3) -- reported, not asserted
        "smoke": dict(elmo_beats=(), mix_moved=0.005),
        "cpu": dict(elmo_beats=("SST-5", "WNUT-17"), mix_moved=0.01),
        "full": dict(elmo_beats=("SST-5", "WNUT-17"), mix_moved=0.01),
    }
    presets: ClassVar = {
        # smoke: seconds per task; a tenth of each task, one seed, a small BiLSTM and a larger rate
        "smoke": dict(hidden=64, lr=5e-3, sst5_epochs=5.0, wnut_epochs=5.0, snli_epochs=5.0, seeds=1,
                      sst5_train=2_000, wnut_train=1_000, snli_train=2_000, eval_limit=1_000, probe_every=5),
        # cpu: a 128-unit BiLSTM; eight passes over SST-5 (five gave 38.1 vs 36.1, ten 40.5 vs 36.7, three seeds)
        # and four over SNLI keep the page at 14.3 minutes (measured: the three tasks 311 + 150 + 351 s)
        "cpu": dict(hidden=128),
        # full: the paper's 300-unit task models; the biLM runs on every batch on the GPU (a cache of the
        # canonical SNLI train's layers would not fit in memory)
        "full": dict(hidden=300, cache_layers=False),
    }

    def validate(self) -> None:
        if min(self.hidden, self.batch_size, self.max_len, self.seeds, self.probe_every) < 1:
            raise ConfigError("hidden, batch_size, max_len, seeds and probe_every must be positive")
        if min(self.sst5_epochs, self.wnut_epochs, self.snli_epochs, self.lr) <= 0:
            raise ConfigError("the epochs and lr must be positive")
        if not 0.0 <= self.dropout < 1.0 or not 0.0 <= self.warmup_frac < 1.0:
            raise ConfigError(f"dropout and warmup_frac must be in [0, 1), got {self.dropout}, {self.warmup_frac}")
        for name in ("sst5_train", "wnut_train", "snli_train", "eval_limit"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ConfigError(f"{name} must be positive or None, got {getattr(self, name)}")

    def finetuning(self) -> BertFinetuningConfig:
        """The optimiser and schedule settings in the form :func:`~shoulders.recipes.finetune.compare` takes
        (one epoch by default: pass ``steps=cfg.finetuning().steps_for(n, cfg.sst5_epochs)`` per task)."""
        return BertFinetuningConfig(batch_size=self.batch_size, lr=self.lr, scratch_lr=self.lr,
                                    weight_decay=self.weight_decay, warmup_frac=self.warmup_frac, epochs=1.0,
                                    max_steps=None, min_steps=1, max_len=self.max_len)

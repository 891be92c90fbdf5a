"""Pre-training the AWD-LSTM language model on WikiText-2 (Merity et al. 2018): ULMFiT's general-domain LM, the
first of its three stages (Howard & Ruder 2018, sec. 3.1), and the book's ``awd_lstm`` giant.

The recipe is chapter 3's: WikiText-2 as one stream in frequency order (:func:`shoulders.text.lm_data.
wikitext2_corpus`), truncated BPTT with the state carried from window to window (:class:`shoulders.train.
CarryState`), the output layer started at the unigram model; plus AWD-LSTM's variable window lengths
(:meth:`~shoulders.models.awd_lstm.AWDLSTMConfig.batches`) and its regularisers, which live in the model.

**A stated substitute for NT-ASGD.** The paper trains with SGD at rate 30 and switches to averaged SGD once the
validation perplexity stops improving for 5 evaluations (non-monotonically triggered ASGD), for 750 epochs, and
rescales the rate by T / bptt for each variable-length window. A chapter's budget is a few passes over the text, so
here the book's one optimiser, AdamW, runs with warm-up and cosine decay, as chapter 3's LSTM does: at a handful of
epochs the averaging phase would never start. Adam's update does not depend on the loss's scale, so the T / bptt
rescaling has no equivalent and is left out.
"""
from __future__ import annotations

from typing import Any

from ..evaluate.perplexity import perplexity
from ..models.awd_lstm import AWDLSTM, AWDLSTMConfig
from ..text.lm_data import LMCorpus, wikitext2_corpus
from ..text.vocab import Vocab
from ..train.bptt import CarryState
from ..train.callbacks import Snapshots
from ..train.loop import fit
from ..train.optimizers import adamw
from ..train.schedules import cosine_warmup
from .artefact import Artefact

__all__ = ["build", "train_giant", "wikitext_for_awd"]


def wikitext_for_awd(cfg: AWDLSTMConfig) -> LMCorpus:
    """WikiText-2 train and validation as streams, with ``cfg``'s limits (the smoke preset's are small)."""
    return wikitext2_corpus(max_vocab=cfg.max_vocab, train_tokens=cfg.train_tokens, eval_tokens=cfg.eval_tokens,
                            splits=("train", "valid"))


def build(cfg: AWDLSTMConfig, vocab: Vocab) -> AWDLSTM:
    """The untrained AWD-LSTM whose softmax covers ``vocab``: what a cached giant's weights are loaded into."""
    return AWDLSTM(cfg.replace(vocab_size=len(vocab)))


def train_giant(cfg: AWDLSTMConfig, *, corpus: LMCorpus | None = None, device: Any = None, progress: bool = True,
                **fit_kwargs: Any) -> Artefact:
    """Pre-train the AWD-LSTM LM on WikiText-2 (``corpus``: a page's :func:`wikitext_for_awd`, to read it once).

    A copy of the weights is kept after each step of ``cfg.snapshots`` (the giant stores them: chapter 11 measures
    what more pre-training buys). Six times during training and after the last step the history logs ``val_ppl``:
    the validation perplexity with the state carried through the whole validation text, as chapter 3 measures its
    LSTM. Returns the
    :class:`~shoulders.recipes.artefact.Artefact` that :mod:`shoulders.giants` caches.
    """
    corpus = corpus if corpus is not None else wikitext_for_awd(cfg)
    model = build(cfg, corpus.vocab)
    model.init_unigram_(corpus.counts())
    valid = corpus.streams["valid"]

    def evaluate(m: AWDLSTM) -> dict[str, float]:
        return {"val_ppl": perplexity(m, cfg.batches(valid, train=False), carry_state=True)}

    carry, snapshots = CarryState(), Snapshots(cfg.snapshots)
    history = fit(model, cfg.batches(corpus.streams["train"]), adamw(model, lr=cfg.lr, weight_decay=cfg.weight_decay),
                  steps=cfg.steps, schedule=cosine_warmup(cfg.warmup, cfg.steps), clip=cfg.clip, loss_fn=carry,
                  callbacks=[carry, snapshots, *fit_kwargs.pop("callbacks", ())], evaluate=evaluate,
                  eval_every=max(cfg.steps // 6, 1), device=device, progress=progress, **fit_kwargs)
    model = model.cpu()
    metrics = {"valid_ppl": history.last("val_ppl"), "valid_ppl_unigram": corpus.unigram_perplexity("valid")}
    windows = f"variable BPTT around {cfg.bptt} words" if cfg.variable_bptt else f"{cfg.bptt} words"
    return Artefact(model=model, history=history, tokenizer=corpus.vocab, metrics=metrics, snapshots=snapshots.states,
                    facts={"training tokens": corpus.streams["train"].num_tokens, "vocabulary": len(corpus.vocab),
                           "windows": f"{windows}, state carried"})

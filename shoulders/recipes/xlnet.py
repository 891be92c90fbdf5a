"""Pre-training XLNet on WikiText-2 with the permutation language-modelling objective: the book's ``xlnet`` giant,
built to be compared with chapter 14's ``bert`` giant -- the same data, the same WordPiece vocabulary, the same
shape and the same optimiser, schedule and batch of pairs.

    max_θ  E_z [ sum_{t=c+1}^{T} log p_θ(x_{z_t} | x_{z_<t}) ]           (Yang et al. 2019, eq. 5)

Each pre-training example is a pair ``A [SEP] B [SEP] [CLS]`` drawn exactly as BERT's (:func:`shoulders.text.
nsp_pairs.nsp_pairs`: B follows A half of the time), but there is no next-sentence loss: XLNet's ablation (Table 6,
"- next-sent pred") found it did not help, and dropped it. Every row gets its own factorisation order over its
text tokens (never ``[SEP]``, ``[CLS]`` or padding) and predicts the last 1/K of it (K = ``predict_k``; the paper
uses 6 and 7), so a row of 64 pieces predicts about 10 of them -- as many as BERT's 15% masking.

What we leave out, and why: the paper's memory across consecutive segments during pre-training (``reuse_len``,
``mem_len``: our pairs are short and drawn independently, like BERT's, so there is nothing to carry; the model
supports memory, :class:`~shoulders.models.xlnet.XLNetModel`'s ``mems``), span-based target selection, and
``bi_data`` (each sequence also read backwards).
"""
from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

import torch

from ..config import ConfigError
from ..models.xlnet import XLNetConfig, XLNetLMHeadModel, permutation_masks
from ..text.bert_inputs import collate
from ..text.wordpiece import WordPiece
from ..text.xlnet_inputs import pack_xlnet
from ..train.callbacks import Snapshots
from ..train.loop import fit
from ..train.optimizers import adamw
from ..train.schedules import linear_warmup_decay
from .artefact import Artefact
from .bert import (BertPretrainingConfig, PretrainingBatches, WikiTextForBert, fixed_eval_batches,
                   wikitext_for_bert)

__all__ = ["XLNetPretrainingBatches", "XLNetPretrainingConfig", "build", "evaluate_plm", "fixed_plm_batches",
           "train_giant", "unigram_plm_baseline"]


@dataclasses.dataclass
class XLNetPretrainingConfig(BertPretrainingConfig):
    """BERT's pre-training run (:class:`~shoulders.recipes.bert.BertPretrainingConfig`: data, vocabulary, pair
    lengths and phases, optimiser, schedule) with XLNet's model and objective. ``size`` names an
    :data:`~shoulders.models.xlnet.XLNET_SIZES` shape (tiny = BERT-tiny's 2 x 128, 2 heads); ``predict_k`` is K;
    ``mask_prob`` and ``positions`` are not used (no [MASK], no position table)."""

    predict_k: int = 6

    page_presets: ClassVar = {
        # chapter 15's checks on the giant: held-out permutation-LM accuracy above the unigram guess by this margin
        # (None: not asserted -- after one minute it is within a point of it, 5.6% vs 5.3%; the cross-entropy
        # below the unigram model's is asserted at every scale)
        "smoke": dict(plm_margin=None),
        "cpu": dict(plm_margin=0.05),
        "full": dict(plm_margin=0.05),
    }
    presets: ClassVar = {
        # smoke: one minute is too short for K = 6 to leave the unigram plateau (held-out cross-entropy 5.89 vs the
        # unigram's 5.93 after 300 steps, measured); K = 3 gives each step twice the targets (5.87 vs 5.99)
        "smoke": dict(BertPretrainingConfig.presets["smoke"], predict_k=3),
        # the bert giant's run (same pairs, lengths, batch, rate and schedule; see chapter 14) for 11,000 steps
        # instead of 16,000: an XLNet step costs 1.27x BERT's (benchmarks/transformer_xl.py --part step), so this is
        # 87% of BERT's compute and about its wall-clock (52.1 minutes on two threads, measured 2026-12-02)
        "cpu": dict(BertPretrainingConfig.presets["cpu"], steps=11_000, warmup=1_100),
        "full": dict(BertPretrainingConfig.presets["full"]),
    }

    def validate(self) -> None:
        super().validate()
        if self.size not in XLNetConfig.SIZES:
            raise ConfigError(f"size must be one of {sorted(XLNetConfig.SIZES)}, got {self.size!r}")
        if self.norm_first:
            raise ConfigError("norm_first=True is a BERT lever: XLNet's two-stream layers here are post-LN only")
        if not self.nsp:
            raise ConfigError("nsp=False is a BERT lever: XLNet has no next-sentence loss to leave out")
        if self.predict_k < 2:
            raise ConfigError(f"predict_k (K: predict the last 1/K of each order) must be >= 2, got {self.predict_k}")

    def model_config(self, vocab_size: int, pad_id: int = 0) -> XLNetConfig:  # type: ignore[override]
        return XLNetConfig.named(self.size, vocab_size=vocab_size, dropout=self.dropout, pad_id=pad_id)

    def build(self) -> XLNetLMHeadModel:  # type: ignore[override]
        return XLNetLMHeadModel(self.model_config(self.vocab_size))

    def example_batch(self, batch_size: int = 2) -> dict[str, torch.Tensor]:  # type: ignore[override]
        return self.model_config(self.vocab_size).example_batch(batch_size)

    def step_batch(self) -> dict[str, torch.Tensor]:  # type: ignore[override]
        """A random batch of one pre-training step's shapes: ``batch_size`` rows of ``max_len`` pieces, each
        predicting ``max_len // predict_k`` of them."""
        return self.model_config(self.vocab_size).example_batch(self.batch_size, self.max_len,
                                                                max(1, self.max_len // self.predict_k))


class XLNetPretrainingBatches(PretrainingBatches):
    """BERT's pairs (:class:`~shoulders.recipes.bert.PretrainingBatches`: fresh pairs every pass, the two length
    phases) laid out ``A [SEP] B [SEP] [CLS]``, each row with its own factorisation order and targets."""

    def pack(self, a: Sequence[int], b: Sequence[int], length: int) -> tuple[list[int], list[int]]:
        return pack_xlnet(a, b, self.tok.cls_id, self.tok.sep_id, length)

    def batch(self, features: Sequence[dict[str, Any]], generator: torch.Generator | None = None) -> dict:
        """Collate ``features``; per row draw an order over its text pieces and predict the last 1/K of it.

        Returns :class:`~shoulders.models.xlnet.XLNetLMHeadModel`'s arguments: ``perm_mask`` ``(B, T, T)``,
        ``target_mapping`` ``(B, P, T)``, ``target_ids`` and ``target_weights`` ``(B, P)`` (rows with fewer
        targets than the longest are padded with weight 0)."""
        b = collate(features, self.tok.pad_id)
        ids = b["input_ids"]
        B, T = ids.shape
        maskable = b["attention_mask"] & (ids != self.tok.cls_id) & (ids != self.tok.sep_id)  # (B, T)
        counts = [max(1, int(m.sum()) // self.cfg.predict_k) for m in maskable]
        P = max(counts)
        perm = torch.zeros(B, T, T, dtype=torch.bool)
        mapping = torch.zeros(B, P, T)
        targets = torch.zeros(B, P, dtype=torch.long)
        weights = torch.zeros(B, P)
        for r in range(B):
            order = torch.randperm(T, generator=generator)
            perm[r], tm = permutation_masks(order, counts[r], maskable[r])
            mapping[r, : counts[r]] = tm
            targets[r, : counts[r]] = ids[r, tm.argmax(-1)]
            weights[r, : counts[r]] = 1.0
        return {"input_ids": ids, "token_type_ids": b["token_type_ids"], "attention_mask": b["attention_mask"],
                "perm_mask": perm, "target_mapping": mapping, "target_ids": targets, "target_weights": weights}


def fixed_plm_batches(documents: Sequence[Sequence[Sequence[int]]], tok: Any, cfg: XLNetPretrainingConfig,
                      seed: int = 0) -> list[dict[str, torch.Tensor]]:
    """``cfg.eval_pairs`` held-out pairs with one fixed order each, in batches (the same at every evaluation)."""
    return fixed_eval_batches(documents, tok, cfg, seed, batches=XLNetPretrainingBatches)


@torch.no_grad()
def evaluate_plm(model: XLNetLMHeadModel, batches: Sequence[dict[str, torch.Tensor]]) -> dict[str, float]:
    """Permutation-LM cross-entropy (nats) and accuracy over every target of ``batches``."""
    was_training = model.training
    model.eval()
    dev = next(model.parameters()).device
    loss = acc = n = 0.0
    try:
        for b in batches:
            out = model(**{k: v.to(dev) for k, v in b.items()})
            m = float(b["target_weights"].sum())
            loss += float(out["loss"]) * m
            acc += float(out["acc"]) * m
            n += m
    finally:
        model.train(was_training)
    return {"plm_loss": loss / n, "plm_acc": acc / n}


def unigram_plm_baseline(train_documents: Sequence[Sequence[Sequence[int]]],
                         batches: Sequence[dict[str, torch.Tensor]]) -> dict[str, float]:
    """The label-blind guess on the same targets: the most frequent training piece (accuracy) and the unigram
    distribution (cross-entropy, add-one smoothed)."""
    counts: Counter = Counter(t for d in train_documents for s in d for t in s)
    total = sum(counts.values())
    targets = torch.cat([b["target_ids"][b["target_weights"] > 0] for b in batches]).tolist()
    V = max(max(counts) + 1, max(targets) + 1)
    top = counts.most_common(1)[0][0]
    nll = -sum(math.log((counts.get(t, 0) + 1) / (total + V)) for t in targets) / len(targets)
    return {"plm_acc": sum(t == top for t in targets) / len(targets), "plm_loss": nll}


def build(cfg: XLNetPretrainingConfig, tok: WordPiece) -> XLNetLMHeadModel:
    """The untrained model for ``tok``'s vocabulary: what a cached giant's weights are loaded into."""
    return XLNetLMHeadModel(cfg.model_config(len(tok), tok.pad_id))


def train_giant(cfg: XLNetPretrainingConfig, *, data: WikiTextForBert | None = None, device: Any = None,
                progress: bool = True, **fit_kwargs: Any) -> Artefact:
    """Pre-train XLNet as the ``bert`` giant is pre-trained (:func:`shoulders.recipes.bert.train_giant`): the same
    WordPiece vocabulary (learned once, shared), pairs, AdamW, warm-up and linear decay; evaluated every
    ``cfg.eval_every`` steps on ``cfg.eval_pairs`` fixed WikiText-2 validation pairs (``val_plm_acc``, ...)."""
    data = data if data is not None else wikitext_for_bert(cfg, progress=progress)
    tok = data.tok
    eval_batches = fixed_plm_batches(data.valid, tok, cfg)
    model = build(cfg, tok)
    snapshots = Snapshots(cfg.snapshots)
    batches = XLNetPretrainingBatches(data.train, tok, cfg, steps=cfg.steps)
    history = fit(model, batches, adamw(model, lr=cfg.lr, weight_decay=cfg.weight_decay, eps=cfg.adam_eps),
                  steps=cfg.steps, schedule=linear_warmup_decay(cfg.warmup, cfg.steps), clip=cfg.clip,
                  evaluate=lambda m: {f"val_{k}": v for k, v in evaluate_plm(m, eval_batches).items()},
                  eval_every=cfg.eval_every, callbacks=[snapshots, *fit_kwargs.pop("callbacks", ())], device=device,
                  progress=progress, **fit_kwargs)
    model = model.cpu().eval()
    metrics = evaluate_plm(model, eval_batches)
    unigram = unigram_plm_baseline(data.train, eval_batches)
    metrics.update({"unigram_plm_acc": unigram["plm_acc"], "unigram_plm_loss": unigram["plm_loss"]})
    long_from = batches.long_from
    long_steps = 0 if long_from is None else int((history.series("epoch")[1] >= long_from).sum())
    return Artefact(model=model, history=history, tokenizer=tok, metrics=metrics, snapshots=snapshots.states,
                    facts={"training pairs per pass": "fresh pairs of the WikiText-2 train articles, as BERT's",
                           "train articles": len(data.train), "wordpiece seconds": data.seconds["wordpiece"],
                           "steps at the long length": long_steps, "predicted per row": f"1/{cfg.predict_k}"})

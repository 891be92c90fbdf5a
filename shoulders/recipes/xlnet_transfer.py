"""Fine-tuning XLNet as chapter 14 fine-tunes BERT (Yang et al. 2019, §3.3): the same heads, data, schedule and
rates, with XLNet's input layout ``A [SEP] B [SEP] [CLS]`` (:func:`shoulders.text.xlnet_inputs.pack_xlnet`) and
the ``[CLS]`` read at the end. Fine-tuning uses the content stream only: no permutation, no query stream, every
token sees every other.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

from ..text.task_features import classification_features
from ..text.xlnet_inputs import pack_xlnet
from .finetune import BertFinetuningConfig

__all__ = ["XLNetFinetuningConfig", "xlnet_features"]


@dataclasses.dataclass
class XLNetFinetuningConfig(BertFinetuningConfig):
    """Chapter 15's fine-tuning runs: chapter 14's hyper-parameters (:class:`~shoulders.recipes.finetune.
    BertFinetuningConfig`) for XLNet, BERT and from scratch alike, on SST-2 (a few labels and all of them) and
    SNLI (trained on part of dev, tested on test below ``full``)."""

    page_presets: ClassVar = {
        # chapter 15's checks: SST-2 dev accuracy over the majority class (points) for the pre-trained XLNet with
        # all labels; whether pre-trained XLNet must beat from scratch by more than the seeds' spread (every
        # pre-trained seed above every from-scratch one) at the few-label budget (the first of sst2_budgets), and
        # with all labels (None / False: not asserted -- at smoke the giant has had one minute). Measured at cpu
        # (2026-12-07, two threads, seeds 0-2, each seed its own phrases): 300 labels 63.8 (63.6-64.0) vs 62.9
        # (61.5-64.2), inside the spread, so not asserted at cpu (on one shared sample for every seed it was 62.9
        # vs 58.3, asserted until then); all labels 80.3 (80.3-80.4) vs 79.4 (78.9-80.0)
        "smoke": dict(sst2_over_majority=None, few_labels_beats_spread=False, all_labels_beats_spread=False),
        "cpu": dict(sst2_over_majority=15.0, few_labels_beats_spread=False, all_labels_beats_spread=True),
        "full": dict(sst2_over_majority=15.0, few_labels_beats_spread=True, all_labels_beats_spread=True),
    }
    presets: ClassVar = {
        "smoke": dict(BertFinetuningConfig.presets["smoke"], sst2_budgets=(300,), sst2_train=1_000, snli_train=1_000,
                      eval_limit=500),
        # chapter 14's cpu runs (5e-4, three epochs up to 1,500 updates), three seeds for both tasks, with two
        # changes measured on the cpu giant (SST-2 dev, seeds 0-2, 1,000 labels): at least 300 updates, not 100 --
        # the pre-trained XLNet needs them to turn its features to the task (100: 62.8 pre-trained vs 66.8 from
        # scratch; 300: 69.4 vs 67.7; 1,000: 68.9 vs 67.5; rate 1e-3 or 2e-4 instead of 5e-4 at 300: 69.0, 66.4);
        # and budgets of 300 and 1,000 labels, chosen on one shared sample for every seed, where the gain was beyond
        # the seeds' spread only at 300 (62.9 vs 58.3) and a tie from 3,000 on (73.1 vs 73.7); with each seed its
        # own sample (2026-12-07) +0.9 / +0.8 at 300 / 1,000; SNLI on 6,000 pairs to keep the page near its budget
        "cpu": dict(BertFinetuningConfig.presets["cpu"], sst2_budgets=(300, 1_000), min_steps=300, snli_train=6_000),
        "full": dict(BertFinetuningConfig.presets["full"], sst2_budgets=(300, 1_000), min_steps=300),
    }


def xlnet_features(tok: Any, texts_a: Sequence[str], texts_b: Sequence[str] | None, labels: Sequence[int] | None,
                   max_len: int) -> list[dict[str, Any]]:
    """Classification features in XLNet's layout: ``A [SEP] (B [SEP]) [CLS]``, segment ids 0, 1, 2."""
    return classification_features(tok, texts_a, texts_b, labels, max_len, layout=pack_xlnet)

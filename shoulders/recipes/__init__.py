"""Recipes: data + model + the training loop → a trained artefact. The only layer that knows both
:mod:`shoulders.models` and :mod:`shoulders.train`.

* :mod:`~shoulders.recipes.word_vectors` -- word2vec, GloVe and fastText training, and the word-vector scores of
  chapters 4-6;
* :mod:`~shoulders.recipes.cove` -- CoVe's translation giants and the task models over [GloVe ; CoVe] (chapter 9);
* :mod:`~shoulders.recipes.translation` -- the Transformer's optimiser and schedule (chapter 12);
* :mod:`~shoulders.recipes.bert` -- BERT pre-training on WikiText-2, the recipe of the ``bert`` giant (chapter 14);
* :mod:`~shoulders.recipes.finetune` -- fine-tuning a pre-trained encoder with a task head, and the three ways to
  use it (frozen features, fine-tuning all, only the top layers);
* :mod:`~shoulders.recipes.three_ways` -- every giant of the book used three ways on the same tasks and budgets
  (chapter 16);
* :class:`~shoulders.recipes.artefact.Artefact` -- what a recipe returns and :mod:`shoulders.giants` caches.

Submodules load on first use (``sh.recipes.bert``).
"""
from __future__ import annotations

import importlib
from types import ModuleType

from .artefact import Artefact

__all__ = ["Artefact", "bert", "finetune", "three_ways", "translation", "word_vectors"]

_SUBMODULES = {"bert", "finetune", "three_ways", "translation", "word_vectors"}


def __getattr__(name: str) -> ModuleType:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

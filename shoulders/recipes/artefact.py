"""What a recipe hands back: the trained model and everything needed to use it again."""
from __future__ import annotations

import dataclasses
from typing import Any

from torch import nn

from ..train.history import History

__all__ = ["Artefact"]


@dataclasses.dataclass
class Artefact:
    """A trained model with its tokenizer (or vocabulary), training history, final metrics and facts for its card.

    :mod:`shoulders.giants` caches an artefact (weights, tokenizer file, history, metrics) and rebuilds it on
    later calls; ``metrics`` and ``facts`` (plain numbers and strings) go into the model card; ``snapshots`` (the
    model's ``state_dict`` after some steps of the run) are stored beside the final weights.
    """

    model: nn.Module
    history: History
    tokenizer: Any = None
    metrics: dict[str, float] = dataclasses.field(default_factory=dict)
    facts: dict[str, Any] = dataclasses.field(default_factory=dict)
    snapshots: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)  # step -> state_dict on the way

"""Chapter configurations: one dataclass per model, one preset per scale.

A chapter writes ``cfg = LSTMLMConfig.preset(sh.scale())`` and gets the settings for ``smoke``, ``cpu`` or
``full``; keyword overrides change single fields (``preset("cpu", lr=3e-3)``) and an unknown field is an error.

Each config lives next to the model it configures (``shoulders/models/rnnlm.py`` holds ``LSTMLMConfig``), the way
nanoGPT keeps ``GPTConfig`` beside ``GPT``, or beside the recipe it drives (``shoulders/recipes/bert.py`` holds
``BertPretrainingConfig``); this module holds only the base class. A config that can build a model also provides
``build()`` and ``example_batch()``, so one test exercises every preset of every chapter (one optimisation step
on a tiny batch, and one at the ``full`` shapes) and no preset rots unseen: :func:`shoulders.presets.all_configs`
lists them.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from ._scale import SCALES, check_scale, scale

C = TypeVar("C", bound="Config")


class ConfigError(ValueError):
    """A preset or override that does not fit the config."""


def check_snapshots(snapshots: Any, steps: int) -> None:
    """A giant's ``snapshots`` (the steps at which its recipe keeps a copy of the weights) must be increasing steps
    strictly between 0 and ``steps``; else a :class:`ConfigError` naming them."""
    if any(not 0 < int(s) < steps for s in snapshots) or list(snapshots) != sorted(set(snapshots)):
        raise ConfigError(f"snapshots must be increasing steps between 0 and steps={steps}, got {snapshots}")


LATE = "late"
"""Field metadata key of :func:`late_field`."""


def late_field(default: Any) -> Any:
    """A config field added after giants were trained with that config: a giant's cache key hashes it only when it
    is set away from ``default`` (:func:`key_fields`), so adding it leaves every cached giant's key -- and the
    weights people have already trained -- as they were. A new field made any other way changes every key of its
    config once (the giants retrain)."""
    return dataclasses.field(default=default, metadata={LATE: True})


def key_fields(cfg: Any) -> Any:
    """``cfg`` (a dataclass, and the dataclasses, lists, tuples and dicts inside it) as plain values, the way
    ``dataclasses.asdict`` gives them, except that a :func:`late_field` still at its default is left out."""
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return {f.name: key_fields(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)
                if not (f.metadata.get(LATE) and getattr(cfg, f.name) == f.default)}
    if isinstance(cfg, tuple) and hasattr(cfg, "_fields"):  # a named tuple
        return type(cfg)(*(key_fields(v) for v in cfg))
    if isinstance(cfg, (list, tuple)):
        return type(cfg)(key_fields(v) for v in cfg)
    if isinstance(cfg, dict):
        return {k: key_fields(v) for k, v in cfg.items()}
    return cfg


@dataclasses.dataclass
class Config:
    """Base class of every chapter config.

    Subclasses are dataclasses with defaults for every field and a ``presets`` class variable mapping each scale
    to the fields that differ from the defaults; ``page_presets`` (optional) maps each scale to what the chapter
    page measures and asserts at that scale, so no chapter needs an ``if scale == ...`` branch.
    """

    presets: ClassVar[dict[str, dict[str, Any]]] = {}
    page_presets: ClassVar[dict[str, dict[str, Any]]] = {}
    """Per scale, what a chapter's page measures and asserts beside training (thresholds of its checks, sizes of
    side measurements), read as ``cfg.page[...]``. Not fields: a threshold never changes what a config trains,
    nor the cache key of a giant trained with it."""

    @classmethod
    def preset(cls: type[C], scale_name: str | None = None, **overrides: Any) -> C:
        """The config for ``scale_name`` (default: the current scale), with ``overrides`` applied."""
        name = check_scale(scale_name) if scale_name is not None else scale()
        missing = [s for s in SCALES if s not in cls.presets]
        if missing:
            raise ConfigError(f"{cls.__name__} has no preset for scale(s) {missing}")
        cfg = cls.from_fields({**cls.presets[name], **overrides})
        cfg.scale = name
        return cfg

    @classmethod
    def from_fields(cls: type[C], values: Mapping[str, Any]) -> C:
        """``cls(**values)``, with an error naming every key that is not a field (and the fields there are)."""
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise ConfigError(f"{cls.__name__} has no field(s) {unknown}; its fields are {sorted(fields)}")
        return cls(**values)

    def replace(self: C, **changes: Any) -> C:
        """A copy with some fields changed (unknown fields are an error)."""
        fields = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - fields)
        if unknown:
            raise ConfigError(f"{type(self).__name__} has no field(s) {unknown}")
        new = dataclasses.replace(self, **changes)
        new.scale = getattr(self, "scale", None)
        return new

    @property
    def page(self) -> dict[str, Any]:
        """The :attr:`page_presets` of this config's scale (the current scale for a config built by hand)."""
        name = getattr(self, "scale", None) or scale()
        if self.page_presets and name not in self.page_presets:
            raise ConfigError(f"{type(self).__name__} has no page preset for scale {name!r}")
        return dict(self.page_presets.get(name, {}))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check field values; subclasses raise :class:`ConfigError` with a clear message."""

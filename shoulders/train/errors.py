"""The two errors the training loop raises on purpose, each saying what happened and what to do next."""
from __future__ import annotations

from pathlib import Path


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used: unreadable, truncated, or written by a different model.

    The message names the file, what is wrong and what to do; the files themselves are never deleted or
    overwritten by the code that raises this error.
    """


class TrainingDiverged(RuntimeError):
    """The loss (or the gradient norm, or the weights) became NaN or infinite.

    Raised *before* the optimiser applies the bad update, and no checkpoint of the bad state is written, so
    :attr:`checkpoint` -- the last good checkpoint folder, or ``None`` when the run kept none -- is intact.

    Attributes:
        step: the 1-based update step at which the non-finite value appeared.
        what: which quantity was non-finite (``"loss"``, ``"grad_norm"``, ``"parameters"``).
        value: the offending value.
        checkpoint: the last good checkpoint folder (a :class:`~pathlib.Path`) or ``None``.
    """

    def __init__(self, step: int, what: str, value: float, checkpoint: Path | None, checkpoint_step: int | None):
        self.step = step
        self.what = what
        self.value = value
        self.checkpoint = checkpoint
        self.checkpoint_step = checkpoint_step
        if checkpoint is not None:
            where = (
                f"The last good checkpoint is {checkpoint} (after step {checkpoint_step}); it was not touched. "
                f"Lower the learning rate or set clip=..., then call fit(..., checkpoint=...) again to resume from it."
            )
        else:
            where = "No checkpoint was kept (pass checkpoint=DIR, checkpoint_every=N to keep one)."
        if what == "parameters":
            happened = f"the weights after step {step} are not finite; they were not saved"
        else:
            happened = f"the {what} is {value} (not finite); the update of step {step} was not applied"
        super().__init__(f"training diverged at step {step}: {happened}. {where}")

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

    Raised *before* the optimiser applies the bad update, and no checkpoint of the bad state is written.
    :attr:`checkpoint` is the last checkpoint whose training loss was still sane (see
    :data:`shoulders.train.loop.SANE_FACTOR`; finite weights are not enough -- a run blowing up has them for a
    while), or ``None`` when the run kept none; newer checkpoints were renamed ``diverged-step-*`` (kept, never
    loaded by a resume), so calling ``fit`` again with the same ``checkpoint`` folder resumes from the sane one --
    with a lower rate via ``resume_lr=``.

    Attributes:
        step: the 1-based update step at which the non-finite value appeared.
        what: which quantity was non-finite (``"loss"``, ``"grad_norm"``, ``"parameters"``).
        value: the offending value.
        checkpoint: the last sane checkpoint folder (a :class:`~pathlib.Path`) or ``None``.
        set_aside: the checkpoint folders renamed ``diverged-step-*``.
    """

    def __init__(self, step: int, what: str, value: float, checkpoint: Path | None, checkpoint_step: int | None,
                 set_aside: list[Path] | None = None):
        self.step = step
        self.what = what
        self.value = value
        self.checkpoint = checkpoint
        self.checkpoint_step = checkpoint_step
        self.set_aside = list(set_aside or [])
        if checkpoint is not None:
            names = ", ".join(p.name for p in self.set_aside)
            aside = (f" Newer checkpoints, written while the loss was already blowing up, were renamed {names} "
                     "(kept, never resumed from)." if self.set_aside else "")
            where = (
                f"The last checkpoint with a sane loss is {checkpoint} (after step {checkpoint_step}); it was not "
                f"touched.{aside} To go on from it with a lower learning rate, call fit again with the same "
                f"checkpoint={str(checkpoint.parent)!r} and resume_lr=<a lower rate> (or set clip=...)."
            )
        else:
            where = "No checkpoint was kept (pass checkpoint=DIR, checkpoint_every=N to keep one)."
        if what == "parameters":
            happened = f"the weights after step {step} are not finite; they were not saved"
        else:
            happened = f"the {what} is {value} (not finite); the update of step {step} was not applied"
        super().__init__(f"training diverged at step {step}: {happened}. {where}")

"""Truncated backpropagation through time inside :func:`~shoulders.train.fit`: carry a recurrent state from one
window of a token stream to the next (Williams & Peng 1990; Mikolov 2012; Zaremba et al. 2014).

Any model that takes ``state=`` and ``return_state=True`` and returns ``{"loss", "state"}`` works
(:mod:`shoulders.models.rnnlm`'s LMs do); a state is one tensor ``(L, B, H)`` or a tuple of them (an LSTM's
``(h, c)``).
"""
from __future__ import annotations

from typing import Any, Union

import torch
from torch import nn

from .callbacks import Callback, Run

__all__ = ["CarryState", "State", "detach_state"]

State = Union[torch.Tensor, tuple[torch.Tensor, ...]]


def detach_state(state: State | None) -> State | None:
    """The same state values, cut from the graph that computed them (``None`` stays ``None``)."""
    if state is None:
        return None
    if isinstance(state, torch.Tensor):
        return state.detach()
    return tuple(s.detach() for s in state)


def _fits(state: State | None, x: torch.Tensor) -> bool:
    """Whether a carried state can start the rows of ``x`` (same batch size)."""
    if state is None:
        return False
    h = state if isinstance(state, torch.Tensor) else state[0]
    return h.shape[1] == x.shape[0]


class CarryState(Callback):
    """Truncated BPTT for :func:`shoulders.train.fit`: carry the recurrent state from window to window.

    Pass the *same* object twice -- as the loss and as a callback::

        carry = CarryState()
        fit(model, stream.bptt_batches(bptt=35, batch_size=20), opt, steps=..., loss_fn=carry, callbacks=[carry])

    Each step runs ``model(x, y, state=previous, return_state=True)`` and keeps the new state *detached*: window
    k+1 starts from the values window k ended with, and its backward pass stops there. The state is reset to zeros
    at the start of every pass over the data (``on_epoch_end``), when the batch size changes, and at the start of
    a fresh ``fit``; it is saved in checkpoints, so a resumed run carries on exactly. The loss dict also holds
    ``"tokens"`` (targets in the window), which ``fit`` logs cumulatively -- tokens per second is
    ``history.last("tokens") / history.last("time")``.

    Under DDP each process sees every N-th window, so consecutive windows of a process do not continue each other;
    give each process its own stream if the carried state matters there.
    """

    def __init__(self) -> None:
        self.state: State | None = None
        self._attached = False
        self._restored = False

    def reset(self) -> None:
        self.state = None

    def __call__(self, model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> dict[str, Any]:
        if not self._attached:
            raise RuntimeError("CarryState is the loss_fn but not a callback of this fit: pass it as both, "
                               "fit(..., loss_fn=carry, callbacks=[carry]), so it can reset at epoch boundaries")
        x, y = batch
        state = self.state if _fits(self.state, x) else None
        if state is not None:
            state = state.to(x.device) if isinstance(state, torch.Tensor) else tuple(s.to(x.device) for s in state)
        out = model(x, y, state=state, return_state=True)
        self.state = detach_state(out["state"])  # the values go on; the graph of this window does not
        rest = {k: v for k, v in out.items() if k != "state"}  # the loss and any other entries the model logs
        return {**rest, "tokens": y.numel()}

    def on_fit_start(self, run: Run) -> None:
        self._attached = True
        if not self._restored:
            self.reset()  # a fresh fit starts from zeros (a resumed one from its checkpointed state)
        self._restored = False

    def on_epoch_end(self, run: Run, epoch: int) -> None:
        self.reset()  # the next pass starts again at the beginning of the stream

    def on_fit_end(self, run: Run) -> None:
        self._attached = False

    def state_dict(self) -> dict[str, Any]:
        if self.state is None:
            return {}
        s = self.state
        return {"state": [s.cpu()] if isinstance(s, torch.Tensor) else [t.cpu() for t in s]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        saved = state.get("state")
        if saved:
            self.state = saved[0] if len(saved) == 1 else tuple(saved)
            self._restored = True

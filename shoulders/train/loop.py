"""The one training loop of the book: :func:`fit`.

Every chapter trains with it, from the NNLM to BERT. It does the update ``t = 1 .. steps`` of

    batch → device → loss = model(batch) (bf16 autocast on CUDA) → backward → grad norm (clip) → NaN guard
          → optimizer.step() → history → callbacks → evaluate (every eval_every)
          → checkpoint (every checkpoint_every)

and everything a chapter needs around it: a progress bar (:class:`~shoulders.train.Tracker`), a
:class:`~shoulders.train.History` of every step, early stopping, exact checkpoint/resume (weights, optimiser,
schedule, RNG, data position) and DDP under ``torchrun``.
"""
from __future__ import annotations

import contextlib
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import torch
from torch import nn

from ..device import autocast_dtype
from . import checkpoint as ckpt
from . import distributed
from .callbacks import Callback, EarlyStopping, Run, as_callbacks
from .errors import CheckpointError, TrainingDiverged
from .history import History
from .progress import RESERVED, Tracker
from .rng import get_rng_state, set_rng_state
from .schedules import ScheduledLR
from .stream import BatchStream

Batch = Any
LossFn = Callable[[nn.Module, Batch], "torch.Tensor | Mapping[str, Any]"]


def fit(
    model: nn.Module,
    batches: Iterable[Batch],
    optimizer: torch.optim.Optimizer,
    *,
    steps: int,
    schedule: Callable[[int], float] | None = None,
    clip: float | None = None,
    evaluate: Callable[[nn.Module], Mapping[str, Any]] | None = None,
    eval_every: int | None = None,
    callbacks: Iterable[Callback] = (),
    checkpoint: str | Path | None = None,
    checkpoint_every: int | None = None,
    early_stopping: EarlyStopping | None = None,
    device: torch.device | str | None = None,
    amp: bool = True,
    progress: bool = True,
    loss_fn: LossFn | None = None,
    seed: int | None = None,
    resume_lr: float | Iterable[float] | None = None,
) -> History:
    """Train ``model`` for ``steps`` optimiser updates and return the :class:`History`.

    Args:
        model: returns the loss: ``model(batch)`` gives a scalar tensor, or a dict with ``"loss"`` whose other
            scalar entries are logged under their names (``"tokens"``: tokens in the batch, logged cumulatively).
            A tuple/list batch is passed as ``model(*batch)``, a dict as ``model(**batch)``, anything else as
            ``model(batch)``; tensors inside are moved to the device first.
        batches: a re-iterable (list, DataLoader, object whose ``__iter__`` starts a new pass), cycled over
            epochs until ``steps`` updates are done. See :mod:`shoulders.train.stream` for how shuffling is
            seeded per epoch and replayed on resume.
        optimizer: built on ``model``'s parameters (one param group per learning rate).
        steps: the total number of updates (counting those of a resumed checkpoint).
        schedule: lr multiplier of the 1-based step (:mod:`shoulders.train.schedules`), applied to each
            group's base lr; ``None`` leaves the optimiser's lrs alone.
        clip: max global L2 norm of the gradient (``clip_grad_norm_``); the norm before clipping is logged.
        evaluate: ``evaluate(model) -> {name: number}``, run every ``eval_every`` updates and after the last one,
            in ``model.eval()`` mode under ``torch.no_grad()`` (train mode is restored afterwards).
        callbacks: :class:`~shoulders.train.Callback` objects (gradual unfreezing, ...).
        checkpoint: a folder; if it holds a checkpoint, training resumes from it exactly, else one is written
            every ``checkpoint_every`` updates and at the end (see :mod:`shoulders.train.checkpoint`).
        early_stopping: an :class:`~shoulders.train.EarlyStopping` watching a metric of ``evaluate``.
        device: default :func:`shoulders.device` (``cuda:LOCAL_RANK`` under torchrun with CUDA).
        amp: bf16 autocast for the forward pass on CUDA (no effect elsewhere).
        progress: show a tqdm bar (rank 0 only). A live loss plot in a notebook is a callback:
            ``callbacks=[shoulders.viz.LivePlot()]``.
        loss_fn: ``loss_fn(model, batch)`` replaces ``model(batch)`` (same return types).
        seed: seeds the per-epoch data order; default: drawn from torch's global RNG (so ``shoulders.seed``
            fixes it). A resumed run uses the seed stored in its checkpoint.
        resume_lr: the base learning rate (one number, or one per param group) from here on, replacing the one a
            resumed checkpoint stored -- how to follow :class:`TrainingDiverged`'s advice: call ``fit`` again with
            the same ``checkpoint`` and a lower ``resume_lr``. The schedule still shapes it.

    Raises:
        TrainingDiverged: the loss or gradient norm became NaN/inf (the bad update is not applied). The message
            names the last checkpoint whose loss was sane (its training loss since the previous checkpoint within
            ``SANE_FACTOR`` times the best so far; it is always kept) and sets newer ones aside as
            ``diverged-step-*`` (kept, not deleted), so ``fit`` resumes from the sane one.
        CheckpointError: the checkpoint folder cannot be written (checked before the first step), or holds an
            unreadable, altered (checksums) or foreign checkpoint.

    Stopping: when a callback calls ``run.stop(...)`` (early stopping does), the current step is evaluated and
    checkpointed and ``fit`` returns; a resumed early-stopped run returns at once. A ``KeyboardInterrupt`` stops
    training with the last checkpoint intact; calling ``fit`` again with the same ``checkpoint`` resumes.
    """
    steps = int(steps)
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    for name, every in (("eval_every", eval_every), ("checkpoint_every", checkpoint_every)):
        if every is not None and int(every) < 1:
            raise ValueError(f"{name} must be >= 1 or None, got {every}")
    if early_stopping is not None and evaluate is None:
        raise ValueError("early_stopping needs evaluate=... to produce the metric it watches")
    if checkpoint_every is not None and checkpoint is None:
        raise ValueError("checkpoint_every needs checkpoint=DIR")

    info = distributed.setup(torch.device(device) if device is not None else None)
    dev = distributed.training_device(info, device)
    model.to(dev)
    cbs = as_callbacks(callbacks) + ([early_stopping] if early_stopping is not None else [])
    scheduler = ScheduledLR(optimizer, schedule) if schedule is not None else None
    root = Path(checkpoint) if checkpoint is not None else None
    if root is not None:
        ckpt.check_writable(root)  # a bad folder fails now, not after the last step

    # -- resume or start -------------------------------------------------------------------------------------
    state: dict[str, Any] | None = None
    last_good: tuple[Path, int] | None = None  # the newest checkpoint
    sanity = Sanity()
    if root is not None and (folder := ckpt.latest_checkpoint(root)) is not None:
        state = ckpt.load_checkpoint(folder, model, optimizer)
        last_good = (folder, int(state["step"]))
        sanity.resumed(folder, int(state["step"]), state.get("sanity"))
        if int(state.get("world_size", 1)) != info.world_size:
            raise CheckpointError(
                f"{folder} was written by {state.get('world_size', 1)} process(es) but this run has "
                f"{info.world_size}; the data would be sharded differently. Resume with the same number of processes."
            )
    history = History.from_state_dict(state["history"]) if state else History()
    if state is not None:
        seed = int(state["data"]["seed"])
    elif seed is None:
        seed = int(torch.randint(0, 2**31 - 1, ()).item())
    seed = distributed.broadcast_int(seed, info, dev)
    stream = BatchStream(distributed.shard(batches, info, seed), seed)
    run = Run(model=model, optimizer=optimizer, history=history, steps=steps, rank=info.rank,
              world_size=info.world_size, checkpoint=root)
    elapsed, tokens = 0.0, 0.0
    if state is not None:
        _restore(state, scheduler, cbs, stream, run, folder)
        elapsed, tokens = float(state.get("elapsed", 0.0)), float(state.get("tokens", 0.0))
        rng = state["rng"] if info.rank == 0 else ckpt.read_state(folder, name=f"rng-{info.rank}.pt")["rng"]
    if resume_lr is not None:
        set_base_lrs(optimizer, scheduler, resume_lr)
    train_model = distributed.wrap(model, info, dev)
    model.train()
    for cb in cbs:
        cb.on_fit_start(run)
    if state is not None:
        set_rng_state(rng)  # last: nothing above may consume the training RNG differently from the original run

    start = run.step
    if start >= steps or run.stop_reason is not None:
        if info.is_main and progress:
            why = f"it stopped early ({run.stop_reason})" if run.stop_reason else f"steps={steps} <= {start}"
            print(f"checkpoint {last_good[0] if last_good else root} is at step {start}: nothing to train, {why}")
        for cb in cbs:
            cb.on_fit_end(run)
        return history

    # -- train -------------------------------------------------------------------------------------------------
    tracker = Tracker(steps, history, evaluate=evaluate, eval_every=eval_every, last=steps,
                      progress=progress and info.is_main, initial=start)
    bar = tracker.bar
    adt = autocast_dtype(dev) if amp else None
    autocast = (lambda: torch.autocast(device_type=dev.type, dtype=adt)) if adt is not None else contextlib.nullcontext
    params = [p for group in optimizer.param_groups for p in group["params"]]
    clock = time.perf_counter() - elapsed
    t = start
    try:
        for t in range(start + 1, steps + 1):
            epoch = stream.epoch
            batch = next(stream)
            if stream.epoch != epoch:
                run.epoch = stream.epoch
                for cb in cbs:
                    cb.on_epoch_end(run, epoch)
            batch = to_device(batch, dev)
            lrs = scheduler.set_step(t) if scheduler is not None else [g["lr"] for g in optimizer.param_groups]
            optimizer.zero_grad(set_to_none=True)
            with autocast():
                out = loss_fn(train_model, batch) if loss_fn is not None else call_model(train_model, batch)
            loss, extras = split_output(out)
            loss.backward()
            with_grad = [p for p in params if p.grad is not None]
            norm = grad_norm(with_grad, dev)
            if clip is not None:
                clip_(with_grad, float(clip), norm)
            # one host sync per step: loss, grad norm and the model's extra scalars (averaged over ranks)
            names = list(extras)
            values = torch.stack([loss.detach().float(), norm.float().to(dev)] + [extras[k] for k in names])
            host = distributed.all_reduce_mean_(values, info).tolist()
            loss_v, norm_v = host[0], host[1]
            logged = dict(zip(names, host[2:]))
            if not math.isfinite(loss_v) or not math.isfinite(norm_v):
                what, value = ("loss", loss_v) if not math.isfinite(loss_v) else ("grad_norm", norm_v)
                raise sanity.diverged(t, what, value, root, info)
            sanity.add(loss_v)
            optimizer.step()
            run.step = t
            if "tokens" in logged:
                tokens += logged.pop("tokens") * info.world_size
                logged["tokens"] = tokens
            logs = {"loss": loss_v, **{f"lr/{i}": float(lr) for i, lr in enumerate(lrs)}, "grad_norm": norm_v,
                    "time": time.perf_counter() - clock, "epoch": stream.epoch, **logged}
            history.log(t, **logs)
            for cb in cbs:
                cb.on_step_end(run, logs)
            if evaluate is not None and (tracker.due(t) or run.stop_reason is not None):
                metrics = tracker.evaluate(model, t)
                for cb in cbs:
                    cb.on_evaluate(run, metrics)
            periodic = checkpoint_every is not None and t % int(checkpoint_every) == 0
            if root is not None and (periodic or t == steps or run.stop_reason is not None):
                state_now = {
                    "step": t, "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict() if scheduler is not None else None,
                    "rng": get_rng_state(), "data": stream.state_dict(), "history": history.state_dict(),
                    "callbacks": callback_states(cbs), "world_size": info.world_size,
                    "elapsed": time.perf_counter() - clock, "tokens": tokens, "stop_reason": run.stop_reason,
                    "steps": steps,
                }
                last_good = (save(root, t, model, state_now, info, sanity), t)
            tracker.advance(loss_v, lrs[0] if lrs else None)
            if run.stop_reason is not None:
                bar.write(f"step {t}: {run.stop_reason}")
                break
    except KeyboardInterrupt as err:
        where = (f"the last checkpoint is {last_good[0]} (step {last_good[1]}); call fit again with "
                 f"checkpoint={root} to resume") if last_good else "no checkpoint was written"
        msg = f"training interrupted at step {t} of {steps}; {where}"
        if hasattr(err, "add_note"):
            err.add_note(msg)
        elif info.is_main:
            print(msg, file=sys.stderr)
        raise
    finally:
        tracker.close()
    optimizer.zero_grad(set_to_none=True)  # free the last gradients (callbacks have seen them)
    for cb in cbs:
        cb.on_fit_end(run)
    return history


# -- pieces of a step --------------------------------------------------------------------------------------------
def to_device(batch: Batch, dev: torch.device) -> Batch:
    """``batch`` with every tensor inside (tuples, lists, dicts, namedtuples) moved to ``dev``."""
    if isinstance(batch, torch.Tensor):
        return batch.to(dev, non_blocking=dev.type == "cuda")
    if isinstance(batch, Mapping):
        moved = {k: to_device(v, dev) for k, v in batch.items()}
        if type(batch) is dict:
            return moved
        try:
            return type(batch)(moved)  # OrderedDict, a tokenizer's BatchEncoding, ...
        except TypeError:
            return moved
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(to_device(v, dev) for v in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(v, dev) for v in batch)
    return batch


def call_model(model: nn.Module, batch: Batch) -> Any:
    """``model(**batch)`` for a dict, ``model(*batch)`` for a tuple/list, else ``model(batch)``."""
    if isinstance(batch, Mapping):
        return model(**batch)
    if isinstance(batch, (tuple, list)):
        return model(*batch)
    return model(batch)


def split_output(out: Any) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The loss and the other scalar entries (as float32 0-d tensors on the loss's device) of a model output."""
    if isinstance(out, torch.Tensor):
        loss, rest = out, {}
    elif isinstance(out, Mapping) and "loss" in out:
        loss, rest = out["loss"], {k: v for k, v in out.items() if k != "loss"}
    else:
        kind = f"a dict with keys {sorted(out)}" if isinstance(out, Mapping) else type(out).__name__
        raise TypeError("the model (or loss_fn) must return the loss as a scalar tensor or a dict with a 'loss' "
                        f"entry; got {kind}")
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        shape = tuple(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
        raise TypeError(f"the loss must be a scalar tensor, got {shape}; reduce it (e.g. loss.mean()) in the model")
    if not loss.requires_grad:
        raise RuntimeError("the loss does not require grad: was it computed under torch.no_grad(), "
                           "or are all parameters frozen?")
    extras: dict[str, torch.Tensor] = {}
    for key, value in rest.items():
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            extras[key] = value.detach().float().reshape(()).to(loss.device)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            extras[key] = torch.tensor(float(value), device=loss.device)
        else:
            continue  # non-scalars (logits, hidden states) are not logged
        if key in RESERVED or key.startswith("lr/"):
            raise ValueError(f"the model's output entry {key!r} clashes with a name fit logs itself ({RESERVED}, lr/*)")
    return loss.reshape(()), extras


def grad_norm(params: list[torch.Tensor], dev: torch.device) -> torch.Tensor:
    """Global L2 norm of the parameters' gradients (a 0-d tensor; 0 when there are none).

    Sparse gradients (an ``nn.Embedding``/``EmbeddingBag`` with ``sparse=True``, as fastText's table A) count
    with the norm of their coalesced values: a row that appears twice in the batch adds its two updates first,
    exactly as the dense gradient would.
    """
    if not params:
        return torch.zeros((), device=dev)
    gs = [p.grad.coalesce().values() if p.grad.is_sparse else p.grad for p in params]
    if hasattr(torch.nn.utils, "get_total_norm"):
        return torch.nn.utils.get_total_norm(gs, 2.0)
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g, 2.0) for g in gs]), 2.0)


def clip_(params: list[torch.Tensor], max_norm: float, norm: torch.Tensor) -> None:
    """Scale gradients so their global norm is at most ``max_norm`` (Pascanu et al., 2013, §3.2).

    Works on dense and sparse gradients alike (a sparse gradient is scaled in place, values only).
    """
    coef = torch.clamp(max_norm / (norm + 1e-6), max=1.0)
    for p in params:
        p.grad.mul_(coef.to(p.grad.device))


# -- checkpoints -------------------------------------------------------------------------------------------------
def _restore(state: dict[str, Any], scheduler: ScheduledLR | None, cbs: list[Callback], stream: BatchStream, run: Run,
             folder: Path) -> None:
    saved = state.get("scheduler")
    if scheduler is not None and saved:
        now = scheduler.state_dict()["schedule"]
        if saved.get("schedule") and now and saved["schedule"] != now:
            warnings.warn(f"{folder} was trained with schedule {saved['schedule']} but fit now has {now}", stacklevel=3)
        scheduler.load_state_dict(saved)
    elif (scheduler is None) != (not saved):
        warnings.warn(f"{folder} was trained {'with' if saved else 'without'} a schedule but fit now runs "
                      f"{'with' if scheduler is not None else 'without'} one", stacklevel=3)
    saved_cbs = state.get("callbacks", {})
    keys = callback_keys(cbs)
    for key, cb in zip(keys, cbs):
        if key in saved_cbs:
            cb.load_state_dict(saved_cbs[key])
    orphans = sorted(set(saved_cbs) - set(keys))
    if orphans:
        warnings.warn(f"{folder} holds the state of callback(s) {orphans} that this fit does not have", stacklevel=3)
    stream.load_state_dict(state["data"])
    run.step, run.epoch, run.stop_reason = int(state["step"]), stream.epoch, state.get("stop_reason")


def callback_keys(cbs: list[Callback]) -> list[str]:
    """``"EarlyStopping"``, ``"GradualUnfreezing"``, ... (``"Name#1"`` for a second of a kind): how a callback's
    state is found again in a checkpoint, whatever other callbacks the resumed fit has."""
    seen: dict[str, int] = {}
    keys = []
    for cb in cbs:
        name = type(cb).__name__
        keys.append(name if name not in seen else f"{name}#{seen[name]}")
        seen[name] = seen.get(name, 0) + 1
    return keys


def callback_states(cbs: list[Callback]) -> dict[str, Any]:
    """The non-empty callback states, by :func:`callback_keys`."""
    return {key: st for key, cb in zip(callback_keys(cbs), cbs) if (st := cb.state_dict())}


def save(root: Path, step: int, model: nn.Module, state: dict[str, Any], info: distributed.DistInfo,
         sanity: "Sanity") -> Path:
    """Write a checkpoint (rank 0 the weights and state, every rank its RNG), refusing non-finite weights; the
    last checkpoint with a sane loss is kept beside the newest."""
    checks = [p.detach().isfinite().all() for p in model.parameters()]
    if checks and not bool(torch.stack(checks).all()):
        raise sanity.diverged(step, "parameters", math.nan, root, info)
    state = {**state, "sanity": sanity.checkpoint()}
    if info.is_main:
        ckpt.begin(root, step)
    distributed.barrier(info)
    tmp = ckpt.tmp_dir(root, step)
    if info.is_main:
        ckpt.write_weights(tmp, model, step)
        ckpt.write_state(tmp, {"format": ckpt.FORMAT, **state})
    else:
        ckpt.write_state(tmp, {"rng": state["rng"]}, name=f"rng-{info.rank}.pt")
    distributed.barrier(info)
    folder = ckpt.step_dir(root, step)
    sanity.saved(folder, step, state["sanity"]["sane"])
    if info.is_main:
        ckpt.commit(root, step, protect=sanity.last_sane[1] if sanity.last_sane else None)
    distributed.barrier(info)
    return folder


SANE_FACTOR = 2.0
"""A checkpoint is *sane* when the mean training loss since the previous checkpoint is at most this many times the
best such mean so far: a run that is blowing up (loss 10^3 where it was 5) is not, though its weights are finite."""


class Sanity:
    """Which checkpoint a diverged run should go back to: the last one whose loss was sane (:data:`SANE_FACTOR`)."""

    def __init__(self) -> None:
        self.best: float | None = None
        self.last_sane: tuple[Path, int] | None = None
        self._sum, self._n = 0.0, 0

    def resumed(self, folder: Path, step: int, saved: Mapping[str, Any] | None) -> None:
        self.last_sane = (folder, step)  # a resume starts from it: the newest left after a divergence is sane
        if saved:
            self.best = saved.get("best")

    def add(self, loss: float) -> None:
        self._sum += loss
        self._n += 1

    def checkpoint(self) -> dict[str, Any]:
        """The sanity facts of a checkpoint about to be written (the mean loss since the previous one)."""
        interval = self._sum / self._n if self._n else None
        sane = interval is None or (math.isfinite(interval)
                                    and (self.best is None or interval <= SANE_FACTOR * self.best))
        if sane and interval is not None:
            self.best = interval if self.best is None else min(self.best, interval)
        self._sum, self._n = 0.0, 0
        return {"interval_loss": interval, "best": self.best, "sane": bool(sane)}

    def saved(self, folder: Path, step: int, sane: bool) -> None:
        if sane:
            self.last_sane = (folder, step)

    def diverged(self, step: int, what: str, value: float, root: Path | None,
                 info: distributed.DistInfo) -> TrainingDiverged:
        """The error to raise; checkpoints newer than the last sane one are renamed ``diverged-step-*``."""
        aside: list[Path] = []
        if root is not None and self.last_sane is not None and info.is_main:
            aside = ckpt.set_aside(root, after=self.last_sane[1])
        return TrainingDiverged(step, what, value, *(self.last_sane or (None, None)), set_aside=aside)


def set_base_lrs(optimizer: torch.optim.Optimizer, scheduler: ScheduledLR | None,
                 lrs: float | Iterable[float]) -> None:
    """Make ``lrs`` (one number, or one per param group) the optimiser's base rates, under a schedule or not."""
    groups = optimizer.param_groups
    values = [float(lrs)] * len(groups) if isinstance(lrs, (int, float)) else [float(x) for x in lrs]
    if len(values) != len(groups) or not all(math.isfinite(v) and v > 0 for v in values):
        raise ValueError(f"resume_lr must be one positive rate or one per param group ({len(groups)}), got {lrs!r}")
    for group, lr in zip(groups, values):
        group["lr"] = group["initial_lr"] = lr
    if scheduler is not None:
        scheduler.base_lrs = values

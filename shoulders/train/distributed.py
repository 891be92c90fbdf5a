"""The same :func:`~shoulders.train.fit` on several processes: DistributedDataParallel under ``torchrun``.

Launch a script that calls ``fit`` with ``torchrun --nproc_per_node N script.py``; nothing in the script changes.
``fit`` then

* joins the process group from torchrun's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
  ``MASTER_ADDR``/``MASTER_PORT``): NCCL when training on CUDA (process ``LOCAL_RANK`` on GPU ``LOCAL_RANK``),
  gloo on CPU;
* wraps the model in ``DistributedDataParallel`` (gradients are averaged over processes after ``backward``),
  after loading any checkpoint, so every rank starts from the same weights;
* shards the data so each update sees ``N`` different batches, one per process (a global batch ``N`` times the
  per-process one):

  - a ``DataLoader`` over a map-style dataset with a sequential or random sampler is rebuilt with a
    ``DistributedSampler`` (same batch size, workers, collate function; ``shuffle`` kept; ``set_epoch`` is
    called every epoch) -- rank ``r`` gets samples ``r, r+N, r+2N, ...`` of each (shuffled) pass;
  - anything else (a list of batches, an iterable, an ``IterableDataset`` loader) is *rank-strided*: every
    process iterates all batches and keeps batch ``i`` when ``i % N == r``; a last incomplete round of ``N``
    batches is dropped so all processes do the same number of updates;

* logs the loss averaged over processes, shows progress and writes checkpoints on rank 0 only (each rank adds
  its own RNG state to the checkpoint), and evaluates on every rank (the weights are identical, so
  early-stopping decisions agree without communication).

Assumptions: one node (checkpoints are read from a shared folder), the same model and optimiser built on every
rank, ``loss_fn`` (if given) calls ``model(...)`` so DDP sees the forward pass, and no change to which parameters
train (so no :class:`~shoulders.train.GradualUnfreezing`). The script may call :func:`cleanup` at its end.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Iterable, Iterator

import torch
import torch.distributed as dist
from torch import nn

from ..device import device as default_device


@dataclasses.dataclass(frozen=True)
class DistInfo:
    """Where this process stands: rank 0 of 1 when not distributed."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    backend: str | None = None

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def launched_by_torchrun() -> bool:
    """True when torchrun (or ``torch.distributed.run``) started this process with more than one process."""
    env = os.environ
    return all(k in env for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")) and int(env["WORLD_SIZE"]) > 1


def setup(dev: torch.device | None = None) -> DistInfo:
    """Join (or reuse) the process group; returns :class:`DistInfo` (single-process when not launched)."""
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if dist.is_available() and dist.is_initialized():
        return DistInfo(dist.get_rank(), dist.get_world_size(), local_rank, dist.get_backend())
    if not launched_by_torchrun():
        return DistInfo()
    if not dist.is_available():
        raise RuntimeError("this PyTorch build has no torch.distributed; cannot run under torchrun")
    wanted = dev if dev is not None else default_device()
    backend = "nccl" if torch.device(wanted).type == "cuda" else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
    dist.init_process_group(backend=backend)  # env:// -- torchrun's variables
    return DistInfo(dist.get_rank(), dist.get_world_size(), local_rank, backend)


def training_device(info: DistInfo, dev: torch.device | str | None = None) -> torch.device:
    """The device of this process: ``dev`` if given, ``cuda:LOCAL_RANK`` under NCCL, else the default device."""
    if dev is not None:
        return torch.device(dev)
    if info.enabled and info.backend == "nccl":
        return torch.device("cuda", info.local_rank)
    return default_device()


def wrap(model: nn.Module, info: DistInfo, dev: torch.device) -> nn.Module:
    """``model`` wrapped in DistributedDataParallel when distributed, else ``model`` itself."""
    if not info.enabled:
        return model
    from torch.nn.parallel import DistributedDataParallel

    if dev.type != "cuda":
        return DistributedDataParallel(model)
    return DistributedDataParallel(model, device_ids=[dev.index if dev.index is not None else info.local_rank])


class RankStrided:
    """Rank ``rank`` of ``world_size`` keeps batch ``i`` of each pass when ``i % world_size == rank``.

    Only complete rounds of ``world_size`` batches are used, so every rank yields the same number of batches.
    """

    def __init__(self, batches: Iterable[Any], rank: int, world_size: int):
        self.batches, self.rank, self.world_size = batches, rank, world_size

    def set_epoch(self, epoch: int) -> None:
        for owner in (self.batches, getattr(self.batches, "sampler", None)):
            fn = getattr(owner, "set_epoch", None)
            if callable(fn):
                fn(epoch)

    def __iter__(self) -> Iterator[Any]:
        mine = None
        for i, batch in enumerate(self.batches):
            if i % self.world_size == self.rank:
                mine = batch
            if i % self.world_size == self.world_size - 1:
                yield mine
                mine = None


def shard(batches: Iterable[Any], info: DistInfo, seed: int) -> Iterable[Any]:
    """This rank's share of ``batches`` (see the module docstring); ``batches`` itself when not distributed."""
    if not info.enabled:
        return batches
    from torch.utils.data import DataLoader, DistributedSampler, IterableDataset, RandomSampler, SequentialSampler

    if isinstance(batches, DataLoader):
        if isinstance(batches.sampler, DistributedSampler):
            return batches
        rebuildable = (
            not isinstance(batches.dataset, IterableDataset)
            and batches.batch_size is not None
            and type(batches.sampler) in (RandomSampler, SequentialSampler)
        )
        if rebuildable:
            sampler = DistributedSampler(
                batches.dataset, num_replicas=info.world_size, rank=info.rank,
                shuffle=isinstance(batches.sampler, RandomSampler), seed=seed, drop_last=batches.drop_last,
            )
            kwargs: dict[str, Any] = dict(
                batch_size=batches.batch_size, sampler=sampler, num_workers=batches.num_workers,
                collate_fn=batches.collate_fn, pin_memory=batches.pin_memory, drop_last=batches.drop_last,
                timeout=batches.timeout, worker_init_fn=batches.worker_init_fn,
                persistent_workers=batches.persistent_workers,
            )
            if batches.num_workers > 0:
                kwargs["prefetch_factor"] = batches.prefetch_factor
                kwargs["multiprocessing_context"] = batches.multiprocessing_context
            return DataLoader(batches.dataset, **kwargs)
    return RankStrided(batches, info.rank, info.world_size)


def broadcast_int(value: int, info: DistInfo, dev: torch.device) -> int:
    """Rank 0's ``value`` on every rank."""
    if not info.enabled:
        return int(value)
    t = torch.tensor([int(value)], dtype=torch.int64, device=dev if info.backend == "nccl" else "cpu")
    dist.broadcast(t, src=0)
    return int(t.item())


def all_reduce_mean_(values: torch.Tensor, info: DistInfo) -> torch.Tensor:
    """Average ``values`` (a 1-D tensor) over ranks, in place."""
    if info.enabled:
        dist.all_reduce(values, op=dist.ReduceOp.SUM)
        values /= info.world_size
    return values


def barrier(info: DistInfo) -> None:
    if info.enabled:
        dist.barrier()


def cleanup() -> None:
    """Leave the process group (call once at the end of a torchrun script)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()

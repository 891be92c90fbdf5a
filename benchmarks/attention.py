"""Attention benchmark: our encoder layer against torch's, and T-DMCA against full attention on long sequences.

    python benchmarks/attention.py                               # both parts, lengths 512 ... 8192
    python benchmarks/attention.py --device cuda
    python benchmarks/attention.py --part long --lengths 512 1024 2048   # a quicker look
    python benchmarks/attention.py --part layer --batch 64 --seq 128

Runs on one CPU thread unless ``--threads`` says otherwise (a GPU uses its own kernels).

1. **Encoder layer** (``shoulders.models.transformer_blocks.EncoderLayer``) against ``torch.nn.TransformerEncoderLayer``
   with the same sizes, weights and settings (post-LN and pre-LN, ReLU, dropout 0.1, training mode, a key padding
   mask), forward + backward. Both call the same fused attention kernel; torch's layer has a fast path only for
   inference.
2. **T-DMCA vs full attention** (Liu et al. 2018), causal self-attention modules (projections included) at each
   of ``--lengths``: full attention through the fused kernel (``F.scaled_dot_product_attention``), full attention
   written out (eq. 1, the ``T x T`` weights stored: what ``need_weights=True`` costs), local attention (blocks of
   ``--block``), memory-compressed attention (``--compression``-fold) as the module runs it (its causal rule as
   one mask per chunk of queries for the fused kernel) and with that rule written out (``written_out=True``, the
   weights stored). Forward + backward time and peak memory above the inputs: ``torch.cuda.max_memory_allocated``
   on a GPU, on a CPU the allocations the torch profiler records (``profile_memory=True``), summed in time order.
   A length that runs out of memory prints "OOM".

**Timing.** What is compared runs alternately in one process -- ours, torch, ours, torch, ... (part 2: every
variant once per round) -- ``--repeats`` (``--long-repeats``) rounds after a warm-up, so a change in the machine's
load hits every side alike. Each side prints its median and its minimum; part 1 prints the ratio ours / torch
(< 1: ours is faster) as the median of the per-round ratios and as the ratio of the minima. The load average
(what ``uptime`` prints) is printed before and after: on a shared machine, read the times with it.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
from typing import Callable  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from shoulders._timing import alternate  # noqa: E402
from shoulders.models.attention import MultiHeadAttention  # noqa: E402
from shoulders.models.tdmca import LocalAttention, MemoryCompressedAttention  # noqa: E402
from shoulders.models.transformer_blocks import BlockConfig, EncoderLayer, copy_into_torch_encoder_layer  # noqa: E402


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def load() -> str:
    """The 1, 5 and 15 minute load averages (what ``uptime`` prints)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # not on every platform
        return "unknown"


def peak_bytes(fn: Callable[[], None], device: torch.device) -> int:
    """Peak bytes allocated while ``fn`` runs, above what was allocated before."""
    if device.type == "cuda":
        sync(device)
        torch.cuda.empty_cache()
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        fn()
        sync(device)
        return torch.cuda.max_memory_allocated(device) - base
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                    if e.name() == "[memory]")
    now = peak = 0
    for _, n in events:  # allocations are positive, frees negative
        now += n
        peak = max(peak, now)
    return peak


def bench_layer(args: argparse.Namespace, device: torch.device) -> None:
    d, h, ff, B, T = args.d_model, args.heads, args.d_ff, args.batch, args.seq
    print(f"== encoder layer, forward + backward: d_model {d}, heads {h}, d_ff {ff}, batch {B} x {T} tokens, "
          f"dropout 0.1, training mode, {device} ==")
    torch.manual_seed(0)
    x = torch.randn(B, T, d, device=device, requires_grad=True)
    lengths = torch.randint(T // 2, T + 1, (B,), device=device)
    keep = torch.arange(T, device=device)[None, :] < lengths[:, None]  # (B, T) True = real
    for norm_first in (False, True):
        ours = EncoderLayer(BlockConfig(d, h, ff, dropout=0.1, norm_first=norm_first)).to(device).train()
        ref = nn.TransformerEncoderLayer(d, h, ff, dropout=0.1, batch_first=True, norm_first=norm_first)
        ref = ref.to(device).train()
        copy_into_torch_encoder_layer(ours, ref)

        def run_ours() -> None:
            ours(x, mask=keep[:, None, None, :])[0].sum().backward()

        def run_ref() -> None:
            ref(x, src_key_padding_mask=~keep).sum().backward()

        t = alternate({"ours": run_ours, "torch": run_ref}, args.repeats, 2, lambda: sync(device))
        ratios = [a / b for a, b in zip(t["ours"], t["torch"])]  # each round's pair ran back to back
        name = "pre-LN " if norm_first else "post-LN"
        print(f"  {name}: ours {statistics.median(t['ours']) * 1e3:8.2f} ms (min {min(t['ours']) * 1e3:8.2f}) | "
              f"torch {statistics.median(t['torch']) * 1e3:8.2f} ms (min {min(t['torch']) * 1e3:8.2f}) | "
              f"ratio ours/torch: median {statistics.median(ratios):.2f}, of minima "
              f"{min(t['ours']) / min(t['torch']):.2f} ({args.repeats} alternating rounds)")


def bench_long(args: argparse.Namespace, device: torch.device) -> None:
    d, h = args.long_d_model, args.long_heads
    print(f"== causal self-attention over long sequences, forward + backward: d_model {d}, heads {h}, batch 1, "
          f"local block {args.block}, compression {args.compression}, {device} ==")
    torch.manual_seed(0)
    modules = {
        "full (fused)": MultiHeadAttention(d, h),
        "full (eq. 1 explicit)": MultiHeadAttention(d, h),
        f"local (block {args.block})": LocalAttention(d, h, block_size=args.block),
        f"mem-compressed (c={args.compression})": MemoryCompressedAttention(d, h, compression=args.compression),
        "mem-compressed, written out": MemoryCompressedAttention(d, h, compression=args.compression,
                                                                written_out=True),
    }
    for module in modules.values():
        module.to(device).train()
    width = 36
    print(f"  time: median (minimum) of {args.long_repeats} alternating rounds; peak memory")
    print(f"  {'T':>6} | " + " | ".join(f"{name:>{width}}" for name in modules))
    for T in args.lengths:
        x = torch.randn(1, T, d, device=device, requires_grad=True)

        def runner(name: str, module: torch.nn.Module) -> Callable[[], None]:
            explicit = "explicit" in name

            def run() -> None:
                module(x, causal=True, need_weights=explicit)[0].sum().backward()
                x.grad = None
                module.zero_grad(set_to_none=True)
            return run

        runs = {name: runner(name, module) for name, module in modules.items()}
        cells = {}
        for name, run in list(runs.items()):  # memory first, one at a time: drops what runs out of memory
            try:
                mem = peak_bytes(run, device)
                cells[name] = f"{mem / 2**20:7.1f} MiB"
            except (torch.OutOfMemoryError, RuntimeError) as err:
                if "memory" not in str(err).lower():
                    raise
                cells[name] = "OOM"
                del runs[name]
            finally:
                if device.type == "cuda":
                    torch.cuda.empty_cache()
        times = alternate(runs, args.long_repeats, 1, lambda: sync(device))
        for name, t in times.items():
            cells[name] = (f"{statistics.median(t) * 1e3:8.1f} ms ({min(t) * 1e3:8.1f}) " + cells[name])
        print(f"  {T:>6} | " + " | ".join(f"{cells[name]:>{width}}" for name in modules))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--part", choices=["layer", "long", "all"], default="all")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--d-ff", type=int, default=1024)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--lengths", type=int, nargs="+", default=[512, 1024, 2048, 4096, 8192])
    p.add_argument("--long-d-model", type=int, default=256)
    p.add_argument("--long-heads", type=int, default=4)
    p.add_argument("--block", type=int, default=256)
    p.add_argument("--compression", type=int, default=3)
    p.add_argument("--long-repeats", type=int, default=3)
    args = p.parse_args()
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU thread(s), {os.cpu_count()} CPU(s); "
          f"load average before: {load()}")
    if args.part in ("layer", "all"):
        bench_layer(args, device)
    if args.part in ("long", "all"):
        bench_long(args, device)
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()

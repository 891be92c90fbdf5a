"""The fused output layer + cross-entropy (``shoulders.models.linear_cross_entropy``) against PyTorch's
``F.cross_entropy(F.linear(h, W, b), y)``: one training step of the LM giants at their preset shape.

    python benchmarks/linear_cross_entropy.py                      # cpu presets, 2 threads, both models
    python benchmarks/linear_cross_entropy.py --model transformer_xl --repeats 15
    python benchmarks/linear_cross_entropy.py --tiny               # seconds (tests/test_benchmarks.py runs it)

A step is the model's forward to its last hidden states, the loss and the backward pass (the optimizer's update
is the same for both and left out, so both variants see the same weights every time), with the loss computed
either way; the two variants share the model and the batch, take turns (A, B, A, B, ...) and are reported as
median and minimum seconds per step and their ratios (reference / fused: > 1 means the fused loss is faster). Two
references: the logits computed as ``(B, T, V)`` and flattened, as GPT and Transformer-XL did before the fused
loss, and computed as ``(N, V)`` directly (PyTorch's cheaper path: one ``addmm``). The
losses of the two are printed side by side: they agree to float rounding.
"""
from __future__ import annotations

import argparse
import statistics
from typing import Callable

import torch
import torch.nn.functional as F

from shoulders._timing import alternate
from shoulders.models.linear_cross_entropy import linear_cross_entropy
from shoulders.recipes.gpt import GPTPretrainingConfig
from shoulders.recipes.transformer_xl import TransformerXLPretrainingConfig

MODELS = ("transformer_xl", "gpt")


def _parts(name: str, preset: str) -> tuple[torch.nn.Module, Callable[[], torch.Tensor], torch.Tensor,
                                            torch.Tensor | None, torch.Tensor]:
    """The model, a function giving its last hidden states ``(N, d)`` for the batch, the output weight and bias,
    and the targets ``(N,)``."""
    torch.manual_seed(0)
    if name == "transformer_xl":
        cfg = TransformerXLPretrainingConfig.preset(preset)
        model = cfg.build().train()
        batch = cfg.step_batch()
        hidden = lambda: model.hidden(batch["x"], batch["state"])[0].flatten(0, 1)  # noqa: E731
        return model, hidden, model.embed.weight, model.out_bias, batch["y"].flatten()
    cfg = GPTPretrainingConfig.preset(preset)
    model = cfg.build().train()
    x, y = cfg.step_batch()
    hidden = lambda: model.transformer(x).hidden.flatten(0, 1)  # noqa: E731
    return model, hidden, model.lm_head.weight, model.lm_head.bias, y.flatten()


def compare(name: str, preset: str, repeats: int) -> float:
    """Seconds per training step with each loss, taking turns; returns reference / fused (median)."""
    model, hidden, weight, bias, y = _parts(name, preset)
    losses: dict[str, float] = {}

    rows = 64  # the 3-D variant's batch rows (any divisor of N: the logits' layout is what differs)

    def step(how: str) -> None:
        torch.manual_seed(1)  # the same dropout masks for every variant
        h = hidden()
        if how == "fused":
            loss = linear_cross_entropy(h, weight, bias, y)
        elif how == "2-D":
            loss = F.cross_entropy(F.linear(h, weight, bias), y)
        else:  # as the models computed it before: logits (B, T, V), then flattened
            loss = F.cross_entropy(F.linear(h.view(rows, -1, h.shape[1]), weight, bias).flatten(0, 1), y)
        loss.backward()
        losses[how] = loss.item()
        model.zero_grad(set_to_none=True)

    variants = {"torch, logits (B, T, V)": "3-D", "torch, logits (N, V)": "2-D",
                "fused (linear_cross_entropy)": "fused"}
    times = alternate({key: (lambda how=how: step(how)) for key, how in variants.items()}, repeats)
    for k, v in times.items():
        print(f"  {k:<30} median {statistics.median(v) * 1e3:9.1f} ms   min {min(v) * 1e3:9.1f} ms")
    med = {how: statistics.median(times[k]) for k, how in variants.items()}
    low = {how: min(times[k]) for k, how in variants.items()}
    for how in ("3-D", "2-D"):
        print(f"  {name} ({preset}, {y.numel():,} tokens x {weight.shape[0]:,} outputs): reference {how} / fused "
              f"{med[how] / med['fused']:.2f}x (median), {low[how] / low['fused']:.2f}x (minimum); losses "
              f"{losses[how]:.6f} vs {losses['fused']:.6f}")
    return med["3-D"] / med["fused"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", nargs="+", default=list(MODELS), choices=MODELS)
    p.add_argument("--preset", default="cpu", choices=["smoke", "cpu", "full"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--tiny", action="store_true", help="smoke presets, one repeat")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    preset, repeats = ("smoke", 1) if args.tiny else (args.preset, args.repeats)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), preset {preset}")
    for name in args.model:
        compare(name, preset, repeats)


if __name__ == "__main__":
    main()

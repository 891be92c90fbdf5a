"""Transformer-XL and XLNet: what the memory saves at evaluation, and what the second stream costs in training.

    python benchmarks/transformer_xl.py                 # cpu presets, 1 thread
    python benchmarks/transformer_xl.py --threads 2 --repeats 7
    python benchmarks/transformer_xl.py --tiny          # seconds (tests/test_benchmarks.py runs it)

Parts (``--part``, default both):

* **eval** -- scoring ``--tokens`` tokens of text (after a first context's worth) with a Transformer-XL LM of the
  ``transformer_xl`` giant's shape (weights random: the cost does not depend on them), every token with a context
  of ``--context`` segments
  (``--context 4``: 4 L tokens): *cached*, the paper's evaluation -- segment after segment, the memory of 4 L
  states per layer reused (:func:`shoulders.models.transformer_xl.stream_nll`) -- against *recomputed*, the
  vanilla Transformer's (Al-Rfou et al. 2019; Dai et al. 2019, Figure 1b and Table 9) -- every token predicted from
  a window of the 4 L tokens before it, computed from scratch (:func:`shoulders.recipes.transformer_xl.
  recompute_nll`). The two read the same text and score the same targets; the ratio is recomputed / cached time
  (the paper: up to 1,874x at a context of 3,800 on its GPUs). Chapter 15's target: >= 10x at 4 L on the CPU.
* **step** -- one pre-training step (forward, backward, AdamW) of the ``xlnet`` giant against the ``bert`` giant at
  their cpu preset (same shape, same batch of 64 pairs of 64 pieces, ~1/6 of the tokens predicted by each): the
  price of the query stream and the relative attention, which is why the two giants' same number of steps takes
  XLNet longer.

Each variant is the median (and minimum) of ``--repeats`` runs, taking turns (A, B, A, B, ...).
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402

import torch  # noqa: E402

from shoulders._timing import alternate  # noqa: E402
from shoulders.models.transformer_xl import stream_nll  # noqa: E402
from shoulders.recipes.bert import BertPretrainingConfig  # noqa: E402
from shoulders.recipes.transformer_xl import TransformerXLPretrainingConfig, recompute_nll  # noqa: E402
from shoulders.recipes.xlnet import XLNetPretrainingConfig  # noqa: E402


def report(times: dict[str, list[float]]) -> None:
    for k, v in times.items():
        print(f"  {k:<28} median {statistics.median(v) * 1e3:9.1f} ms   min {min(v) * 1e3:9.1f} ms")


def eval_speedup(preset: str, tokens: int, context: int, repeats: int, vocab: int | None = None) -> dict[str, float]:
    """Cached and recomputed evaluation of ``tokens`` tokens at a context of ``context`` segments; returns the
    median and minimum times and their ratio (recomputed / cached)."""
    cfg = TransformerXLPretrainingConfig.preset(preset)
    model = cfg.build() if vocab is None else cfg.replace(vocab_size=vocab).build()
    model.eval()
    L = cfg.seg_len
    # a prefix of one full context, then the tokens timed: the vanilla model scores the prefix in one window, then
    # needs a window of its own for every later token
    ids = torch.randint(model.cfg.vocab_size, (context * L + tokens + 1,), generator=torch.Generator().manual_seed(0))
    times = alternate({"cached (memory)": lambda: stream_nll(model, ids, L, context * L),
                   "recomputed (vanilla)": lambda: recompute_nll(model, ids, context * L)}, repeats)
    report(times)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["recomputed (vanilla)"] / med["cached (memory)"]
    print(f"  recomputed / cached: {ratio:.1f}x (median), "
          f"{min(times['recomputed (vanilla)']) / min(times['cached (memory)']):.1f}x (minimum); "
          f"{tokens} tokens after a first context of {context * L}, segments of {L}")
    return {"ratio": ratio, **med}


def step_ratio(preset: str, repeats: int) -> float:
    """XLNet / BERT seconds per pre-training step at ``preset``."""
    models = {}
    for name, cls in (("XLNet", XLNetPretrainingConfig), ("BERT", BertPretrainingConfig)):
        cfg = cls.preset(preset)
        torch.manual_seed(0)
        model = cfg.build()
        batch = cfg.step_batch()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step(model: torch.nn.Module = model, batch: dict = batch, opt: torch.optim.Optimizer = opt) -> None:
            loss = model(**batch)["loss"]
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        models[f"{name} pre-training step"] = step
    times = alternate(models, repeats)
    report(times)
    ratio = statistics.median(times["XLNet pre-training step"]) / statistics.median(times["BERT pre-training step"])
    print(f"  XLNet / BERT per step: {ratio:.2f}x (median)")
    return ratio


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--part", nargs="+", default=["eval", "step"], choices=["eval", "step"])
    p.add_argument("--preset", default="cpu", choices=["smoke", "cpu", "full"])
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--context", type=int, default=4, help="segments of context each token gets")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--tiny", action="store_true", help="smoke presets, a few tokens, one repeat")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    preset, tokens, repeats = ("smoke", 64, 1) if args.tiny else (args.preset, args.tokens, args.repeats)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), preset {preset}")
    if "eval" in args.part:
        print("eval: Transformer-XL LM, cached memory vs recomputed windows")
        eval_speedup(preset, tokens, args.context, repeats)
    if "step" in args.part:
        print("step: XLNet vs BERT pre-training step")
        step_ratio(preset, repeats)


if __name__ == "__main__":
    main()

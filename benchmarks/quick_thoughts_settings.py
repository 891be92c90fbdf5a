"""Quick-thoughts' two departures from the paper at small scale (chapter 7), measured with the page's SentEval.

    python benchmarks/quick_thoughts_settings.py            # cpu presets: the variants are giants, cached once
    python benchmarks/quick_thoughts_settings.py --tiny     # seconds (tests/test_benchmarks.py runs it)

Chapter 7's ``quick_thoughts`` giant departs from Logeswaran & Lee (2018) in one setting, and its SentEval in one:

* the learning rate: the paper's Adam at 5e-4 was chosen for GRUs of 1,200-2,400 units; the cpu preset's GRUs of
  256 learn at Skip-thoughts' rate, 1e-3 (``QuickThoughtsConfig.presets["cpu"]``). Also tried: the paper's rate
  with its blocks of 400 sentences instead of 200 (more candidates per sentence);
* SentEval's L2 grid: 1e-5 ... 10 instead of 1e-5 ... 1e-2 (``SentEvalConfig.l2_grid``), because with the shorter
  grid the Quick-thoughts vectors took its largest penalty on every task.

For each Quick-thoughts variant (and the Skip-thoughts giant, for reference) the script prints SST-2 / SST-5 /
SNLI test accuracy with both grids and the penalty each task chose. At cpu every variant is a giant
(``shoulders.giants.load``: trained once, about 6 minutes each on two threads, then read from the cache); ``--tiny``
trains smoke-sized variants for one pass, uncached, and scores them on a few hundred of SentEval's sentences.
"""
from __future__ import annotations

import argparse
import dataclasses

import torch

from shoulders import giants
from shoulders.evaluate import senteval
from shoulders.models.quick_thoughts import QuickThoughtsConfig
from shoulders.models.skip_thoughts import SkipThoughtsConfig
from shoulders.recipes import sentence_vectors as sv

VARIANTS = {"preset (lr 1e-3, blocks of 200)": {}, "the paper's lr 5e-4": {"lr": 5e-4},
            "the paper's lr and blocks of 400": {"lr": 5e-4, "batch_size": 400}}
GRIDS = {"1e-5..1e-2": (1e-5, 1e-4, 1e-3, 1e-2), "1e-5..10": senteval.SentEvalConfig.l2_grid}  # the default now


def row(name: str, grid: str, results: dict[str, senteval.TaskResult]) -> str:
    return f"| {name} | {grid} | " + " | ".join(f"{r.test:.1f} ({r.l2:g})" for r in results.values()) + " |"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="cpu", choices=["smoke", "cpu", "full"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--tiny", action="store_true", help="smoke-sized variants, one pass each, not cached")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    preset = "smoke" if args.tiny else args.preset
    # --tiny: a few hundred sentences per split, so the six fits of three tasks take seconds
    small = dict(sst_train=400, sst_test=300, snli_train=400, snli_valid=300, snli_test=400, max_iter=50)
    scfg = senteval.SentEvalConfig.preset(preset, **(small if args.tiny else {}))
    tasks = senteval.load_tasks(scfg)
    print(f"{preset} presets, {torch.get_num_threads()} thread(s); test accuracy % (chosen penalty)")
    print("| encoder | L2 grid | " + " | ".join(tasks) + " |\n|---|---|" + "---|" * len(tasks))
    encoders = {}
    if args.tiny:
        corpus = sv.sentence_corpus(QuickThoughtsConfig.preset("smoke").vocab_size, max_docs=20)
        for name, change in VARIANTS.items():
            cfg = QuickThoughtsConfig.preset("smoke", epochs=1, train_docs=20, **change)
            model, _, _ = sv.train_quick_thoughts(cfg, corpus, progress=False)
            encoders[f"Quick-thoughts, {name}"] = sv.neural_encoder(model, corpus.vocab)
    else:
        st = giants.load("skip_thoughts", SkipThoughtsConfig.preset(preset))
        encoders["Skip-thoughts (the page's giant)"] = sv.neural_encoder(st.model, st.tokenizer)
        for name, change in VARIANTS.items():
            qt = giants.load("quick_thoughts", QuickThoughtsConfig.preset(preset, **change))
            encoders[f"Quick-thoughts, {name}"] = sv.neural_encoder(qt.model, qt.tokenizer)
    for name, encode in encoders.items():
        for grid, l2 in GRIDS.items():
            cfg = dataclasses.replace(scfg, l2_grid=l2)
            print(row(name, grid, senteval.evaluate_encoder(encode, tasks, cfg, progress=False)), flush=True)


if __name__ == "__main__":
    main()

"""Quick-thoughts against Skip-thoughts (chapter 7): seconds per epoch over the same WikiText-2 sentences.

    python benchmarks/quick_thoughts.py                 # cpu presets, 2 threads
    python benchmarks/quick_thoughts.py --repeats 15
    python benchmarks/quick_thoughts.py --tiny          # seconds (tests/test_benchmarks.py runs it)

Logeswaran & Lee (2018) claim an order of magnitude less training time than Skip-thoughts (Kiros et al. 2015) at
equal size: recognising the neighbouring sentence among a block's candidates replaces generating both neighbours
word by word through a softmax over the vocabulary. Both models are built from their presets (the same encoder
size, vocabulary and sentences), and each training step -- forward, loss, backward, clipping and Adam's update,
as :func:`shoulders.train.fit` does it -- is timed on the real batches of an epoch, the two models taking turns
(A, B, A, B, ...). An epoch's time is the seconds per step times the steps an epoch has: Skip-thoughts reads every
sentence once as the centre of a triple, Quick-thoughts every sentence once inside a block. Reported: median and
minimum seconds per step, minutes per epoch, and the ratio Skip-thoughts / Quick-thoughts per epoch (> 1: Quick-
thoughts is faster). Chapter 7's page prints the same ratio from a few fit steps; the SentEval score that goes
with it is the page's.
"""
from __future__ import annotations

import argparse
import itertools
import statistics

import torch

from shoulders._timing import alternate
from shoulders.models.quick_thoughts import QuickThoughtsConfig
from shoulders.models.skip_thoughts import SkipThoughtsConfig
from shoulders.recipes.sentence_vectors import sentence_corpus
from shoulders.text.sentences import NeighbourBlocks, NeighbourTriples


def compare(preset: str, repeats: int) -> float:
    """Times both models' training steps alternately; prints the table and returns the per-epoch ratio
    Skip-thoughts / Quick-thoughts (medians)."""
    st_cfg, qt_cfg = SkipThoughtsConfig.preset(preset), QuickThoughtsConfig.preset(preset)
    corpus = sentence_corpus(st_cfg.vocab_size, max_docs=st_cfg.train_docs)
    v = corpus.vocab
    batches = {"Skip-thoughts": NeighbourTriples(corpus.docs, st_cfg.batch_size, v["<pad>"], v["<s>"], v["</s>"],
                                                 st_cfg.max_len, seed=0),
               "Quick-thoughts": NeighbourBlocks(corpus.docs, qt_cfg.batch_size, v["<pad>"], qt_cfg.max_len,
                                                 qt_cfg.context, seed=0)}
    cfgs = {"Skip-thoughts": st_cfg, "Quick-thoughts": qt_cfg}
    torch.manual_seed(0)
    models = {n: c.build().train() for n, c in cfgs.items()}
    opts = {n: torch.optim.Adam(m.parameters(), lr=cfgs[n].lr) for n, m in models.items()}
    streams = {n: itertools.cycle(list(itertools.islice(iter(b), repeats + 1))) for n, b in batches.items()}

    def step(name: str) -> None:
        model, opt = models[name], opts[name]
        loss = model(*next(streams[name]))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfgs[name].clip)
        opt.step()

    times = alternate({n: (lambda n=n: step(n)) for n in models}, repeats)
    print(f"{preset} presets, {torch.get_num_threads()} thread(s), {len(corpus.docs):,} documents, "
          f"{corpus.sentences:,} sentences, vocabulary {len(v):,}, {repeats} timed steps each")
    print("| model | sentences per step | steps per epoch | seconds per step, median (min) | minutes per epoch |")
    print("|---|---|---|---|---|")
    per_epoch: dict[str, tuple[float, float]] = {}
    for name, t in times.items():
        n = len(batches[name])
        per_epoch[name] = (statistics.median(t) * n, min(t) * n)
        print(f"| {name} | {cfgs[name].batch_size} | {n:,} | {statistics.median(t):.3f} ({min(t):.3f}) | "
              f"{per_epoch[name][0] / 60:.2f} |")
    med = per_epoch["Skip-thoughts"][0] / per_epoch["Quick-thoughts"][0]
    low = per_epoch["Skip-thoughts"][1] / per_epoch["Quick-thoughts"][1]
    print(f"per epoch, Skip-thoughts / Quick-thoughts: {med:.1f}x (median), {low:.1f}x (minimum)")
    return med


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="cpu", choices=["smoke", "cpu", "full"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--tiny", action="store_true", help="smoke presets, two repeats")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    preset, repeats = ("smoke", 2) if args.tiny else (args.preset, args.repeats)
    compare(preset, repeats)


if __name__ == "__main__":
    main()

"""Chapter 9's levers on CoVe's SST-2 score: what the page's task model gains or loses from CoVe in other settings.

    python benchmarks/cove_levers.py                      # cpu: the cached giants, about 30 minutes on two cores
    python benchmarks/cove_levers.py --lever centring     # one lever
    python benchmarks/cove_levers.py --tiny               # seconds: smoke giants, a few hundred sentences (a test)

Every lever is the page's comparison (:func:`shoulders.recipes.finetune.compare`: the BiLSTM-max task model of
:class:`~shoulders.recipes.cove.CoVeTaskConfig`, dev accuracy, seeds 0-2) with one setting changed, GloVe alone
against GloVe + CoVe in the same runs. The first five start from the page's setting of 2026-12-03 (``SENTENCES``:
SST-2's 6,920 training sentences, four passes); the rest train on the phrases, as the page now does:

* ``centring`` -- CoVe as the MT-LSTM gives it, not centred on the task's mean (the page centres it);
* ``dropout`` -- the task model's dropout 0.2 instead of 0.5, over four and over eight passes;
* ``first-layer`` -- the MT-LSTM's first layer instead of its second (centred);
* ``labels`` -- 1,000 training sentences, sixteen passes (the training loss shows who memorises);
* ``glove-sst`` -- GloVe that knows the task's words: the ``glove_sst`` giant (chapter 5's recipe on WikiText-2
  plus SST's 8,544 training sentences, labels unused) for the task model, and a CoVe-S translation model trained on
  it (``cove_small_sst``: the ``cove_small`` giant with that base, registered here; about 6 + 28 minutes to train
  once on two cores before the first run, then cached).
* ``phrases`` -- SST-2 as the paper trained on it: GLUE's 67,349 labelled phrases of the training sentences
  (McCann et al. 2017, Table 1: 56.4k) instead of the 6,920 sentences, one pass (the page's cpu setting) and two,
  for CoVe-S and CoVe-L; ``glove-sst-phrases`` -- the same for the ``glove-sst`` pair.
* ``tatoeba-29k`` -- the page's setting for CoVe-S, CoVe-L and a third giant between them: CoVe-L's recipe
  (English-French, Tatoeba's everyday sentences) on CoVe-S's amount of data and training, the first 29,000 pairs
  and 4,000 steps (18 minutes to train once on two cores, 2026-12-05). CoVe-L differs from CoVe-S in the data's size
  and its kind at once; this giant changes the kind only (the page's exercise 5).
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import time
from typing import Any

import torch

import shoulders as sh
from shoulders import heads
from shoulders.recipes import cove
from shoulders.recipes.elmo import task_vectors
from shoulders.recipes.finetune import accuracy, compare, prior_loss, score_text
from shoulders.text import task_features as tasks
from shoulders.text.word_tokenizer import WordTokenizer

# the levers of 2026-12-03/04 changed the page's setting of then: SST-2's 6,920 training sentences, four passes
SENTENCES = {"sst2_phrases": False, "sst2_epochs": 4.0}
LEVERS = {  # name: [(label, task-config overrides, giant, centred, first layer only)]
    "centring": [("not centred", SENTENCES, "CoVe-S", False, False),
                 ("not centred", SENTENCES, "CoVe-L", False, False)],
    "dropout": [("dropout 0.2", {**SENTENCES, "dropout": 0.2}, "CoVe-S", True, False),
                ("dropout 0.2, 8 passes", {**SENTENCES, "dropout": 0.2, "sst2_epochs": 8.0}, "CoVe-L", True, False)],
    "first-layer": [("first layer", SENTENCES, "CoVe-L", True, True)],
    "labels": [("1,000 labels, 16 passes", {**SENTENCES, "sst2_train": 1_000, "sst2_epochs": 16.0}, "CoVe-L", True,
                False)],
    "glove-sst": [("GloVe of WikiText-2 + SST", SENTENCES, "CoVe-S (GloVe + SST)", True, False)],
    "phrases": [(f"67,349 phrases, {n} pass{'es' * (n > 1)}", {"sst2_phrases": True, "sst2_epochs": float(n)}, giant,
                 True, False) for giant in ("CoVe-S", "CoVe-L") for n in (1, 2)],
    "glove-sst-phrases": [(f"GloVe of WikiText-2 + SST, 67,349 phrases, {n} pass{'es' * (n > 1)}",
                           {"sst2_phrases": True, "sst2_epochs": float(n)}, "CoVe-S (GloVe + SST)", True, False)
                          for n in (1, 2)],
    "tatoeba-29k": [("the page's setting", {}, giant, True, False)
                    for giant in ("CoVe-S", "CoVe-L (29,000 pairs)", "CoVe-L")],
}
# each giant of LEVERS: (catalogue name, the GloVe giant its task model reads, overrides of its translation preset)
GIANTS = {"CoVe-S": ("cove_small", "glove", {}), "CoVe-L": ("cove_large", "glove", {}),
          "CoVe-S (GloVe + SST)": ("cove_small_sst", "glove_sst", {}),
          # CoVe-L's recipe on CoVe-S's amount of data and training: the first 29,000 Tatoeba pairs, 4,000 steps
          "CoVe-L (29,000 pairs)": ("cove_large", "glove", {"train_pairs": 29_000, "steps": 4_000})}

PAGE_GIANTS = ("cove_small", "cove_large")  # page 9's own: at --tiny the smoke giants the book's test run trains
# --tiny: a giant only this script trains (a variant of page 9's) takes a few steps on a few pairs, as the test
# checks that the rows run, not what such a giant learns
TINY_VARIANT = {"train_pairs": 2_000, "steps": 40, "eval_every": 40, "eval_pairs": 50}


def register_variants() -> None:
    """``cove_small_sst``: the ``cove_small`` giant trained on the ``glove_sst`` vectors (its own cache folder)."""
    if "cove_small_sst" not in sh.giants.names():
        sh.giants.register(dataclasses.replace(
            sh.giants.get("cove_small"), name="cove_small_sst", base="glove_sst",
            data=("multi30k", "wikitext-2", "sst-trees"),
            title="CoVe-S's translation model on GloVe of WikiText-2 + SST's sentences (benchmarks/cove_levers.py)"))


def first_layer(mt: torch.nn.Module) -> torch.nn.Module:
    """A copy of the MT-LSTM that stops after its first bidirectional layer."""
    mt = copy.deepcopy(mt)
    old = mt.lstm
    new = torch.nn.LSTM(old.input_size, old.hidden_size, 1, batch_first=True, bidirectional=True)
    for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
        for suffix in ("", "_reverse"):
            getattr(new, name + suffix).data.copy_(getattr(old, name + suffix).data)
    mt.lstm, mt.layers = new, 1
    return mt


def run(label: str, overrides: dict, giant: Any, shown: str, centred: bool, first: bool, glove: Any, tiny: bool,
        scale: str) -> str:
    """One lever: GloVe alone and GloVe + ``giant``'s CoVe on SST-2, as a Markdown row (the giant named ``shown``)."""
    tcfg = cove.CoVeTaskConfig.preset(scale, **overrides)
    if tiny:
        tcfg = tcfg.replace(sst2_train=200, eval_limit=100, seeds=1, sst2_epochs=1.0)
    train_cols = cove.sst2_training_set(tcfg)  # the sentences, or GLUE's phrases of them
    dev_cols = sh.data.sst_trees("dev", binary=True)
    tr, tr_y = cove.sample(train_cols, tcfg.sst2_train)  # as the page samples
    dv, dv_y = cove.sample(dev_cols, tcfg.eval_limit)
    tok = WordTokenizer.build(tr + dv)
    vectors, _ = task_vectors(tok, glove.tokenizer, glove.model.vectors())
    train = tasks.classification_features(tok, tr, None, tr_y, tcfg.max_len)
    held = tasks.classification_features(tok, dv, None, dv_y, tcfg.max_len)
    mt = first_layer(giant.model.encoder) if first else giant.model.encoder
    encoders = cove.task_encoders(vectors, tcfg, tok.pad_id, [f["input_ids"] for f in train], {"CoVe": mt},
                                  {"CoVe": {}}, centre=centred)
    ft = tcfg.finetuning()
    row = compare(lambda e: heads.SequenceClassifier(e, 2, dropout=tcfg.dropout), encoders, train, tok.pad_id, ft,
                  lambda h: accuracy(h, held, tok.pad_id), {k: tcfg.lr for k in encoders}, metric="dev accuracy %",
                  baseline=50.0, prior=prior_loss([f["labels"] for f in train]),
                  steps=ft.steps_for(len(train), tcfg.sst2_epochs), seeds=range(tcfg.seeds))
    return (f"| {label} | {shown} | " + " | ".join(f"{score_text(row[k])} ({row[k]['train_loss']:.3f})"
                                                        for k in encoders) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lever", choices=sorted(LEVERS), action="append", help="default: all")
    ap.add_argument("--tiny", action="store_true", help="smoke giants, 200 sentences, one seed (a test)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    scale = "smoke" if args.tiny else "cpu"
    torch.set_num_threads(args.threads)
    register_variants()
    levers = args.lever or list(LEVERS)
    needed = {row[2] for lever in levers for row in LEVERS[lever]}
    loaded, shown = {}, {}
    for label in sorted(needed):  # each giant of the chosen levers, and its GloVe, loaded (or trained) once
        name, glove, overrides = GIANTS[label]
        if args.tiny and (overrides or name not in PAGE_GIANTS):  # a variant: trained here only, briefly
            overrides = TINY_VARIANT
        cfg = sh.giants.get(name).config.preset(scale, **overrides)
        loaded[label] = sh.giants.load(name, cfg, scale=scale, progress=False)
        shown[label] = ", ".join([name] + [f"{k}={v}" for k, v in overrides.items()])  # its name in the table
        if glove not in loaded:
            loaded[glove] = sh.giants.load(glove, scale=scale, progress=False)
    print(f"scale={scale}, threads={torch.get_num_threads()}; SST-2 dev accuracy, mean (range) over the seeds, "
          "(final training loss)")
    print("| lever | giant | GloVe | GloVe + CoVe |\n|---|---|---|---|")
    for lever in levers:
        for label, overrides, name, centred, first in LEVERS[lever]:
            t0 = time.perf_counter()
            giant, glove = loaded[name], loaded[GIANTS[name][1]]
            line = run(label, overrides, giant, shown[name], centred, first, glove, args.tiny, scale)
            print(line + f"  <!-- {time.perf_counter() - t0:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()

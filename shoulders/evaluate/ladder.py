"""The book's results ladder (chapter 16): every rung read from the results ledger, never retyped.

Two ladders, each a list of :class:`Rung` -- where in the ledger a chapter put its headline number:

* :data:`LM_RUNGS` -- the language models of the book on WikiText-2, from the n-gram to Transformer-XL, as
  **perplexity per word**. Word-level models (chapters 1-3, 11) predict WikiText's own tokens; GPT and
  Transformer-XL predict byte-level BPE pieces, and their chapters divide the text's total negative log-likelihood by
  the same count of words the word-level chapters use (every token plus one ``<eos>`` per line, :func:`shoulders.
  recipes.gpt.wikitext_lines_text`), so every row is exp(total NLL / words) of the same text. One caveat stays: a
  word-level model with a smaller vocabulary maps more words to ``<unk>`` and predicts ``<unk>`` more easily.
* :func:`transfer_rungs` -- SST-2 accuracy from the bag of words to XLNet: chapter 16's own runs (every giant, the
  same budget and protocol) and, beside them, each chapter's headline number under its own protocol.

:func:`climb` returns, for each rung, the newest ledger entry at a scale (or ``None``: the page says the rung is
missing and which chapter records it); :func:`table` renders the rows with scale, seeds and time.
"""
from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterable, Sequence
from typing import Any

from .._scale import scale as current_scale
from . import ledger

__all__ = ["LM_RUNGS", "Rung", "climb", "table", "transfer_rungs"]


@dataclasses.dataclass(frozen=True)
class Rung:
    """Where one number of the ladder lives in the ledger, and what the paper reported for context.

    ``split=None`` takes the split :func:`climb` is asked for. ``paper`` is the original paper's number (text,
    with its data set: the papers measured other corpora and sizes) -- quoted, never compared by the code.
    """

    label: str
    chapter: str
    model: str
    metric: str
    task: str
    split: str | None = None
    paper: str = ""
    extra: tuple[tuple[str, Any], ...] = ()  # further fields the entry must match (e.g. ("way", "full"))
    times: float = 1.0  # the entry's value times this is the rung's (chapter 6 records accuracy as a fraction)


LM_RUNGS: tuple[Rung, ...] = (
    Rung("5-gram, modified Kneser-Ney", "01_ngram", "modified Kneser-Ney 5-gram", "perplexity", "wikitext-2",
         paper="Chen & Goodman 1999: the strongest n-gram smoothing"),
    Rung("NNLM (Bengio et al. 2003)", "02_nnlm", "NNLM", "perplexity", "wikitext-2",
         paper="Brown corpus: 24% below the best n-gram"),
    Rung("LSTM LM", "03_rnnlm", "LSTM", "perplexity", "wikitext-2",
         paper="Merity et al. 2017 introduced WikiText-2 with LSTM baselines"),
    Rung("AWD-LSTM (ULMFiT's giant)", "11_ulmfit", "AWD-LSTM", "perplexity", "wikitext-2",
         paper="Merity et al. 2018: 68.6 valid / 65.8 test"),
    Rung("GPT (BPE, per word)", "13_gpt", "GPT", "perplexity", "wikitext-2",
         paper="GPT-2 small zero-shot: 29.4 test (Radford et al. 2019, trained on WebText)"),
    Rung("Transformer-XL (BPE, per word)", "15_transformer_xl", "Transformer-XL", "perplexity", "wikitext-2",
         paper="Dai et al. 2019: 18.3 on WikiText-103 test"),
)


def transfer_rungs(budget: int, contenders: Sequence[tuple[str, str]],
                   chapter: str = "16_shoulders") -> tuple[Rung, ...]:
    """Chapter 16's SST-2 rungs at ``budget`` labels: one per ``(name, way)`` of ``contenders`` -- the way each
    giant is best used -- as :func:`shoulders.recipes.three_ways.record` put them in the ledger."""
    return tuple(Rung(f"{name} ({way})", chapter, f"{name}, {way}", "dev accuracy %", f"SST-2, {budget} labels",
                      "dev", extra=(("way", way),)) for name, way in contenders)


CHAPTER_SST2_RUNGS: tuple[Rung, ...] = (
    Rung("bag of words + logistic regression", "06_fasttext", "bag-of-words logistic regression", "accuracy",
         "sst-2", "dev", times=100.0),
    Rung("fastText, words + bigrams", "06_fasttext", "fastText, words + bigrams", "accuracy", "sst-2", "dev",
         paper="Joulin et al. 2017: sentiment tasks within a point of deep models", times=100.0),
    Rung("GloVe + CoVe-S, BiLSTM", "09_cove", "BiLSTM, GloVe + CoVe-S", "dev accuracy %", "SST-2", "dev",
         paper="McCann et al. 2017: 90.3 (BCN, GloVe + CoVe + char)"),
    Rung("ULMFiT", "11_ulmfit", "AWD-LSTM, ULMFiT", "dev accuracy %", "SST-2", "dev"),
    Rung("GPT, fine-tuned", "13_gpt", "GPT, pre-trained", "dev accuracy %", "SST-2", "dev",
         paper="Radford et al. 2018: 91.3"),
    Rung("BERT, fine-tuned", "14_bert_transfer", "BERT-tiny, pre-trained", "dev accuracy %", "SST-2", "dev",
         paper="Devlin et al. 2019: 93.5 (base), 94.9 (large)"),
    Rung("XLNet, fine-tuned", "15_xlnet", "XLNet-tiny, pre-trained", "dev accuracy %", "SST-2", "dev",
         paper="Yang et al. 2019: 96.8 (large)"),
)
"""Each chapter's own SST-2 headline (its own protocol, labels and seeds; chapter 10 measures SST-5, not SST-2)."""


def climb(rungs: Iterable[Rung], scale: str | None = None, split: str | None = None,
          path: Any = None) -> list[tuple[Rung, dict[str, Any] | None]]:
    """Each rung with its newest ledger entry at ``scale`` (default: the current one) -- ``None`` where the ledger
    has none (the chapter has not run at this scale). ``split`` fills rungs that leave theirs open."""
    scale = current_scale() if scale is None else scale
    entries = ledger.read(path, scale=scale)
    out = []
    for r in rungs:
        want = {"chapter": r.chapter, "model": r.model, "metric": r.metric, "task": r.task,
                "split": r.split if r.split is not None else split}
        found = [e for e in entries if all(e[k] == v for k, v in want.items())
                 and all(e["extra"].get(k) == v for k, v in r.extra)]
        newest = max(found, key=lambda e: datetime.datetime.fromisoformat(e["time"])) if found else None
        out.append((r, newest))
    return out


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.1f} min"


def table(rows: Sequence[tuple[Rung, dict[str, Any] | None]], digits: int = 1) -> str:
    """Markdown: one line per rung -- our number (mean over seeds, with their range), scale, seeds, wall time,
    chapter, and the paper's number; a missing rung says which chapter records it."""
    lines = ["| rung | ours | scale | seeds | time | chapter | the paper |", "|---|---:|---|---|---:|---|---|"]
    for r, e in rows:
        if e is None:
            lines.append(f"| {r.label} | *not in the ledger* | | | | run `{r.chapter}` at this scale | {r.paper} |")
            continue
        v = f"{e['value'] * r.times:.{digits}f}"
        if e.get("values") and len(e["values"]) > 1:
            lo, hi = min(e["values"]) * r.times, max(e["values"]) * r.times
            v += f" <sub>{lo:.{digits}f}–{hi:.{digits}f}</sub>"
        seeds = ", ".join(str(s) for s in e["seeds"])
        lines.append(f"| {r.label} | {v} | {e['scale']} | {seeds} | {_time(e.get('wall_time_s'))} | "
                     f"{r.chapter} | {r.paper} |")
    return "\n".join(lines)

"""Corpus BLEU for translation (chapter 12), computed by sacreBLEU so the number is comparable with the papers'.

Papineni, Roukos, Ward & Zhu (2002, sec. 2) define BLEU over a whole test corpus; Post (2018, "A Call for Clarity
in Reporting BLEU Scores") showed that the same output scores up to 1.8 points apart under common configurations
(tokenisation, normalisation) and released sacreBLEU to fix one, which is why this module does not count n-grams
itself.
"""
from __future__ import annotations

from typing import Sequence

__all__ = ["bleu"]


def bleu(hypotheses: Sequence[str | Sequence[str]], references: Sequence[str | Sequence[str]],
         lowercase: bool = False) -> float:
    """Corpus BLEU (Papineni et al. 2002) of ``hypotheses`` against one reference each, computed by sacreBLEU
    (Post 2018) with its defaults, returned as a float on the 0-100 scale.

    BLEU = BP · exp(1/4 · sum_{n=1..4} log p_n): the n-gram precisions p_n are clipped counts summed over the whole
    corpus (not averaged sentence scores), BP = min(1, exp(1 - r/c)) penalises a corpus shorter than its
    references (r, c: total reference and hypothesis lengths).

    **Tokenisation:** sacreBLEU's standard ``13a`` tokeniser (the one of WMT's ``mteval-v13a.pl``: punctuation
    split off words) runs on each string; a hypothesis or reference given as a list of tokens is first joined with
    single spaces. **Case:** case-sensitive by default, as sacreBLEU; ``lowercase=True`` lower-cases both sides
    first (the book's Multi30k chapter lower-cases its text when tokenising, so its scores are case-insensitive
    in effect). Scores from different tokenisations or casings are not comparable -- say which one you report.
    """
    import sacrebleu

    def text(x: str | Sequence[str]) -> str:
        return x if isinstance(x, str) else " ".join(x)

    hyps, refs = [text(h) for h in hypotheses], [text(r) for r in references]
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references: give one reference per hypothesis")
    if not hyps:
        raise ValueError("bleu needs at least one hypothesis")
    # force=True: text that is already tokenised is scored as it is, without sacreBLEU's warning about it
    return float(sacrebleu.corpus_bleu(hyps, [refs], lowercase=lowercase, tokenize="13a", force=True).score)

"""Evaluation the way the papers do it, one module per kind of score, and the ledger every chapter records into.

* :mod:`~shoulders.evaluate.perplexity` -- :func:`perplexity` of a language model (chapters 1-3, 11-13);
* :mod:`~shoulders.evaluate.words` -- word vectors (chapters 4-6): :func:`analogy` (3CosAdd),
  :func:`word_similarity` (Spearman), :func:`spearman`, :func:`nearest_neighbors`, :func:`group_precision`;
* :mod:`~shoulders.evaluate.accuracy` -- :func:`accuracy` and the :func:`majority_baseline` of a classifier;
* :mod:`~shoulders.evaluate.bleu` -- corpus :func:`bleu` through sacreBLEU (chapter 12);
* :mod:`~shoulders.evaluate.squad` -- SQuAD v1.1 exact match and F1, :func:`squad_em_f1` (chapter 14);
* :mod:`~shoulders.evaluate.entities` -- CoNLL entity-level :func:`entity_f1` through seqeval (chapter 14);
* :mod:`~shoulders.evaluate.probe` -- a :func:`linear_probe` of frozen features (:func:`fit_probe` keeps the fit);
* :mod:`~shoulders.evaluate.senteval` -- the small SentEval every sentence encoder is scored by (chapters 7-9):
  frozen vectors + logistic regression on SST-2, SST-5 and SNLI (``senteval.evaluate_encoder``);
* :mod:`~shoulders.evaluate.ledger` -- :func:`record` a headline result; ``ledger.read`` / ``ledger.latest`` /
  ``ledger.table`` give them back (the closing chapter's results ladder).

The readers of gensim's word-vector test files live with the other data readers in
:mod:`shoulders.data.word_tests`; they are re-exported here because the word-vector scorers take their names.
"""
from __future__ import annotations

from . import ledger, senteval
from .accuracy import accuracy, majority_baseline
from .bleu import bleu
from .entities import entity_f1
from .ledger import record
from .perplexity import perplexity, sliding_window_nll
from .probe import fit_probe, linear_probe
from .squad import squad_em_f1, squad_normalize
from .words import (GENSIM_TEST_FILES, GROUPS, analogy, gensim_test_file, group_precision, nearest_neighbors,
                    read_analogies, read_similarity, spearman, word_similarity)

__all__ = ["GENSIM_TEST_FILES", "GROUPS", "accuracy", "analogy", "bleu", "entity_f1", "fit_probe", "gensim_test_file",
           "group_precision", "ledger", "linear_probe", "majority_baseline", "nearest_neighbors", "perplexity",
           "read_analogies", "read_similarity", "record", "senteval", "sliding_window_nll", "spearman", "squad_em_f1",
           "squad_normalize", "word_similarity"]

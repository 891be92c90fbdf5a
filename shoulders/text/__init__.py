"""Text for language models and BERT: vocabularies, tokenisers, LM streams (truncated BPTT), padding, masks and
task features. The datasets themselves are read by :mod:`shoulders.data` (``sh.data.wikitext2(...)``, ...).

One job per file:

* :mod:`~shoulders.text.vocab` -- :class:`Vocab` (specials, ``min_freq``, ``max_size``, ``<unk>``, save/load);
* :mod:`~shoulders.text.tokenize` -- :func:`words`, :func:`simple_words`, :func:`chars`;
* :mod:`~shoulders.text.stream` -- :class:`LMStream`, :func:`batchify`, :class:`BPTTBatches`, :func:`lm_stream`;
* :mod:`~shoulders.text.pad` -- :func:`pad_sequences`, :func:`padding_mask`, :func:`causal_mask`,
  :func:`attention_mask` (``True`` = take part, as in ``scaled_dot_product_attention``);
* :mod:`~shoulders.text.windows` -- :func:`ngram_batches`, :func:`window_batches` (the window models' batches);
* :mod:`~shoulders.text.lm_data` -- :class:`LMCorpus`, :func:`wikitext2_corpus` (one corpus, counted or streamed);
* :mod:`~shoulders.text.wordpiece` -- :class:`WordPiece` (BERT's tokenizer: basic + greedy pieces, training, vocab.txt);
* :mod:`~shoulders.text.bert_inputs`, :mod:`~shoulders.text.masking`, :mod:`~shoulders.text.nsp_pairs` -- BERT's
  packed inputs, masked-LM corruption and next-sentence pairs;
* :mod:`~shoulders.text.task_features` -- BERT's features for its fine-tuning tasks (classification, tagging,
  spans, multiple choice) and the way back from predictions.
"""
from __future__ import annotations

from .lm_data import LMCorpus, take_tokens, unigram_log_probs, wikitext2_corpus
from .pad import attention_mask, causal_mask, pad_sequences, padding_mask
from .stream import BPTTBatches, LMStream, batchify, lm_stream
from .task_features import (
    SquadExample, best_span, choice_features, classification_features, span_features, span_predictions,
    split_articles, squad_examples, tagging_features, tagging_predictions,
)
from .tokenize import SIMPLE_WORDS_PATTERN, chars, simple_words, words
from .vocab import Vocab, VocabFileError, count_tokens
from .windows import WindowBatches, ngram_batches, sliding_windows, window_batches
from .wordpiece import WordPiece

__all__ = [
    "SIMPLE_WORDS_PATTERN",
    "BPTTBatches", "LMCorpus", "LMStream", "Vocab", "VocabFileError", "WindowBatches", "WordPiece",
    "attention_mask", "batchify", "causal_mask", "chars", "count_tokens", "lm_stream", "ngram_batches",
    "pad_sequences", "padding_mask", "simple_words", "sliding_windows", "take_tokens", "unigram_log_probs",
    "window_batches", "words", "wikitext2_corpus",
    "SquadExample", "best_span", "choice_features", "classification_features", "span_features", "span_predictions",
    "split_articles", "squad_examples", "tagging_features", "tagging_predictions",
]

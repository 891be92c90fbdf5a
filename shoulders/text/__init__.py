"""Text for language models: vocabularies, tokenisers, corpora, LM streams (truncated BPTT), padding and masks.

One job per file:

* :mod:`~shoulders.text.vocab` -- :class:`Vocab` (specials, ``min_freq``, ``max_size``, ``<unk>``, save/load);
* :mod:`~shoulders.text.tokenize` -- :func:`words`, :func:`simple_words`, :func:`chars`;
* :mod:`~shoulders.text.corpus` -- :func:`wikitext2`, :func:`tiny_shakespeare`, :func:`multi30k`;
* :mod:`~shoulders.text.stream` -- :class:`LMStream`, :func:`batchify`, :class:`BPTTBatches`, :func:`lm_stream`;
* :mod:`~shoulders.text.pad` -- :func:`pad_sequences`, :func:`padding_mask`, :func:`causal_mask`,
  :func:`attention_mask` (``True`` = take part, as in ``scaled_dot_product_attention``);
* :mod:`~shoulders.text.windows` -- :func:`ngram_batches`, :func:`window_batches` (the window models' batches);
* :mod:`~shoulders.text.lm_data` -- :class:`LMCorpus`, :func:`wikitext2_corpus` (one corpus, counted or streamed);
* :mod:`~shoulders.text.tasks` -- BERT's fine-tuning data (SST-2, SNLI, WNUT-17, SQuAD, COPA) and its features;
* :mod:`~shoulders.text.wordpiece` -- :class:`WordPiece` (BERT's tokenizer: basic + greedy pieces, training, vocab.txt).
"""
from __future__ import annotations

from .corpus import EOS, MULTI30K_SPLITS, WIKITEXT2_SPLITS, multi30k, tiny_shakespeare, wikitext2
from .pad import attention_mask, causal_mask, pad_sequences, padding_mask
from .stream import BPTTBatches, LMStream, batchify, lm_stream
from .lm_data import LMCorpus, take_tokens, unigram_log_probs, wikitext2_corpus
from .tokenize import SIMPLE_WORDS_PATTERN, chars, simple_words, words
from .vocab import Vocab, VocabFileError, count_tokens
from .windows import WindowBatches, ngram_batches, sliding_windows, window_batches
from .wordpiece import WordPiece
from .tasks import (
    SNLI_LABELS, SST2_LABELS, WNUT17_TAGS, SquadExample, choice_features, classification_features, copa, snli,
    span_features, span_predictions, split_articles, squad, squad_examples, sst2, tagging_features,
    tagging_predictions, wnut17,
)

__all__ = [
    "EOS", "MULTI30K_SPLITS", "SIMPLE_WORDS_PATTERN", "WIKITEXT2_SPLITS",
    "BPTTBatches", "LMCorpus", "LMStream", "Vocab", "VocabFileError", "WindowBatches", "WordPiece",
    "attention_mask", "batchify", "causal_mask", "chars", "count_tokens", "lm_stream", "multi30k", "ngram_batches",
    "pad_sequences", "padding_mask", "simple_words", "sliding_windows", "take_tokens", "tiny_shakespeare",
    "unigram_log_probs", "window_batches", "words", "wikitext2", "wikitext2_corpus",
    "SNLI_LABELS", "SST2_LABELS", "WNUT17_TAGS", "SquadExample", "choice_features", "classification_features", "copa",
    "snli", "span_features", "span_predictions", "split_articles", "squad", "squad_examples", "sst2",
    "tagging_features", "tagging_predictions", "wnut17",
]

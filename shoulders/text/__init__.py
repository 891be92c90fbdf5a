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
* :mod:`~shoulders.text.word_chars` -- :func:`char_ids`, :func:`char_table` (words as byte ids: ELMo's input);
* :mod:`~shoulders.text.word_tokenizer` -- :class:`WordTokenizer` (whole words behind WordPiece's interface);
* :mod:`~shoulders.text.pair_batches`, :mod:`~shoulders.text.pair_vocab` -- :class:`PairBatches` (translation
  pairs of similar length batched together) and :class:`PairVocab` (a translation model's two vocabularies);
* :mod:`~shoulders.text.wordpiece` -- :class:`WordPiece` (BERT's tokenizer: basic + greedy pieces, training, vocab.txt);
* :mod:`~shoulders.text.bpe` -- :class:`ByteLevelBPE` (GPT-2's tokenizer: byte-level BPE, training, vocab.json +
  merges.txt);
* :mod:`~shoulders.text.bert_inputs`, :mod:`~shoulders.text.masking`, :mod:`~shoulders.text.nsp_pairs` -- BERT's
  packed inputs, masked-LM corruption and next-sentence pairs;
* :mod:`~shoulders.text.task_features` -- BERT's features for its fine-tuning tasks (classification, tagging,
  spans, multiple choice) and the way back from predictions.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Any

# name -> submodule: loaded on first use, so that ``shoulders.text.vocab`` (the n-gram chapter's only need) does
# not import the PyTorch-based modules (stream, pad, windows, ...)
_WHERE = {
    "LMCorpus": "lm_data", "take_tokens": "lm_data", "unigram_log_probs": "lm_data", "wikitext2_corpus": "lm_data",
    "attention_mask": "pad", "causal_mask": "pad", "pad_sequences": "pad", "padding_mask": "pad",
    "BPTTBatches": "stream", "LMStream": "stream", "batchify": "stream", "lm_stream": "stream",
    "SquadExample": "task_features", "best_span": "task_features", "choice_features": "task_features",
    "classification_features": "task_features", "span_features": "task_features",
    "span_predictions": "task_features", "split_articles": "task_features", "squad_examples": "task_features",
    "tagging_features": "task_features", "tagging_predictions": "task_features",
    "SIMPLE_WORDS_PATTERN": "tokenize", "chars": "tokenize", "ptb_to_wikitext": "tokenize", "simple_words": "tokenize",
    "words": "tokenize",
    "Vocab": "vocab", "VocabFileError": "vocab", "count_tokens": "vocab",
    "char_ids": "word_chars", "char_table": "word_chars",
    "WindowBatches": "windows", "ngram_batches": "windows", "sliding_windows": "windows", "window_batches": "windows",
    "WordPiece": "wordpiece", "WordTokenizer": "word_tokenizer", "ByteLevelBPE": "bpe",
    "PairBatches": "pair_batches", "PairVocab": "pair_vocab",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    if any(info.name == name for info in pkgutil.iter_modules(__path__)):  # a submodule: sh.text.pad
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE) | {info.name for info in pkgutil.iter_modules(__path__)})


__all__ = [
    "SIMPLE_WORDS_PATTERN",
    "BPTTBatches", "ByteLevelBPE", "LMCorpus", "LMStream", "Vocab", "VocabFileError", "WindowBatches", "WordPiece",
    "WordTokenizer", "PairBatches", "PairVocab",
    "attention_mask", "batchify", "causal_mask", "char_ids", "char_table", "chars", "count_tokens", "lm_stream",
    "ngram_batches", "pad_sequences", "padding_mask", "simple_words", "sliding_windows", "take_tokens",
    "unigram_log_probs", "window_batches", "words", "wikitext2_corpus",
    "SquadExample", "best_span", "choice_features", "classification_features", "span_features", "span_predictions",
    "split_articles", "squad_examples", "tagging_features", "tagging_predictions",
]

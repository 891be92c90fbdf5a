"""The book's giants: named pre-trained models, each a recipe + its config presets + the data it reads.

A chapter that pre-trains a model registers it here once; every later page asks for it by name
(``shoulders.giants.load("bert")``) and gets the same weights, trained once per machine and scale.
"""
from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from torch import nn

from ..config import Config
from ..data.entry import Dataset
from ..models.fasttext import SubwordConfig
from ..models.glove import GloVeConfig, GloVeSSTConfig
from ..models.paragraph_vectors import ParagraphVectorConfig
from ..models.word2vec import Word2VecConfig
from ..models.awd_lstm import AWDLSTMConfig
from ..models.quick_thoughts import QuickThoughtsConfig
from ..models.skip_thoughts import SkipThoughtsConfig
from ..recipes import (awd_lstm, bert, bert_in_domain, cove, elmo, gpt, sentence_vectors, transformer_xl,
                       word_vectors, xlnet)
from ..recipes.artefact import Artefact
from ..models.elmo import ELMoConfig
from ..models.seq2seq import Seq2SeqConfig
from ..text.bpe import ByteLevelBPE
from ..text.pair_vocab import PairVocab
from ..text.vocab import Vocab
from ..text.wordpiece import WordPiece

__all__ = ["CATALOGUE", "Giant", "get", "names", "register"]


@dataclasses.dataclass(frozen=True)
class Giant:
    """A pre-trained model the book shares between chapters.

    Attributes:
        name: how chapters ask for it (``"bert"``).
        title: one line for the model card.
        chapter: where the book trains and explains it.
        config: the recipe's config class; its preset of the current scale is the default.
        train: ``train(cfg, *, device, progress, **hints) -> Artefact`` -- the recipe.
        build: ``build(cfg, tokenizer) -> nn.Module`` -- the untrained model that cached weights are loaded into.
        tokenizer: a class with ``save(path)`` / ``load(path)`` (e.g. :class:`~shoulders.text.wordpiece.WordPiece`),
            stored as ``tokenizer_file``; ``None`` for a model without one.
        data: the registry names of the datasets it is trained on (credited on its card).
        minutes: roughly how long training takes at each scale (2 CPU cores for smoke/cpu, one GPU for full),
            said before training starts.
        published: per scale, a registry entry of a published export of this giant (opt-in download).
        base: the giant this one continues from (e.g. further pre-training on a task's text): :func:`load`
            loads it first -- training it if need be -- at the same scale and preset, hands it to ``train`` as
            ``base=`` (a :class:`~shoulders.giants.store.Loaded`), and keys this giant's cache folder on the base's
            too, so a changed base is never mistaken for the one this giant grew from.
    """

    name: str
    title: str
    chapter: str
    config: type[Config]
    train: Callable[..., Artefact]
    build: Callable[[Any, Any], nn.Module]
    tokenizer: type | None = None
    tokenizer_file: str = "vocab.txt"
    data: tuple[str, ...] = ()
    minutes: Mapping[str, float] = dataclasses.field(default_factory=dict)
    published: Mapping[str, Dataset] = dataclasses.field(default_factory=dict)
    base: str | None = None


BERT = Giant(
    name="bert",
    title="BERT pre-trained on WikiText-2 with masked LM + next-sentence prediction (Devlin et al. 2019)",
    chapter="14 (BERT: pre-training)",
    config=bert.BertPretrainingConfig,
    train=bert.train_giant,
    build=bert.build,
    tokenizer=WordPiece,
    tokenizer_file="vocab.txt",
    data=("wikitext-2",),
    # measured on a 2-core CPU: smoke ~0.5 min (300 steps), cpu ~40 min (16,000 steps of 64 x 64 pieces, the
    # last ~10% of 32 x 128)
    minutes={"smoke": 1, "cpu": 40, "full": 45},
)

BERT_SST = Giant(
    name="bert_sst",
    title="The bert giant pre-trained further with masked LM on the Stanford Sentiment Treebank's training "
          "sentences, labels unused (task-adaptive pre-training, Gururangan et al. 2020)",
    chapter="14 (BERT: fine-tuning)",
    config=bert_in_domain.InDomainConfig,
    train=bert_in_domain.sst_giant,
    build=bert_in_domain.build,
    tokenizer=WordPiece,
    tokenizer_file="vocab.txt",
    data=("wikitext-2", "sst-trees"),
    base="bert",
    # cpu: 2,000 steps of 64 sentences (15 passes) in 301 s on two threads (2026-12-03), the bert giant cached;
    # masked-LM accuracy on SST's dev sentences 26.1% -> 37.2%
    minutes={"smoke": 1, "cpu": 5, "full": 5},
)

ELMO = Giant(
    name="elmo",
    title="ELMo's biLM (character CNN, forward and backward LSTMs) pre-trained on WikiText-2 (Peters et al. 2018)",
    chapter="10 (ELMo)",
    config=ELMoConfig,
    train=elmo.train_giant,
    build=elmo.build,
    tokenizer=Vocab,
    tokenizer_file="vocab.json",
    data=("wikitext-2",),
    minutes={"smoke": 1, "cpu": 50, "full": 120},
)

GLOVE = Giant(
    name="glove",
    title="GloVe word vectors of WikiText-2 (text8 at full) (Pennington et al. 2014): chapter 5's recipe",
    chapter="5 (GloVe)",
    config=GloVeConfig,
    train=word_vectors.glove_giant,
    build=word_vectors.build_glove,
    tokenizer=Vocab,
    tokenizer_file="vocab.json",
    data=("wikitext-2", "text8"),  # text8 at full only
    # cpu: 50 passes, about 6 minutes on one thread (the counting included); 5.3 minutes measured on two threads
    # (2026-12-03)
    minutes={"smoke": 1, "cpu": 6, "full": 15},
)

GLOVE_SST = dataclasses.replace(  # chapter 5's recipe and vocabulary file, on more text
    GLOVE,
    name="glove_sst",
    title="GloVe word vectors of WikiText-2 (text8 at full) plus the Stanford Sentiment Treebank's training "
          "sentences, labels unused: chapter 5's recipe, for chapter 9's question whether CoVe needs GloVe to know "
          "the task's words (benchmarks/cove_levers.py)",
    chapter="9 (CoVe)",
    config=GloVeSSTConfig,
    data=("wikitext-2", "sst-trees", "text8"),  # text8 at full only
    # cpu: 5.4 minutes on two threads (2026-12-04; 2,173,301 tokens, 24,743 words, 8.5M non-zero entries of X)
)

WORD2VEC = Giant(
    name="word2vec",
    title="word2vec skip-gram vectors with negative sampling of WikiText-2 (text8 at full) (Mikolov et al. 2013): "
          "chapter 4's recipe",
    chapter="4 (word2vec)",
    config=Word2VecConfig,
    train=word_vectors.word2vec_giant,
    build=word_vectors.build_word2vec,
    tokenizer=Vocab,
    tokenizer_file="vocab.json",
    data=("wikitext-2", "text8"),  # text8 at full only
    minutes={"smoke": 1, "cpu": 1, "full": 10},  # cpu: 39 s measured on two threads (2026-12-03); full not yet
)

FASTTEXT = Giant(
    name="fasttext",
    title="fastText subword skip-gram vectors (character 3- to 6-grams) of WikiText-2 (text8 at full) "
          "(Bojanowski et al. 2017): chapter 6's recipe",
    chapter="6 (fastText)",
    config=SubwordConfig,
    train=word_vectors.subword_giant,
    build=word_vectors.build_subword,
    tokenizer=Vocab,
    tokenizer_file="vocab.json",
    data=("wikitext-2", "text8"),  # text8 at full only
    minutes={"smoke": 1, "cpu": 2, "full": 10},  # cpu: 113 s measured on two threads (2026-12-03); full not yet
)

PARAGRAPH_VECTORS = Giant(
    name="paragraph_vectors",
    title="Paragraph vectors (PV-DBOW) of WikiText-2's sentences, one paragraph per sentence, with negative sampling "
          "(Le & Mikolov 2014): chapter 7's recipe; kept: the word and output vectors that infer any sentence's vector",
    chapter="7 (sentence vectors)",
    config=ParagraphVectorConfig,
    train=sentence_vectors.paragraph_vectors_giant,
    build=sentence_vectors.build_paragraph_vectors,
    tokenizer=Vocab,
    tokenizer_file="vocab.json",
    data=("wikitext-2",),
    # cpu: 2.9 min on two threads while the test suite shared the cores (2026-12-05); full not yet measured
    minutes={"smoke": 1, "cpu": 3, "full": 20},
)

SKIP_THOUGHTS = Giant(
    name="skip_thoughts",
    title="Skip-thoughts: a GRU sentence encoder trained to generate its neighbouring sentences, on WikiText-2's "
          "articles (Kiros et al. 2015)",
    chapter="7 (sentence vectors)",
    config=SkipThoughtsConfig,
    train=sentence_vectors.skip_thoughts_giant,
    build=sentence_vectors.build_sentence_model,
    tokenizer=Vocab,
    tokenizer_file="vocab.json",
    data=("wikitext-2",),
    # cpu: two passes of 1,019 batches in 20.5 minutes on two threads (614 s a pass, 2026-12-03); full not yet
    minutes={"smoke": 1, "cpu": 21, "full": 60},
)

QUICK_THOUGHTS = Giant(
    name="quick_thoughts",
    title="Quick-thoughts: two GRU sentence encoders trained to pick a sentence's neighbours among the batch, on "
          "WikiText-2's articles (Logeswaran & Lee 2018)",
    chapter="7 (sentence vectors)",
    config=QuickThoughtsConfig,
    train=sentence_vectors.quick_thoughts_giant,
    build=sentence_vectors.build_sentence_model,
    tokenizer=Vocab,
    tokenizer_file="vocab.json",
    data=("wikitext-2",),
    # cpu: five passes of 380 blocks in 6.3 minutes on two threads (76 s a pass, 2026-12-03, at the preset's rate
    # of 1e-3; 5.6 minutes in an earlier run at 5e-4); full not yet measured
    minutes={"smoke": 1, "cpu": 6, "full": 30},
)

COVE_SMALL = Giant(
    name="cove_small",
    title="CoVe's translation model (MT-LSTM on GloVe, attentional LSTM decoder) trained English -> German on "
          "Multi30k, the paper's MT-Small data (McCann et al. 2017)",
    chapter="9 (CoVe)",
    config=Seq2SeqConfig,
    train=cove.train_giant,
    build=cove.build,
    tokenizer=PairVocab,
    tokenizer_file="vocab.json",
    data=("multi30k", "wikitext-2"),
    base="glove",
    # cpu: 4,000 steps of 64 pairs in 24.1 minutes on two threads (2026-12-03, small tests running beside it for
    # part of the time); test BLEU 13.1 (greedy) against 0.9 for copying the source
    minutes={"smoke": 1, "cpu": 24, "full": 30},
)

COVE_LARGE = Giant(
    name="cove_large",
    title="CoVe's translation model trained English -> French on the Tatoeba pairs, about 5.5 times Multi30k's "
          "pairs (McCann et al. 2017's larger MT giants in small)",
    chapter="9 (CoVe)",
    config=cove.CoVeLargeConfig,
    train=cove.train_giant,
    build=cove.build,
    tokenizer=PairVocab,
    tokenizer_file="vocab.json",
    data=("tatoeba-fra-eng", "wikitext-2"),
    base="glove",
    # cpu: 6,000 steps of 64 pairs in 35.9 minutes on two threads (2026-12-03, task-model runs sharing the machine
    # for about half of it; about 21 minutes alone at the 0.2 s a step it ran at undisturbed); test BLEU 13.3
    # against 0.5
    minutes={"smoke": 1, "cpu": 25, "full": 60},
)

AWD_LSTM = Giant(
    name="awd_lstm",
    title="The AWD-LSTM language model pre-trained on WikiText-2 (Merity et al. 2018): ULMFiT's first stage",
    chapter="11 (ULMFiT)",
    config=AWDLSTMConfig,
    train=awd_lstm.train_giant,
    build=awd_lstm.build,
    tokenizer=Vocab,
    tokenizer_file="vocab.json",
    data=("wikitext-2",),
    # cpu: 12,000 steps in 46.3 minutes with two threads (validation perplexity 117.4), measured
    minutes={"smoke": 1, "cpu": 45, "full": 30},
)

GPT = Giant(
    name="gpt",
    title="GPT: a decoder-only Transformer LM pre-trained on WikiText-2 with byte-level BPE (Radford et al. 2018)",
    chapter="13 (GPT)",
    config=gpt.GPTPretrainingConfig,
    train=gpt.train_giant,
    build=gpt.build,
    tokenizer=ByteLevelBPE,
    tokenizer_file="vocab.json",  # merges.txt beside it
    data=("wikitext-2",),
    # cpu: 41.9 and 36.4 minutes measured on two threads (2026-12-01, 2026-12-02); 33.2 with the fused output
    # layer and loss (models/linear_cross_entropy, 2026-12-03; 218.9 per word as before)
    minutes={"smoke": 1, "cpu": 35, "full": 60},
)

TRANSFORMER_XL = Giant(
    name="transformer_xl",
    title="Transformer-XL: a language model with segment recurrence and relative positions, trained on WikiText-2 "
          "with GPT's tokens and budget (Dai et al. 2019)",
    chapter="15 (Transformer-XL and XLNet)",
    config=transformer_xl.TransformerXLPretrainingConfig,
    train=transformer_xl.train_giant,
    build=transformer_xl.build,
    tokenizer=ByteLevelBPE,
    tokenizer_file="vocab.json",  # merges.txt beside it: chapter 13's BPE
    data=("wikitext-2",),
    # cpu: GPT's 2,400 steps, segments of 32 with a memory of four, in 41.0 minutes on two threads with its
    # evaluations (2026-12-03, the fused output layer and loss; the gpt giant 33.2 the same day): validation
    # perplexity 173.5 per word against GPT's 218.9 (segments of 64 with two remembered: 45.8 minutes, 176.0; with
    # one remembered and the unfused loss: 54.4 minutes, 178.2)
    minutes={"smoke": 1, "cpu": 41, "full": 60},
)

XLNET = Giant(
    name="xlnet",
    title="XLNet pre-trained on WikiText-2 with the permutation LM and two-stream attention, on BERT's pairs, "
          "vocabulary and budget (Yang et al. 2019)",
    chapter="15 (Transformer-XL and XLNet)",
    config=xlnet.XLNetPretrainingConfig,
    train=xlnet.train_giant,
    build=xlnet.build,
    tokenizer=WordPiece,
    tokenizer_file="vocab.txt",
    data=("wikitext-2",),
    # cpu: 11,000 steps at 1.27x BERT's step (benchmarks/transformer_xl.py --part step), 87% of the bert giant's
    # compute; 52.1 minutes measured on two threads with the long phase and evaluations (2026-12-02)
    minutes={"smoke": 1, "cpu": 52, "full": 60},
)

_CATALOGUE: dict[str, Giant] = {g.name: g for g in (WORD2VEC, GLOVE, GLOVE_SST, FASTTEXT, PARAGRAPH_VECTORS,
                                                     SKIP_THOUGHTS, QUICK_THOUGHTS, COVE_SMALL, COVE_LARGE, ELMO,
                                                     AWD_LSTM, GPT, BERT, BERT_SST, TRANSFORMER_XL, XLNET)}
CATALOGUE: Mapping[str, Giant] = MappingProxyType(_CATALOGUE)
"""Every giant of the book by name (read-only; :func:`register` adds one)."""


def names() -> tuple[str, ...]:
    """The names of the book's giants."""
    return tuple(_CATALOGUE)


def get(name: str | Giant) -> Giant:
    """The giant called ``name`` (a :class:`Giant` is returned as is); an unknown name lists the known ones."""
    if isinstance(name, Giant):
        return name
    try:
        return _CATALOGUE[name]
    except KeyError:
        close = difflib.get_close_matches(str(name), list(_CATALOGUE), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise KeyError(f"no giant called {name!r}; the book's giants are {sorted(_CATALOGUE)}.{hint}") from None


def register(giant: Giant, replace: bool = False) -> Giant:
    """Add ``giant`` to the catalogue (a later chapter's, or a reader's own); an existing name needs ``replace``."""
    if giant.name in _CATALOGUE and not replace:
        raise ValueError(f"a giant called {giant.name!r} exists already; pass replace=True to replace it")
    _CATALOGUE[giant.name] = giant
    return giant

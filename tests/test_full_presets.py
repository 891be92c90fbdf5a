"""`full` without a GPU: every buildable config's ``full`` preset builds its model and takes one optimisation step
at its real batch and sequence shapes (``cfg.step_batch()``: the preset's batch size, sequence length / BPTT /
context, full vocabulary sizes, synthetic ids) on the CPU -- so a ``full`` run cannot crash on a reader's GPU for a
shape, dtype or memory reason these tests could have caught. Word vectors also take one step of their own
hand-written SGD (``sgd_step``, how chapters 4 and 6 train them) at the full batch shape.

Every preset fits in a few GB of CPU memory (the process peaks at ~5.5 GB, in the BERT pre-training step;
``benchmarks/full_plan.py`` prints each run's estimate), so none needs the meta device. The file takes 3.5 minutes
on two workers of one thread each (``-n 2``, 2026-12-06: 212 s) and about 6 in the README's test command, where one
worker runs a whole file (``--dist loadfile``); most of it is three steps: Skip-thoughts' (69 s: 2,400-unit GRUs and
two decoders over a 20,000-word softmax), Quick-thoughts' (51 s) and Transformer-XL's (41 s); no other over 31 s.
"""
from __future__ import annotations

import pytest
import torch

import shoulders as sh
from shoulders.models.bert import BertConfig
from shoulders.models.cw import CWConfig
from shoulders.models.fasttext import FastTextConfig, SubwordConfig
from shoulders.models.glove import GloVeConfig
from shoulders.models.infersent import InferSentConfig
from shoulders.models.nnlm import NGramLMConfig
from shoulders.models.paragraph_vectors import ParagraphVectorConfig
from shoulders.models.quick_thoughts import QuickThoughtsConfig
from shoulders.models.rnnlm import RecurrentLMConfig
from shoulders.models.seq2seq import Seq2SeqConfig
from shoulders.models.skip_thoughts import SkipThoughtsConfig
from shoulders.models.transformer import TransformerConfig
from shoulders.models.word2vec import Word2VecConfig
from shoulders.presets import all_configs
from shoulders.models.xlnet import XLNetConfig
from shoulders.recipes.bert import BertPretrainingConfig
from shoulders.recipes.transformer_xl import TransformerXLPretrainingConfig
from shoulders.recipes.xlnet import XLNetPretrainingConfig
from shoulders.text.bert_inputs import IGNORE

FULL = [cls for cls in all_configs() if hasattr(cls, "build")]


def test_every_buildable_config_is_covered():
    names = {cls.__name__ for cls in FULL}
    assert {"NNLMConfig", "LSTMLMConfig", "Word2VecConfig", "GloVeConfig", "FastTextConfig", "SubwordConfig",
            "TransformerConfig", "BertPretrainingConfig", "TransformerXLConfig", "TransformerXLPretrainingConfig",
            "XLNetConfig", "XLNetPretrainingConfig"} <= names
    assert all(callable(getattr(cls, "step_batch", None)) for cls in FULL)


def shapes(batch):
    if isinstance(batch, dict):
        return {k: tuple(v.shape) for k, v in batch.items()}
    return [tuple(t.shape) for t in (batch if isinstance(batch, (tuple, list)) else (batch,))]


def expected_shapes(cfg):
    """What one training step of the preset looks like, from its own fields."""
    if isinstance(cfg, NGramLMConfig):
        return [(cfg.batch_size, cfg.n - 1), (cfg.batch_size,)]
    if isinstance(cfg, CWConfig):
        return [(cfg.batch_size, cfg.window)]
    if isinstance(cfg, RecurrentLMConfig):
        return [(cfg.batch_size, cfg.bptt)] * 2
    if isinstance(cfg, GloVeConfig):
        return [(cfg.batch_size,)] * 3
    if isinstance(cfg, ParagraphVectorConfig):  # PV-DBOW: (paragraph, word) for every token of the batch
        return [(cfg.batch_words,)] * 2 if cfg.arch == "dbow" else [(cfg.batch_words, 1 + 2 * cfg.window),
                                                                     (cfg.batch_words,),
                                                                     (cfg.batch_words, 1 + 2 * cfg.window)]
    if isinstance(cfg, SkipThoughtsConfig):  # a sentence, and its neighbours framed by <s> ... </s>
        return [(cfg.batch_size, cfg.max_len), (cfg.batch_size, cfg.max_len + 2), (cfg.batch_size, cfg.max_len + 2)]
    if isinstance(cfg, InferSentConfig):  # premises, hypotheses, labels
        return [(cfg.batch_size, cfg.max_len), (cfg.batch_size, cfg.max_len), (cfg.batch_size,)]
    if isinstance(cfg, QuickThoughtsConfig):  # a block of consecutive sentences and which are each other's context
        return [(cfg.batch_size, cfg.max_len), (cfg.batch_size, cfg.batch_size)]
    if isinstance(cfg, FastTextConfig):
        per_text = 9 + (8 if cfg.word_ngrams > 1 else 0)  # SST-2's 9.4 words a phrase, and their bigrams
        return [(cfg.batch_size * per_text,), (cfg.batch_size,), (cfg.batch_size,)]
    if isinstance(cfg, (TransformerConfig, Seq2SeqConfig)):
        return [(cfg.batch_size, 13), (cfg.batch_size, 18), (cfg.batch_size, 18)]  # Multi30k's padded lengths
    if isinstance(cfg, TransformerXLPretrainingConfig):  # a segment and the memory of the one before
        return {"x": (cfg.batch_size, cfg.seg_len), "y": (cfg.batch_size, cfg.seg_len),
                "state": (cfg.n_layers, cfg.batch_size, cfg.mem_len, cfg.d_model)}
    if isinstance(cfg, (XLNetPretrainingConfig, XLNetConfig)):
        B, T, P = ((cfg.batch_size, cfg.max_len, cfg.max_len // cfg.predict_k)
                   if isinstance(cfg, XLNetPretrainingConfig) else (2, 512, 85))
        return {"input_ids": (B, T), "token_type_ids": (B, T), "attention_mask": (B, T), "perm_mask": (B, T, T),
                "target_mapping": (B, P, T), "target_ids": (B, P)}
    if isinstance(cfg, BertPretrainingConfig):
        B, T = cfg.batch_size, cfg.max_len
        return {"input_ids": (B, T), "token_type_ids": (B, T), "attention_mask": (B, T), "mlm_labels": (B, T),
                "nsp_labels": (B,)}
    if isinstance(cfg, BertConfig):
        T = cfg.max_len
        return {"input_ids": (32, T), "token_type_ids": (32, T), "attention_mask": (32, T), "mlm_labels": (32, T),
                "nsp_labels": (32,)}
    return None  # word2vec-style: checked in test_word2vec_step_batch_is_a_word2vec_batch


@pytest.mark.parametrize("cls", FULL, ids=[c.__name__ for c in FULL])
def test_step_batch_has_the_full_shapes(cls):
    cfg = cls.preset("full")
    batch = cfg.step_batch()
    want = expected_shapes(cfg)
    if want is not None:
        assert shapes(batch) == want
    tensors = batch.values() if isinstance(batch, dict) else (batch if isinstance(batch, tuple) else (batch,))
    vocab = max(getattr(cfg, k, 0) for k in ("vocab_size", "src_vocab", "tgt_vocab"))
    if isinstance(cfg, FastTextConfig):
        vocab = cfg.vocab_size + cfg.buckets
    for t in tensors:
        if t.dtype == torch.long:
            t = t[t != IGNORE]  # BERT's mlm_labels: -100 where nothing is predicted
            assert int(t.min()) >= 0 and int(t.max()) < vocab


@pytest.mark.parametrize("cls", [Word2VecConfig, SubwordConfig])
def test_word2vec_step_batch_is_a_word2vec_batch(cls):
    """``batch_words`` centre words, each with 2b pairs for its dynamic window b ~ U{1..window}: about
    ``batch_words * (window + 1)`` pairs, as :class:`~shoulders.models.word2vec.Word2VecBatches` yields."""
    cfg = cls.preset("full")
    x, y = cfg.step_batch()
    assert x.shape == y.shape and x.dim() == 1
    mean = cfg.batch_words * (cfg.window + 1)
    assert abs(x.numel() - mean) < 0.1 * mean
    ctx, center, mask = cfg.replace(arch="cbow").step_batch() if cls is Word2VecConfig else (None, None, None)
    if ctx is not None:
        assert ctx.shape == (cfg.batch_words, 2 * cfg.window) and center.shape == (cfg.batch_words,)
        assert abs(int(mask.sum()) - mean) < 0.1 * mean


def optimizer_for(cfg, model):
    """The optimiser the chapter trains this preset with, where it changes memory or the kind of update."""
    if isinstance(cfg, FastTextConfig):  # train_classifier: SGD on sparse gradients of the big table
        model.A.sparse = True
        return torch.optim.SGD(model.parameters(), lr=cfg.lr * cfg.batch_size)
    if isinstance(cfg, GloVeConfig):  # train_glove: AdaGrad
        return torch.optim.Adagrad(model.parameters(), lr=cfg.lr)
    if isinstance(cfg, TransformerConfig):  # recipes.translation: Adam (0.9, 0.98)
        return torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=cfg.betas, eps=cfg.adam_eps)
    if isinstance(cfg, BertPretrainingConfig):
        return sh.train.adamw(model, lr=cfg.lr, weight_decay=cfg.weight_decay, eps=cfg.adam_eps)
    return torch.optim.AdamW(model.parameters(), lr=getattr(cfg, "lr", 1e-3))


@pytest.mark.parametrize("cls", FULL, ids=[c.__name__ for c in FULL])
def test_full_preset_takes_one_step_at_full_shape(cls):
    cfg = cls.preset("full")
    sh.seed(0)
    model = cfg.build()
    batch = cfg.step_batch()
    opt = optimizer_for(cfg, model)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    clip = getattr(cfg, "clip", None)
    hist = sh.train.fit(model, [batch], opt, steps=1, clip=clip, progress=False, device="cpu")
    loss = hist.last("loss")
    assert loss == loss and abs(loss) < float("inf"), f"{cls.__name__}[full] gave a non-finite loss"
    changed = [k for k, v in model.state_dict().items() if not torch.equal(v, before[k])]
    assert changed, f"{cls.__name__}[full]: one optimisation step changed no parameter"


W2V_VARIANTS = [(Word2VecConfig, "sg", "ns"), (Word2VecConfig, "sg", "hs"), (Word2VecConfig, "cbow", "ns"),
                (Word2VecConfig, "cbow", "hs"), (SubwordConfig, "sg", "ns")]


@pytest.mark.parametrize("cls, arch, output", W2V_VARIANTS,
                         ids=[f"{c.__name__}-{a}-{o}" for c, a, o in W2V_VARIANTS])
def test_full_word_vectors_take_one_sgd_step(cls, arch, output):
    """Chapters 4 and 6 train with word2vec.c's hand-written SGD (``train_word2vec``): one ``sgd_step`` at the
    full batch shape, with the shared noise words drawn as ``train_word2vec`` draws them."""
    cfg = cls.preset("full") if cls is SubwordConfig else cls.preset("full", arch=arch, output=output)
    sh.seed(0)
    model = cfg.build()
    batch = cfg.step_batch()
    x, y = batch[0], batch[1]
    mask = batch[2] if len(batch) > 2 else None
    kw = {}
    if cfg.output == "ns":
        G = cfg.share_negatives
        kw = {"noise": model.out.sampler.sample((-(-y.shape[0] // G), cfg.negatives), torch.Generator()),
              "group": G}
    before = model.out.weight.detach().clone()
    loss = float(model.sgd_step(x, y, mask=mask, lr=cfg.lr, **kw))
    assert loss == loss and abs(loss) < float("inf") and loss > 0
    # the output vectors start at zero (word2vec.c), so the first step moves them and not yet the word vectors
    rows = (before != model.out.weight.detach()).any(1)
    assert int(rows.sum()) > 0, "one sgd_step changed no output vector"

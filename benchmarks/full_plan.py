"""What every chapter's ``full`` run costs, before anyone starts it: parameters, tokens, FLOPs, memory and wall
time projected on named GPUs, from one training step of each ``full`` preset measured on the CPU.

    python benchmarks/full_plan.py                  # the table and the notes (under a minute on two cores)
    python benchmarks/full_plan.py --markdown       # the same as Markdown, for the README
    python benchmarks/full_plan.py --chapters 2 14  # some chapters only
    python benchmarks/full_plan.py --tiny           # the same code path on the smoke presets with tiny batches:
                                                    # seconds (tests/test_benchmarks.py runs it, so it cannot rot)

One row per model a chapter trains at ``full`` (chapter 4's word2vec variants, chapter 14's fine-tunings, ...).
For each, one step on ``cfg.step_batch()`` -- the preset's own batch and sequence shapes with synthetic ids of the
full vocabulary size (tests/test_full_presets.py runs the same step) -- is run once on the CPU under three
counters:

* **FLOPs**: ``torch.utils.flop_counter.FlopCounterMode`` on forward + backward (and, for the word vectors, on
  their hand-written ``sgd_step``). It sees matrix products, convolutions and fused attention only (with torch's
  formulas added for the CPU's fused attention and oneDNN's LSTM layers, which its registry lacks): embedding
  lookups, softmaxes, norms and other elementwise work are not counted.
* **bytes moved**: every non-view ATen op of the step (optimiser update included) is taken to read its inputs and
  write its outputs once; gathers and scatters (embedding lookups, ``index_select``, ``scatter_add_``) count only
  the rows they touch. It is the cost of the word-vector models, whose steps are gathers and scatters of table
  rows, so their time is projected from it (``bytes``), not from FLOPs.
* **kernels**: the non-view ops of forward + backward, plus 10 for the fused optimiser, the gradient norm and
  ``fit``'s one host sync: the launch-bound floor of a small model.

Memory: parameters + gradients + optimiser state (measured after the step) + the activations autograd saves for
backward (``torch.autograd.graph.saved_tensors_hooks``, distinct storages, parameters excluded), in fp32 as
measured on the CPU (bf16 autocast on a GPU roughly halves the activations; transient buffers of the largest op
are not included). For the hand-written SGD rows, which save nothing, the last term is every intermediate of the
step (an upper bound).

Wall time per GPU = steps x max(floor, compute), with compute = FLOPs / (peak x MFU) for FLOP rows and bytes /
(HBM bandwidth x 50%) for byte rows, and floor = max(5 ms, 1 ms + 10 us x kernels): ``fit``'s bookkeeping and its
host sync (~1 ms a step, measured on the CPU) plus ~10 us to launch each kernel from eager PyTorch. MFU by kind of
model (stated, not measured -- no GPU has run these presets yet):

* transformers (chapters 12, 14): 30%; d_model 256 leaves the GEMMs small and the elementwise work unfused;
* recurrent LMs (chapters 3, 10, 11): 15%; the recurrence is 35-70 small sequential GEMMs (batch 20-80), only the
  softmax is big;
* window LMs (chapter 2): 15%; a 33,278-way softmax over batches of 256-512 is as much memory traffic as math;
* word vectors (chapters 4-6): time from bytes at 50% of the HBM bandwidth (random rows, atomic adds).

GPUs: T4 (Colab's free GPU; 16 GB), A100 40 GB, H100 SXM 80 GB. The T4 column uses 8.1 TFLOP/s, its fp32 peak,
not its 65 TFLOP/s fp16 tensor-core peak: ``fit`` autocasts to bf16 only where the GPU has it in hardware
(``shoulders.device.autocast_dtype``; Turing has no bf16 tensor cores, and emulated bf16 is slower than fp32), so
on a T4 it trains in fp32.

Corpus sizes used for steps and tokens: WikiText-2 train 2,088,628 tokens; text8 17,005,207 words (98.3% in the
min_count-5 vocabulary, kept by subsampling as estimated below); Multi30k 29,000 pairs; SST-2 67,349 phrases; the
fine-tuning sets as chapter 14 builds them at ``full`` (lengths measured with the 8,000-piece WikiText-2 WordPiece).
The budget of a chapter's ``full`` run is 60 minutes on one A100 (no preset states another); rows and chapters over
it are flagged.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "2")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from typing import Any, Callable  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils import flop_counter  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import shoulders as sh  # noqa: E402
from shoulders import heads  # noqa: E402
from shoulders.models.awd_lstm import AWDLSTMConfig  # noqa: E402
from shoulders.models.bert import BertModel  # noqa: E402
from shoulders.models.elmo import ELMoConfig  # noqa: E402
from shoulders.models.elmo_task import ContextualEncoder  # noqa: E402
from shoulders.models.cw import CWConfig  # noqa: E402
from shoulders.models.fasttext import FastTextConfig, SubwordConfig  # noqa: E402
from shoulders.models.gpt import GPTModel  # noqa: E402
from shoulders.models.glove import GloVeConfig  # noqa: E402
from shoulders.models.lbl import LBLConfig  # noqa: E402
from shoulders.models.nnlm import NNLMConfig  # noqa: E402
from shoulders.models.rnnlm import LSTMLMConfig, RNNLMConfig  # noqa: E402
from shoulders.models.seq2seq import Seq2SeqConfig  # noqa: E402
from shoulders.models.transformer import TransformerConfig  # noqa: E402
from shoulders.models.ulmfit import PoolingClassifier  # noqa: E402
from shoulders.models.word2vec import Word2VecConfig  # noqa: E402
from shoulders.models.xlnet import XLNetModel  # noqa: E402
from shoulders.recipes.bert import BertPretrainingConfig  # noqa: E402
from shoulders.recipes.bert_in_domain import InDomainConfig  # noqa: E402
from shoulders.recipes.cove import CoVeLargeConfig, CoVeTaskConfig  # noqa: E402
from shoulders.recipes.elmo import ELMoTaskConfig  # noqa: E402
from shoulders.recipes.finetune import BertFinetuningConfig  # noqa: E402
from shoulders.recipes.gpt import CharGPTConfig, GPTPretrainingConfig  # noqa: E402
from shoulders.recipes.gpt_transfer import AuxiliaryLM, GPTFinetuningConfig  # noqa: E402
from shoulders.recipes.three_ways import ThreeWaysConfig  # noqa: E402
from shoulders.recipes.transformer_xl import TransformerXLPretrainingConfig  # noqa: E402
from shoulders.recipes.xlnet import XLNetPretrainingConfig  # noqa: E402
from shoulders.recipes.xlnet_transfer import XLNetFinetuningConfig  # noqa: E402
from shoulders.recipes.ulmfit import ULMFiTConfig  # noqa: E402
from shoulders.text.bert_inputs import IGNORE  # noqa: E402
from shoulders.train.loop import call_model, split_output  # noqa: E402

# -- what the projections assume ----------------------------------------------------------------------------------
GPUS = {  # name: (dense peak FLOP/s the loop can use, HBM bytes/s, memory bytes)
    "T4": (8.1e12, 320e9, 16e9),  # fp32 peak: no bf16 tensor cores on Turing, so fit trains in fp32 there (see above)
    "A100": (312e12, 1_555e9, 40e9),  # bf16 dense, 40 GB (Colab's A100)
    "H100": (989e12, 3_350e9, 80e9),  # bf16 dense, SXM
}
MFU = {"transformer": 0.30, "recurrent": 0.15, "window": 0.15}
BANDWIDTH_EFFICIENCY = 0.5
FLOOR_S, LOOP_S, LAUNCH_S, OPT_KERNELS = 5e-3, 1e-3, 10e-6, 10
BUDGET_S = 60 * 60  # a chapter's full run on one A100
BUDGET_GPU = "A100"

WIKITEXT2_TRAIN = 2_088_628  # tokens, <eos> included
TEXT8 = 17_005_207
MULTI30K_TRAIN = 29_000
SST2_TRAIN = 67_349
SST_SENTENCES = 6_920  # SST-2's training sentences (chapter 11 reads sentences, not GLUE's phrases)
SST_TEXT = 172_110  # chapter 11's stage-2 text: the treebank's 8,544 training sentences, 163,566 words + <eos> each
SST_LENGTH = 20  # words of a padded batch of similar-length SST sentences (19.1 a sentence on average)
# text8 is not in the offline mirror: its in-vocabulary share (min_count 5) and the share that word2vec.c's
# subsampling keeps are measured on lower-cased, alphabetic WikiText-2 train (the same kind of text), with
# word2vec.c's keep rule; with max_vocab the kept share is of the top words' tokens
IN_VOCAB = 0.983
KEPT = {(1e-3, None): 0.758, (1e-4, None): 0.570, (0.0, None): 1.0,
        (1e-3, 2_000): 0.776 * 0.662, (1e-4, 2_000): 0.776 * 0.413, (0.0, 2_000): 0.776}
# non-zero entries of GloVe's X at window 10: 7,108,695 on 1,573,304 tokens of that WikiText-2 (|V| 19,281),
# growing as tokens^0.874 between 0.8M and 1.6M tokens: ~56M on text8's 16.7M in-vocabulary tokens
GLOVE_NNZ_REF, GLOVE_TOKENS_REF, GLOVE_EXPONENT = 7_108_695, 1_573_304, 0.874
# chapter 14 at full, measured with the 8,000-piece WordPiece of WikiText-2 train and the chapter's batches of 32
# (length-sorted within pools of 50 batches): training examples and mean padded length
FINETUNE_TASKS = {  # name: (head, examples, mean padded length, runs, note)
    "SST-2": ("cls", SST2_TRAIN, 17, 8, "67,349 phrases; 2 encoders x 3 seeds + frozen + top-layer runs"),
    "SNLI": ("cls", 9_842, 34, 2, "the 9,842 labelled dev pairs (the mirror has no train split)"),
    "WNUT-17": ("tag", 3_394, 39, 2, "3,394 training sentences"),
    "SQuAD v1.1": ("span", 10_906, 196, 2, "8,466 questions of 3/4 of the dev articles, 10,906 windows of <= 256"),
    "Balanced COPA": ("choice", 500, 23, 2, "500 items x 2 choices"),
}
# chapter 13's tasks: training examples (the cpu/full presets' SST-2 sentences, SNLI dev pairs, COPA items) and a
# mean padded length in byte-level BPE tokens of WikiText-2 (8,000 entries), start/delimiter/extract included
GPT_TASKS = {  # name: (head, classes, examples, mean padded length, note)
    "SST-2": ("cls", 2, SST_SENTENCES, 28, "6,920 sentences"),
    "SNLI": ("cls", 3, 9_842, 32, "the 9,842 labelled dev pairs"),
    "Balanced COPA": ("choice", 2, 500, 20, "500 items x 2 choices"),
}
WIKITEXT2_BPE = 2_699_509  # WikiText-2 train in the 8,000-entry byte-level BPE of chapter 13 (measured)
TINY_SHAKESPEARE_TRAIN = 1_003_854  # characters: the first 90% of Tiny Shakespeare
# chapter 10's tasks, measured with the chapter's word tokenizer and batches of 32 (length-sorted within pools of
# 50 batches): (head, classes, training examples, mean padded length in words, note)
ELMO_TASKS = {
    "SST-5": ("cls", 5, 8_544, 22, "8,544 training sentences"),
    "WNUT-17": ("tag", 13, 3_394, 21, "3,394 training sentences"),
    "SNLI": ("cls", 3, 9_842, 25, "the 9,842 labelled dev pairs"),
}
ELMO_TASK_WORDS = 42_160  # the task vocabulary of SST-5 + WNUT-17 + SNLI (dev and test), measured
TATOEBA_TRAIN = 163_867  # chapter 9's English-French training pairs (Tatoeba less the hashed held-out 4%), measured
# chapter 9's tasks, as chapter 10's: (head, classes, training examples, mean padded length in words, note); the
# task vocabulary is about chapter 10's (SST-2 and SST-5 share their sentences, SNLI the same)
COVE_TASKS = {
    "SST-2": ("cls", 2, SST_SENTENCES, 22, "6,920 training sentences"),
    "SST-5": ("cls", 5, 8_544, 22, "8,544 training sentences"),
    "SNLI": ("cls", 3, 9_842, 25, "the 9,842 labelled dev pairs"),
}
BERT_PAIRS_PER_PASS = 13_261  # NSP pairs of WikiText-2 train at max_len 256 (measured)
SST_TRAIN_SENTENCES = 8_544  # the bert_sst giant's text: SST's training sentences


# -- counters -----------------------------------------------------------------------------------------------------
aten = torch.ops.aten
GATHERS = {aten.embedding.default, aten.index_select.default, aten.index.Tensor, aten.gather.default}
BAGS = {aten._embedding_bag.default, aten._embedding_bag_forward_only.default}
SCATTERS = {aten.scatter_add_.default, aten.scatter_add.default, aten.index_add_.default, aten.index_add.default,
            aten.index_put_.default, aten._index_put_impl_.default, aten.scatter_.src, aten.scatter.src}
DENSE_FROM_ROWS = {aten.embedding_dense_backward.default}
FREE = ("aten.empty", "aten.detach", "aten.alias", "aten.lift_fresh", "aten._local_scalar_dense", "aten.set_",
        "aten._unsafe_view", "aten._reshape_alias")  # no kernel, no traffic


def _tensors(x: Any) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return []


def _nbytes(t: torch.Tensor) -> int:
    """Bytes a kernel reads or writes for ``t``: its elements, or its storage if smaller (an expanded index)."""
    if t.is_sparse:
        return _nbytes(t._values()) + _nbytes(t._indices())
    n = t.numel() * t.element_size()
    return min(n, t.untyped_storage().nbytes()) if t.device.type != "meta" else n


class Traffic(TorchDispatchMode):
    """Counts the kernels (non-view ATen ops) of what runs inside it and the bytes they move (see the docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.kernels, self.bytes, self.outputs = 0, 0, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = str(func)
        if getattr(func, "is_view", False) or name.startswith(FREE):
            return out
        self.kernels += 1
        if func in GATHERS:
            moved = 2 * sum(_nbytes(t) for t in _tensors(out)) + sum(_nbytes(t) for t in _tensors(args[1:]))
        elif func in BAGS:
            weight, indices = args[0], args[1]
            row = weight.shape[1] * weight.element_size()
            moved = indices.numel() * (row + indices.element_size()) + 2 * _nbytes(_tensors(out)[0])
        elif func in SCATTERS:
            src = [t for t in _tensors(args[1:]) if t.dtype.is_floating_point]
            index = [t for t in _tensors(args[1:]) if not t.dtype.is_floating_point]
            moved = 3 * sum(_nbytes(t) for t in src) + sum(_nbytes(t) for t in index)
        elif func in DENSE_FROM_ROWS:  # a dense |V| x d gradient: zero-filled, then the rows added
            moved = sum(_nbytes(t) for t in _tensors(out)) + 3 * _nbytes(args[0]) + _nbytes(args[1])
        else:  # an in-place op reads and writes its tensor: counted twice, on purpose
            moved = sum(_nbytes(t) for t in _tensors(args) + _tensors(kwargs) + _tensors(out))
        self.bytes += moved
        if not (name.endswith("_.default") or name.endswith("_.Tensor") or name.endswith("_.Scalar")):
            self.outputs += sum(_nbytes(t) for t in _tensors(out))
        return out


def _cpu_flash(query, key, value, *args, out_shape=None, **kwargs):
    return flop_counter.sdpa_flop_count(query, key, value)


def _cpu_flash_backward(grad_out, query, key, value, *args, out_shape=None, **kwargs):
    return flop_counter.sdpa_backward_flop_count(grad_out, query, key, value)


def _rnn_layer(input, w_ih, w_hh, *args, out_shape=None, **kwargs):
    """One oneDNN RNN/LSTM layer: 2 x (tokens) x (gates*H x in + gates*H x H) for the two matrix products."""
    return 2 * math.prod(input[:-1]) * (math.prod(w_ih) + math.prod(w_hh))


def _rnn_layer_backward(input, w_ih, w_hh, *args, out_shape=None, **kwargs):
    return 2 * _rnn_layer(input, w_ih, w_hh)  # gradients of the inputs and of the weights


# not in torch's FLOP registry on the CPU: fused attention (the CUDA kernels are registered) and the oneDNN
# recurrent layers nn.LSTM runs on (cuDNN's are not registered either): the same formulas
CPU_KERNELS = {aten._scaled_dot_product_flash_attention_for_cpu: _cpu_flash,
               aten._scaled_dot_product_flash_attention_for_cpu_backward: _cpu_flash_backward,
               aten.mkldnn_rnn_layer: _rnn_layer, aten.mkldnn_rnn_layer_backward: _rnn_layer_backward}


@dataclasses.dataclass
class Measured:
    params: int
    flops: float  # one step: forward + backward (or the hand-written update)
    bytes: float
    kernels: int
    memory: dict[str, int]  # params, grads, optimizer, activations

    @property
    def peak(self) -> int:
        return sum(self.memory.values())


def _unique_bytes(tensors) -> int:
    seen, total = set(), 0
    for t in tensors:
        if t is None:
            continue
        key = (t.data_ptr(), t.numel()) if not t.is_sparse else (id(t), 0)
        if key not in seen:
            seen.add(key)
            total += _nbytes(t)
    return total


def measure_fit_step(model: nn.Module, batch: Any, optimizer: torch.optim.Optimizer) -> Measured:
    """One step as :func:`shoulders.train.fit` takes it (forward, backward, optimiser), under the counters."""
    model.train()
    params = list(model.parameters())
    param_ptrs = {p.untyped_storage().data_ptr() for p in params}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if not t.is_sparse and t.layout == torch.strided:
            ptr = t.untyped_storage().data_ptr()
            if ptr not in param_ptrs:
                saved[ptr] = t.untyped_storage().nbytes()
        return t

    optimizer.zero_grad(set_to_none=True)
    with flop_counter.FlopCounterMode(display=False, custom_mapping=CPU_KERNELS) as flops, Traffic() as traffic:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss, _ = split_output(call_model(model, batch))
        loss.backward()
    if not math.isfinite(float(loss.detach())):
        raise RuntimeError(f"{type(model).__name__}: non-finite loss {float(loss.detach())} at the step shapes")
    grads = _unique_bytes(p.grad for p in params)
    with Traffic() as update:
        optimizer.step()
    state = _unique_bytes(t for s in optimizer.state.values() for t in s.values()
                          if isinstance(t, torch.Tensor) and t.dim() > 0)
    return Measured(sum(p.numel() for p in params), float(flops.get_total_flops()), traffic.bytes + update.bytes,
                    traffic.kernels + OPT_KERNELS,
                    {"params": _unique_bytes(params), "grads": grads, "optimizer": state,
                     "activations": sum(saved.values())})


def measure_sgd_step(model: nn.Module, batch: Any, cfg: Any) -> Measured:
    """One step of word2vec.c's hand-written SGD (``sgd_step``), as ``train_word2vec`` takes it."""
    x, y = batch[0], batch[1]
    mask = batch[2] if len(batch) > 2 else None
    kw: dict[str, Any] = {}
    params = list(model.parameters())
    with flop_counter.FlopCounterMode(display=False, custom_mapping=CPU_KERNELS) as flops, Traffic() as traffic:
        if cfg.output == "ns":
            G = cfg.share_negatives
            kw = {"noise": model.out.sampler.sample((-(-y.shape[0] // G), cfg.negatives), torch.Generator()),
                  "group": G}
        loss = float(model.sgd_step(x, y, mask=mask, lr=cfg.lr, **kw))
    if not math.isfinite(loss):
        raise RuntimeError(f"{type(model).__name__}: non-finite loss {loss} at the step shapes")
    return Measured(sum(p.numel() for p in params), float(flops.get_total_flops()), traffic.bytes,
                    traffic.kernels, {"params": _unique_bytes(params), "grads": 0, "optimizer": 0,
                                      "activations": traffic.outputs})


# -- the runs -----------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Run:
    chapter: int
    name: str
    build: Callable[[], nn.Module]
    batch: Callable[[], Any]
    steps: int  # optimiser steps of one run
    per_step: float  # items per step
    unit: str
    note: str  # where steps and items come from
    kind: str  # "transformer" | "recurrent" | "window" | "bytes"
    optimizer: Callable[[nn.Module], torch.optim.Optimizer] | None = None  # None: hand-written SGD
    cfg: Any = None
    runs: int = 1  # identical runs (seeds, encoders)


def _adamw(lr: float, weight_decay: float = 0.01, eps: float = 1e-8) -> Callable[[nn.Module], torch.optim.Optimizer]:
    return lambda m: sh.train.adamw(m, lr=lr, weight_decay=weight_decay, eps=eps)


def _epochs(tokens: float, corpus: float, what: str) -> str:
    return f"{tokens / corpus:.1f} epochs of {what}"


def _word_vector_steps(cfg: Word2VecConfig) -> tuple[int, float]:
    """Steps of a word2vec / subword run and the corpus words it reads (epochs x corpus)."""
    words = TEXT8 if cfg.corpus == "text8" else WIKITEXT2_TRAIN
    if cfg.train_tokens is not None:
        words = min(words, cfg.train_tokens)
    t = cfg.sample
    if t > 0:
        t = min((1e-3, 1e-4), key=lambda measured: abs(math.log(measured / cfg.sample)))  # the nearest measured t
    kept = words * IN_VOCAB * KEPT[t, 2_000 if cfg.max_vocab is not None else None]
    return cfg.epochs * math.ceil(kept / cfg.batch_words), cfg.epochs * words


def _word_vector_run(chapter: int, name: str, cfg: Word2VecConfig, tiny: bool) -> Run:
    steps, words = _word_vector_steps(cfg)
    if cfg.arch == "sg":
        per, unit = cfg.batch_words * (cfg.window + 1), "pairs"
    else:
        per, unit = cfg.batch_words, "windows"
    corpus = "text8" if cfg.corpus == "text8" else "WikiText-2"
    note = (f"{cfg.epochs} epochs x {words / cfg.epochs:,.0f} {corpus} words, subsampling t={cfg.sample:g}"
            + (f", |V| = {cfg.max_vocab:,}" if cfg.max_vocab else ""))
    return Run(chapter, name, cfg.build, cfg.example_batch if tiny else cfg.step_batch, steps, per, unit, note,
               "bytes", None, cfg)


def _bert_task_batch(head: str, pcfg: BertPretrainingConfig, B: int, T: int) -> dict[str, torch.Tensor]:
    """A fine-tuning batch: ``B`` examples padded to ``T`` pieces (``B`` x 2 choices for COPA)."""
    bcfg = pcfg.model_config(pcfg.vocab_size)
    n = 2 * B if head == "choice" else B
    b = bcfg.step_batch(n, T)
    batch = {k: b[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
    g = torch.Generator().manual_seed(1)
    if head == "cls":
        batch["labels"] = torch.randint(2, (B,), generator=g)
    elif head == "tag":
        labels = torch.randint(13, (B, T), generator=g)
        labels[~b["attention_mask"]] = IGNORE
        labels[:, 0] = IGNORE
        batch["labels"] = labels
    elif head == "span":
        real = b["attention_mask"].sum(1)  # answers inside each row's real pieces
        batch["start_positions"] = (torch.rand(B, generator=g) * (real - 3).clamp(min=1)).long()
        batch["end_positions"] = (batch["start_positions"] + 2).clamp(max=real - 1)
    else:  # choice: (B, 2, T)
        batch = {k: v.reshape(B, 2, T) for k, v in batch.items()}
        batch["labels"] = torch.randint(2, (B,), generator=g)
    return batch


def _elmo_task_head(head: str, classes: int, c: ELMoConfig, t: ELMoTaskConfig, g: GloVeConfig,
                    tiny: bool) -> nn.Module:
    """Chapter 10's task model with ELMo: GloVe-sized word vectors for the task vocabulary, the biLM of ``c``."""
    words = 50 if tiny else ELMO_TASK_WORDS
    encoder = ContextualEncoder(torch.randn(words, g.dim), t.hidden, c.build(),
                                torch.randint(1, 200, (words, c.max_chars)), dropout=t.dropout, pad_id=0,
                                layer_norm=t.layer_norm)
    return heads.SequenceClassifier(encoder, classes) if head == "cls" else heads.TokenTagger(encoder, classes)


def _cove_task_head(classes: int, c: Seq2SeqConfig, t: CoVeTaskConfig, g: GloVeConfig, tiny: bool) -> nn.Module:
    """Chapter 9's task model: GloVe-sized word vectors for the task vocabulary and a translation model's
    MT-LSTM of ``c`` (frozen, run on every batch)."""
    words = 50 if tiny else ELMO_TASK_WORDS
    encoder = ContextualEncoder(torch.randn(words, g.dim), t.hidden, dropout=t.dropout, pad_id=0,
                                cove=c.replace(src_vocab=words).build().encoder)
    return heads.SequenceClassifier(encoder, classes)


def _cove_task_batch(classes: int, B: int, T: int, tiny: bool) -> dict[str, torch.Tensor]:
    """``B`` sentences of ``T`` words (ids of the task vocabulary, no padding) with labels of ``classes``."""
    g = torch.Generator().manual_seed(1)
    return {"input_ids": torch.randint(1, 50 if tiny else ELMO_TASK_WORDS, (B, T), generator=g),
            "labels": torch.randint(0, classes, (B,), generator=g)}


def _elmo_task_batch(head: str, B: int, T: int, tiny: bool) -> dict[str, torch.Tensor]:
    """``B`` examples of ``T`` words (ids of the task vocabulary, no padding) with their labels."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, 50 if tiny else ELMO_TASK_WORDS, (B, T), generator=g)
    labels = torch.randint(0, 3, (B, T) if head == "tag" else (B,), generator=g)
    return {"input_ids": ids, "labels": labels}


def _ulmfit_batch(B: int, T: int, vocab: int) -> dict[str, torch.Tensor]:
    """``B`` sentences of ``T`` words (ids of the giant's vocabulary, no padding) with binary labels."""
    g = torch.Generator().manual_seed(1)
    return {"input_ids": torch.randint(1, vocab, (B, T), generator=g), "labels": torch.randint(0, 2, (B,), generator=g)}


def _gpt_task_batch(head: str, classes: int, vocab: int, B: int, T: int) -> dict[str, torch.Tensor]:
    """A GPT fine-tuning batch: ``B`` transformed inputs of ``T`` tokens (``B`` x 2 choices for COPA), no padding."""
    g = torch.Generator().manual_seed(1)
    shape = (B, 2, T) if head == "choice" else (B, T)
    ids = torch.randint(0, vocab, shape, generator=g)
    return {"input_ids": ids, "attention_mask": torch.ones(shape, dtype=torch.bool),
            "labels": torch.randint(0, classes, (B,), generator=g)}


def _xlnet_task_batch(classes: int, vocab: int, B: int, T: int) -> dict[str, torch.Tensor]:
    """A classification batch in XLNet's layout: ``B`` rows of ``T`` pieces, the last one [CLS] (segment 2)."""
    g = torch.Generator().manual_seed(1)
    types = torch.zeros(B, T, dtype=torch.long)
    types[:, -1] = 2
    return {"input_ids": torch.randint(5, vocab, (B, T), generator=g), "token_type_ids": types,
            "attention_mask": torch.ones(B, T, dtype=torch.bool), "labels": torch.randint(classes, (B,), generator=g)}


def _bert_head(head: str, encoder: nn.Module) -> nn.Module:
    if head == "cls":
        return heads.SequenceClassifier(encoder, 2)
    if head == "tag":
        return heads.TokenTagger(encoder, 13)  # WNUT-17: 6 entity types in BIO, + O
    if head == "span":
        return heads.SpanExtractor(encoder)
    return heads.MultipleChoice(encoder)



def runs(tiny: bool = False) -> list[Run]:
    """Every model a chapter trains at ``full`` (the ``smoke`` presets with tiny batches when ``tiny``)."""
    scale = "smoke" if tiny else "full"

    def batch_of(cfg: Any) -> Callable[[], Any]:
        return cfg.example_batch if tiny else cfg.step_batch

    out: list[Run] = []
    # chapter 2: window LMs on WikiText-2 (fit, AdamW, cfg.steps)
    for name, cls in (("NNLM", NNLMConfig), ("LBL", LBLConfig)):
        c = cls.preset(scale)
        out.append(Run(2, name, c.build, batch_of(c), c.steps, c.batch_size, "tokens",
                       _epochs(c.steps * c.batch_size, WIKITEXT2_TRAIN, "WikiText-2 train") + f", n = {c.n}",
                       "window", _adamw(c.lr, c.weight_decay), c))
    c = CWConfig.preset(scale)
    out.append(Run(2, "C&W", c.build, batch_of(c), c.steps, c.batch_size, "windows",
                   _epochs(c.steps * c.batch_size, WIKITEXT2_TRAIN, "WikiText-2 train")
                   + f", window {c.window}, {c.negatives} corruptions each", "window", _adamw(c.lr, c.weight_decay), c))
    # chapter 3: recurrent LMs, truncated BPTT over WikiText-2
    for name, cls in (("RNN LM", RNNLMConfig), ("LSTM LM", LSTMLMConfig)):
        c = cls.preset(scale)
        per = c.batch_size * c.bptt
        out.append(Run(3, name, c.build, batch_of(c), c.steps, per, "tokens",
                       _epochs(c.steps * per, WIKITEXT2_TRAIN, "WikiText-2 train")
                       + f", {c.batch_size} x {c.bptt} BPTT", "recurrent", _adamw(c.lr, c.weight_decay), c))
    # chapter 4: the word2vec variants of section 4.6 (hand-written SGD, cfg.epochs over the corpus)
    w = Word2VecConfig.preset(scale)
    variants = (("skip-gram + NS", "sg", "ns", w.sample), ("skip-gram + HS", "sg", "hs", w.sample),
                ("CBOW + NS", "cbow", "ns", w.sample), ("CBOW + HS", "cbow", "hs", w.sample),
                ("skip-gram + NS, no subsampling", "sg", "ns", 0.0))
    for name, arch, output, sample in variants:
        c = w.replace(arch=arch, output=output, sample=sample, lr=0.025 if arch == "sg" else 0.05)
        out.append(_word_vector_run(4, name, c, tiny))
    small = w.replace(arch="cbow", max_vocab=2_000, vocab_size=2_000, lr=0.05, epochs=min(w.epochs, 2))
    for output in ("softmax", "ns"):
        out.append(_word_vector_run(4, f"CBOW + {output.upper()}, |V| = 2,000", small.replace(output=output), tiny))
    # chapter 5: GloVe (fit, AdaGrad, cfg.epochs passes over X) and chapter 4's SGNS at GloVe's dimension
    c = GloVeConfig.preset(scale)
    tokens = (TEXT8 if c.corpus == "text8" else WIKITEXT2_TRAIN) * IN_VOCAB
    if c.train_tokens is not None:
        tokens = min(tokens, c.train_tokens)
    nnz = GLOVE_NNZ_REF * (tokens / GLOVE_TOKENS_REF) ** GLOVE_EXPONENT * min(1.0, c.window / 10)
    out.append(Run(5, "GloVe", c.build, batch_of(c), c.epochs * math.ceil(nnz / c.batch_size), c.batch_size,
                   "entries", f"{c.epochs} passes over ~{nnz / 1e6:.0f}M non-zero X entries (estimated, window "
                   f"{c.window})", "bytes", lambda m, lr=c.lr: torch.optim.Adagrad(m.parameters(), lr=lr), c))
    c = Word2VecConfig.preset(scale, dim=c.dim, min_count=c.min_count, train_tokens=c.train_tokens, corpus=c.corpus)
    out.append(_word_vector_run(5, f"skip-gram + NS, d = {c.dim}", c, tiny))
    # chapter 6: the classifier without and with bigrams (fit, sparse SGD), subword and plain skip-gram
    for ngrams in (1, 2):
        c = FastTextConfig.preset(scale, word_ngrams=ngrams)
        steps = c.epochs * math.ceil(SST2_TRAIN / c.batch_size)

        def sparse_sgd(m: nn.Module, c: FastTextConfig = c) -> torch.optim.Optimizer:
            m.A.sparse = True  # as train_classifier trains it
            return torch.optim.SGD(m.parameters(), lr=c.lr * c.batch_size)

        out.append(Run(6, "fastText classifier, words" + (" + bigrams" if ngrams == 2 else ""), c.build, batch_of(c),
                       steps, c.batch_size, "texts", f"{c.epochs} epochs of SST-2's {SST2_TRAIN:,} phrases",
                       "bytes", sparse_sgd, c))
    s = SubwordConfig.preset(scale)
    out.append(_word_vector_run(6, "subword skip-gram", s, tiny))
    c = Word2VecConfig.preset(scale, dim=s.dim, sample=s.sample, lr=s.lr, epochs=s.epochs, min_count=s.min_count,
                              train_tokens=s.train_tokens, corpus=s.corpus, predict=s.predict)
    out.append(_word_vector_run(6, "plain skip-gram (same settings)", c, tiny))
    # chapter 9: CoVe's two translation giants (fit, Adam; GloVe frozen in the source embedding), then the task
    # models over [GloVe ; CoVe] (fit via finetune, AdamW; the frozen MT-LSTM runs on every batch). Tatoeba's
    # sentences are about half Multi30k's length: its steps are counted at Multi30k's padded shape, an over-estimate
    for name, cls, pairs, data in (("CoVe-S translation model, en-de", Seq2SeqConfig, MULTI30K_TRAIN, "Multi30k"),
                                   ("CoVe-L translation model, en-fr", CoVeLargeConfig, TATOEBA_TRAIN, "Tatoeba")):
        c = cls.preset(scale)
        out.append(Run(9, name, c.build, batch_of(c), c.steps, c.batch_size, "pairs",
                       f"{c.steps * c.batch_size / pairs:.1f} epochs of {data}'s {pairs:,} pairs, padded to 13 + 18",
                       "recurrent", lambda m, c=c: torch.optim.Adam([p for p in m.parameters() if p.requires_grad],
                                                                    lr=c.lr), c))
    t9, c9, g = CoVeTaskConfig.preset(scale), Seq2SeqConfig.preset(scale), GloVeConfig.preset(scale)
    for task, (_, classes, n, T, note) in COVE_TASKS.items():
        if task == "SST-2" and t9.sst2_phrases:  # GLUE's phrases, the paper's training set; padded as the sentences
            n, note = SST2_TRAIN, f"GLUE's {SST2_TRAIN:,} training phrases"
        n = min(n, {"SST-2": t9.sst2_train, "SST-5": t9.sst5_train, "SNLI": t9.snli_train}[task] or n)
        epochs = {"SST-2": t9.sst2_epochs, "SST-5": t9.sst5_epochs, "SNLI": t9.snli_epochs}[task]
        B, Tb = (2, 6) if tiny else (t9.batch_size, T)
        out.append(Run(9, f"{task} + CoVe", lambda classes=classes: _cove_task_head(classes, c9, t9, g, tiny),
                       lambda classes=classes, B=B, Tb=Tb: _cove_task_batch(classes, B, Tb, tiny),
                       t9.finetuning().steps_for(n, epochs), t9.batch_size * T, "words",
                       f"{epochs:g} epochs: {note}; {t9.batch_size} x {T}; 2 CoVe giants", "recurrent",
                       _adamw(t9.lr, t9.weight_decay), t9, runs=2 * t9.seeds))
    # chapter 10: ELMo's biLM (fit, AdamW): both directions over the same windows, one shared softmax
    c = ELMoConfig.preset(scale)
    per = c.batch_size * c.bptt
    out.append(Run(10, "ELMo biLM pre-training", c.build, batch_of(c), c.steps, per, "tokens",
                   _epochs(c.steps * per, WIKITEXT2_TRAIN, "WikiText-2 train")
                   + f", {c.batch_size} x {c.bptt} words, both directions", "recurrent",
                   _adamw(c.lr, c.weight_decay), c))
    # chapter 10: the task models with ELMo (fit via finetune, AdamW): the frozen biLM runs on every batch (no
    # layer cache at full), the GloVe-only control costs a fraction of it
    t = ELMoTaskConfig.preset(scale)
    g = GloVeConfig.preset(scale)
    for task, (head, classes, n, T, note) in ELMO_TASKS.items():
        n = min(n, {"SST-5": t.sst5_train, "WNUT-17": t.wnut_train, "SNLI": t.snli_train}[task] or n)
        epochs = {"SST-5": t.sst5_epochs, "WNUT-17": t.wnut_epochs, "SNLI": t.snli_epochs}[task]
        B, Tb = (2, 6) if tiny else (t.batch_size, T)
        out.append(Run(10, f"{task} + ELMo",
                       lambda head=head, classes=classes, c=c: _elmo_task_head(head, classes, c, t, g, tiny),
                       lambda head=head, B=B, Tb=Tb: _elmo_task_batch(head, B, Tb, tiny),
                       t.finetuning().steps_for(n, epochs), t.batch_size * T, "words",
                       f"{epochs:g} epochs: {note}; {t.batch_size} x {T}", "recurrent", _adamw(t.lr, t.weight_decay),
                       t, runs=t.seeds))
    # chapter 11: the AWD-LSTM LM, ULMFiT's giant (fit, AdamW for NT-ASGD), then stages 2 and 3 on SST-2
    c = AWDLSTMConfig.preset(scale)
    per = c.batch_size * c.bptt
    out.append(Run(11, "AWD-LSTM LM pre-training", c.build, batch_of(c), c.steps, per, "tokens",
                   _epochs(c.steps * per, WIKITEXT2_TRAIN, "WikiText-2 train") + f", {c.batch_size} x {c.bptt} BPTT",
                   "recurrent", _adamw(c.lr, c.weight_decay), c))
    u = ULMFiTConfig.preset(scale)
    lm_per = u.lm_batch_size * c.bptt
    lm_steps = max(u.lm_min_steps, math.ceil(u.lm_epochs * SST_TEXT / lm_per))
    c2 = c.replace(batch_size=u.lm_batch_size)
    out.append(Run(11, "ULMFiT stage 2 (target-task LM)", c2.build, batch_of(c2), lm_steps, lm_per, "tokens",
                   f"{u.lm_epochs:g} epochs of SST's {SST_TEXT:,} tokens: all the text, two ablations, "
                   f"{len(c.snapshots) + 1} earlier starts", "recurrent", _adamw(u.lm_lr, u.weight_decay), c2,
                   runs=3 + len(c.snapshots) + 1))
    ft = u.finetuning()
    B, T = (2, 6) if tiny else (u.batch_size, SST_LENGTH)

    def clf(c: AWDLSTMConfig = c, u: ULMFiTConfig = u) -> nn.Module:
        return PoolingClassifier(c.build(), 2, hidden=u.hidden, dropouts=u.dropouts, bptt=u.bptt)

    def batch(B: int = B, T: int = T, c: AWDLSTMConfig = c) -> dict[str, torch.Tensor]:
        return _ulmfit_batch(B, T, c.vocab_size)

    out.append(Run(11, "ULMFiT stage 3, all labels", clf, batch, ft.steps_for(SST_SENTENCES),
                   u.batch_size * SST_LENGTH, "words",
                   f"{u.epochs:g} epochs of SST-2's {SST_SENTENCES:,} sentences; ULMFiT and from scratch",
                   "recurrent", _adamw(u.lr, u.weight_decay), u, runs=2 * u.seeds))
    small = [n for n in u.budgets if n < SST_SENTENCES]
    out.append(Run(11, "ULMFiT stage 3, label curve + ablations", clf, batch,
                   round(sum(ft.steps_for(n) for n in small) / len(small)), u.batch_size * SST_LENGTH, "words",
                   f"{len(small)} budgets x 3 arms, 5 ablations and {len(c.snapshots) + 1} earlier starts at "
                   f"{u.ablation_labels} labels (mean updates a run)", "recurrent", _adamw(u.lr, u.weight_decay), u,
                   runs=(3 * len(small) + 5 + len(c.snapshots) + 1) * u.seeds))
    # chapter 12: the Transformer on Multi30k (fit, Adam (0.9, 0.98))
    c = TransformerConfig.preset(scale)
    per = c.batch_size * (13 + 18)
    out.append(Run(12, "Transformer de-en", c.build, batch_of(c), c.steps, per, "positions",
                   f"{c.steps * c.batch_size / MULTI30K_TRAIN:.0f} epochs of Multi30k's {MULTI30K_TRAIN:,} pairs, "
                   f"padded to 13 + 18", "transformer",
                   lambda m, c=c: torch.optim.Adam(m.parameters(), lr=c.lr, betas=c.betas, eps=c.adam_eps), c))
    # chapter 13: the GPT giant (fit, AdamW, cosine), fine-tuning with L2 + λ L1, the character-level GPT
    p = GPTPretrainingConfig.preset(scale)
    per = p.batch_size * p.max_len
    out.append(Run(13, "GPT LM pre-training", p.build, batch_of(p), p.steps, per, "tokens",
                   _epochs(p.steps * per, WIKITEXT2_BPE, "WikiText-2 train's BPE tokens")
                   + f", {p.batch_size} x {p.max_len}", "transformer", _adamw(p.lr, p.weight_decay), p))
    f = GPTFinetuningConfig.preset(scale)
    for task, (head, classes, n, T, note) in GPT_TASKS.items():
        n = min(n, {"SST-2": f.sst2_train, "SNLI": f.snli_train, "Balanced COPA": f.copa_train}[task] or n)
        T = min(T, f.max_len)
        B, Tb = (2, min(T, 8)) if tiny else (f.batch_size, T)
        n_runs = (3 * f.sst2_seeds + len(f.transfer_layers)) if task == "SST-2" else (
            2 * f.copa_seeds if head == "choice" else 2)

        def gpt_head(head: str = head, classes: int = classes, f: GPTFinetuningConfig = f,
                     p: GPTPretrainingConfig = p) -> nn.Module:
            enc = GPTModel(p.model_config(p.vocab_size))
            inner = heads.MultipleChoice(enc) if head == "choice" else heads.SequenceClassifier(enc, classes)
            return AuxiliaryLM(inner, f.lam)

        out.append(Run(13, f"fine-tune {task} (L2 + λ L1)", gpt_head,
                       lambda head=head, classes=classes, B=B, Tb=Tb, p=p: _gpt_task_batch(head, classes,
                                                                                           p.vocab_size, B, Tb),
                       f.steps_for(n), f.batch_size * T * (2 if head == "choice" else 1), "tokens",
                       f"{f.epochs:g} epochs: {note}; {f.batch_size} x {T}", "transformer",
                       _adamw(f.lr, f.weight_decay), f, runs=n_runs))
    c = CharGPTConfig.preset(scale)
    per = c.batch_size * c.max_len
    out.append(Run(13, "character-level GPT, Tiny Shakespeare", c.build, batch_of(c), c.steps, per, "characters",
                   _epochs(c.steps * per, TINY_SHAKESPEARE_TRAIN, "Tiny Shakespeare's first 90%")
                   + f", {c.batch_size} x {c.max_len}", "transformer", _adamw(c.lr, c.weight_decay), c))
    # chapter 14: pre-training, then the five tasks (fit, AdamW)
    p = BertPretrainingConfig.preset(scale)
    per = p.batch_size * p.max_len
    out.append(Run(14, f"BERT-{p.size} pre-training", p.build, batch_of(p), p.steps, per, "positions",
                   f"{p.steps * p.batch_size / BERT_PAIRS_PER_PASS:.0f} passes over WikiText-2's "
                   f"{BERT_PAIRS_PER_PASS:,} NSP pairs, {p.batch_size} x {p.max_len}", "transformer",
                   _adamw(p.lr, p.weight_decay, p.adam_eps), p))
    i = InDomainConfig.preset(scale)
    ip = i.pretraining(p)
    out.append(Run(14, "BERT further pre-training on SST's text (bert_sst)", ip.build, batch_of(ip), i.steps,
                   i.batch_size * i.max_len, "positions",
                   f"{i.steps * i.batch_size / SST_TRAIN_SENTENCES:.0f} passes over SST's {SST_TRAIN_SENTENCES:,} "
                   f"training sentences, masked LM only, {i.batch_size} x {i.max_len} (an upper bound: the sentences "
                   "are padded only to the longest in the batch)", "transformer",
                   _adamw(i.lr, p.weight_decay, p.adam_eps), i))
    f = BertFinetuningConfig.preset(scale)
    limits = {"SST-2": f.sst2_train, "SNLI": f.snli_train, "WNUT-17": f.wnut_train, "SQuAD v1.1": f.squad_train,
              "Balanced COPA": f.copa_train}
    for task, (head, n, T, n_runs, note) in FINETUNE_TASKS.items():
        n = min(n, limits[task]) if limits[task] else n
        T = min(T, f.span_max_len if head == "span" else f.max_len)
        B, Tb = (2, min(T, 8)) if tiny else (f.batch_size, T)
        per = f.batch_size * T * (2 if head == "choice" else 1)
        out.append(Run(14, f"fine-tune {task}",
                       lambda head=head: _bert_head(head, BertModel(p.model_config(p.vocab_size))),
                       lambda head=head, B=B, Tb=Tb: _bert_task_batch(head, p, B, Tb), f.steps_for(n), per,
                       "positions", f"{f.epochs:g} epochs: {note}; {f.batch_size} x {T}", "transformer",
                       _adamw(f.lr, f.weight_decay), f, runs=n_runs))
    # chapter 15: Transformer-XL on GPT's budget, XLNet on BERT's (fit, AdamW), then XLNet fine-tuned like BERT
    c = TransformerXLPretrainingConfig.preset(scale)
    per = c.batch_size * c.seg_len
    out.append(Run(15, "Transformer-XL LM", c.build, batch_of(c), c.steps, per, "tokens",
                   _epochs(c.steps * per, WIKITEXT2_BPE, "WikiText-2 train's BPE tokens")
                   + f", {c.batch_size} x {c.seg_len} + a memory of {c.mem_len}", "transformer",
                   _adamw(c.lr, c.weight_decay), c))
    x = XLNetPretrainingConfig.preset(scale)
    per = x.batch_size * x.max_len
    out.append(Run(15, f"XLNet-{x.size} pre-training", x.build, batch_of(x), x.steps, per, "positions",
                   f"{x.steps * x.batch_size / BERT_PAIRS_PER_PASS:.0f} passes over WikiText-2's pairs (BERT's), "
                   f"{x.batch_size} x {x.max_len}, 1/{x.predict_k} predicted", "transformer",
                   _adamw(x.lr, x.weight_decay, x.adam_eps), x))
    f = XLNetFinetuningConfig.preset(scale)
    for task, classes, note in (("SST-2", 2, "67,349 phrases"), ("SNLI", 3, "the 9,842 labelled dev pairs")):
        _, n, T, _, _ = FINETUNE_TASKS[task]
        n = min(n, {"SST-2": f.sst2_train, "SNLI": f.snli_train}[task] or n)
        T = min(T + 1, f.max_len)  # BERT's length: [CLS] moves to the end, one [SEP] fewer for a single text
        B, Tb = (2, min(T, 8)) if tiny else (f.batch_size, T)
        out.append(Run(15, f"fine-tune {task} (XLNet, XLNet from scratch, BERT)",
                       lambda classes=classes, x=x: heads.SequenceClassifier(XLNetModel(x.model_config(x.vocab_size)),
                                                                             classes),
                       lambda classes=classes, B=B, Tb=Tb, x=x: _xlnet_task_batch(classes, x.vocab_size, B, Tb),
                       f.steps_for(n), f.batch_size * T, "positions",
                       f"{f.epochs:g} epochs: {note}; {f.batch_size} x {T}; 3 encoders x {f.sst2_seeds} seeds"
                       + (" (+ the same at " + ", ".join(f"{b:,} labels ({f.steps_for(b)} updates)"
                                                         for b in f.sst2_budgets) + ")"
                          if task == "SST-2" and f.sst2_budgets else ""), "transformer",
                       _adamw(f.lr, f.weight_decay), f, runs=3 * f.sst2_seeds))
    # chapter 16: every network fine-tuned three ways (top layer, everything, from scratch) on SST-2 and SNLI at
    # each budget and seed (fit via finetune, AdamW); the frozen ways are one encoding pass and a logistic
    # regression per giant, not counted. "top" is counted as a full step (an upper bound: its backward stops early).
    # (Names of their own: the closures above read their variables late.)
    tw_cfg = ThreeWaysConfig.preset(scale)
    tw_u, tw_a = ULMFiTConfig.preset(scale), AWDLSTMConfig.preset(scale)
    tw_g, tw_b, tw_x = (GPTPretrainingConfig.preset(scale), BertPretrainingConfig.preset(scale),
                        XLNetPretrainingConfig.preset(scale))
    tw_T = min(FINETUNE_TASKS["SNLI"][2], tw_cfg.max_len)  # the longer task's padded length, for both
    tw_B, tw_Tb = (2, min(tw_T, 8)) if tiny else (tw_cfg.batch_size, tw_T)
    nets = {
        "AWD-LSTM": (lambda: PoolingClassifier(tw_a.build(), 3, hidden=tw_u.hidden, dropouts=tw_u.dropouts,
                                               bptt=tw_u.bptt),
                     lambda: _ulmfit_batch(tw_B, tw_Tb, tw_a.vocab_size), "recurrent"),
        "GPT": (lambda: heads.SequenceClassifier(GPTModel(tw_g.model_config(tw_g.vocab_size)), 3),
                lambda: _gpt_task_batch("cls", 3, tw_g.vocab_size, tw_B, tw_Tb), "transformer"),
        "BERT": (lambda: heads.SequenceClassifier(BertModel(tw_b.model_config(tw_b.vocab_size)), 3),
                 lambda: _bert_task_batch("cls", tw_b, tw_B, tw_Tb), "transformer"),
        "XLNet": (lambda: heads.SequenceClassifier(XLNetModel(tw_x.model_config(tw_x.vocab_size)), 3),
                  lambda: _xlnet_task_batch(3, tw_x.vocab_size, tw_B, tw_Tb), "transformer"),
    }
    for name, (build, batch, kind) in nets.items():
        out.append(Run(16, f"three ways: {name}", build, batch, sum(tw_cfg.steps), tw_cfg.batch_size * tw_T,
                       "positions", f"{' + '.join(map(str, tw_cfg.steps))} updates at "
                       f"{', '.join(f'{n:,}' for n in tw_cfg.budgets)} labels; 3 ways x 2 tasks x {tw_cfg.seeds} "
                       f"seeds; {tw_cfg.batch_size} x {tw_T}", kind, _adamw(tw_cfg.lr), tw_cfg,
                       runs=3 * 2 * tw_cfg.seeds))
    return out


# -- projection and report ----------------------------------------------------------------------------------------
def step_seconds(run: Run, m: Measured, gpu: str) -> float:
    flops_per_s, bandwidth, _ = GPUS[gpu]
    if run.kind == "bytes":
        compute = m.bytes / (bandwidth * BANDWIDTH_EFFICIENCY)
    else:
        compute = m.flops / (flops_per_s * MFU[run.kind])
    return max(FLOOR_S, LOOP_S + LAUNCH_S * m.kernels, compute)


def _si(x: float, unit: str = "") -> str:
    for div, p in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.3g} {p}{unit}"
    return f"{x:.3g} {unit}".rstrip()


def _duration(s: float) -> str:
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def measure(run: Run) -> Measured:
    sh.seed(0)
    model = run.build()
    batch = run.batch()
    if run.optimizer is None:
        return measure_sgd_step(model, batch, run.cfg)
    return measure_fit_step(model, batch, run.optimizer(model))


def report(rows: list[tuple[Run, Measured]], markdown: bool, tiny: bool) -> str:
    head = ["ch", "run", "params", "per step", "steps", "total", "FLOP/step", "FLOP total", "bytes/step",
            "memory (est.)", *[f"{g} time" for g in GPUS], "budget"]
    table = []
    chapters: dict[int, dict[str, float]] = {}
    over_rows = []
    for run, m in rows:
        steps = run.steps * run.runs
        secs = {g: steps * step_seconds(run, m, g) for g in GPUS}
        total = chapters.setdefault(run.chapter, dict.fromkeys(GPUS, 0.0))
        for g in GPUS:
            total[g] += secs[g]
        over = secs[BUDGET_GPU] > BUDGET_S
        if over:
            over_rows.append(run)
        fits = "" if m.peak < GPUS["T4"][2] else " (> T4 memory)"
        table.append([str(run.chapter), run.name + (f" (x{run.runs} runs)" if run.runs > 1 else ""), _si(m.params),
                      f"{_si(run.per_step)} {run.unit}", f"{steps:,}",
                      f"{_si(steps * run.per_step)} {run.unit} ({run.note})",
                      _si(m.flops, "FLOP"), _si(m.flops * steps, "FLOP"),
                      _si(m.bytes, "B") + (" *" if run.kind == "bytes" else ""), _si(m.peak, "B") + fits,
                      *[_duration(secs[g]) for g in GPUS], "**over**" if over else "ok"])
    lines = []
    if markdown:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in r) + " |" for r in table]
    else:
        for r in table:
            lines.append("  ".join(f"{h}: {v}" for h, v in zip(head, r)))
    lines.append("")
    if markdown:
        lines.append("| chapter | " + " | ".join(f"{g} time" for g in GPUS) + f" | budget ({BUDGET_GPU}) |")
        lines.append("|" + "---|" * (len(GPUS) + 2))
    else:
        lines.append("chapter totals:")
    for ch, secs in chapters.items():
        flag = "**over**" if secs[BUDGET_GPU] > BUDGET_S else "ok"
        times = [_duration(secs[g]) for g in GPUS]
        lines.append(f"| {ch} | " + " | ".join(times) + f" | {_duration(BUDGET_S)}: {flag} |" if markdown
                     else f"  chapter {ch}: " + ", ".join(f"{g} {t}" for g, t in zip(GPUS, times))
                     + f" (budget {_duration(BUDGET_S)} on one {BUDGET_GPU}: {flag})")
    lines.append("")
    lines.append(
        "Steps x max(floor, compute) per GPU: FLOP rows at MFU " + ", ".join(f"{k} {v:.0%}" for k, v in MFU.items())
        + f"; rows marked * (word vectors) from bytes at {BANDWIDTH_EFFICIENCY:.0%} of HBM bandwidth; floor = "
        f"max({FLOOR_S * 1e3:.0f} ms, {LOOP_S * 1e3:.0f} ms + {LAUNCH_S * 1e6:.0f} us x kernels). FLOPs: "
        "FlopCounterMode on one forward + backward (matmuls and attention only; embedding lookups and elementwise "
        "ops not counted). bytes/step: every op's inputs and outputs, gathers and scatters by the rows they touch, "
        "fp32 on the CPU (for the FLOP rows an upper bound: no bf16, and the CPU's unfused attention). Memory: "
        "parameters + gradients + optimiser state + saved activations, fp32. T4 at its fp32 peak (8.1 TFLOP/s): "
        "no bf16 tensor cores on Turing, so fit trains in fp32 there. Word-vector steps use uniformly random ids (real "
        "batches repeat frequent words: fewer distinct rows, shorter Huffman codes). Training only (evaluation, "
        "data preparation and WordPiece learning not included).")
    if tiny:
        lines.append("(--tiny: smoke presets with tiny batches; the numbers exercise the code, they project nothing)")
    if over_rows:
        lines.append("Over budget: " + "; ".join(f"ch {r.chapter} {r.name}" for r in over_rows))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    ap.add_argument("--tiny", action="store_true", help="smoke presets with tiny batches: seconds (tests run it)")
    ap.add_argument("--chapters", type=int, nargs="+", help="only these chapters (default: all)")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    plan = [r for r in runs(args.tiny) if not args.chapters or r.chapter in args.chapters]
    rows = []
    t0 = time.perf_counter()
    for run in plan:
        t = time.perf_counter()
        m = measure(run)
        rows.append((run, m))
        print(f"measured ch {run.chapter} {run.name}: {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    print(report(rows, args.markdown, args.tiny))
    print(f"(measured {len(rows)} steps on the CPU in {time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

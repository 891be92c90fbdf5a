"""BERT (Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding").

    input  = [CLS] A [SEP] B [SEP]                                          (§3, "Input/Output Representations")
    E      = LayerNorm(E_token + E_segment + E_position),  Dropout                              (§3, Figure 2)
    hidden = Encoder(E): L post-LN Transformer layers, GELU, no causal mask  (§3 "Model Architecture", L/H/A)
    pooled = tanh(W_p hidden[:, 0] + b_p)                                  (the [CLS] vector C, §3 and Figure 1)
    MLM    = softmax(LayerNorm(GELU(W_t h_i + b_t)) E_token^T + b) at the masked positions i only         (§3.1)
    NSP    = softmax(W_nsp C + b_nsp): is B the sentence that follows A?                                   (§3.1)

**The same block as the Transformer and GPT.** The encoder is :class:`shoulders.models.transformer_blocks.Encoder`
with ``BlockConfig(activation="gelu", norm_first=False, eps=1e-12)``: the paper's post-LN layer (Vaswani et al.'s
``LayerNorm(x + Sublayer(x))``) with GELU (Hendrycks & Gimpel 2016) in the feed-forward network, bidirectional
self-attention (no causal mask; padding is hidden by a key padding mask) and attention-probability dropout.
``norm_first=True`` swaps in the pre-LN layer (``x + Sublayer(LayerNorm(x))``, Xiong et al. 2020, "On layer
normalization in the Transformer architecture"; a final LayerNorm tops the stack): not the paper's, kept as a
measured option (chapter 14b's levers); Hugging Face's BERT is post-LN only, so such a model does not convert.

**Pre-training** (§3.1, Appendix A.1): 15% of the tokens are chosen for prediction (80% -> ``[MASK]``, 10% a random
token, 10% unchanged; :mod:`shoulders.recipes.bert` prepares the batches), and the loss is the mean
cross-entropy of those tokens plus the cross-entropy of the next-sentence label. The output projection is the
input embedding matrix transposed (tied, as in the released code) with its own bias. It is computed only at the
chosen positions -- about 15% of them -- since at ``|V| x d`` per token it would otherwise dominate the step.

**Sizes.** ``BertConfig.named("mini")`` gives the small BERTs of Turc et al. 2019 ("Well-Read Students Learn
Better", L/H/A = 2/128/2 "tiny" ... 8/512/8 "medium", d_ff = 4H); BERT-base is L=12, H=768, A=12 (110M). Hugging Face
checkpoints load with :func:`shoulders.models.bert_hf.from_pretrained`.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError, late_field
from ..text.bert_inputs import IGNORE
from .attention import key_padding_mask
from .ids import check_ids, check_labels
from .transformer_blocks import ACTIVATIONS, BlockConfig, Encoder

__all__ = ["TURC_SIZES", "BertConfig", "BertEmbeddings", "BertForPreTraining", "BertModel",
           "BertOutput", "MaskedLMHead", "init_bert_weights"]


# Turc et al. 2019, Table 6 ("Well-Read Students Learn Better"): (L layers, H hidden size, A heads), d_ff = 4H
TURC_SIZES: dict[str, tuple[int, int, int]] = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "medium": (8, 512, 8),
}


def _size(name: str) -> dict[str, int]:
    if name not in TURC_SIZES:
        raise ConfigError(f"unknown BERT size {name!r}; the sizes are {sorted(TURC_SIZES)} (Turc et al. 2019)")
    L, H, A = TURC_SIZES[name]
    return dict(n_layers=L, d_model=H, n_heads=A, d_ff=4 * H)


@dataclasses.dataclass
class BertConfig(Config):
    """BERT's sizes and regularisation (§3, Appendix A.2); ``named(size)`` picks a Turc et al. 2019 size.

    ``vocab_size`` is a placeholder until the chapter trains its WordPiece vocabulary (``cfg.replace(vocab_size=…)``);
    ``pad_id`` is the ``[PAD]`` id of that vocabulary (its embedding row stays zero).
    """

    vocab_size: int = 8_000
    d_model: int = 256        # H
    n_layers: int = 4         # L
    n_heads: int = 4          # A
    d_ff: int = 1024          # 4H
    max_len: int = 512        # learned positions available
    type_vocab: int = 2       # segments A and B
    dropout: float = 0.1      # on embeddings and every sub-layer output (Appendix A.2)
    attn_dropout: float = 0.1  # on the attention probabilities (the released code)
    eps: float = 1e-12        # LayerNorm epsilon of the released code
    pad_id: int = 0
    init_std: float = 0.02    # N(0, 0.02) initialisation (the released code's initializer_range)
    norm_first: bool = late_field(False)  # False: post-LN (the paper); True: pre-LN (Xiong et al. 2020)

    SIZES: ClassVar[dict[str, tuple[int, int, int]]] = TURC_SIZES
    presets: ClassVar = {
        "smoke": dict(_size("tiny"), max_len=128),
        "cpu": dict(_size("mini"), max_len=128),
        "full": dict(_size("mini"), max_len=512),
    }

    @classmethod
    def named(cls, size: str, **overrides: Any) -> "BertConfig":
        """The Turc et al. 2019 size ``size`` ("tiny", "mini", "small", "medium"), with ``overrides`` applied."""
        return cls.from_fields({**_size(size), **overrides})

    def validate(self) -> None:
        sizes = dict(vocab_size=self.vocab_size, d_model=self.d_model, n_layers=self.n_layers, d_ff=self.d_ff,
                     max_len=self.max_len, type_vocab=self.type_vocab)
        bad = {k: v for k, v in sizes.items() if not (isinstance(v, int) and v >= 1)}
        if bad:
            raise ConfigError(f"sizes must be positive integers, got {bad}")
        if not 0 <= self.pad_id < self.vocab_size:
            raise ConfigError(f"pad_id={self.pad_id} must be an id of the vocabulary (0 .. {self.vocab_size - 1})")
        if not (self.eps > 0 and self.init_std > 0):
            raise ConfigError(f"eps and init_std must be positive, got eps={self.eps}, init_std={self.init_std}")
        self.block()  # d_model % n_heads, dropout ranges

    def block(self) -> BlockConfig:
        """One GELU encoder layer, post-LN as in the paper (§3) unless ``norm_first``: the block the Transformer
        and GPT chapters use too."""
        return BlockConfig(self.d_model, self.n_heads, self.d_ff, self.dropout, self.attn_dropout, activation="gelu",
                           norm_first=self.norm_first, causal=False, eps=self.eps)

    def build(self) -> "BertForPreTraining":
        return BertForPreTraining(self)

    def example_batch(self, batch_size: int = 2, T: int = 12) -> dict[str, torch.Tensor]:
        """A tiny random pre-training batch (``BertForPreTraining(**batch)``): ``[CLS] A [SEP] B [SEP]``, the last
        row padded, a few positions to predict. Ids 1..4 stand for ``[UNK] [CLS] [SEP] [MASK]``."""
        g = torch.Generator().manual_seed(0)
        T = min(T, self.max_len)
        ids = torch.randint(5, max(self.vocab_size, 6), (batch_size, T), generator=g).clamp(max=self.vocab_size - 1)
        ids[:, 0], ids[:, T // 2], ids[:, -1] = 2, 3, 3
        segments = (torch.arange(T) > T // 2).long().expand(batch_size, T).clone()  # (B, T)
        keep = torch.ones(batch_size, T, dtype=torch.bool)
        if batch_size > 1:
            keep[-1, T - 3:] = False
        ids[~keep], segments[~keep] = self.pad_id, 0
        labels = torch.full((batch_size, T), IGNORE)
        labels[:, 1:3] = ids[:, 1:3]
        ids[:, 1] = 4 % self.vocab_size  # [MASK]
        return {"input_ids": ids, "token_type_ids": segments, "attention_mask": keep, "mlm_labels": labels,
                "nsp_labels": torch.arange(batch_size) % 2}

    def step_batch(self, batch_size: int = 32, T: int | None = None) -> dict[str, torch.Tensor]:
        """A random pre-training batch at full length: ``batch_size`` rows of ``T`` positions (default
        ``max_len``; a bare :class:`BertConfig` names no training shape, so its step is 32 sequences as long as
        the position table allows -- BERT's 512-token phase, Devlin et al. 2019 A.2).
        :meth:`shoulders.recipes.bert.BertPretrainingConfig.step_batch` passes its own batch and length.

        Like the packed ``[CLS] A [SEP] B [SEP]`` pairs of chapter 14 (measured on WikiText-2 with the 8,000-piece
        vocabulary at T = 256: 84% of the pairs fill all T positions): about one row in six shorter and padded,
        15% of the real tokens (not ``[CLS]``/``[SEP]``) chosen for prediction, ids below ``vocab_size``."""
        g = torch.Generator().manual_seed(0)
        T = self.max_len if T is None else min(T, self.max_len)
        lengths = torch.where(torch.rand(batch_size, generator=g) < 0.84, torch.full((batch_size,), T),
                              torch.randint(min(8, T), T + 1, (batch_size,), generator=g))
        lengths[0] = T
        pos = torch.arange(T)
        keep = pos[None, :] < lengths[:, None]  # (B, T) real tokens
        sep_a = (lengths // 2)[:, None]  # [SEP] after A; the last real position is B's [SEP]
        ids = torch.randint(5, max(self.vocab_size, 6), (batch_size, T), generator=g).clamp(max=self.vocab_size - 1)
        ids[:, 0] = 2  # [CLS]
        is_sep = (pos[None, :] == sep_a) | (pos[None, :] == lengths[:, None] - 1)
        ids[is_sep] = 3  # [SEP]
        segments = ((pos[None, :] > sep_a) & keep).long()
        chosen = (torch.rand(batch_size, T, generator=g) < 0.15) & keep & ~is_sep & (pos[None, :] > 0)
        labels = torch.where(chosen, ids, torch.full_like(ids, IGNORE))
        ids[chosen] = 4 % self.vocab_size  # [MASK]
        ids[~keep] = self.pad_id
        return {"input_ids": ids, "token_type_ids": segments, "attention_mask": keep, "mlm_labels": labels,
                "nsp_labels": torch.arange(batch_size) % 2}


@torch.no_grad()
def init_bert_weights(module: nn.Module, std: float = 0.02) -> None:
    """The released code's initialisation: weights N(0, std) (truncated there, plain here, as in Hugging Face),
    biases 0, LayerNorm gain 1 and bias 0, the padding embedding row 0. Use as ``model.apply(partial(…, std=…))``."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        module.weight.normal_(0.0, std)
    if isinstance(module, nn.Linear) and module.bias is not None:
        module.bias.zero_()
    if isinstance(module, nn.Embedding) and module.padding_idx is not None:
        module.weight[module.padding_idx].zero_()
    if isinstance(module, nn.LayerNorm):
        module.weight.fill_(1.0)
        module.bias.zero_()


class BertEmbeddings(nn.Module):
    """Token + segment + position embeddings, summed, normalised, dropped out (§3, Figure 2)."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.max_len = cfg.max_len
        self.word = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=cfg.pad_id)  # WordPiece tokens
        self.position = nn.Embedding(cfg.max_len, cfg.d_model)  # learned, one per position
        self.token_type = nn.Embedding(cfg.type_vocab, cfg.d_model)  # segment A = 0, B = 1
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """``input_ids`` (B, T), ``token_type_ids`` (B, T) or None (all segment A) -> (B, T, d)."""
        check_ids(input_ids, "input_ids", self.word.num_embeddings)
        T = input_ids.shape[1]
        if T > self.max_len:
            raise ValueError(f"{T} tokens exceed max_len={self.max_len}: truncate the input (max_len counts [CLS] "
                             "and [SEP]) or build a config with a larger max_len")
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        else:
            check_ids(token_type_ids, "token_type_ids", self.token_type.num_embeddings)
            if token_type_ids.shape != input_ids.shape:
                raise ValueError(f"token_type_ids {tuple(token_type_ids.shape)} must have the shape of input_ids "
                                 f"{tuple(input_ids.shape)}")
        x = self.word(input_ids) + self.token_type(token_type_ids) + self.position.weight[:T]  # (B, T, d)
        return self.drop(self.norm(x))


@dataclasses.dataclass
class BertOutput:
    """What :class:`BertModel` returns."""

    hidden: torch.Tensor  # (B, T, d): the last layer, one vector T_i per token
    pooled: torch.Tensor  # (B, d): tanh(W_p T_[CLS] + b_p), the sentence(-pair) vector C
    attentions: list[torch.Tensor] = dataclasses.field(default_factory=list)  # per layer (B, H, T, T) if asked


class BertModel(nn.Module):
    """The bidirectional encoder: embeddings, ``n_layers`` post-LN GELU layers, and the [CLS] pooler (§3)."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.cfg = cfg
        self.d_model = cfg.d_model
        self.embeddings = BertEmbeddings(cfg)
        self.encoder = Encoder(cfg.block(), cfg.n_layers)
        self.pooler = nn.Linear(cfg.d_model, cfg.d_model)  # W_p, followed by tanh
        self.apply(lambda m: init_bert_weights(m, cfg.init_std))

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, need_weights: bool = False) -> BertOutput:
        """Encode a batch.

        Args:
            input_ids: ``(B, T)`` WordPiece ids, ``[CLS]`` first.
            token_type_ids: ``(B, T)`` segment ids (0 for A, 1 for B); ``None``: all A.
            attention_mask: ``(B, T)``, bool or 0/1, ``True``/1 at real tokens; ``None``: every token is real.
                Padding is hidden as a key from every query (padded positions still get vectors, never read).
            need_weights: also return every layer's attention weights ``(B, H, T, T)`` (eq. 1 written out).
        """
        x = self.embeddings(input_ids, token_type_ids)  # (B, T, d)
        mask = None
        if attention_mask is not None:
            if attention_mask.shape != input_ids.shape:
                raise ValueError(f"attention_mask {tuple(attention_mask.shape)} must have the shape of input_ids "
                                 f"{tuple(input_ids.shape)}")
            keep = attention_mask.bool()  # (B, T) True = real token
            mask = None if bool(keep.all()) else key_padding_mask(keep)  # (B, 1, 1, T)
        hidden, weights = self.encoder(x, mask, need_weights=need_weights)  # (B, T, d)
        pooled = torch.tanh(self.pooler(hidden[:, 0]))  # (B, d): the [CLS] vector C
        return BertOutput(hidden, pooled, weights)


class MaskedLMHead(nn.Module):
    """The MLM output layer of the released code: transform (Linear, GELU, LayerNorm), then the tied decoder."""

    def __init__(self, cfg: BertConfig, word_embeddings: nn.Parameter):
        super().__init__()
        self.dense = nn.Linear(cfg.d_model, cfg.d_model)
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.decoder = nn.Linear(cfg.d_model, cfg.vocab_size)
        self.decoder.weight = word_embeddings  # (V, d): the input embedding, shared (tied) not copied

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """``h`` (..., d) -> logits (..., V)."""
        return self.decoder(self.norm(ACTIVATIONS["gelu"](self.dense(h))))


class BertForPreTraining(nn.Module):
    """BERT with its two pre-training heads: masked LM and next-sentence prediction (§3.1)."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.cfg = cfg
        self.bert = BertModel(cfg)
        self.mlm = MaskedLMHead(cfg, self.bert.embeddings.word.weight)
        self.nsp = nn.Linear(cfg.d_model, 2)  # on the pooled [CLS] vector: 0 = IsNext, 1 = NotNext
        for m in (self.mlm.dense, self.mlm.norm, self.nsp):
            m.apply(lambda mod: init_bert_weights(mod, cfg.init_std))
        nn.init.zeros_(self.mlm.decoder.bias)

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """``hidden`` (..., d) -> MLM logits (..., V)."""
        return self.mlm(hidden)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, mlm_labels: torch.Tensor | None = None,
                nsp_labels: torch.Tensor | None = None, *, masked_only: bool = True) -> Any:
        """The pre-training loss, or the logits.

        Args:
            input_ids, token_type_ids, attention_mask: as :meth:`BertModel.forward`.
            mlm_labels: ``(B, T)`` the original ids at the positions to predict, ``-100`` elsewhere.
            nsp_labels: ``(B,)`` 0 = B follows A (IsNext), 1 = B is a random sentence (NotNext).
            masked_only: project to the vocabulary only at the positions to predict (the default; the same
                loss as projecting everywhere, in a fraction of the time). ``False`` projects every position, as
                Hugging Face does (for like-for-like benchmarks).

        Returns:
            With labels, ``{"loss", "mlm_loss", "nsp_loss", "mlm_acc", "nsp_acc"}`` (what :func:`shoulders.train.fit`
            logs; the loss is the sum of the two mean cross-entropies, §3.1/Appendix A.2; with only one kind of
            label only its entries). Without labels, ``(mlm_logits (B, T, V), nsp_logits (B, 2))``.
        """
        out = self.bert(input_ids, token_type_ids, attention_mask)
        nsp_logits = self.nsp(out.pooled)  # (B, 2)
        if mlm_labels is None and nsp_labels is None:
            return self.mlm_logits(out.hidden), nsp_logits
        result: dict[str, torch.Tensor] = {}
        losses = []
        if mlm_labels is not None:
            if mlm_labels.shape != input_ids.shape:
                raise ValueError(f"mlm_labels {tuple(mlm_labels.shape)} must have the shape of input_ids "
                                 f"{tuple(input_ids.shape)} (-100 where nothing is predicted)")
            check_labels(mlm_labels, "mlm_labels", self.cfg.vocab_size, ignore_index=IGNORE)
            chosen = mlm_labels != IGNORE  # (B, T)
            if masked_only:
                logits = self.mlm_logits(out.hidden[chosen])  # (N, V): only the N chosen positions
            else:
                logits = self.mlm_logits(out.hidden)[chosen]  # (B, T, V) -> (N, V)
            target = mlm_labels[chosen]  # (N,)
            n = max(int(target.numel()), 1)  # a batch with nothing to predict has loss 0, not NaN
            result["mlm_loss"] = F.cross_entropy(logits.float(), target, reduction="sum") / n
            result["mlm_acc"] = (logits.argmax(-1) == target).sum().float() / n
            losses.append(result["mlm_loss"])
        if nsp_labels is not None:
            check_labels(nsp_labels, "nsp_labels", 2)
            result["nsp_loss"] = F.cross_entropy(nsp_logits.float(), nsp_labels.reshape(-1))
            result["nsp_acc"] = (nsp_logits.argmax(-1) == nsp_labels.reshape(-1)).float().mean()
            losses.append(result["nsp_loss"])
        result["loss"] = sum(losses[1:], losses[0])
        return {"loss": result.pop("loss"), **result}

    def num_parameters(self) -> int:
        """Distinct parameters (the tied decoder matrix counts once)."""
        return sum(p.numel() for p in self.parameters())

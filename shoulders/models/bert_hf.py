"""Hugging Face interoperability for :mod:`shoulders.models.bert`: configs, weights, and folders, both ways.

Our BERT has the same computation as ``transformers.BertModel`` / ``BertForPreTraining``; only the names differ, and
our self-attention projects Q, K, V with one fused ``qkv`` Linear whose rows are ``[W^Q; W^K; W^V]`` where Hugging
Face has three (``attention.self.query/key/value``). :func:`to_hf_state_dict` and :func:`load_hf_state_dict` map
between the two (splitting and concatenating those rows); :func:`save_pretrained` writes a folder
``transformers.BertModel.from_pretrained`` reads, and :func:`from_pretrained` reads one -- no network is needed, and
``transformers`` is not (only ``safetensors``). A released checkpoint, e.g. Turc et al.'s BERT-mini, is two steps
away for a reader with internet access::

    from huggingface_hub import snapshot_download
    folder = snapshot_download("google/bert_uncased_L-4_H-256_A-4")
    model = from_pretrained(folder)          # a BertForPreTraining if the folder has the heads, else a BertModel

(its ``vocab.txt`` is the matching WordPiece vocabulary).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import torch

from ..config import ConfigError
from .hf_files import LoadResult, match_names, read_config, read_weights, write_folder
from .bert import BertConfig, BertForPreTraining, BertModel

__all__ = ["LoadResult", "config_from_hf", "from_pretrained", "hf_config", "load_hf_state_dict", "save_pretrained",
           "to_hf_state_dict"]

Model = BertModel | BertForPreTraining

# transformers.BertConfig's defaults (BERT-base), used for keys a config.json leaves out
_HF_DEFAULTS: dict[str, Any] = dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                    intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
                                    attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
                                    initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0)


def hf_config(cfg: BertConfig) -> dict[str, Any]:
    """Keyword arguments of ``transformers.BertConfig`` for the same model (post-LN only: Hugging Face's BERT has
    no pre-LN layer)."""
    if cfg.norm_first:
        raise ConfigError("norm_first=True: Hugging Face's BERT is post-LN (LayerNorm after each residual sum), so a "
                          "pre-LN model has no transformers.BertConfig; convert a post-LN one")
    return dict(vocab_size=cfg.vocab_size, hidden_size=cfg.d_model, num_hidden_layers=cfg.n_layers,
                num_attention_heads=cfg.n_heads, intermediate_size=cfg.d_ff, hidden_act="gelu",
                hidden_dropout_prob=cfg.dropout, attention_probs_dropout_prob=cfg.attn_dropout,
                max_position_embeddings=cfg.max_len, type_vocab_size=cfg.type_vocab, initializer_range=cfg.init_std,
                layer_norm_eps=cfg.eps, pad_token_id=cfg.pad_id)


def config_from_hf(d: Mapping[str, Any]) -> BertConfig:
    """A :class:`BertConfig` from a Hugging Face BERT config (``config.json`` as a dict, or ``config.to_dict()``).

    Raises :class:`ConfigError` for what our BERT does not implement: another model type, an activation other than
    exact GELU, relative position embeddings, a decoder / cross-attention configuration.
    """
    v = {**_HF_DEFAULTS, **{k: val for k, val in d.items() if val is not None}}
    if v.get("model_type", "bert") != "bert":
        raise ConfigError(f"not a BERT config: model_type={v['model_type']!r}")
    if v["hidden_act"] not in ("gelu", "gelu_python"):  # both are the exact erf GELU
        raise ConfigError(f"hidden_act={v['hidden_act']!r} is not supported: shoulders' BERT uses the exact GELU "
                          "('gelu')")
    if v.get("position_embedding_type", "absolute") != "absolute":
        raise ConfigError(f"position_embedding_type={v['position_embedding_type']!r} is not supported: shoulders' "
                          "BERT has absolute (learned) position embeddings only")
    if v.get("is_decoder") or v.get("add_cross_attention"):
        raise ConfigError("decoder BERT configs (is_decoder / add_cross_attention) are not supported")
    return BertConfig(vocab_size=v["vocab_size"], d_model=v["hidden_size"], n_layers=v["num_hidden_layers"],
                      n_heads=v["num_attention_heads"], d_ff=v["intermediate_size"],
                      max_len=v["max_position_embeddings"], type_vocab=v["type_vocab_size"],
                      dropout=float(v["hidden_dropout_prob"]), attn_dropout=float(v["attention_probs_dropout_prob"]),
                      eps=float(v["layer_norm_eps"]), pad_id=int(v.get("pad_token_id") or 0),
                      init_std=float(v["initializer_range"]))


def _table(model: Model) -> list[tuple[str, list[str]]]:
    """``(our name, [Hugging Face names])`` for every tensor; ours is the row-wise concatenation of theirs."""
    if isinstance(model, BertForPreTraining):
        ours, theirs = "bert.", "bert."
        bert = model.bert
    elif isinstance(model, BertModel):
        ours, theirs, bert = "", "", model
    else:
        raise TypeError(f"expected a BertModel or BertForPreTraining, got {type(model).__name__}")
    pairs = [("embeddings.word.weight", ["embeddings.word_embeddings.weight"]),
             ("embeddings.position.weight", ["embeddings.position_embeddings.weight"]),
             ("embeddings.token_type.weight", ["embeddings.token_type_embeddings.weight"])]
    pairs += [(f"embeddings.norm.{p}", [f"embeddings.LayerNorm.{p}"]) for p in ("weight", "bias")]
    for i in range(len(bert.encoder.layers)):
        a, h = f"encoder.layers.{i}.", f"encoder.layer.{i}."
        for p in ("weight", "bias"):
            pairs += [(f"{a}self_attn.qkv.{p}", [f"{h}attention.self.{n}.{p}" for n in ("query", "key", "value")]),
                      (f"{a}self_attn.out.{p}", [f"{h}attention.output.dense.{p}"]),
                      (f"{a}norm1.{p}", [f"{h}attention.output.LayerNorm.{p}"]),
                      (f"{a}ffn.w1.{p}", [f"{h}intermediate.dense.{p}"]),
                      (f"{a}ffn.w2.{p}", [f"{h}output.dense.{p}"]),
                      (f"{a}norm2.{p}", [f"{h}output.LayerNorm.{p}"])]
    pairs += [(f"pooler.{p}", [f"pooler.dense.{p}"]) for p in ("weight", "bias")]
    table = [(ours + o, [theirs + t for t in ts]) for o, ts in pairs]
    if isinstance(model, BertForPreTraining):
        for p in ("weight", "bias"):
            table += [(f"mlm.dense.{p}", [f"cls.predictions.transform.dense.{p}"]),
                      (f"mlm.norm.{p}", [f"cls.predictions.transform.LayerNorm.{p}"]),
                      (f"nsp.{p}", [f"cls.seq_relationship.{p}"])]
        table.append(("mlm.decoder.bias", ["cls.predictions.bias"]))
    return table


# Hugging Face names that repeat a tensor already in the table: the tied decoder (= the word embeddings) and
# the decoder bias (= cls.predictions.bias). Written by to_hf_state_dict, optional when loading.
_ALIASES = {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight",
            "cls.predictions.decoder.bias": "cls.predictions.bias"}


@torch.no_grad()
def to_hf_state_dict(model: Model) -> dict[str, torch.Tensor]:
    """Our weights under Hugging Face's names (``transformers.BertModel`` or ``BertForPreTraining`` layout, the
    latter with the ``bert.`` prefix and the ``cls.*`` heads); copies, so the result can be saved or edited."""
    state = model.state_dict()
    out: dict[str, torch.Tensor] = {}
    for ours, theirs in _table(model):
        for name, part in zip(theirs, state[ours].chunk(len(theirs), dim=0)):
            out[name] = part.detach().clone()
    if isinstance(model, BertForPreTraining):
        for alias, source in _ALIASES.items():
            out[alias] = out[source]  # the same tensor, as in Hugging Face's tied model
    return out


def _normalise(state_dict: Mapping[str, torch.Tensor], pretraining: bool) -> dict[str, torch.Tensor]:
    """Hugging Face names in one spelling: with the ``bert.`` prefix for pre-training, without for BertModel;
    TF-era ``gamma``/``beta`` as ``weight``/``bias``; the ``position_ids`` buffer dropped."""
    out: dict[str, torch.Tensor] = {}
    for name, value in state_dict.items():
        if name.endswith("embeddings.position_ids"):
            continue
        if name.endswith((".gamma", ".beta")):
            name = name.rsplit(".", 1)[0] + (".weight" if name.endswith(".gamma") else ".bias")
        if pretraining and not name.startswith(("bert.", "cls.")):
            name = "bert." + name
        elif not pretraining and name.startswith("bert."):
            name = name[len("bert."):]
        out[name] = value
    return out


@torch.no_grad()
def load_hf_state_dict(model: Model, state_dict: Mapping[str, torch.Tensor], strict: bool = True) -> LoadResult:
    """Copy Hugging Face BERT weights into ``model`` (in place) and return the missing / unexpected names.

    Accepts a ``transformers.BertModel`` or ``BertForPreTraining`` state dict, with or without the ``bert.`` prefix
    (a pre-training checkpoint loads into a :class:`BertModel` with ``strict=False``: the ``cls.*`` heads are then
    reported as unexpected). The ``embeddings.position_ids`` buffer is ignored; ``cls.predictions.decoder.weight``
    is the word embedding matrix (tied) and is not read. With ``strict``, any missing or unexpected name raises
    a ``KeyError`` listing them, before anything is copied. A shape that does not fit always raises ``ValueError``.
    """
    pretraining = isinstance(model, BertForPreTraining)
    given = _normalise(state_dict, pretraining)
    if pretraining and "cls.predictions.bias" not in given and "cls.predictions.decoder.bias" in given:
        given["cls.predictions.bias"] = given["cls.predictions.decoder.bias"]
    table = _table(model)
    result = match_names(type(model).__name__, [t for _, ts in table for t in ts], given, strict,
                         known=_ALIASES if pretraining else ())
    params = dict(model.state_dict(keep_vars=True))
    for ours, theirs in table:
        if any(t not in given for t in theirs):
            continue
        value = torch.cat([given[t] for t in theirs], dim=0)
        target = params[ours]
        if value.shape != target.shape:
            raise ValueError(f"{' + '.join(theirs)}: shape {tuple(value.shape)} does not fit {ours} "
                             f"{tuple(target.shape)}")
        target.copy_(value.to(dtype=target.dtype, device=target.device))
    return result


def from_pretrained(folder: str | Path, pretraining: bool | None = None, strict: bool = True) -> Model:
    """Our model from a local Hugging Face folder (``config.json`` + ``model.safetensors`` or ``pytorch_model.bin``).

    ``pretraining=None`` returns a :class:`BertForPreTraining` when the weights include the ``cls.*`` heads, else a
    :class:`BertModel`; ``True``/``False`` asks for one (a :class:`BertModel` from a pre-training checkpoint drops
    the heads). The model is returned in eval mode, as ``transformers`` does.
    """
    folder = Path(folder)
    cfg = config_from_hf(read_config(folder))
    weights = read_weights(folder, "BERT")
    has_heads = any(k.startswith("cls.") for k in weights)
    if pretraining is None:
        pretraining = has_heads
    model: Model = BertForPreTraining(cfg) if pretraining else BertModel(cfg)
    if not pretraining and has_heads:
        weights = {k: v for k, v in weights.items() if not k.startswith("cls.")}
    load_hf_state_dict(model, weights, strict=strict)
    return model.eval()


def save_pretrained(model: Model, folder: str | Path) -> Path:
    """Write ``config.json`` + ``model.safetensors`` that ``transformers.BertModel.from_pretrained(folder)`` (or
    ``BertForPreTraining``, for a pre-training model) and :func:`from_pretrained` read. Returns the folder."""
    arch = "BertForPreTraining" if isinstance(model, BertForPreTraining) else "BertModel"
    config = {"architectures": [arch], "model_type": "bert", **hf_config(model.cfg),
              "position_embedding_type": "absolute", "tie_word_embeddings": True}
    state = {k: v for k, v in to_hf_state_dict(model).items() if k not in _ALIASES}  # no shared tensors
    return write_folder(folder, config, state)

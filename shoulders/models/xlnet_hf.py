"""Hugging Face interoperability for :mod:`shoulders.models.xlnet`: configs, weights and folders, both ways.

Our XLNet computes what ``transformers.XLNetModel`` / ``XLNetLMHeadModel`` compute (bidirectional attention,
``untie_r=True``: every layer its own biases); the names differ, and the layout of the attention projections:
Hugging Face keeps each as one ``(d_model, n_head, d_head)`` tensor used in an einsum, where ours are
``nn.Linear`` layers (``(out, in)``), so q, k, v and r are reshaped and transposed on the way and o reshaped.

    ours (XLNetLMHeadModel)                     Hugging Face (XLNetLMHeadModel)
    transformer.word_embedding.weight           transformer.word_embedding.weight   (= lm_loss.weight, tied)
    transformer.mask_emb                        transformer.mask_emb
    ...layers.{i}.attn.{q,k,v,r}.weight (Hd, d) transformer.layer.{i}.rel_attn.{q,k,v,r} (d, H, dh)
    ...layers.{i}.attn.o.weight (d, Hd)         transformer.layer.{i}.rel_attn.o (d, H, dh)
    ...layers.{i}.attn.u / v_bias / s_bias      transformer.layer.{i}.rel_attn.r_w_bias / r_r_bias / r_s_bias
    ...layers.{i}.attn.seg_embed, attn.norm     transformer.layer.{i}.rel_attn.seg_embed, rel_attn.layer_norm
    ...layers.{i}.layer_1, layer_2, ff_norm     transformer.layer.{i}.ff.layer_1, ff.layer_2, ff.layer_norm
    lm_bias                                     lm_loss.bias

:func:`save_pretrained` writes a folder ``transformers.XLNetLMHeadModel.from_pretrained`` reads; :func:`from_pretrained`
reads one (no network, no ``transformers``). The released XLNet-base is two steps away with internet access
(``snapshot_download("xlnet/xlnet-base-cased")``; its SentencePiece vocabulary is not the book's WordPiece).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

import torch

from ..config import ConfigError
from .hf_files import LoadResult, match_names, read_config, read_weights, write_folder
from .xlnet import XLNetConfig, XLNetLMHeadModel, XLNetModel

__all__ = ["LoadResult", "config_from_hf", "from_pretrained", "hf_config", "load_hf_state_dict", "save_pretrained",
           "to_hf_state_dict"]

Model = XLNetModel | XLNetLMHeadModel

# transformers.XLNetConfig's defaults (XLNet-large), for keys a config.json leaves out
_HF_DEFAULTS: dict[str, Any] = dict(vocab_size=32000, d_model=1024, n_layer=24, n_head=16, d_inner=4096,
                                    ff_activation="gelu", untie_r=True, attn_type="bi", initializer_range=0.02,
                                    layer_norm_eps=1e-12, dropout=0.1, mem_len=512, clamp_len=-1, bi_data=False,
                                    same_length=False, pad_token_id=5)
_ACTS = ("gelu", "relu")


def hf_config(cfg: XLNetConfig) -> dict[str, Any]:
    """Keyword arguments of ``transformers.XLNetConfig`` for the same model."""
    if cfg.activation not in _ACTS:
        raise ConfigError(f"activation={cfg.activation!r} has no XLNetConfig ff_activation; use one of {_ACTS}")
    return dict(vocab_size=cfg.vocab_size, d_model=cfg.d_model, n_layer=cfg.n_layers, n_head=cfg.n_heads,
                d_inner=cfg.d_ff, ff_activation=cfg.activation, untie_r=True, attn_type="bi",
                initializer_range=cfg.init_std, layer_norm_eps=cfg.eps, dropout=cfg.dropout,
                mem_len=cfg.mem_len or None, clamp_len=cfg.clamp_len, bi_data=False, same_length=False,
                pad_token_id=cfg.pad_id)


def config_from_hf(d: Mapping[str, Any]) -> XLNetConfig:
    """An :class:`XLNetConfig` from a Hugging Face XLNet config; what ours does not implement raises
    :class:`ConfigError` (another model type, shared biases, one-directional attention, ``bi_data``,
    ``same_length``, an activation other than GELU or ReLU)."""
    v = {**_HF_DEFAULTS, **{k: val for k, val in d.items() if val is not None}}
    if v.get("model_type", "xlnet") != "xlnet":
        raise ConfigError(f"not an XLNet config: model_type={v['model_type']!r}")
    for key, want in (("untie_r", True), ("attn_type", "bi"), ("bi_data", False), ("same_length", False)):
        if v[key] != want:
            raise ConfigError(f"{key}={v[key]!r} is not supported: shoulders' XLNet has {key}={want!r}")
    if v["ff_activation"] not in _ACTS:
        raise ConfigError(f"ff_activation={v['ff_activation']!r} is not supported; use one of {_ACTS}")
    if v["d_model"] % v["n_head"]:
        raise ConfigError(f"d_model={v['d_model']} is not a multiple of n_head={v['n_head']}")
    mem_len = d["mem_len"] if "mem_len" in d else v["mem_len"]  # an explicit null (save_pretrained's 0): none
    return XLNetConfig(vocab_size=v["vocab_size"], d_model=v["d_model"], n_layers=v["n_layer"], n_heads=v["n_head"],
                       d_ff=v["d_inner"], dropout=float(v["dropout"]), activation=v["ff_activation"],
                       eps=float(v["layer_norm_eps"]), mem_len=int(mem_len or 0),
                       clamp_len=int(v["clamp_len"]), init_std=float(v["initializer_range"]),
                       pad_id=int(v.get("pad_token_id") or 0))


Convert = Callable[[torch.Tensor], torch.Tensor]


def _same(t: torch.Tensor) -> torch.Tensor:
    return t


def _table(model: Model) -> list[tuple[str, str, Convert, Convert]]:
    """``(our name, Hugging Face name, ours -> theirs, theirs -> ours)`` for every tensor."""
    xl = model.transformer if isinstance(model, XLNetLMHeadModel) else model
    if not isinstance(xl, XLNetModel):
        raise TypeError(f"expected an XLNetModel or XLNetLMHeadModel, got {type(model).__name__}")
    d, H = xl.cfg.d_model, xl.cfg.n_heads
    dh = d // H

    def in_to_hf(w: torch.Tensor) -> torch.Tensor:  # Linear (H dh, d) -> (d, H, dh)
        return w.t().reshape(d, H, dh)

    def in_from_hf(w: torch.Tensor) -> torch.Tensor:
        return w.reshape(d, H * dh).t()

    def out_to_hf(w: torch.Tensor) -> torch.Tensor:  # Linear (d, H dh) -> (d, H, dh)
        return w.reshape(d, H, dh)

    def out_from_hf(w: torch.Tensor) -> torch.Tensor:
        return w.reshape(d, H * dh)

    table = [("word_embedding.weight", "word_embedding.weight", _same, _same), ("mask_emb", "mask_emb", _same, _same)]
    for i in range(len(xl.layers)):
        a, h = f"layers.{i}.", f"layer.{i}."
        table += [(f"{a}attn.{n}.weight", f"{h}rel_attn.{n}", in_to_hf, in_from_hf) for n in "qkvr"]
        table += [(f"{a}attn.o.weight", f"{h}rel_attn.o", out_to_hf, out_from_hf)]
        table += [(f"{a}attn.{o}", f"{h}rel_attn.{t}", _same, _same)
                  for o, t in (("u", "r_w_bias"), ("v_bias", "r_r_bias"), ("s_bias", "r_s_bias"),
                               ("seg_embed", "seg_embed"))]
        for p in ("weight", "bias"):
            table += [(f"{a}attn.norm.{p}", f"{h}rel_attn.layer_norm.{p}", _same, _same),
                      (f"{a}layer_1.{p}", f"{h}ff.layer_1.{p}", _same, _same),
                      (f"{a}layer_2.{p}", f"{h}ff.layer_2.{p}", _same, _same),
                      (f"{a}ff_norm.{p}", f"{h}ff.layer_norm.{p}", _same, _same)]
    if isinstance(model, XLNetLMHeadModel):
        table = [("transformer." + o, "transformer." + t, f, b) for o, t, f, b in table]
        table.append(("lm_bias", "lm_loss.bias", _same, _same))
    return table


@torch.no_grad()
def to_hf_state_dict(model: Model) -> dict[str, torch.Tensor]:
    """Our weights under Hugging Face's names and layout (copies); an LM also gets ``lm_loss.weight``, the same
    tensor as the word embedding (tied, as there)."""
    state = model.state_dict()
    out = {theirs: to(state[ours]).detach().clone().contiguous() for ours, theirs, to, _ in _table(model)}
    if isinstance(model, XLNetLMHeadModel):
        out["lm_loss.weight"] = out["transformer.word_embedding.weight"]
    return out


def _normalise(state_dict: Mapping[str, torch.Tensor], lm: bool) -> dict[str, torch.Tensor]:
    """Hugging Face names with the ``transformer.`` prefix for an LM, without it for the bare model; the tied
    ``lm_loss.weight`` dropped."""
    out: dict[str, torch.Tensor] = {}
    for name, value in state_dict.items():
        if name == "lm_loss.weight":
            continue
        if lm and not name.startswith(("transformer.", "lm_loss.")):
            name = "transformer." + name
        elif not lm and name.startswith("transformer."):
            name = name[len("transformer."):]
        out[name] = value
    return out


@torch.no_grad()
def load_hf_state_dict(model: Model, state_dict: Mapping[str, torch.Tensor], strict: bool = True) -> LoadResult:
    """Copy Hugging Face XLNet weights into ``model`` in place (an ``XLNetLMHeadModel`` or ``XLNetModel`` state
    dict); with ``strict`` a missing or unexpected name raises ``KeyError`` before anything is copied; a shape
    that does not fit raises ``ValueError``."""
    table = _table(model)
    lm = isinstance(model, XLNetLMHeadModel)
    given = _normalise(state_dict, lm)
    if not lm:
        given = {k: v for k, v in given.items() if not k.startswith("lm_loss.")}
    result = match_names(type(model).__name__, [t for _, t, _, _ in table], given, strict)
    params = dict(model.state_dict(keep_vars=True))
    for ours, theirs, _, back in table:
        if theirs not in given:
            continue
        target = params[ours]
        try:
            value = back(given[theirs])
        except RuntimeError:
            value = None
        if value is None or value.shape != target.shape:
            raise ValueError(f"{theirs}: shape {tuple(given[theirs].shape)} does not fit {ours} "
                             f"{tuple(target.shape)}")
        target.copy_(value.to(dtype=target.dtype, device=target.device))
    return result


def from_pretrained(folder: str | Path, strict: bool = True) -> XLNetLMHeadModel:
    """Our :class:`XLNetLMHeadModel` from a local Hugging Face XLNet folder, in eval mode (an ``XLNetModel``
    folder loads too, with ``strict=False``: its ``lm_bias`` stays zero)."""
    folder = Path(folder)
    model = XLNetLMHeadModel(config_from_hf(read_config(folder)))
    load_hf_state_dict(model, read_weights(folder, "XLNet"), strict=strict)
    return model.eval()


def save_pretrained(model: Model, folder: str | Path) -> Path:
    """Write ``config.json`` + ``model.safetensors`` that ``transformers.XLNetLMHeadModel.from_pretrained(folder)``
    (``XLNetModel`` for an :class:`XLNetModel`) and :func:`from_pretrained` read. Returns the folder."""
    cfg = model.cfg
    config = {"architectures": ["XLNetLMHeadModel" if isinstance(model, XLNetLMHeadModel) else "XLNetModel"],
              "model_type": "xlnet", **hf_config(cfg)}
    state = {k: v for k, v in to_hf_state_dict(model).items() if k != "lm_loss.weight"}
    return write_folder(folder, config, state)

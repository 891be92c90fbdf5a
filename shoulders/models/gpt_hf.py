"""Hugging Face interoperability for :mod:`shoulders.models.gpt`: configs, weights, and folders, both ways.

Our pre-LN GPT (``norm="pre"``) computes what ``transformers.GPT2LMHeadModel`` computes; only the names differ,
and the layout of the matrices: GPT-2's released code (and Hugging Face after it) multiplies ``x @ W`` with
``W`` stored ``(in, out)`` (``Conv1D``), where ``nn.Linear`` stores ``(out, in)`` -- so every projection is
transposed on the way. The fused ``c_attn`` holds q, k, v side by side in the same order as our ``qkv`` rows
``[W^Q; W^K; W^V]``. The output layer is the token embedding (tied) in both.

    ours (GPTLMHeadModel)                       Hugging Face (GPT2LMHeadModel)
    transformer.W_e.weight                      transformer.wte.weight        (= lm_head.weight)
    transformer.W_p.embed.weight                transformer.wpe.weight
    transformer.blocks.layers.{i}.norm1         transformer.h.{i}.ln_1
    ... .self_attn.qkv (3d, d)                  transformer.h.{i}.attn.c_attn (d, 3d)
    ... .self_attn.out                          transformer.h.{i}.attn.c_proj
    ... .norm2                                  transformer.h.{i}.ln_2
    ... .ffn.w1 / .ffn.w2                       transformer.h.{i}.mlp.c_fc / mlp.c_proj
    transformer.blocks.norm                     transformer.ln_f

GPT-1's post-LN layer is not GPT-2's (Hugging Face's ``GPT2Model`` is pre-LN only), so a ``norm="post"`` model has
no ``GPT2`` equivalent: exporting one raises :class:`ConfigError`. :func:`save_pretrained` writes a folder
``transformers.GPT2LMHeadModel.from_pretrained`` reads, and :func:`from_pretrained` reads one -- no network, and no
``transformers`` (only ``safetensors``). The released GPT-2 is two steps away for a reader with internet access::

    from huggingface_hub import snapshot_download
    model = from_pretrained(snapshot_download("openai-community/gpt2"))  # 124M parameters, vocabulary 50,257
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import torch

from ..config import ConfigError
from .gpt import GPTConfig, GPTLMHeadModel, GPTModel
from .hf_files import LoadResult, match_names, read_config, read_weights, write_folder

__all__ = ["LoadResult", "config_from_hf", "from_pretrained", "hf_config", "load_hf_state_dict", "save_pretrained",
           "to_hf_state_dict"]

Model = GPTModel | GPTLMHeadModel

# transformers.GPT2Config's defaults (GPT-2 small), used for keys a config.json leaves out
_HF_DEFAULTS: dict[str, Any] = dict(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12,
                                    n_inner=None, activation_function="gelu_new", resid_pdrop=0.1, embd_pdrop=0.1,
                                    attn_pdrop=0.1, layer_norm_epsilon=1e-5, initializer_range=0.02,
                                    scale_attn_weights=True, scale_attn_by_inverse_layer_idx=False,
                                    add_cross_attention=False)
# our activation -> Hugging Face's name; "gelu_new" is the tanh approximation under the name GPT-2's config uses
_TO_HF_ACT = {"gelu_tanh": "gelu_new", "gelu": "gelu", "relu": "relu"}
_FROM_HF_ACT = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "gelu_python": "gelu",
                "relu": "relu"}


def _special_ids(vocab_size: int) -> dict[str, int | None]:
    """GPT2Config's ``<|endoftext|>`` id (50256) is GPT-2's vocabulary's; another vocabulary names its own."""
    eot = 50256 if vocab_size == 50257 else None
    return dict(bos_token_id=eot, eos_token_id=eot)


def hf_config(cfg: GPTConfig) -> dict[str, Any]:
    """Keyword arguments of ``transformers.GPT2Config`` for the same model (pre-LN only: see the module docstring)."""
    if cfg.norm != "pre":
        raise ConfigError(f"norm={cfg.norm!r}: Hugging Face's GPT-2 is pre-LN (LayerNorm at each sub-block's input, "
                          "GPT-2 §2.3), so a post-LN (GPT-1) model has no GPT2Config; build it with norm='pre' to "
                          "export it")
    return dict(vocab_size=cfg.vocab_size, n_positions=cfg.max_len, n_embd=cfg.d_model, n_layer=cfg.n_layers,
                n_head=cfg.n_heads, n_inner=cfg.d_ff, activation_function=_TO_HF_ACT[cfg.activation],
                resid_pdrop=cfg.dropout, embd_pdrop=cfg.dropout, attn_pdrop=cfg.attn_dropout,
                layer_norm_epsilon=cfg.eps, initializer_range=cfg.init_std, tie_word_embeddings=True,
                **_special_ids(cfg.vocab_size))


def config_from_hf(d: Mapping[str, Any]) -> GPTConfig:
    """A :class:`GPTConfig` (pre-LN) from a Hugging Face GPT-2 config (``config.json`` as a dict, or
    ``config.to_dict()``).

    Raises :class:`ConfigError` for what our GPT does not implement: another model type (GPT-1's ``openai-gpt``
    checkpoints included), an activation other than GELU (exact or tanh) or ReLU, unscaled or layer-scaled
    attention, cross-attention, different residual and embedding dropouts, untied output weights.
    """
    v = {**_HF_DEFAULTS, **{k: val for k, val in d.items() if val is not None}}
    if v.get("model_type", "gpt2") != "gpt2":
        raise ConfigError(f"not a GPT-2 config: model_type={v['model_type']!r} (only Hugging Face's GPT2 layout is "
                          "read)")
    if v["activation_function"] not in _FROM_HF_ACT:
        raise ConfigError(f"activation_function={v['activation_function']!r} is not supported: shoulders' GPT "
                          f"uses one of {sorted(_FROM_HF_ACT)}")
    if not v["scale_attn_weights"] or v["scale_attn_by_inverse_layer_idx"]:
        raise ConfigError("attention scaled other than by 1/sqrt(d_k) (scale_attn_weights=False or "
                          "scale_attn_by_inverse_layer_idx=True) is not supported")
    if v["add_cross_attention"]:
        raise ConfigError("GPT-2 configs with cross-attention (add_cross_attention) are not supported")
    if v.get("tie_word_embeddings", True) is False:
        raise ConfigError("untied output weights (tie_word_embeddings=False) are not supported: GPT's output layer "
                          "is W_e")
    if float(v["resid_pdrop"]) != float(v["embd_pdrop"]):
        raise ConfigError(f"resid_pdrop={v['resid_pdrop']} and embd_pdrop={v['embd_pdrop']} differ: shoulders' GPT "
                          "has one dropout rate for both")
    return GPTConfig(vocab_size=v["vocab_size"], d_model=v["n_embd"], n_layers=v["n_layer"], n_heads=v["n_head"],
                     d_ff=v["n_inner"] or 4 * v["n_embd"], max_len=v["n_positions"], dropout=float(v["resid_pdrop"]),
                     attn_dropout=float(v["attn_pdrop"]), norm="pre",
                     activation=_FROM_HF_ACT[v["activation_function"]], eps=float(v["layer_norm_epsilon"]),
                     init_std=float(v["initializer_range"]))


def _table(model: Model) -> list[tuple[str, str, bool]]:
    """``(our name, Hugging Face name, transposed)`` for every tensor (names without the ``transformer.``
    prefixes, which :func:`_prefixes` adds)."""
    gpt = model.transformer if isinstance(model, GPTLMHeadModel) else model
    if not isinstance(gpt, GPTModel):
        raise TypeError(f"expected a GPTModel or GPTLMHeadModel, got {type(model).__name__}")
    if gpt.cfg.norm != "pre":
        hf_config(gpt.cfg)  # raises the post-LN error
    table = [("W_e.weight", "wte.weight", False), ("W_p.embed.weight", "wpe.weight", False)]
    for i in range(len(gpt.blocks.layers)):
        a, h = f"blocks.layers.{i}.", f"h.{i}."
        for ours, theirs in (("norm1", "ln_1"), ("norm2", "ln_2")):
            table += [(f"{a}{ours}.{p}", f"{h}{theirs}.{p}", False) for p in ("weight", "bias")]
        for ours, theirs in (("self_attn.qkv", "attn.c_attn"), ("self_attn.out", "attn.c_proj"),
                             ("ffn.w1", "mlp.c_fc"), ("ffn.w2", "mlp.c_proj")):
            table += [(f"{a}{ours}.weight", f"{h}{theirs}.weight", True),  # nn.Linear (out, in) vs Conv1D (in, out)
                      (f"{a}{ours}.bias", f"{h}{theirs}.bias", False)]
    table += [(f"blocks.norm.{p}", f"ln_f.{p}", False) for p in ("weight", "bias")]
    if isinstance(model, GPTLMHeadModel):
        table = [("transformer." + o, "transformer." + t, tr) for o, t, tr in table]
    return table


@torch.no_grad()
def to_hf_state_dict(model: Model) -> dict[str, torch.Tensor]:
    """Our weights under Hugging Face's names and layout (``GPT2LMHeadModel``'s, with ``lm_head.weight`` the same
    tensor as ``transformer.wte.weight``; ``GPT2Model``'s for a :class:`GPTModel`); copies. Post-LN raises."""
    state = model.state_dict()
    out = {theirs: (state[ours].t() if transposed else state[ours]).detach().clone().contiguous()
           for ours, theirs, transposed in _table(model)}
    if isinstance(model, GPTLMHeadModel):
        out["lm_head.weight"] = out["transformer.wte.weight"]  # tied, as in Hugging Face's model
    return out


def _is_buffer(name: str) -> bool:
    """Hugging Face's causal-mask buffers of older versions (``attn.bias``, ``attn.masked_bias``): not weights."""
    return name.endswith((".attn.bias", ".attn.masked_bias"))


def _normalise(state_dict: Mapping[str, torch.Tensor], lm: bool) -> dict[str, torch.Tensor]:
    """Hugging Face names in one spelling: with the ``transformer.`` prefix for an LM, without for GPTModel (the
    released GPT-2 files have none); the mask buffers and the tied ``lm_head.weight`` dropped."""
    out: dict[str, torch.Tensor] = {}
    for name, value in state_dict.items():
        if _is_buffer(name) or name == "lm_head.weight":
            continue
        if lm and not name.startswith("transformer."):
            name = "transformer." + name
        elif not lm and name.startswith("transformer."):
            name = name[len("transformer."):]
        out[name] = value
    return out


@torch.no_grad()
def load_hf_state_dict(model: Model, state_dict: Mapping[str, torch.Tensor], strict: bool = True) -> LoadResult:
    """Copy Hugging Face GPT-2 weights into ``model`` (in place) and return the missing / unexpected names.

    Accepts a ``GPT2LMHeadModel`` or ``GPT2Model`` state dict, with or without the ``transformer.`` prefix.
    ``lm_head.weight`` is the token embedding (tied) and is not read; the old ``attn.bias`` / ``attn.masked_bias``
    buffers are ignored. With ``strict``, any missing or unexpected name raises a ``KeyError`` listing them, before
    anything is copied. A shape that does not fit always raises ``ValueError``.
    """
    table = _table(model)
    given = _normalise(state_dict, isinstance(model, GPTLMHeadModel))
    result = match_names(type(model).__name__, [t for _, t, _ in table], given, strict)
    params = dict(model.state_dict(keep_vars=True))
    for ours, theirs, transposed in table:
        if theirs not in given:
            continue
        value = given[theirs].t() if transposed else given[theirs]
        target = params[ours]
        if value.shape != target.shape:
            raise ValueError(f"{theirs}: shape {tuple(given[theirs].shape)} does not fit {ours} {tuple(target.shape)}"
                             + (" (transposed: Hugging Face stores (in, out))" if transposed else ""))
        target.copy_(value.to(dtype=target.dtype, device=target.device))
    return result


def from_pretrained(folder: str | Path, strict: bool = True) -> GPTLMHeadModel:
    """Our :class:`GPTLMHeadModel` from a local Hugging Face GPT-2 folder (``config.json`` + ``model.safetensors``
    or ``pytorch_model.bin``; a ``GPT2Model`` folder too, since the output layer is the tied W_e), in eval mode as
    ``transformers`` returns it."""
    folder = Path(folder)
    cfg = config_from_hf(read_config(folder))
    model = GPTLMHeadModel(cfg)
    load_hf_state_dict(model, read_weights(folder, "GPT-2"), strict=strict)
    return model.eval()


def save_pretrained(model: Model, folder: str | Path) -> Path:
    """Write ``config.json`` + ``model.safetensors`` that ``transformers.GPT2LMHeadModel.from_pretrained(folder)``
    (``GPT2Model`` for a :class:`GPTModel`) and :func:`from_pretrained` read. Returns the folder. Post-LN raises
    :class:`ConfigError` before anything is written."""
    config = {"architectures": ["GPT2LMHeadModel" if isinstance(model, GPTLMHeadModel) else "GPT2Model"],
              "model_type": "gpt2", **hf_config(model.cfg)}
    state = {k: v for k, v in to_hf_state_dict(model).items() if k != "lm_head.weight"}  # no shared tensors
    return write_folder(folder, config, state)

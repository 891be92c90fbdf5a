"""GPT (shoulders.models.gpt) against transformers' GPT2LMHeadModel, its own invariants, and the sampler it shares.

Everything is offline: the Hugging Face models are built from a config with random weights, never downloaded.
"""
from __future__ import annotations

import json
import math

import pytest
import torch

import shoulders as sh
from shoulders.config import ConfigError
from shoulders.heads import MultipleChoice, SequenceClassifier
from shoulders.models.attention import KVCache
from shoulders.models.gpt import GPTConfig, GPTLMHeadModel, GPTModel, generate, last_real_index
from shoulders.models.gpt_hf import (config_from_hf, from_pretrained, hf_config, load_hf_state_dict, save_pretrained,
                                     to_hf_state_dict)
from shoulders.models.sample import filter_logits, sample_tokens

pytestmark = pytest.mark.usefixtures("one_thread")

ATOL = 1e-5


def small_cfg(**kw) -> GPTConfig:
    base = dict(vocab_size=97, d_model=32, n_layers=2, n_heads=4, d_ff=64, max_len=24, norm="pre",
                activation="gelu_tanh", dropout=0.0, attn_dropout=0.0)
    return GPTConfig(**{**base, **kw})


@torch.no_grad()
def randomise(model: torch.nn.Module, scale: float = 0.1) -> torch.nn.Module:
    """Every tensor random (biases and LayerNorms too), so a swapped, untransposed or dropped name cannot pass."""
    g = torch.Generator().manual_seed(1)
    for name, p in model.named_parameters():
        noise = torch.randn(p.shape, generator=g)
        is_gain = ("norm" in name or ".ln_" in name) and name.endswith("weight")
        p.copy_(1.0 + 0.2 * noise if is_gain else scale * noise)
    return model


def hf_lm(cfg: GPTConfig, **kwargs) -> torch.nn.Module:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    return randomise(transformers.GPT2LMHeadModel(transformers.GPT2Config(**hf_config(cfg), **kwargs))).eval()


def ids(B: int = 3, T: int = 11, V: int = 97, seed: int = 2) -> torch.Tensor:
    return torch.randint(V, (B, T), generator=torch.Generator().manual_seed(seed))


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


# -- Hugging Face interop -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("activation", ["gelu_tanh", "gelu"])
@torch.no_grad()
def test_transformers_weights_give_the_same_logits(activation):
    cfg = small_cfg(activation=activation)
    ref = hf_lm(cfg)
    ours = GPTLMHeadModel(cfg).eval()
    assert load_hf_state_dict(ours, ref.state_dict()) == ([], [])
    x = ids()
    assert max_diff(ours.logits(x), ref(x).logits) < ATOL
    # the bare stack against GPT2Model (no "transformer." prefix), hidden states after ln_f
    bare = GPTModel(cfg).eval()
    load_hf_state_dict(bare, ref.transformer.state_dict())
    assert max_diff(bare(x).hidden, ref.transformer(x).last_hidden_state) < ATOL


@torch.no_grad()
def test_ours_exported_to_transformers_gives_the_same_logits():
    transformers = pytest.importorskip("transformers")
    cfg = small_cfg()
    ours = randomise(GPTLMHeadModel(cfg)).eval()
    ref = transformers.GPT2LMHeadModel(transformers.GPT2Config(**hf_config(cfg))).eval()
    state = to_hf_state_dict(ours)
    assert state["lm_head.weight"] is state["transformer.wte.weight"]
    assert state["transformer.h.0.attn.c_attn.weight"].shape == (cfg.d_model, 3 * cfg.d_model)  # Conv1D: (in, out)
    ref.load_state_dict(state, strict=True)
    x = ids()
    assert max_diff(ours.logits(x), ref(x).logits) < ATOL
    # and the loss of the same next-token pairs: HF shifts the labels itself
    full = ids(T=12)
    hf_loss = ref(full, labels=full).loss
    assert abs(ours(full[:, :-1], full[:, 1:])["loss"].item() - hf_loss.item()) < ATOL


@torch.no_grad()
def test_load_ignores_mask_buffers_and_reports_names():
    cfg = small_cfg()
    ref = hf_lm(cfg)
    released = {k[len("transformer."):]: v for k, v in ref.state_dict().items() if k.startswith("transformer.")}
    for i in range(cfg.n_layers):  # what the released GPT-2 files and old transformers versions hold
        released[f"h.{i}.attn.bias"] = torch.ones(1, 1, cfg.max_len, cfg.max_len).tril()
        released[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    ours = GPTLMHeadModel(cfg).eval()
    assert load_hf_state_dict(ours, released) == ([], [])
    x = ids()
    assert max_diff(ours.logits(x), ref(x).logits) < ATOL
    partial = {k: v for k, v in released.items() if not k.startswith("ln_f")} | {"extra.weight": torch.zeros(1)}
    with pytest.raises(KeyError, match="ln_f.weight"):
        load_hf_state_dict(GPTLMHeadModel(cfg), partial)
    result = load_hf_state_dict(GPTLMHeadModel(cfg), partial, strict=False)
    assert result.missing == ["transformer.ln_f.weight", "transformer.ln_f.bias"]
    assert result.unexpected == ["transformer.extra.weight"]
    wrong = dict(released, **{"h.0.mlp.c_fc.weight": released["h.0.mlp.c_fc.weight"].t()})
    with pytest.raises(ValueError, match="transposed"):
        load_hf_state_dict(GPTLMHeadModel(cfg), wrong)


@torch.no_grad()
def test_save_pretrained_folder_round_trips_through_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    cfg = small_cfg()
    ours = randomise(GPTLMHeadModel(cfg)).eval()
    folder = save_pretrained(ours, tmp_path / "ours")
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "gpt2" and config["activation_function"] == "gelu_new"
    ref = transformers.GPT2LMHeadModel.from_pretrained(folder).eval()
    assert ref.lm_head.weight.data_ptr() == ref.transformer.wte.weight.data_ptr()  # tied on load
    x = ids()
    assert max_diff(ref(x).logits, ours.logits(x)) < ATOL
    back = from_pretrained(folder)
    assert not back.training and back.cfg == ours.cfg
    assert max_diff(back.logits(x), ours.logits(x)) < ATOL
    ref.save_pretrained(tmp_path / "theirs")  # a folder written by transformers reads back into ours
    assert max_diff(from_pretrained(tmp_path / "theirs").logits(x), ours.logits(x)) < ATOL


def test_hf_config_round_trip_and_errors():
    cfg = small_cfg(activation="gelu", attn_dropout=0.05, dropout=0.2, eps=1e-6)
    assert config_from_hf(hf_config(cfg)) == cfg
    assert config_from_hf({"model_type": "gpt2"}) == GPTConfig.named("gpt2")  # GPT2Config's defaults: GPT-2 small
    assert config_from_hf({"activation_function": "gelu_pytorch_tanh"}).activation == "gelu_tanh"
    for bad, match in [({"model_type": "openai-gpt"}, "not a GPT-2 config"),
                       ({"activation_function": "silu"}, "activation_function"),
                       ({"scale_attn_by_inverse_layer_idx": True}, "scaled"),
                       ({"add_cross_attention": True}, "cross-attention"),
                       ({"tie_word_embeddings": False}, "untied"),
                       ({"resid_pdrop": 0.1, "embd_pdrop": 0.0}, "one dropout rate")]:
        with pytest.raises(ConfigError, match=match):
            config_from_hf(bad)


def test_post_ln_model_refuses_hf_export(tmp_path):
    post = GPTLMHeadModel(small_cfg(norm="post"))
    for export in (lambda: hf_config(post.cfg), lambda: to_hf_state_dict(post),
                   lambda: load_hf_state_dict(post, {}), lambda: save_pretrained(post, tmp_path / "post")):
        with pytest.raises(ConfigError, match="pre-LN"):
            export()
    assert not (tmp_path / "post").exists()  # nothing half-written


# -- the model's invariants ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("norm", ["post", "pre"])
@torch.no_grad()
def test_cached_logits_equal_uncached(norm):
    model = randomise(GPTLMHeadModel(small_cfg(norm=norm))).eval()
    x = ids(B=2, T=16)
    full = model.logits(x)  # (B, T, V)
    cache = KVCache()
    steps = [model.logits(x[:, t: t + 1], cache=cache) for t in range(16)]  # token by token
    assert cache.length("0") == 16
    assert max_diff(torch.cat(steps, dim=1), full) < ATOL
    cache = KVCache()  # a prompt of 5 at once, then 3 at a time (queries after cached keys: bottom-right causal)
    chunks = [model.logits(x[:, a:b], cache=cache) for a, b in ((0, 5), (5, 8), (8, 11), (11, 16))]
    assert max_diff(torch.cat(chunks, dim=1), full) < ATOL
    with pytest.raises(ValueError, match="max_len=24"):  # the cache's 16 positions + 9 new ones
        model.logits(x[:, :9], cache=cache)


@pytest.mark.parametrize("norm", ["post", "pre"])
@torch.no_grad()
def test_a_later_token_never_changes_earlier_logits(norm):
    model = randomise(GPTLMHeadModel(small_cfg(norm=norm))).eval()
    x = ids(B=1, T=12)
    y = x.clone()
    y[0, 7] = (y[0, 7] + 1) % 97
    a, b = model.logits(x), model.logits(y)
    assert max_diff(a[:, :7], b[:, :7]) < 1e-6
    assert max_diff(a[:, 7:], b[:, 7:]) > 1e-3  # and the change is seen from there on


@torch.no_grad()
def test_pooled_is_the_last_real_token_and_padding_changes_nothing():
    model = randomise(GPTModel(small_cfg())).eval()
    x = ids(B=3, T=10)
    lengths = torch.tensor([10, 6, 3])
    keep = torch.arange(10)[None, :] < lengths[:, None]  # (B, T): right padding
    padded = x.masked_fill(~keep, 0)
    out = model(padded, attention_mask=keep)
    assert out.pooled.shape == (3, 32) and out.weights == []
    for b, n in enumerate(lengths.tolist()):
        alone = model(x[b: b + 1, :n])  # the row without any padding
        assert max_diff(out.pooled[b], out.hidden[b, n - 1]) == 0
        assert max_diff(out.pooled[b], alone.pooled[0]) < ATOL
        assert max_diff(out.hidden[b, :n], alone.hidden[0]) < ATOL
    assert max_diff(model(x).pooled, model(x).hidden[:, -1]) == 0  # no mask: the last position
    assert max_diff(model(x, token_type_ids=torch.ones_like(x)).hidden, model(x).hidden) == 0  # ignored
    assert torch.equal(last_real_index(keep.long()), lengths - 1)
    with pytest.raises(ValueError, match="right-padded"):
        model(padded, attention_mask=keep.flip(1))  # left padding
    with pytest.raises(ValueError, match="no real token"):
        model(padded, attention_mask=torch.zeros_like(keep))


@torch.no_grad()
def test_attention_weights_are_causal():
    model = randomise(GPTModel(small_cfg(norm="post"))).eval()
    out = model(ids(B=2, T=9), need_weights=True)
    assert len(out.weights) == 2 and out.weights[0].shape == (2, 4, 9, 9)
    for w in out.weights:
        assert torch.allclose(w.sum(-1), torch.ones(2, 4, 9))
        assert (w.triu(1) == 0).all()
    assert max_diff(out.hidden, model(ids(B=2, T=9)).hidden) < ATOL  # the written-out path == the fused one


def test_output_layer_is_the_tied_token_embedding():
    model = GPTLMHeadModel(small_cfg())
    assert model.lm_head.weight is model.transformer.W_e.weight and model.lm_head.bias is None
    assert model.num_parameters() == sum(p.numel() for n, p in model.named_parameters())  # counted once
    assert "lm_head.weight" not in dict(model.named_parameters())
    model(*GPTConfig.example_batch(model.cfg))["loss"].backward()
    assert model.transformer.W_e.weight.grad is not None  # the sum of the input and the output gradients
    # every parameter gets a gradient
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


@torch.no_grad()
def test_token_logprobs_and_lm_loss():
    model = randomise(GPTLMHeadModel(small_cfg())).eval()
    x = ids(B=3, T=10)
    manual = model.logits(x)[:, :-1].log_softmax(-1).gather(-1, x[:, 1:, None]).squeeze(-1)  # (B, T-1)
    lp = model.token_logprobs(x)
    assert lp.shape == (3, 9) and max_diff(lp, manual) < ATOL
    assert abs(model.lm_loss(x).item() + manual.mean().item()) < ATOL
    assert abs(model(x[:, :-1], x[:, 1:])["loss"].item() + manual.mean().item()) < ATOL
    keep = torch.arange(10)[None, :] < torch.tensor([10, 7, 2])[:, None]
    lp = model.token_logprobs(x, keep)
    assert (lp[~keep[:, 1:]] == 0).all() and max_diff(lp[keep[:, 1:]], manual[keep[:, 1:]]) < ATOL
    want = -manual[keep[:, 1:]].mean()  # 9 + 6 + 1 real next tokens
    assert abs(model.lm_loss(x, keep).item() - want.item()) < ATOL
    hidden = model.transformer(x, attention_mask=keep).hidden  # a head's forward: reused, not re-run
    assert abs(model.lm_loss(x, keep, hidden=hidden).item() - want.item()) < ATOL


def test_initialisation_follows_gpt1_and_gpt2():
    torch.manual_seed(0)
    for norm in ("post", "pre"):
        cfg = GPTConfig(d_model=256, d_ff=1024, n_layers=8, norm=norm, vocab_size=512)
        layer = GPTModel(cfg).blocks.layers[3]
        residual = 0.02 / math.sqrt(16) if norm == "pre" else 0.02  # GPT-2 §2.3: 1/sqrt(N), N = 2 x 8 layers
        for w in (layer.self_attn.out.weight, layer.ffn.w2.weight):
            assert abs(w.std().item() / residual - 1) < 0.05
        assert abs(layer.self_attn.qkv.weight.std().item() / 0.02 - 1) < 0.05
        assert (layer.self_attn.qkv.bias == 0).all() and (layer.norm1.weight == 1).all()


def test_config_presets_sizes_and_errors():
    assert GPTConfig.preset("full").n_layers == 12 and GPTConfig.preset("full").norm == "post"
    assert GPTConfig.preset("cpu").norm == "pre" and GPTConfig.preset("cpu").d_model == 256
    gpt2 = GPTConfig.named("gpt2")
    assert (gpt2.n_layers, gpt2.d_model, gpt2.max_len, gpt2.vocab_size, gpt2.norm, gpt2.activation) == (
        12, 768, 1024, 50257, "pre", "gelu_tanh")
    assert GPTConfig.named("gpt1", vocab_size=8192).max_len == 512
    assert gpt2.block().causal and gpt2.block().norm_first and not GPTConfig.named("gpt1").block().norm_first
    with torch.device("meta"):  # 124M parameters, counted without allocating them
        assert GPTLMHeadModel(gpt2).num_parameters() == 124_439_808  # GPT-2 small as released
    with pytest.raises(ConfigError, match="norm must be 'post'.*or 'pre'"):
        GPTConfig(norm="pre-ln")
    with pytest.raises(ConfigError, match="multiple of n_heads"):
        GPTConfig(d_model=100, n_heads=3)
    with pytest.raises(ConfigError, match="unknown GPT size"):
        GPTConfig.named("gpt3")
    with pytest.raises(ConfigError, match="no field"):
        GPTConfig.named("gpt2", layers=3)
    with pytest.raises(ConfigError, match="activation"):
        GPTConfig(activation="swish")
    with pytest.raises(ValueError, match="y .* must have the shape of x"):
        GPTLMHeadModel(small_cfg())(ids(T=5), ids(T=4))
    with pytest.raises(ValueError, match=r"ids from .* \[0, 97\)"):
        GPTLMHeadModel(small_cfg()).logits(ids() + 97)


# -- writing ------------------------------------------------------------------------------------------------------
def test_generate_gives_the_same_tokens_with_and_without_cache():
    model = randomise(GPTLMHeadModel(small_cfg(dropout=0.3, attn_dropout=0.3)), scale=0.3).train()  # peaked P;
    # dropout on in train mode: generate must switch it off, or the two runs would differ
    kw = dict(temperature=0.9, top_k=20, top_p=0.95)
    a = generate(model, [5, 6, 7], 20, generator=torch.Generator().manual_seed(3), **kw)
    b = generate(model, torch.tensor([5, 6, 7]), 20, use_cache=False, generator=torch.Generator().manual_seed(3), **kw)
    assert len(a) == 20 and a == b
    assert model.training  # put back in its mode
    c = generate(model, [5, 6, 7], 20, generator=torch.Generator().manual_seed(4), **kw)
    assert c != a  # the generator drives the draws
    long = generate(model, [5, 6, 7], 50, generator=torch.Generator().manual_seed(3))  # past max_len = 24
    assert len(long) == 50 and all(0 <= t < 97 for t in long)
    assert generate(model, list(range(30)), 3, use_cache=False, generator=torch.Generator().manual_seed(0))


@torch.no_grad()
def test_top_k_1_is_greedy_decoding():
    model = randomise(GPTLMHeadModel(small_cfg()), scale=0.3).eval()
    seq = [3, 1, 4]
    for _ in range(12):
        seq.append(int(model.logits(torch.tensor([seq]))[0, -1].argmax()))
    for cache in (True, False):
        assert generate(model, [3, 1, 4], 12, top_k=1, use_cache=cache) == seq[3:]
    eos = seq[6]
    assert generate(model, [3, 1, 4], 12, top_k=1, eos_id=eos) == seq[3: seq.index(eos, 3) + 1]


def test_top_p_keeps_the_smallest_nucleus_with_mass_p():
    P = torch.tensor([0.1, 0.5, 0.15, 0.25])  # sorted: 0.5, 0.25, 0.15, 0.1
    cases = {0.3: [1], 0.7: [1, 3], 0.74: [1, 3], 0.8: [1, 2, 3], 0.95: [0, 1, 2, 3], 1.0: [0, 1, 2, 3]}
    for p, kept in cases.items():
        q = filter_logits(P.log(), top_p=p).softmax(-1)
        want = torch.zeros(4)
        want[kept] = P[kept] / P[kept].sum()  # renormalised on the nucleus
        assert torch.allclose(q, want, atol=1e-6), (p, q)
    both = filter_logits(torch.stack([P, P.flip(0)]).log(), top_p=0.7)  # rows filtered independently
    assert (both.isfinite() == torch.tensor([[0, 1, 0, 1], [1, 0, 1, 0]], dtype=torch.bool)).all()
    # top-k first, then the nucleus of what it kept, renormalised: 0.5 / 0.75 = 0.67 of the mass alone
    assert filter_logits(P.log(), top_k=2, top_p=0.6).isfinite().tolist() == [False, True, False, False]
    assert filter_logits(P.log(), top_k=2, top_p=0.7).isfinite().tolist() == [False, True, False, True]
    for bad in (dict(top_p=0.0), dict(top_p=1.5), dict(top_k=0), dict(temperature=0.0)):
        with pytest.raises(ValueError):
            filter_logits(P.log(), **bad)


def test_temperature_raises_probabilities_to_the_power_one_over_t():
    P = torch.tensor([0.6, 0.3, 0.07, 0.03])
    for T in (0.5, 1.0, 2.0):
        want = P ** (1 / T) / (P ** (1 / T)).sum()
        assert torch.allclose(filter_logits(P.log(), temperature=T).softmax(-1), want, atol=1e-6)
    top_k = filter_logits(P.log() + 3.0, top_k=2)  # ties with the k-th are kept, the rest removed
    assert top_k.isfinite().tolist() == [True, True, False, False]


def test_sample_tokens_keeps_its_behaviour_and_gains_top_p_and_eos():
    table = torch.tensor([[0.0, 2.0, 1.0, -1.0]])  # the same next-token logits after any history
    nxt = lambda ids: table[0]  # noqa: E731
    draws = sample_tokens(nxt, [0], 200, top_p=0.5, generator=torch.Generator().manual_seed(0))
    assert set(draws) == {1}  # P(1) = 0.61 >= 0.5 alone
    draws = sample_tokens(nxt, [0], 200, top_k=2, generator=torch.Generator().manual_seed(0))
    assert set(draws) == {1, 2}
    assert sample_tokens(nxt, [0], 10, top_k=1, eos_id=1) == [1]
    assert len(sample_tokens(nxt, [0], 7, banned=[1], top_k=1)) == 7 and 1 not in sample_tokens(nxt, [0], 7,
                                                                                                  banned=[1])


# -- the heads of chapters 10-16 on GPT ---------------------------------------------------------------------------
def test_heads_run_on_gpt_and_learn():
    torch.manual_seed(0)
    cfg = small_cfg(norm="post", activation="gelu")
    x = ids(B=4, T=8)
    keep = torch.arange(8)[None, :] < torch.tensor([8, 5, 6, 3])[:, None]
    x = x.masked_fill(~keep, 0)
    labels = torch.tensor([0, 1, 1, 0])
    for head, batch in ((SequenceClassifier(GPTModel(cfg), 2, dropout=0.0),
                         dict(input_ids=x, attention_mask=keep, labels=labels)),
                        (MultipleChoice(GPTModel(cfg), dropout=0.0),
                         dict(input_ids=x.view(2, 2, 8), attention_mask=keep.view(2, 2, 8), labels=labels[:2]))):
        hist = sh.train.fit(head, [batch] * 15, torch.optim.AdamW(head.parameters(), lr=3e-3), steps=15,
                            progress=False, device="cpu")
        _, losses = hist.series("loss")
        assert losses[-1] < 0.5 * losses[0], (type(head).__name__, losses)

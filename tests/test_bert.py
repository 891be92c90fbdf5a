"""BERT (shoulders.models.bert) against transformers' BertModel / BertForPreTraining, and its own invariants.

Everything is offline: the Hugging Face models are built from a config with random weights, never downloaded.
"""
from __future__ import annotations

import json

import pytest
import torch

import shoulders as sh
from shoulders.config import ConfigError
from shoulders.models.bert import BertConfig, BertForPreTraining, BertModel
from shoulders.text.bert_inputs import IGNORE
from shoulders.models.bert_hf import (config_from_hf, from_pretrained, hf_config, load_hf_state_dict, save_pretrained,
                                      to_hf_state_dict)

transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.usefixtures("one_thread")

ATOL = 1e-5


def small_cfg(**kw) -> BertConfig:
    return BertConfig(**{**dict(vocab_size=97, d_model=32, n_layers=2, n_heads=4, d_ff=64, max_len=24), **kw})


@torch.no_grad()
def randomise(model: torch.nn.Module) -> torch.nn.Module:
    """Every tensor random (biases and LayerNorms too), so a swapped or dropped name cannot pass unseen."""
    g = torch.Generator().manual_seed(1)
    for name, p in model.named_parameters():
        noise = torch.randn(p.shape, generator=g)
        is_gain = "norm" in name.lower() and name.endswith("weight")
        p.copy_(1.0 + 0.2 * noise if is_gain else 0.1 * noise)
    return model


def hf_model(cfg: BertConfig, cls=None, eager: bool = False) -> torch.nn.Module:
    cls = cls or transformers.BertModel
    kwargs = {"attn_implementation": "eager"} if eager else {}
    torch.manual_seed(0)
    return randomise(cls(transformers.BertConfig(**hf_config(cfg), **kwargs))).eval()


def batch(cfg: BertConfig) -> dict[str, torch.Tensor]:
    """Three rows, the last two padded, both segments used."""
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(1, cfg.vocab_size, (3, 11), generator=g)
    lengths = torch.tensor([11, 7, 4])
    keep = torch.arange(11)[None, :] < lengths[:, None]  # (B, T)
    segments = (torch.arange(11)[None, :] >= (lengths[:, None] // 2)).long() * keep
    ids[~keep] = cfg.pad_id
    return {"input_ids": ids, "token_type_ids": segments, "attention_mask": keep}


def hf_inputs(b: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {"input_ids": b["input_ids"], "token_type_ids": b["token_type_ids"],
            "attention_mask": b["attention_mask"].long()}


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


@torch.no_grad()
def test_bert_model_matches_transformers():
    cfg = small_cfg()
    ref = hf_model(cfg)
    ours = BertModel(cfg).eval()
    assert load_hf_state_dict(ours, ref.state_dict()) == ([], [])
    b = batch(cfg)
    want = ref(**hf_inputs(b))
    got = ours(**b)
    keep = b["attention_mask"]
    assert got.hidden.shape == (3, 11, cfg.d_model) and got.pooled.shape == (3, cfg.d_model)
    assert max_diff(got.hidden[keep], want.last_hidden_state[keep]) < ATOL
    assert max_diff(got.pooled, want.pooler_output) < ATOL
    assert got.attentions == []
    # 0/1 masks work like bool ones, and dropping the segments changes the output (they are used)
    assert max_diff(ours(b["input_ids"], b["token_type_ids"], b["attention_mask"].long()).hidden, got.hidden) == 0
    assert max_diff(ours(b["input_ids"], None, b["attention_mask"]).hidden[keep], got.hidden[keep]) > 1e-3


@torch.no_grad()
def test_pretraining_heads_match_transformers():
    cfg = small_cfg()
    ref = hf_model(cfg, transformers.BertForPreTraining)
    ours = BertForPreTraining(cfg).eval()
    load_hf_state_dict(ours, ref.state_dict())
    b = batch(cfg)
    want = ref(**hf_inputs(b))
    mlm, nsp = ours(**b)
    keep = b["attention_mask"]
    assert mlm.shape == (3, 11, cfg.vocab_size) and nsp.shape == (3, 2)
    assert max_diff(mlm[keep], want.prediction_logits[keep]) < ATOL
    assert max_diff(nsp, want.seq_relationship_logits) < ATOL
    # and the losses: HF's total loss is the same sum of MLM and NSP cross-entropies
    labels = torch.full_like(b["input_ids"], IGNORE)
    labels[0, 2:5], labels[1, 1] = b["input_ids"][0, 2:5], b["input_ids"][1, 1]
    nsp_labels = torch.tensor([0, 1, 1])
    out = ours(**b, mlm_labels=labels, nsp_labels=nsp_labels)
    ref_loss = ref(**hf_inputs(b), labels=labels, next_sentence_label=nsp_labels).loss
    assert abs(out["loss"].item() - ref_loss.item()) < ATOL


@torch.no_grad()
def test_attention_weights_match_transformers():
    cfg = small_cfg()
    ref = hf_model(cfg, eager=True)
    ours = BertModel(cfg).eval()
    load_hf_state_dict(ours, ref.state_dict())
    b = batch(cfg)
    want = ref(**hf_inputs(b), output_attentions=True).attentions
    got = ours(**b, need_weights=True).attentions
    assert len(got) == len(want) == cfg.n_layers
    for w_ours, w_ref in zip(got, want):
        assert w_ours.shape == (3, cfg.n_heads, 11, 11)
        assert max_diff(w_ours, w_ref) < ATOL
    assert got[0][2, :, :, 4:].abs().max() == 0  # padded keys get no weight


@torch.no_grad()
def test_round_trip_ours_to_transformers():
    cfg = small_cfg()
    ours = randomise(BertForPreTraining(cfg)).eval()
    ref = transformers.BertForPreTraining(transformers.BertConfig(**hf_config(cfg))).eval()
    state = to_hf_state_dict(ours)
    assert set(state) == set(ref.state_dict())  # exactly HF's names, nothing left over
    ref.load_state_dict(state, strict=True)
    b = batch(cfg)
    mlm, nsp = ours(**b)
    want = ref(**hf_inputs(b))
    keep = b["attention_mask"]
    assert max_diff(mlm[keep], want.prediction_logits[keep]) < ATOL
    assert max_diff(nsp, want.seq_relationship_logits) < ATOL
    # the base model's names have no prefix, like transformers.BertModel's
    base = to_hf_state_dict(ours.bert)
    assert set(base) == set(transformers.BertModel(transformers.BertConfig(**hf_config(cfg))).state_dict())
    # and back: a fresh model loaded from the HF names is the same model
    again = BertForPreTraining(cfg).eval()
    load_hf_state_dict(again, state)
    for (k, v), (k2, v2) in zip(ours.state_dict().items(), again.state_dict().items()):
        assert k == k2 and torch.equal(v, v2), k


@torch.no_grad()
def test_load_accepts_prefixes_and_reports_names():
    cfg = small_cfg()
    ref = hf_model(cfg, transformers.BertForPreTraining)
    full = dict(ref.state_dict())
    full["bert.embeddings.position_ids"] = torch.arange(cfg.max_len)[None]  # old checkpoints carry this buffer
    # a BertModel state dict without prefix into the pre-training model: the heads are missing
    base = {k[len("bert."):]: v for k, v in full.items() if k.startswith("bert.")}
    with pytest.raises(KeyError, match="missing.*cls.seq_relationship.weight"):
        load_hf_state_dict(BertForPreTraining(cfg), base)
    ours = BertForPreTraining(cfg)
    result = load_hf_state_dict(ours, base, strict=False)
    assert "cls.predictions.bias" in result.missing and result.unexpected == []
    assert torch.equal(ours.bert.embeddings.word.weight, full["bert.embeddings.word_embeddings.weight"])
    # the pre-training state dict into a BertModel: the heads are unexpected
    with pytest.raises(KeyError, match="unexpected.*cls.seq_relationship.bias"):
        load_hf_state_dict(BertModel(cfg), full)
    model = BertModel(cfg)
    result = load_hf_state_dict(model, full, strict=False)
    assert result.missing == [] and "cls.predictions.bias" in result.unexpected
    q, k, v = (full[f"bert.encoder.layer.1.attention.self.{n}.weight"] for n in ("query", "key", "value"))
    assert torch.equal(model.encoder.layers[1].self_attn.qkv.weight, torch.cat([q, k, v]))  # rows [W^Q; W^K; W^V]
    with pytest.raises(ValueError, match="shape"):
        load_hf_state_dict(BertModel(small_cfg(vocab_size=50)), full, strict=False)
    # TF-era LayerNorm names (gamma, beta) read as weight, bias
    tf = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
          for k, v in full.items()}
    model = BertForPreTraining(cfg)
    assert load_hf_state_dict(model, tf) == ([], [])
    assert torch.equal(model.bert.encoder.layers[0].norm2.bias, full["bert.encoder.layer.0.output.LayerNorm.bias"])
    # an unknown name is reported too
    with pytest.raises(KeyError, match="unexpected.*encoder.layer.7.output.dense.weight"):
        load_hf_state_dict(BertModel(cfg), {**base, "encoder.layer.7.output.dense.weight": q})


@torch.no_grad()
def test_save_and_load_pretrained_folder(tmp_path):
    cfg = small_cfg(dropout=0.0, attn_dropout=0.05)
    ours = randomise(BertForPreTraining(cfg)).eval()
    save_pretrained(ours, tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["model_type"] == "bert" and config["hidden_size"] == cfg.d_model
    b = batch(cfg)
    keep = b["attention_mask"]
    mlm, nsp = ours(**b)
    again = from_pretrained(tmp_path)
    assert isinstance(again, BertForPreTraining) and again.cfg == cfg and not again.training
    assert again.mlm.decoder.weight is again.bert.embeddings.word.weight
    mlm2, nsp2 = again(**b)
    assert torch.equal(mlm, mlm2) and torch.equal(nsp, nsp2)
    ref = transformers.BertForPreTraining.from_pretrained(tmp_path).eval()
    want = ref(**hf_inputs(b))
    assert max_diff(mlm[keep], want.prediction_logits[keep]) < ATOL
    assert max_diff(nsp, want.seq_relationship_logits) < ATOL
    hidden = ours.bert(**b).hidden
    base = transformers.BertModel.from_pretrained(tmp_path).eval()
    assert max_diff(hidden[keep], base(**hf_inputs(b)).last_hidden_state[keep]) < ATOL
    # a BertModel folder written by transformers (pytorch_model.bin, no prefix) reads back as our BertModel
    hf_base = hf_model(cfg)
    folder = tmp_path / "hf"
    hf_base.save_pretrained(folder, safe_serialization=False) if _has_safe_flag() else hf_base.save_pretrained(folder)
    loaded = from_pretrained(folder)
    assert isinstance(loaded, BertModel)
    assert max_diff(loaded(**b).hidden[keep], hf_base(**hf_inputs(b)).last_hidden_state[keep]) < ATOL
    assert isinstance(from_pretrained(tmp_path, pretraining=False), BertModel)


def _has_safe_flag() -> bool:
    import inspect

    return "safe_serialization" in inspect.signature(transformers.PreTrainedModel.save_pretrained).parameters


def test_hf_config_round_trip_and_errors():
    cfg = small_cfg(eps=1e-7, pad_id=3, dropout=0.2)
    assert config_from_hf(hf_config(cfg)) == cfg
    assert config_from_hf(transformers.BertConfig(**hf_config(cfg)).to_dict()) == cfg
    with pytest.raises(ConfigError, match="hidden_act='relu'"):
        config_from_hf({**hf_config(cfg), "hidden_act": "relu"})
    with pytest.raises(ConfigError, match="position_embedding_type='relative_key'"):
        config_from_hf({**hf_config(cfg), "position_embedding_type": "relative_key"})
    with pytest.raises(ConfigError, match="model_type"):
        config_from_hf({**hf_config(cfg), "model_type": "roberta"})
    with pytest.raises(ConfigError, match="multiple of n_heads"):
        config_from_hf({**hf_config(cfg), "num_attention_heads": 5})
    with pytest.raises(ConfigError, match="norm_first=True: Hugging Face's BERT is post-LN"):
        hf_config(small_cfg(norm_first=True))


@torch.no_grad()
def test_pre_ln_bert_has_pre_ln_layers_and_a_final_layernorm():
    """The lever of chapter 14b (Xiong et al. 2020): every layer pre-LN, one LayerNorm over the top layer's output,
    which is the only parameter a post-LN BERT lacks."""
    post, pre = BertModel(small_cfg()).eval(), BertModel(small_cfg(norm_first=True)).eval()
    assert all(layer.cfg.norm_first for layer in pre.encoder.layers)
    assert not any(layer.cfg.norm_first for layer in post.encoder.layers)
    assert set(pre.state_dict()) - set(post.state_dict()) == {"encoder.norm.weight", "encoder.norm.bias"}
    assert set(post.state_dict()) <= set(pre.state_dict())
    for p in post.parameters():  # weights large enough for the sub-layers to matter (at init both are ~LN(E))
        p.normal_(0.0, 0.3)
    pre.load_state_dict({**pre.state_dict(), **post.state_dict()})  # same weights, another layer: other outputs
    b = small_cfg().example_batch(2)
    inputs = {k: b[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
    assert not torch.allclose(pre(**inputs).hidden, post(**inputs).hidden, atol=1e-3)


def test_mlm_decoder_is_the_input_embedding():
    model = BertForPreTraining(small_cfg())
    assert model.mlm.decoder.weight is model.bert.embeddings.word.weight
    assert model.num_parameters() == sum(p.numel() for p in set(model.parameters()))
    assert model.mlm.decoder.bias is not None and model.mlm.decoder.bias.shape == (97,)


def test_initialisation_follows_bert():
    cfg = small_cfg(d_model=64, d_ff=256, init_std=0.05, vocab_size=500)
    model = BertForPreTraining(cfg)
    w = model.bert.encoder.layers[0].ffn.w1.weight
    assert abs(w.std().item() - 0.05) < 0.005 and abs(w.mean().item()) < 0.005
    assert abs(model.mlm.dense.weight.std().item() - 0.05) < 0.005
    assert abs(model.bert.embeddings.word.weight[1:].std().item() - 0.05) < 0.005
    assert model.bert.embeddings.word.weight[cfg.pad_id].abs().max() == 0
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            assert p.abs().max() == 0, name
        if "norm" in name and name.endswith("weight"):
            assert torch.equal(p, torch.ones_like(p)), name


def labelled(cfg: BertConfig, model: BertForPreTraining) -> tuple[dict, torch.Tensor, float]:
    """Four positions to predict: three labelled with the model's own argmax, one not -> accuracy 3/4."""
    b = batch(cfg)
    with torch.no_grad():
        mlm, _ = model.eval()(**b)
    pred = mlm.argmax(-1)  # (B, T)
    labels = torch.full_like(b["input_ids"], IGNORE)
    for r, t in ((0, 1), (0, 5), (1, 2)):
        labels[r, t] = pred[r, t]
    labels[2, 3] = (pred[2, 3] + 1) % cfg.vocab_size
    return b, labels, 0.75


def test_loss_dict_and_masked_accuracy():
    cfg = small_cfg()
    model = BertForPreTraining(cfg)
    randomise(model)
    b, labels, acc = labelled(cfg, model)
    out = model(**b, mlm_labels=labels, nsp_labels=torch.tensor([0, 1, 0]))
    assert list(out) == ["loss", "mlm_loss", "mlm_acc", "nsp_loss", "nsp_acc"]
    assert out["mlm_acc"].item() == pytest.approx(acc)  # over the 4 chosen positions, not all 33
    assert out["loss"].item() == pytest.approx(out["mlm_loss"].item() + out["nsp_loss"].item(), rel=1e-6)
    mlm, nsp = model(**b)
    want = torch.nn.functional.cross_entropy(mlm.reshape(-1, cfg.vocab_size), labels.reshape(-1))
    assert out["mlm_loss"].item() == pytest.approx(want.item(), rel=1e-5)
    assert out["nsp_acc"].item() == pytest.approx((nsp.argmax(-1) == torch.tensor([0, 1, 0])).float().mean().item())
    # only one kind of label: only its entries; nothing to predict: a zero loss, not NaN
    assert set(model(**b, mlm_labels=labels)) == {"loss", "mlm_loss", "mlm_acc"}
    none = model(**b, mlm_labels=torch.full_like(labels, IGNORE))
    assert none["loss"].item() == 0.0 and none["loss"].requires_grad


def test_masked_only_projection_equals_full_projection():
    cfg = small_cfg()
    model = randomise(BertForPreTraining(cfg)).eval()
    b, labels, _ = labelled(cfg, model)
    fast = model(**b, mlm_labels=labels, nsp_labels=torch.tensor([1, 1, 0]))
    slow = model(**b, mlm_labels=labels, nsp_labels=torch.tensor([1, 1, 0]), masked_only=False)
    for key in fast:
        assert fast[key].item() == pytest.approx(slow[key].item(), rel=1e-6, abs=1e-7), key
    fast["loss"].backward()
    g_fast = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    slow["loss"].backward()
    for n, p in model.named_parameters():
        assert torch.allclose(g_fast[n], p.grad, atol=1e-6), n
    with torch.no_grad():
        hidden = model.bert(**b).hidden
        chosen = labels != IGNORE
        assert torch.allclose(model.mlm_logits(hidden[chosen]), model.mlm_logits(hidden)[chosen], atol=1e-6)


@pytest.mark.parametrize("norm_first", [False, True])
def test_gradient_reaches_every_parameter(norm_first):
    cfg = small_cfg(norm_first=norm_first)
    model = BertForPreTraining(cfg).train()
    b, labels, _ = labelled(cfg, model)
    model.train()
    model(**b, mlm_labels=labels, nsp_labels=torch.tensor([0, 1, 1]))["loss"].backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


@torch.no_grad()
def test_padding_does_not_change_real_tokens():
    cfg = small_cfg()
    model = randomise(BertModel(cfg)).eval()
    b = batch(cfg)
    together = model(**b)
    for row, n in ((1, 7), (2, 4)):
        alone = model(b["input_ids"][row:row + 1, :n], b["token_type_ids"][row:row + 1, :n])
        assert max_diff(alone.hidden[0], together.hidden[row, :n]) < ATOL
        assert max_diff(alone.pooled[0], together.pooled[row]) < ATOL
    # without the mask the padding would be attended to, and the vectors would differ
    unmasked = model(b["input_ids"], b["token_type_ids"])
    assert max_diff(unmasked.hidden[2, :4], together.hidden[2, :4]) > 1e-3


def test_config_sizes_presets_and_errors():
    assert BertConfig.SIZES == {"tiny": (2, 128, 2), "mini": (4, 256, 4), "small": (4, 512, 8),
                                "medium": (8, 512, 8)}
    mini = BertConfig.named("mini")
    assert (mini.n_layers, mini.d_model, mini.n_heads, mini.d_ff) == (4, 256, 4, 1024)
    medium = BertConfig.named("medium", vocab_size=30522, max_len=128)
    assert (medium.n_layers, medium.d_model, medium.d_ff, medium.vocab_size) == (8, 512, 2048, 30522)
    smoke, cpu, full = (BertConfig.preset(s) for s in sh.SCALES)
    assert smoke == BertConfig.named("tiny", max_len=128) and smoke.scale == "smoke"
    assert cpu == BertConfig.named("mini", max_len=128) and full == BertConfig.named("mini", max_len=512)
    block = full.block()
    assert (block.activation, block.norm_first, block.causal, block.eps) == ("gelu", False, False, 1e-12)
    assert block.attn_dropout == full.attn_dropout == 0.1
    with pytest.raises(ConfigError, match="unknown BERT size 'huge'"):
        BertConfig.named("huge")
    with pytest.raises(ConfigError, match="no field"):
        BertConfig.named("tiny", hidden=3)
    with pytest.raises(ConfigError, match="d_model=100 must be a positive multiple of n_heads=3"):
        BertConfig(d_model=100, n_heads=3)
    with pytest.raises(ConfigError, match="pad_id"):
        BertConfig(vocab_size=10, pad_id=10)
    with pytest.raises(ConfigError, match="sizes must be positive"):
        BertConfig(n_layers=0)
    with pytest.raises(ConfigError, match="dropout"):
        BertConfig(attn_dropout=1.0)


def test_input_errors():
    model = BertModel(small_cfg())
    with pytest.raises(ValueError, match="exceed max_len=24"):
        model(torch.ones(1, 25, dtype=torch.long))
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        model(torch.ones(25, dtype=torch.long))
    with pytest.raises(ValueError, match="attention_mask"):
        model(torch.ones(2, 5, dtype=torch.long), attention_mask=torch.ones(2, 4))


def test_example_batch_trains_with_fit():
    cfg = BertConfig.preset("smoke", vocab_size=300)
    sh.seed(0)
    model = cfg.build()
    hist = sh.train.fit(model, [cfg.example_batch()], torch.optim.AdamW(model.parameters(), lr=1e-3), steps=3,
                        progress=False, device="cpu")
    for key in ("loss", "mlm_loss", "nsp_loss", "mlm_acc", "nsp_acc"):
        assert hist.last(key) == hist.last(key), key

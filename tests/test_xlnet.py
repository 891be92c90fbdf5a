"""XLNet (shoulders.models.xlnet) against transformers' XLNetLMHeadModel, the permutation masks, the two-stream
property, the input layout and the pre-training recipe.

Everything is offline: the Hugging Face models are built from a config with random weights, never downloaded.
"""
from __future__ import annotations

import dataclasses
import random
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

import shoulders as sh
from shoulders.config import ConfigError
from shoulders.models.xlnet import XLNetConfig, XLNetLMHeadModel, XLNetModel, permutation_masks, sample_permutation
from shoulders.models.xlnet_hf import (config_from_hf, from_pretrained, hf_config, load_hf_state_dict, save_pretrained,
                                       to_hf_state_dict)
from shoulders.recipes.bert import BertPretrainingConfig
from shoulders.recipes.xlnet import (XLNetPretrainingBatches, XLNetPretrainingConfig, evaluate_plm, fixed_plm_batches,
                                     unigram_plm_baseline)
from shoulders.text.bert_inputs import collate
from shoulders.text.xlnet_inputs import pack_xlnet

pytestmark = pytest.mark.usefixtures("one_thread")

ATOL = 1e-5
V = 50
PAD, CLS, SEP = 0, 2, 3


def small_cfg(**kw) -> XLNetConfig:
    base = dict(vocab_size=V, d_model=32, n_layers=2, n_heads=4, d_ff=64, dropout=0.0, mem_len=10)
    return XLNetConfig(**{**base, **kw})


@torch.no_grad()
def randomise(model: torch.nn.Module, scale: float = 0.1) -> torch.nn.Module:
    """Every tensor random (biases, r_w/r_r/r_s biases, segment vectors, LayerNorms), so a swapped, untransposed or
    dropped name cannot pass."""
    g = torch.Generator().manual_seed(1)
    for name, p in model.named_parameters():
        noise = torch.randn(p.shape, generator=g)
        p.copy_(1.0 + 0.2 * noise if "norm" in name and name.endswith("weight") else scale * noise)
    return model


def hf_lm(cfg: XLNetConfig) -> torch.nn.Module:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    return randomise(transformers.XLNetLMHeadModel(transformers.XLNetConfig(**hf_config(cfg)))).eval()


def inputs(B: int = 3, T: int = 7, seed: int = 2) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """ids, two segments, and a right-padded attention mask (row 0 has two pads)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, V, (B, T), generator=g)
    segments = (torch.arange(T) >= T // 2).long().expand(B, T).clone()
    mask = torch.ones(B, T, dtype=torch.bool)
    mask[0, -2:] = False
    return ids, segments, mask


def perm_batch(B: int, T: int, n_predict: int, seed: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    masks = [permutation_masks(sample_permutation(T, g), n_predict) for _ in range(B)]
    return torch.stack([p for p, _ in masks]), torch.stack([t for _, t in masks])


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


def query_logits(model: XLNetLMHeadModel, *args, **kw) -> torch.Tensor:
    out = model.transformer(*args, **kw)
    return F.linear(out.query, model.transformer.word_embedding.weight, model.lm_bias)


# -- Hugging Face interop -----------------------------------------------------------------------------------------
@torch.no_grad()
def test_transformers_weights_give_the_same_outputs():
    cfg = small_cfg()
    ref = hf_lm(cfg)
    ours = XLNetLMHeadModel(cfg).eval()
    assert load_hf_state_dict(ours, ref.state_dict()) == ([], [])
    ids, segments, mask = inputs()
    B, T = ids.shape
    # the content stream, no permutation: token types and a padded mask
    r = ref.transformer(input_ids=ids, token_type_ids=segments, attention_mask=mask.float(), use_mems=True)
    o = ours.transformer(ids, segments, mask, use_mems=True)
    assert max_diff(o.hidden, r.last_hidden_state) < ATOL
    for theirs, mine in zip(r.mems, o.mems):  # (M, B, d) there, (B, M, d) here; all 7 kept (mem_len 10)
        assert mine.shape == (B, T, cfg.d_model)
        assert max_diff(theirs.transpose(0, 1), mine) < ATOL
    # the query stream of a second segment, with the first one's memory
    ids2 = torch.randint(5, V, (B, T), generator=torch.Generator().manual_seed(5))
    perm, mapping = perm_batch(B, T, 3)
    r2 = ref.transformer(input_ids=ids2, token_type_ids=segments, attention_mask=mask.float(), mems=r.mems,
                         perm_mask=perm.float(), target_mapping=mapping, use_mems=True)
    o2 = ours.transformer(ids2, segments, mask, perm, mapping, mems=o.mems, use_mems=True)
    assert o2.query.shape == (B, 3, cfg.d_model)
    assert max_diff(o2.query, r2.last_hidden_state) < ATOL
    for theirs, mine in zip(r2.mems, o2.mems):  # 14 states, the last 10 kept
        assert mine.shape == (B, cfg.mem_len, cfg.d_model)
        assert max_diff(theirs.transpose(0, 1), mine) < ATOL
    no_memory = ours.transformer(ids2, segments, mask, perm, mapping)
    assert max_diff(no_memory.query, o2.query) > 1e-3  # the memory was used
    # the LM head: logits and loss at the targets
    labels = ids2[torch.arange(B)[:, None], mapping.argmax(-1)]
    r3 = ref(input_ids=ids2, token_type_ids=segments, attention_mask=mask.float(), perm_mask=perm.float(),
             target_mapping=mapping, labels=labels)
    assert max_diff(query_logits(ours, ids2, segments, mask, perm, mapping), r3.logits) < ATOL
    loss = ours(ids2, perm, mapping, labels, segments, mask)["loss"]
    assert abs(loss.item() - r3.loss.item()) < ATOL
    # the bare model against XLNetModel (no "transformer." prefix)
    bare = XLNetModel(cfg).eval()
    load_hf_state_dict(bare, ref.transformer.state_dict())
    assert max_diff(bare(ids, segments, mask).hidden, r.last_hidden_state) < ATOL


@torch.no_grad()
def test_ours_exported_to_transformers_gives_the_same_outputs(tmp_path):
    transformers = pytest.importorskip("transformers")
    cfg = small_cfg(mem_len=0)
    torch.manual_seed(0)
    ours = randomise(XLNetLMHeadModel(cfg)).eval()
    ref = transformers.XLNetLMHeadModel(transformers.XLNetConfig(**hf_config(cfg))).eval()
    ref.load_state_dict(to_hf_state_dict(ours), strict=True)
    ids, segments, mask = inputs()
    perm, mapping = perm_batch(3, 7, 2)

    def same(model) -> None:
        r = model(input_ids=ids, token_type_ids=segments, attention_mask=mask.float(), perm_mask=perm.float(),
                  target_mapping=mapping)
        assert max_diff(query_logits(ours, ids, segments, mask, perm, mapping), r.logits) < ATOL
        h = model.transformer(input_ids=ids, token_type_ids=segments, attention_mask=mask.float()).last_hidden_state
        assert max_diff(ours.transformer(ids, segments, mask).hidden, h) < ATOL

    same(ref)
    folder = save_pretrained(ours, tmp_path / "xlnet")
    same(transformers.XLNetLMHeadModel.from_pretrained(folder).eval())
    back = from_pretrained(folder)
    assert not back.training and back.cfg == cfg
    for (name, a), (_, b) in zip(ours.state_dict().items(), back.state_dict().items()):
        assert torch.equal(a, b), name


def test_config_round_trip_and_what_it_refuses():
    for cfg in (small_cfg(), small_cfg(mem_len=0, activation="relu", clamp_len=5, eps=1e-5, pad_id=1)):
        assert config_from_hf(hf_config(cfg)) == cfg
    good = hf_config(small_cfg())
    for key, value in (("untie_r", False), ("attn_type", "uni"), ("bi_data", True), ("same_length", True),
                       ("ff_activation", "swish"), ("model_type", "bert")):
        with pytest.raises(ConfigError):
            config_from_hf({**good, key: value})
    with pytest.raises(ConfigError):
        hf_config(small_cfg(activation="gelu_tanh"))


# -- permutation masks ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed,T,n_predict", [(0, 6, 3), (1, 9, 1), (2, 9, 4), (3, 5, 5)])
def test_permutation_masks_follow_the_order(seed, T, n_predict):
    order = torch.randperm(T, generator=torch.Generator().manual_seed(seed))
    perm, mapping = permutation_masks(order, n_predict)
    rank = {int(p): k for k, p in enumerate(order)}  # place of each position in the order
    c = T - n_predict
    targets = [int(p) for p in order[c:]]
    context = [int(p) for p in order[:c]]
    assert perm.shape == (T, T) and perm.dtype == torch.bool
    assert torch.equal(mapping, F.one_hot(torch.tensor(targets), T).float())  # one-hot rows, in the order
    for i in targets:
        for j in targets:
            assert perm[i, j].item() == (not rank[j] < rank[i]), (i, j)  # visible iff strictly earlier
    for j in context:
        assert not perm[:, j].any()  # everyone sees the context
    for i in context:
        assert perm[i, targets].all()  # the context sees no target


def test_permutation_masks_small_example():
    perm, mapping = permutation_masks(torch.tensor([2, 0, 3, 1]), 2)  # context 2, 0; targets 3 then 1
    want = torch.tensor([[0, 1, 0, 1],
                         [0, 1, 0, 0],
                         [0, 1, 0, 1],
                         [0, 1, 0, 1]], dtype=torch.bool)
    assert torch.equal(perm, want)
    assert torch.equal(mapping.argmax(-1), torch.tensor([3, 1]))


def test_permutation_masks_predict_only_maskable_positions():
    T = 10
    maskable = torch.ones(T, dtype=torch.bool)
    maskable[[0, 4, 9]] = False
    for seed in range(5):
        order = torch.randperm(T, generator=torch.Generator().manual_seed(seed))
        for n in (1, 3, 7):
            perm, mapping = permutation_masks(order, n, maskable)
            targets = mapping.argmax(-1).tolist()
            assert targets == [int(p) for p in order if maskable[p]][-n:]
            assert not perm[:, ~maskable].any()  # never a target: context, seen by all
    with pytest.raises(ValueError):
        permutation_masks(torch.randperm(T), 8, maskable)  # only 7 may be predicted
    for n in (0, T + 1):
        with pytest.raises(ValueError):
            permutation_masks(torch.randperm(T), n)


# -- two streams ----------------------------------------------------------------------------------------------------
@torch.no_grad()
def test_query_stream_sees_what_comes_before_in_the_order_never_itself():
    torch.manual_seed(0)
    model = randomise(XLNetModel(small_cfg()), scale=0.2).eval()
    T = 8
    order = torch.tensor([5, 1, 7, 0, 3, 6, 2, 4])  # context 5, 1, 7, 0, 3; targets 6, 2, 4
    perm, mapping = permutation_masks(order, 3)
    ids = torch.randint(5, V, (1, T), generator=torch.Generator().manual_seed(4))
    segments = (torch.arange(T) >= 4).long()[None]

    def run(change: int | None) -> tuple[torch.Tensor, torch.Tensor]:
        x = ids.clone()
        if change is not None:
            x[0, change] = (x[0, change] + 7) % (V - 5) + 5
        out = model(x, segments, None, perm[None], mapping[None])
        return out.query[0], out.hidden[0]  # (3, d), (T, d)

    g, h = run(None)

    def moved(a: torch.Tensor, b: torch.Tensor) -> bool:
        return max_diff(a, b) > 1e-4

    def still(a: torch.Tensor, b: torch.Tensor) -> bool:
        return max_diff(a, b) < 1e-6

    # the second target (position 2): its own token hidden, the context and the first target (6) seen, 4 not
    g2, h2 = run(2)
    assert still(g2[1], g[1]) and still(g2[0], g[0])
    assert moved(g2[2], g[2])  # the later target sees it
    assert moved(h2[2], h[2])  # the content stream sees its own token
    for earlier in (5, 0, 6):
        assert moved(run(earlier)[0][1], g[1]), earlier
    g4, _ = run(4)  # the last target: seen by no query
    assert still(g4, g)
    g6, _ = run(6)  # the first target: seen by the later ones only
    assert still(g6[0], g[0]) and moved(g6[1], g[1]) and moved(g6[2], g[2])
    # the content stream's attention: a target on itself and what comes before it, never on a later target
    w = model(ids, segments, None, perm[None], mapping[None], need_weights=True).weights[0][0]  # (H, T, T)
    assert (w[:, 2, 2] > 0).all() and (w[:, 2, 6] > 0).all() and (w[:, 2, 4] == 0).all()
    assert (w[:, 5][:, [6, 2, 4]] == 0).all() and (w[:, 5, 5] > 0).all()  # context: itself, no target


@torch.no_grad()
def test_pooled_is_the_last_real_token_the_cls():
    features = [dict(zip(("input_ids", "token_type_ids"), pack_xlnet(a, b, CLS, SEP, 32)))
                for a, b in (([7, 8, 9], [10, 11]), ([7] * 6, [12] * 5), ([13], None))]
    batch = collate(features, PAD)
    model = XLNetModel(small_cfg()).eval()
    out = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
    last = torch.tensor([len(f["input_ids"]) - 1 for f in features])
    assert torch.equal(batch["input_ids"][torch.arange(3), last], torch.full((3,), CLS))
    assert torch.equal(out.pooled, out.hidden[torch.arange(3), last])
    assert torch.equal(model(batch["input_ids"]).pooled, model(batch["input_ids"]).hidden[:, -1])


def test_pack_xlnet_layout():
    assert pack_xlnet([10, 11, 12], [20, 21], CLS, SEP, 20) == ([10, 11, 12, SEP, 20, 21, SEP, CLS],
                                                                [0, 0, 0, 0, 1, 1, 1, 2])
    assert pack_xlnet([10, 11, 12], None, CLS, SEP, 20) == ([10, 11, 12, SEP, CLS], [0, 0, 0, 0, 2])
    ids, segments = pack_xlnet(list(range(10, 20)), [20, 21, 22], CLS, SEP, 9)  # the longer text loses tokens
    assert ids == [10, 11, 12, SEP, 20, 21, 22, SEP, CLS] and segments == [0, 0, 0, 0, 1, 1, 1, 1, 2]
    assert len(pack_xlnet(list(range(40)), list(range(40)), CLS, SEP, 16)[0]) == 16


# -- pre-training recipe --------------------------------------------------------------------------------------------
TOK = SimpleNamespace(pad_id=PAD, cls_id=CLS, sep_id=SEP)


def recipe_cfg(**kw) -> XLNetPretrainingConfig:
    fields = {"max_len": 48, "batch_size": 4, "eval_pairs": 8, "predict_k": 6, **kw}
    return XLNetPretrainingConfig.preset("smoke", **fields)


def pair_features(data: XLNetPretrainingBatches, seed: int = 0) -> list[dict]:
    g = random.Random(seed)
    lengths = [(20, 22), (5, 6), (12, 3), (30, 30)]
    return [dict(zip(("input_ids", "token_type_ids"),
                     data.pack([g.randrange(5, V) for _ in range(a)], [g.randrange(5, V) for _ in range(b)], 48)))
            for a, b in lengths]


def test_pretraining_batch_targets_text_tokens_only():
    cfg = recipe_cfg()
    data = XLNetPretrainingBatches([], TOK, cfg)
    features = pair_features(data)
    b = data.batch(features, torch.Generator().manual_seed(0))
    ids, mask = b["input_ids"], b["attention_mask"]
    B, T = ids.shape
    P = b["target_ids"].shape[1]
    assert b["perm_mask"].shape == (B, T, T) and b["target_mapping"].shape == (B, P, T)
    maskable = mask & (ids != CLS) & (ids != SEP)
    for r in range(B):
        n = int(b["target_weights"][r].sum())
        assert n == max(1, int(maskable[r].sum()) // cfg.predict_k)  # the last 1/K of the text pieces
        pos = b["target_mapping"][r, :n].argmax(-1)
        assert maskable[r, pos].all()  # never [SEP], [CLS] or padding
        assert len(set(pos.tolist())) == n
        assert torch.equal(b["target_ids"][r, :n], ids[r, pos])
        assert not b["target_weights"][r, n:].any() and not b["target_mapping"][r, n:].any()
        assert not b["perm_mask"][r][:, ~maskable[r]].any()  # [SEP], [CLS], padding: context, never hidden
    assert b["target_weights"].sum(1).tolist() == [7.0, 1.0, 2.0, 7.0]
    assert b["target_weights"].min() == 0.0  # some padded target slots


def test_xlnet_learns_a_fixed_batch():
    cfg = recipe_cfg()
    data = XLNetPretrainingBatches([], TOK, cfg)
    batch = data.batch(pair_features(data), torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    model = XLNetLMHeadModel(small_cfg(dropout=0.1))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(50):
        out = model(**batch)
        opt.zero_grad()
        out["loss"].backward()
        opt.step()
        losses.append(out["loss"].item())
    assert sum(losses[-5:]) / 5 < losses[0] - 1.0  # from ~ln 50 = 3.9 (measured: ~1.9 after 50 steps)
    assert 0.0 <= out["acc"].item() <= 1.0


def test_fixed_plm_batches_and_the_unigram_baseline():
    g = random.Random(0)
    documents = [[[g.choice([5, 5, 5, 6, 7, 8, 9, 10]) for _ in range(g.randrange(4, 9))] for _ in range(8)]
                 for _ in range(4)]
    cfg = recipe_cfg(max_len=24, batch_size=3, eval_pairs=7)
    batches = fixed_plm_batches(documents, TOK, cfg)
    again = fixed_plm_batches(documents, TOK, cfg)
    assert all(torch.equal(a[k], b[k]) for a, b in zip(batches, again) for k in a)  # fixed orders
    assert sum(len(b["input_ids"]) for b in batches) == 7
    base = unigram_plm_baseline(documents, batches)
    targets = torch.cat([b["target_ids"][b["target_weights"] > 0] for b in batches])
    assert 0.0 <= base["plm_acc"] <= 1.0 and base["plm_acc"] == pytest.approx((targets == 5).float().mean().item())
    assert base["plm_loss"] > 0.0
    torch.manual_seed(0)
    metrics = evaluate_plm(XLNetLMHeadModel(small_cfg()), batches)
    assert 0.0 <= metrics["plm_acc"] <= 1.0 and metrics["plm_loss"] > 0.0


@pytest.mark.parametrize("scale", sh.SCALES)
def test_pretraining_presets_validate_and_match_bert(scale):
    cfg = XLNetPretrainingConfig.preset(scale)
    cfg.validate()
    cfg.model_config(cfg.vocab_size).validate()
    bert = dataclasses.asdict(BertPretrainingConfig.preset(scale))
    mine = dataclasses.asdict(cfg)
    assert mine.pop("predict_k") >= 2
    if scale == "cpu":  # 11,000 XLNet steps cost about BERT's 16,000 (an XLNet step: 1.27x); warm-up stays 10%
        assert (mine.pop("steps"), mine.pop("warmup")) == (11_000, 1_100)
        assert (bert.pop("steps"), bert.pop("warmup")) == (16_000, 1_600)
    assert mine == bert  # the same run otherwise, field for field
    with pytest.raises(ConfigError):
        XLNetPretrainingConfig.preset(scale, predict_k=1)

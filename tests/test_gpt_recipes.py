"""Chapter 13's recipes: GPT's pre-training batches, sliding-window perplexity, the input transformations, the
auxiliary LM loss (L3 = L2 + λ L1), layer transfer and zero-shot scoring -- each checked against a closed form or
a direct computation."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from shoulders.config import ConfigError
from shoulders.evaluate import linear_probe
from shoulders.evaluate.perplexity import perplexity, sliding_window_nll
from shoulders.heads import MultipleChoice, SequenceClassifier
from shoulders.models.gpt import GPTConfig, GPTLMHeadModel
from shoulders.recipes import gpt as gpt_recipe
from shoulders.recipes import gpt_transfer
from shoulders.recipes.finetune import FeatureBatches
from shoulders.text import gpt_inputs
from shoulders.text.bert_inputs import collate
from shoulders.text.bpe import ByteLevelBPE

TEXT = [" the cat sat on the mat .\n", " the dog sat on the log .\n", " a cat and a dog are not the same .\n"] * 20


@pytest.fixture(scope="module")
def tok() -> ByteLevelBPE:
    return ByteLevelBPE.train(TEXT, vocab_size=300, special_tokens=gpt_inputs.SPECIALS)


def tiny(vocab_size: int = 300, norm: str = "pre", layers: int = 2) -> GPTLMHeadModel:
    torch.manual_seed(0)
    return GPTLMHeadModel(GPTConfig(vocab_size=vocab_size, d_model=32, n_layers=layers, n_heads=2, d_ff=64,
                                    max_len=16, norm=norm, dropout=0.0, attn_dropout=0.0)).eval()


# ------------------------------------------------------------------------------------------------ pre-training data
def test_chunk_batches_cover_the_stream_in_windows_of_t_plus_one() -> None:
    ids = torch.arange(1000)
    batches = gpt_recipe.ChunkBatches(ids, T=8, batch_size=4)
    torch.manual_seed(0)
    got = list(batches)
    assert len(got) == len(batches) > 0
    starts = set()
    for x, y in got:
        assert x.shape == y.shape == (4, 8)
        assert torch.equal(y[:, :-1], x[:, 1:])  # y is x shifted by one
        assert torch.equal(y[:, -1], x[:, -1] + 1)  # consecutive tokens of the stream
        starts.update(x[:, 0].tolist())
    offset = min(starts) % 8
    assert all(s % 8 == offset for s in starts)  # one offset per pass, windows T apart
    assert len(starts) == len(got) * 4  # no window twice


def test_chunk_batches_refuse_a_stream_too_short() -> None:
    with pytest.raises(ValueError, match="too short"):
        gpt_recipe.ChunkBatches(torch.arange(20), T=8, batch_size=4)


# ------------------------------------------------------------------------------------------------- perplexity
def test_sliding_window_with_stride_one_is_the_exact_left_to_right_likelihood() -> None:
    """When the text fits in the window, every target scored with its full history: compare with one pass."""
    model = tiny()
    ids = torch.randint(0, 300, (12,), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = model.logits(ids[None, :-1]).log_softmax(-1)[0].gather(-1, ids[1:, None]).sum()
    for stride in (1, 3, 8, 16):
        nll, n = sliding_window_nll(model, ids, window=16, stride=stride)
        assert n == 11
        assert nll == pytest.approx(-float(full), rel=1e-5)


@torch.no_grad()
def test_sliding_window_scores_each_target_once_with_enough_context() -> None:
    model = tiny()
    ids = torch.randint(0, 300, (50,), generator=torch.Generator().manual_seed(2))
    window, stride = 16, 4
    expected = 0.0
    for t in range(1, 50):  # target ids[t] with the context the windows give it
        start = 0 if t <= window else ((t - 1 - window) // stride + 1) * stride
        ctx = ids[start:t]
        assert len(ctx) >= min(t, window - stride)
        expected -= float(model.logits(ctx[None])[0, -1].log_softmax(-1)[ids[t]])
    nll, n = sliding_window_nll(model, ids, window=window, stride=stride, batch_size=3)
    assert n == 49 and nll == pytest.approx(expected, rel=1e-5)


def test_disjoint_windows_agree_with_the_books_perplexity() -> None:
    model = tiny()
    ids = torch.randint(0, 300, (16 * 3 + 1,), generator=torch.Generator().manual_seed(3))
    nll, n = sliding_window_nll(model, ids, window=16, stride=16)
    x, y = ids[:-1].view(3, 16), ids[1:].view(3, 16)
    assert math.exp(nll / n) == pytest.approx(perplexity(model, [(x, y)]), rel=1e-5)


def test_sliding_window_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="stride"):
        sliding_window_nll(tiny(), torch.arange(10), window=4, stride=5)
    with pytest.raises(ValueError, match="two ids"):
        sliding_window_nll(tiny(), torch.arange(1), window=4)


def test_per_word_perplexity_is_the_same_likelihood_over_words() -> None:
    model = tiny()
    ids = torch.randint(0, 300, (30,), generator=torch.Generator().manual_seed(4))
    res = gpt_recipe.perplexity_per_word(model, ids, words=20)
    assert res["ppl_word"] == pytest.approx(res["ppl_token"] ** (29 / 20), rel=1e-6)
    assert res["tokens_per_word"] == pytest.approx(29 / 20)


def test_wikitext_lines_text_counts_words_like_the_word_level_chapters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpt_recipe, "wikitext2", lambda split, eos=None: [["a", "b"], [], ["c"]])
    text, words = gpt_recipe.wikitext_lines_text("valid")
    assert text == " a b\n\n c\n" and words == 3 + 3  # every token plus one <eos> per line


# ----------------------------------------------------------------------------------------- input transformations
def test_input_transformations_follow_figure_1(tok: ByteLevelBPE) -> None:
    s, d, e = (tok.token_to_id(t) for t in (gpt_inputs.START, gpt_inputs.DELIM, gpt_inputs.EXTRACT))
    one = gpt_inputs.classification_features(tok, [" the cat"], None, [1], max_len=32)[0]
    assert one["input_ids"] == [s, *tok.encode(" the cat"), e] and one["labels"] == 1
    assert one["token_type_ids"] == [0] * len(one["input_ids"])
    pair = gpt_inputs.classification_features(tok, [" the cat"], [" a dog"], [0], max_len=32)[0]
    assert pair["input_ids"] == [s, *tok.encode(" the cat"), d, *tok.encode(" a dog"), e]
    cut = gpt_inputs.classification_features(tok, [" the cat sat on the mat ."] * 1, None, None, max_len=5)[0]
    assert len(cut["input_ids"]) == 5 and cut["input_ids"][-1] == e and "labels" not in cut
    mc = gpt_inputs.choice_features(tok, [" the cat"], [[" sat", " is a dog"]], [1], max_len=32)[0]
    assert [c["input_ids"] for c in mc["choices"]] == [[s, *tok.encode(" the cat"), d, *tok.encode(x), e]
                                                        for x in (" sat", " is a dog")]
    assert mc["labels"] == 1


def test_copa_texts_join_premise_and_alternative_with_a_connective() -> None:
    items = [{"premise": "The man broke his toe.", "choice1": "He dropped a hammer on his foot.",
              "choice2": "He got a hole in his sock.", "question": "cause", "label": 0}]
    contexts, answers, labels = gpt_inputs.copa_texts(items)
    assert contexts == [" The man broke his toe"]
    assert answers == [[" because he dropped a hammer on his foot .", " because he got a hole in his sock ."]]
    assert labels == [0]


# --------------------------------------------------------------------------------------------- auxiliary LM loss
def _batch(tok: ByteLevelBPE, texts: list[str], labels: list[int]) -> dict[str, torch.Tensor]:
    feats = gpt_inputs.classification_features(tok, texts, None, labels, max_len=16)
    return collate(feats, tok.token_to_id("<|endoftext|>"))


def test_auxiliary_lm_adds_lambda_times_the_lm_loss_of_the_same_inputs(tok: ByteLevelBPE) -> None:
    lm = tiny(len(tok))
    batch = _batch(tok, [" the cat sat", " a dog", " the mat ."], [1, 0, 1])
    torch.manual_seed(0)
    head = SequenceClassifier(lm.transformer, 2, dropout=0.0).eval()
    aux = gpt_transfer.AuxiliaryLM(head, lam=0.5)
    calls = []
    lm.transformer.register_forward_hook(lambda *a: calls.append(1))
    out = aux(**{k: batch[k] for k in ("input_ids", "token_type_ids", "attention_mask", "labels")})
    assert len(calls) == 1  # the stack runs once for both losses
    l2 = head(batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"])["loss"]
    l1 = lm.lm_loss(batch["input_ids"], batch["attention_mask"])  # the model's own L1, computed independently
    assert out["loss"].item() == pytest.approx((l2 + 0.5 * l1).item(), rel=1e-5)
    assert out["lm_loss"].item() == pytest.approx(l1.item(), rel=1e-5)
    assert torch.equal(aux(batch["input_ids"], attention_mask=batch["attention_mask"]),
                       head(batch["input_ids"], attention_mask=batch["attention_mask"]))  # no labels: the head
    zero = gpt_transfer.AuxiliaryLM(head, lam=0.0)(batch["input_ids"], attention_mask=batch["attention_mask"],
                                                    labels=batch["labels"])
    assert zero["loss"].item() == pytest.approx(l2.item(), rel=1e-6)
    with pytest.raises(ValueError, match="lam"):
        gpt_transfer.AuxiliaryLM(head, lam=-1)


def test_the_encoders_lm_loss_from_hidden_ignores_the_padding(tok: ByteLevelBPE) -> None:
    lm = tiny(len(tok))
    batch = _batch(tok, [" the cat sat on the mat", " a"], [0, 1])
    hidden = lm.transformer(batch["input_ids"], attention_mask=batch["attention_mask"]).hidden
    got = lm.transformer.lm_loss(batch["input_ids"], batch["attention_mask"], hidden)
    short = batch["input_ids"][1, : int(batch["attention_mask"][1].sum())]
    long = batch["input_ids"][0]
    nll = [F.cross_entropy(lm.logits(r[None, :-1])[0], r[1:], reduction="sum") for r in (long, short)]
    assert got.item() == pytest.approx(sum(nll).item() / (len(long) - 1 + len(short) - 1), rel=1e-5)


def test_the_auxiliary_loss_trains_a_multiple_choice_head(tok: ByteLevelBPE) -> None:
    lm = tiny(len(tok))
    feats = gpt_inputs.choice_features(tok, [" the cat", " the dog"], [[" sat", " is"], [" on", " log"]], [0, 1],
                                       max_len=16)
    batch = next(iter(FeatureBatches(feats, 2, tok.token_to_id("<|endoftext|>"))))
    torch.manual_seed(0)
    aux = gpt_transfer.AuxiliaryLM(MultipleChoice(lm.transformer, dropout=0.0), lam=0.5)
    opt = torch.optim.Adam(aux.parameters(), lr=1e-2)
    first = None
    for _ in range(30):
        out = aux(**{k: batch[k] for k in ("input_ids", "token_type_ids", "attention_mask", "labels")})
        first = out["loss"].item() if first is None else first
        opt.zero_grad()
        out["loss"].backward()
        opt.step()
    assert out["loss"].item() < 0.5 * first and out["lm_loss"].item() > 0


# -------------------------------------------------------------------------------------------------- transfer
def test_transferred_copies_the_embeddings_and_the_first_k_layers_only() -> None:
    pre = tiny(layers=3).transformer
    for k in (0, 1, 3):
        torch.manual_seed(5)
        got = gpt_transfer.transferred(pre, k).state_dict()
        for name, t in pre.state_dict().items():
            if name.startswith("blocks.layers."):
                same = int(name.split(".")[2]) < k
            elif name.startswith("blocks.norm"):
                same = k == 3
            else:
                same = True  # token and position embeddings
            if same:
                assert torch.equal(got[name], t), (k, name)
            elif t.float().std() > 0:  # a fresh random matrix (biases and LayerNorm start constant either way)
                assert not torch.equal(got[name], t), (k, name)
    with pytest.raises(ValueError, match="between 0 and"):
        gpt_transfer.transferred(pre, 4)


# -------------------------------------------------------------------------------------------------- zero-shot
def test_continuation_logprobs_sum_the_continuations_tokens(tok: ByteLevelBPE) -> None:
    lm = tiny(len(tok))
    got = gpt_transfer.continuation_logprobs(lm, tok, [" the cat", " a"], [" sat on", " dog"])
    start = tok.token_to_id("<|endoftext|>")
    for i, (c, x) in enumerate([(" the cat", " sat on"), (" a", " dog")]):
        ids = torch.tensor([start, *tok.encode(c), *tok.encode(x)])
        lp = lm.logits(ids[None, :-1])[0].log_softmax(-1).gather(-1, ids[1:, None])[:, 0]
        n = len(tok.encode(x))
        assert got[i, 0].item() == pytest.approx(lp[-n:].sum().item(), rel=1e-5) and int(got[i, 1]) == n


def test_zero_shot_scores_pick_the_more_likely_answer(tok: ByteLevelBPE, monkeypatch: pytest.MonkeyPatch) -> None:
    lm = tiny(len(tok))

    def fake(lm_, tok_, contexts, continuations, batch_size=64):  # the LM "prefers" whichever text says "cat"
        return torch.tensor([[1.0 if "cat" in x else -1.0, 1.0] for x in continuations], dtype=torch.float64)

    monkeypatch.setattr(gpt_transfer, "continuation_logprobs", fake)
    acc = gpt_transfer.zero_shot_choice(lm, tok, [" a", " b"], [[" dog", " cat"], [" cat", " dog"]], [1, 1])
    assert acc == 50.0
    assert gpt_transfer.zero_shot_sentiment(lm, tok, [" x"], [1], words=(" dog", " cat")) == 100.0


# ---------------------------------------------------------------------------------------------------- configs
def test_configs_reject_bad_settings() -> None:
    with pytest.raises(ConfigError, match="vocab_size"):
        gpt_recipe.GPTPretrainingConfig(vocab_size=100)
    with pytest.raises(ConfigError, match="warmup"):
        gpt_recipe.GPTPretrainingConfig(steps=10, warmup=10)
    with pytest.raises(ConfigError, match="lam"):
        gpt_transfer.GPTFinetuningConfig(lam=-0.5)
    with pytest.raises(ConfigError, match="valid_fraction"):
        gpt_recipe.CharGPTConfig(valid_fraction=1.0)


def test_char_gpt_learns_a_repetitive_text() -> None:
    torch.manual_seed(0)
    cfg = gpt_recipe.CharGPTConfig(d_model=32, n_layers=1, n_heads=2, max_len=16, batch_size=8, steps=60, warmup=5,
                                   lr=3e-3)
    text = "abcabcabd" * 200
    res = gpt_recipe.train_char_gpt(cfg, text, progress=False)
    assert res.decode(res.encode("abd")) == "abd"
    assert res.valid_loss < 0.5 * math.log(4)  # far below the uniform guess over a, b, c, d
    with pytest.raises(KeyError, match="alphabet"):
        res.encode("xyz")


# ------------------------------------------------------------------------------------------------- linear probe
def test_linear_probe_reads_a_separable_direction_and_not_noise() -> None:
    g = torch.Generator().manual_seed(0)
    x, xt = torch.randn(400, 8, generator=g), torch.randn(200, 8, generator=g)
    y, yt = (x[:, 3] > 0).long(), (xt[:, 3] > 0).long()
    assert linear_probe(x, y, xt, yt) > 95.0  # the label is a direction of the features
    noise = torch.randint(0, 2, (200,), generator=g)
    assert 35.0 < linear_probe(x, torch.randint(0, 2, (400,), generator=g), xt, noise) < 65.0  # nothing to read
    with pytest.raises(ValueError, match="one label"):
        linear_probe(x, y[:10], xt, yt)


def test_mean_states_average_each_texts_own_tokens(tok: ByteLevelBPE) -> None:
    lm = tiny(len(tok))
    got = gpt_transfer.mean_states(lm.transformer, tok, [" the cat sat on the mat", " a"], batch_size=2)
    start = tok.token_to_id("<|endoftext|>")
    for i, text in enumerate([" the cat sat on the mat", " a"]):
        ids = torch.tensor([[start, *tok.encode(text)]])
        with torch.no_grad():
            want = lm.transformer(ids).hidden[0, 1:].mean(0)  # alone, no padding, without the separator
        assert torch.allclose(got[i], want, atol=1e-5)

"""Task heads (BERT §4, Figure 4) on a tiny stand-in encoder: shapes, losses, span search, learning, freezing."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from shoulders.heads import MeanPooled, MultipleChoice, SequenceClassifier, SpanExtractor, TokenTagger, best_span
from shoulders.models.bert import BertConfig
from shoulders.models.gpt import GPTConfig, GPTModel
from shoulders.recipes.finetune import set_trainable

V, D, T, L = 30, 16, 10, 3


class Stack(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(D, 2, 32, dropout=0.0, batch_first=True)
                                    for _ in range(n))


class TinyEncoder(nn.Module):
    """The encoder protocol: ``(input_ids, token_type_ids, attention_mask) -> .hidden (B,T,d), .pooled (B,d)``."""

    def __init__(self, layers: int = L):
        super().__init__()
        self.d_model = D
        self.tok = nn.Embedding(V, D)
        self.seg = nn.Embedding(2, D)
        self.pos = nn.Embedding(64, D)
        self.encoder = Stack(layers)
        self.pooler = nn.Sequential(nn.Linear(D, D), nn.Tanh())

    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.tok(input_ids) + self.seg(token_type_ids) + self.pos(torch.arange(input_ids.shape[1]))
        pad = None if attention_mask is None else ~attention_mask.bool()
        for layer in self.encoder.layers:
            x = layer(x, src_key_padding_mask=pad)
        return SimpleNamespace(hidden=x, pooled=self.pooler(x[:, 0]))


@pytest.fixture(autouse=True)
def _threads(one_thread):
    torch.manual_seed(0)


def batch(B=4, t=T):
    ids = torch.randint(1, V, (B, t))
    mask = torch.ones(B, t, dtype=torch.bool)
    mask[1, t - 3:] = False  # a padded row
    ids[~mask] = 0
    segs = torch.zeros(B, t, dtype=torch.long)
    segs[:, t // 2:] = 1
    return ids, segs, mask


def n_params(*modules):
    return sum(p.numel() for m in modules for p in m.parameters())


# -- shapes and outputs -------------------------------------------------------------------------------------------
def test_output_shapes_and_init():
    ids, segs, mask = batch()
    head = SequenceClassifier(TinyEncoder(), 3)
    assert head(ids, segs, mask).shape == (4, 3)
    assert head.classifier.bias.abs().sum() == 0 and 0.01 < head.classifier.weight.std() < 0.03
    out = head(ids, segs, mask, labels=torch.tensor([0, 1, 2, 0]))
    assert out["loss"].shape == () and 0 <= float(out["acc"]) <= 1
    assert TokenTagger(TinyEncoder(), 5)(ids, segs, mask).shape == (4, T, 5)
    start, end = SpanExtractor(TinyEncoder())(ids, segs, mask)
    assert start.shape == end.shape == (4, T)
    mc = MultipleChoice(TinyEncoder())
    cids = torch.randint(1, V, (2, 4, T))
    assert mc(cids).shape == (2, 4)
    assert mc(cids, torch.zeros_like(cids), torch.ones_like(cids, dtype=torch.bool)).shape == (2, 4)


def test_fit_reads_the_dict():
    from shoulders.train.loop import split_output

    ids, segs, mask = batch()
    out = TokenTagger(TinyEncoder(), 5)(ids, segs, mask, labels=torch.randint(0, 5, (4, T)))
    loss, extras = split_output(out)
    assert loss.requires_grad and set(extras) == {"acc"}  # logits are not logged


# -- span extraction ----------------------------------------------------------------------------------------------
def brute_force(s, e, allowed, max_len):
    best = (-float("inf"), 0, 0)
    for i in range(len(s)):
        for j in range(i, min(len(s), i + max_len)):
            if allowed[i] and allowed[j] and s[i] + e[j] > best[0]:
                best = (float(s[i] + e[j]), i, j)
    return best


@pytest.mark.parametrize("max_len", [1, 3, 30])
def test_best_span_equals_brute_force(max_len):
    g = torch.Generator().manual_seed(max_len)
    B, t = 64, 12
    s, e = torch.randn(B, t, generator=g), torch.randn(B, t, generator=g)
    allowed = torch.rand(B, t, generator=g) < 0.6
    allowed[:, 0] = True
    start, end, score = best_span(s, e, allowed, max_answer_len=max_len)
    assert start.shape == end.shape == score.shape == (B,)
    for b in range(B):
        want = brute_force(s[b], e[b], allowed[b], max_len)
        assert (float(score[b]), int(start[b]), int(end[b])) == pytest.approx(want)
    assert (end >= start).all() and (end - start < max_len).all()


def test_best_span_never_ends_before_it_starts():
    # the best unconstrained pair is (start 5, end 1), 20; with j >= i the best is (2, 3), 2
    s = torch.full((1, 6), -20.0)
    e = torch.full((1, 6), -20.0)
    s[0, 5], e[0, 1] = 10.0, 10.0
    s[0, 2], e[0, 3] = 1.0, 1.0
    start, end, score = best_span(s, e)
    assert (int(start), int(end), float(score)) == (2, 3, 2.0)
    start, end, _ = best_span(s, e, max_answer_len=1)  # length 1 only: i == j
    assert int(start) == int(end)


def test_span_loss_is_the_mean_of_two_cross_entropies():
    ids, segs, mask = batch()
    head = SpanExtractor(TinyEncoder()).eval()
    sp, ep = torch.tensor([1, 2, 3, 4]), torch.tensor([2, 2, 5, 6])
    start, end = head(ids, segs, mask)
    out = head(ids, segs, mask, start_positions=sp, end_positions=ep)
    want = (F.cross_entropy(start, sp) + F.cross_entropy(end, ep)) / 2
    torch.testing.assert_close(out["loss"], want)
    assert out["loss"] != F.cross_entropy(start, sp)  # both ends count


def test_masked_positions_are_never_chosen():
    ids, segs, mask = batch()
    head = SpanExtractor(TinyEncoder()).eval()
    with torch.no_grad():
        head.qa_outputs.bias.fill_(1e4)  # every raw logit huge, padding included
    start, end = head(ids, segs, mask)
    assert (start[~mask] == torch.finfo(start.dtype).min).all() and (end[~mask] == torch.finfo(end.dtype).min).all()
    assert torch.isfinite(F.log_softmax(start, -1)[mask]).all()  # finite mask: softmax stays well defined
    allowed = mask & (segs == 1)  # the "context": second segment, real tokens only
    i, j, _ = best_span(start, end, allowed)
    assert allowed.gather(1, i[:, None]).all() and allowed.gather(1, j[:, None]).all()
    # without ``allowed`` the padding logits alone still keep the padded row inside its real tokens
    i, j, _ = best_span(start, end)
    assert mask.gather(1, i[:, None]).all() and mask.gather(1, j[:, None]).all()


# -- tagging and multiple choice ----------------------------------------------------------------------------------
def test_tagger_ignores_unscored_positions():
    ids, segs, mask = batch()
    head = TokenTagger(TinyEncoder(), 5).eval()
    labels = torch.randint(0, 5, (4, T))
    labels[:, 0] = -100
    labels[~mask] = -100
    out = head(ids, segs, mask, labels=labels)
    logits = out["logits"]
    scored = labels != -100
    torch.testing.assert_close(out["loss"], F.cross_entropy(logits[scored], labels[scored]))
    acc = (logits.argmax(-1)[scored] == labels[scored]).float().mean()
    torch.testing.assert_close(out["acc"], acc)
    # the unscored positions get no gradient, every scored one does
    head.train()
    out = head(ids, segs, mask, labels=labels)
    out["logits"].retain_grad()
    out["loss"].backward()
    g = out["logits"].grad.abs().sum(-1)  # (B, T)
    assert (g[~scored] == 0).all() and (g[scored] > 0).all()


def test_multiple_choice_equals_scoring_each_candidate():
    B, C = 3, 4
    ids = torch.randint(1, V, (B, C, T))
    segs = torch.zeros_like(ids)
    segs[..., 6:] = 1
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[0, 2, 7:] = False
    head = MultipleChoice(TinyEncoder()).eval()
    scores = head(ids, segs, mask)
    one_by_one = torch.stack([head.scorer(head.encoder(ids[:, c], segs[:, c], mask[:, c]).pooled)[:, 0]
                              for c in range(C)], 1)  # (B, C)
    torch.testing.assert_close(scores, one_by_one, rtol=1e-5, atol=1e-5)
    labels = torch.tensor([0, 3, 1])
    torch.testing.assert_close(head(ids, segs, mask, labels=labels)["loss"], F.cross_entropy(one_by_one, labels),
                               rtol=1e-5, atol=1e-5)


# -- each head learns ---------------------------------------------------------------------------------------------
def overfit(head, inputs, labels, steps=100):
    opt = torch.optim.Adam(head.parameters(), lr=3e-3)
    first = None
    for _ in range(steps):
        out = head(*inputs, **labels)
        opt.zero_grad()
        out["loss"].backward()
        opt.step()
        first = out["loss"].item() if first is None else first
    head.eval()
    with torch.no_grad():
        out = head(*inputs, **labels)
    return first, float(out["loss"]), float(out["acc"])


def test_classifier_overfits():
    ids, segs, mask = batch(8)
    first, last, acc = overfit(SequenceClassifier(TinyEncoder(), 3, dropout=0.0), (ids, segs, mask),
                               {"labels": torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])})
    assert last < first / 10 and acc == 1.0


def test_tagger_overfits():
    ids, segs, mask = batch(6)
    labels = torch.randint(0, 5, (6, T))
    labels[~mask] = -100
    labels[:, 3] = -100
    first, last, acc = overfit(TokenTagger(TinyEncoder(), 5, dropout=0.0), (ids, segs, mask), {"labels": labels})
    assert last < first / 10 and acc == 1.0


def test_span_extractor_overfits():
    ids, segs, mask = batch(6)
    sp, ep = torch.tensor([1, 2, 5, 6, 3, 4]), torch.tensor([2, 2, 6, 8, 5, 4])
    head = SpanExtractor(TinyEncoder())
    first, last, acc = overfit(head, (ids, segs, mask), {"start_positions": sp, "end_positions": ep})
    assert last < first / 10 and acc == 1.0
    with torch.no_grad():
        i, j, _ = best_span(*head(ids, segs, mask), mask)
    assert torch.equal(i, sp) and torch.equal(j, ep)


def test_multiple_choice_overfits():
    ids = torch.randint(1, V, (6, 4, T))
    first, last, acc = overfit(MultipleChoice(TinyEncoder(), dropout=0.0), (ids,),
                               {"labels": torch.tensor([0, 1, 2, 3, 0, 1])})
    assert last < first / 10 and acc == 1.0


# -- frozen features, full fine-tuning, top layers ----------------------------------------------------------------
def grads_after_backward(head):
    ids, segs, mask = batch()
    head.zero_grad(set_to_none=True)
    head(ids, segs, mask, labels=torch.tensor([0, 1, 2, 0]))["loss"].backward()
    return {n: p.grad is not None for n, p in head.named_parameters()}


@pytest.mark.parametrize("mode, top", [("frozen", 1), ("full", 1), ("top", 1), ("top", 2), ("top", 0)])
def test_set_trainable_modes(mode, top):
    enc = TinyEncoder()
    head = SequenceClassifier(enc, 3)
    layers = enc.encoder.layers
    total = n_params(head)
    if mode == "frozen":
        want = [head.classifier]
    elif mode == "full":
        want = [head]
    else:
        want = [head.classifier, enc.pooler, *list(layers)[L - top:]]
    want_ids = {id(p) for m in want for p in m.parameters()}
    assert set_trainable(head, mode, top_layers=top) == (n_params(*want), total)
    for name, p in head.named_parameters():
        assert p.requires_grad == (id(p) in want_ids), name
    got = grads_after_backward(head)
    for name, p in head.named_parameters():
        assert got[name] == (id(p) in want_ids), name  # frozen parameters get no gradient


def test_set_trainable_switches_back_and_forth():
    head = SequenceClassifier(TinyEncoder(), 3)
    total = n_params(head)
    set_trainable(head, "frozen")
    assert set_trainable(head, "full") == (total, total)
    assert set_trainable(head, "top", top_layers=L)[0] == total - n_params(head.encoder.tok, head.encoder.seg,
                                                                             head.encoder.pos)


def test_set_trainable_errors():
    head = SequenceClassifier(TinyEncoder(), 3)
    with pytest.raises(ValueError, match="mode"):
        set_trainable(head, "partial")
    with pytest.raises(ValueError, match="top_layers"):
        set_trainable(head, "top", top_layers=L + 1)
    assert all(p.requires_grad for p in head.parameters())  # a refused call leaves everything trainable

    class NoLayers(TinyEncoder):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Identity()

    with pytest.raises(AttributeError, match="encoder.encoder.layers"):
        set_trainable(SequenceClassifier(NoLayers(), 2), "top")
    with pytest.raises(AttributeError, match="encoder"):
        set_trainable(nn.Linear(2, 2), "full")


# -- the real BERT, once it exists --------------------------------------------------------------------------------
def test_heads_on_bert():
    bert = pytest.importorskip("shoulders.models.bert")
    ids, segs, mask = batch()
    ids = ids.clamp(max=99)

    def encoder():
        built = bert.BertConfig.named("tiny", vocab_size=100).build()
        return getattr(built, "bert", built)  # BertForPreTraining wraps the BertModel the heads take

    head = SequenceClassifier(encoder(), 3)
    assert head(ids, segs, mask).shape == (4, 3)
    assert TokenTagger(encoder(), 5)(ids, segs, mask).shape == (4, T, 5)
    start, _ = SpanExtractor(encoder())(ids, segs, mask)
    assert start.shape == (4, T)
    assert MultipleChoice(encoder())(ids[None].expand(2, 4, T), segs[None].expand(2, 4, T),
                                     mask[None].expand(2, 4, T)).shape == (2, 4)
    n_train, total = set_trainable(head, "top", top_layers=1)
    assert 0 < n_train < total
    got = grads_after_backward(head)
    stack = head.encoder.encoder.layers
    for name, p in head.named_parameters():
        top = any(p is q for q in [*stack[-1].parameters(), *head.encoder.pooler.parameters(),
                                   *head.classifier.parameters()])
        assert got[name] == top == p.requires_grad, name


@pytest.mark.parametrize("kind", ["bert", "gpt"])  # a dataclass output and a NamedTuple one
def test_mean_pooled_classifies_from_the_mean_of_the_real_tokens(kind):
    torch.manual_seed(0)
    ids, segs, mask = batch()
    if kind == "bert":
        enc = BertConfig.named("tiny", vocab_size=V, max_len=16, dropout=0.0, attn_dropout=0.0).build().bert
    else:
        enc = GPTModel(GPTConfig(vocab_size=V, d_model=D, n_layers=1, n_heads=2, d_ff=32, max_len=16, dropout=0.0,
                                 attn_dropout=0.0))
    wrapped = MeanPooled(enc)
    inner, out = enc(ids, token_type_ids=segs, attention_mask=mask), wrapped(ids, token_type_ids=segs,
                                                                             attention_mask=mask)
    assert type(out) is type(inner) and torch.equal(out.hidden, inner.hidden)
    m = mask.float()[..., None]  # (B, T, 1): the padded row's last three positions left out
    torch.testing.assert_close(out.pooled, (inner.hidden * m).sum(1) / m.sum(1))
    assert not torch.allclose(out.pooled, inner.pooled)
    assert wrapped.d_model == enc.d_model and wrapped.encoder is enc
    head = SequenceClassifier(wrapped, 2)
    head(ids, segs, mask, labels=torch.tensor([0, 1, 0, 1]))["loss"].backward()
    if kind == "bert":  # the [CLS] pooler is off the path
        assert all(p.grad is None for p in enc.pooler.parameters())
    assert head.classifier.weight.grad is not None


def test_frozen_encoder_stays_in_eval_mode_while_the_head_trains():
    head = SequenceClassifier(TinyEncoder(), 2)
    set_trainable(head, "frozen")
    head.train()
    assert not head.encoder.training and head.training and head.classifier.training
    set_trainable(head, "full")
    head.train()
    assert head.encoder.training

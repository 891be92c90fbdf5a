"""Discriminative learning rates, freeze/unfreeze, gradual unfreezing, AdamW decay groups."""
import pytest
import torch
from torch import nn

import shoulders as sh
from shoulders.train import Callback, GradualUnfreezing, adamw, discriminative_lr, fit, freeze, trainable, unfreeze


def layers():
    return nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 1))


def test_discriminative_lr_ratios_are_2_6():
    net = layers()
    groups = discriminative_lr(list(net), lr=0.01, weight_decay=0.1)
    lrs = [g["lr"] for g in groups]
    assert lrs[-1] == 0.01
    for lo, hi in zip(lrs, lrs[1:]):
        assert lo == hi / 2.6  # eq. 2, exactly as computed from the layer above
        assert hi / lo == pytest.approx(2.6, rel=1e-15)
    assert all(g["weight_decay"] == 0.1 for g in groups)
    assert [len(g["params"]) for g in groups] == [2, 2, 2, 2]
    assert discriminative_lr([net[0], [net[1].weight, net[1].bias]], lr=1.0, decay=2.0)[0]["lr"] == 0.5
    with pytest.raises(ValueError, match="layer groups 0 and 1"):
        discriminative_lr([net[0], net[0].weight], lr=1.0)


def test_freeze_unfreeze_and_the_optimiser_leaves_frozen_parameters_alone():
    sh.seed(0)
    net = layers()
    opt = torch.optim.AdamW(net.parameters(), lr=0.1, weight_decay=0.5)
    batch = [torch.randn(8, 3)]

    def model_loss(m, b):
        return net(b[0]).pow(2).mean()

    fit(net, batch, opt, steps=2, loss_fn=model_loss, progress=False, device="cpu")  # momentum for every layer
    assert freeze(net[0], [net[1]]) == 4
    assert [p.requires_grad for p in net.parameters()] == [False] * 4 + [True] * 4
    assert trainable(net) == (20 + 5, 16 + 20 + 20 + 5)
    frozen = [p.detach().clone() for p in list(net.parameters())[:4]]
    live = [p.detach().clone() for p in list(net.parameters())[4:]]
    fit(net, batch, opt, steps=3, loss_fn=model_loss, progress=False, device="cpu")
    assert all(torch.equal(a, b) for a, b in zip(frozen, list(net.parameters())[:4]))
    assert not any(torch.equal(a, b) for a, b in zip(live, list(net.parameters())[4:]))
    unfreeze(net)
    assert all(p.requires_grad for p in net.parameters())
    fit(net, batch, opt, steps=1, loss_fn=model_loss, progress=False, device="cpu")
    assert not torch.equal(frozen[0], net[0].weight)


def test_gradual_unfreezing_one_group_per_epoch():
    sh.seed(0)
    net = layers()
    groups = [net[0], net[1], net[2:]]  # bottom -> top; the top group holds two layers

    class Record(Callback):
        def __init__(self):
            self.trainable = []

        def on_step_end(self, run, logs):
            self.trainable.append(tuple(net[i].weight.requires_grad for i in range(4)))

    rec = Record()
    batches = [torch.randn(2, 3) for _ in range(2)]  # two batches per epoch
    hist = fit(net, batches, torch.optim.SGD(discriminative_lr(groups, 0.1)), steps=7,
               loss_fn=lambda m, x: m(x).pow(2).mean(),
               callbacks=[GradualUnfreezing(groups), rec], progress=False, device="cpu")
    top, two, all_ = (False, False, True, True), (False, True, True, True), (True, True, True, True)
    assert rec.trainable == [top, top, two, two, all_, all_, all_]
    assert hist.series("unfrozen")[1].tolist() == [1, 2, 3] and hist.series("unfrozen")[0].tolist() == [0, 2, 4]

    rec2 = Record()
    fit(net, batches, torch.optim.SGD(net.parameters(), 0.1), steps=5, loss_fn=lambda m, x: m(x).pow(2).mean(),
        callbacks=[GradualUnfreezing(groups, every=3), rec2], progress=False, device="cpu")
    assert rec2.trainable == [top, top, two, two, two]  # unfreezing after step 3 shows in step 3's record


def test_adamw_decays_matrices_only():
    net = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    opt = adamw(net, lr=1e-3, weight_decay=0.01)
    decayed = {id(p) for g in opt.param_groups if g["weight_decay"] > 0 for p in g["params"]}
    assert decayed == {id(net[0].weight)}
    groups = adamw(discriminative_lr([net[0], net[1]], lr=0.1), lr=0.1).param_groups
    assert [(len(g["params"]), g["weight_decay"], g["lr"]) for g in groups] == [
        (1, 0.01, 0.1 / 2.6), (1, 0.0, 0.1 / 2.6), (2, 0.0, 0.1)]


def test_adamw_is_fused_where_torch_has_the_kernel_and_steps_like_the_plain_one():
    torch.manual_seed(0)
    a = nn.Sequential(nn.Embedding(50, 8), nn.Linear(8, 3))
    b = nn.Sequential(nn.Embedding(50, 8), nn.Linear(8, 3))
    b.load_state_dict(a.state_dict())
    fused, plain = adamw(a, lr=1e-2), adamw(b, lr=1e-2, fused=False)
    assert fused.defaults["fused"] is True and not plain.defaults.get("fused")
    x = torch.randint(50, (16,))
    for opt, net in ((fused, a), (plain, b)):
        for _ in range(3):
            opt.zero_grad()
            net(x).square().mean().backward()
            opt.step()
    for p, q in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)

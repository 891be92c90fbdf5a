"""The log-bilinear LM (Mnih & Hinton 2007) and the C&W ranking model (Collobert & Weston 2008): shapes, the
scores against hand-computed values, the hinge loss in closed form, seeded corruptions, one-batch overfit."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import shoulders as sh
from shoulders.models.cw import CW, CWConfig, corrupt_centre, hinge_rank_loss
from shoulders.models.lbl import LBL, LBLConfig


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


# -- LBL -----------------------------------------------------------------------------------------------------------
def test_lbl_shapes_and_parameter_count():
    cfg = LBLConfig(vocab_size=30, n=4, emb_dim=5)
    model = cfg.build()
    x, y = cfg.example_batch(6)
    assert x.shape == (6, 3) and model.predict(x).shape == (6, 5) and model.logits(x).shape == (6, 30)
    torch.testing.assert_close(model(x, y), F.cross_entropy(model.logits(x), y))
    # R (|V| d) + C_i ((n-1) d^2) + b (|V|)
    assert sum(p.numel() for p in model.parameters()) == 30 * 5 + 3 * 5 * 5 + 30


def test_lbl_scores_equal_the_formula_on_hand_set_weights():
    model = LBL(LBLConfig(vocab_size=3, n=3, emb_dim=2))
    with torch.no_grad():
        model.R.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))  # r_0, r_1, r_2
        model.C.copy_(torch.tensor([[[1.0, 2.0], [0.0, 1.0]],  # C_1: the first (farthest) context position
                                    [[0.0, 1.0], [1.0, 0.0]]]))  # C_2: the word just before the target
        model.b.copy_(torch.tensor([0.1, 0.2, 0.3]))
    x = torch.tensor([[0, 2], [1, 0]])
    # r_hat = C_1 r_0 + C_2 r_2 = [1, 0] + [1, 1] = [2, 1];  C_1 r_1 + C_2 r_0 = [2, 1] + [0, 1] = [2, 2]
    torch.testing.assert_close(model.predict(x), torch.tensor([[2.0, 1.0], [2.0, 2.0]]))
    # s(w) = r_hat . r_w + b_w
    expected = torch.tensor([[2.1, 1.2, 3.3], [2.1, 2.2, 4.3]])
    torch.testing.assert_close(model.logits(x), expected)
    torch.testing.assert_close(model(x, torch.tensor([2, 1])),
                               -(expected.log_softmax(-1)[[0, 1], [2, 1]]).mean())


def test_lbl_one_batch_overfit():
    sh.seed(0)
    cfg = LBLConfig(vocab_size=40, n=4, emb_dim=16)
    model = cfg.build()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(40, (16, 4), generator=g)
    opt = torch.optim.Adam(model.parameters(), lr=3e-2)
    hist = sh.train.fit(model, [(ids[:, :-1], ids[:, -1])], opt, steps=150, progress=False, device="cpu")
    losses = hist.series("loss")[1]
    assert losses[-1] < 0.1 * losses[0], (losses[0], losses[-1])


# -- C&W -----------------------------------------------------------------------------------------------------------
def hand_cw() -> CW:
    """V = 4 words with 1-d embeddings e_w = w, window 3, 2 hidden units, set by hand."""
    model = CW(CWConfig(vocab_size=4, window=3, emb_dim=1, hidden=2, negatives=2))
    with torch.no_grad():
        model.embed.weight.copy_(torch.tensor([[0.0], [1.0], [2.0], [3.0]]))
        model.hidden.weight.copy_(torch.tensor([[0.0, 1.0, 0.0], [0.5, 0.0, -0.5]]))  # W_1
        model.hidden.bias.zero_()  # b_1
        model.score_out.weight.copy_(torch.tensor([[1.0, 2.0]]))  # w_2
        model.score_out.bias.fill_(0.5)  # b_2
    return model


def test_cw_scores_and_hinge_loss_in_closed_form():
    model = hand_cw()
    windows = torch.tensor([[1, 2, 3], [0, 0, 0]])
    # f([1,2,3]): W_1 x = [2, -1] -> hardtanh [1, -1] -> 1 - 2 + 0.5 = -0.5;  f([0,0,0]) = b_2 = 0.5
    torch.testing.assert_close(model.score(windows), torch.tensor([-0.5, 0.5]))
    corrupt = torch.tensor([[0, 3], [2, 0]])
    # corrupted: [1,0,3] -> [0,-1] -> -1.5;  [1,3,3] -> [3->1, -1] -> -0.5;
    #            [0,2,0] -> [2->1, 0] -> 1.5;  [0,0,0] -> 0.5
    torch.testing.assert_close(model.score(corrupt_centre(windows, corrupt)), torch.tensor([[-1.5, -0.5], [1.5, 0.5]]))
    # max(0, 1 - f(s) + f(s~)):  [1 + 0.5 - 1.5, 1 + 0.5 - 0.5] = [0, 1];  [1 - 0.5 + 1.5, 1 - 0.5 + 0.5] = [2, 1]
    loss = model(windows, corrupt)
    torch.testing.assert_close(loss, torch.tensor((0.0 + 1.0 + 2.0 + 1.0) / 4))
    torch.testing.assert_close(hinge_rank_loss(torch.tensor([0.0]), torch.tensor([[-2.0, 0.5]])), torch.tensor(0.75))
    m = model.ranking_metrics([windows], negatives=2)
    assert 0.0 <= m["rank_acc"] <= 1.0 and m["hinge"] >= 0.0


def test_cw_corruptions_replace_only_the_centre_and_are_seeded():
    cfg = CWConfig(vocab_size=1000, window=5, emb_dim=4, hidden=3, negatives=3, seed=7)
    windows = torch.arange(10).view(2, 5)
    words = torch.tensor([[100, 101, 102], [200, 201, 202]])
    c = corrupt_centre(windows, words)
    assert c.shape == (2, 3, 5)
    assert (c[:, :, [0, 1, 3, 4]] == windows[:, None, [0, 1, 3, 4]]).all() and torch.equal(c[:, :, 2], words)
    sh.seed(0)
    a = cfg.build()
    b = CW(cfg)
    b.load_state_dict(a.state_dict())
    w = cfg.example_batch(8)
    assert torch.equal(a(w), b(w))  # the same seed draws the same corruptions
    cpu = torch.device("cpu")
    second = a.sample_corruptions(8, 3, cpu)
    assert not torch.equal(second, a.sample_corruptions(8, 3, cpu))  # successive draws differ
    assert torch.equal(b.sample_corruptions(8, 3, cpu), second)  # ... and replay from the same seed
    a.reset_generator()
    b.reset_generator()
    assert torch.equal(a.sample_corruptions(8, 3, cpu), b.sample_corruptions(8, 3, cpu))
    other = CW(cfg.replace(seed=8))
    assert not torch.equal(other.sample_corruptions(8, 3, torch.device("cpu")), CW(cfg).sample_corruptions(8, 3, "cpu"))


def test_cw_one_batch_overfit():
    sh.seed(0)
    cfg = CWConfig(vocab_size=40, window=5, emb_dim=16, hidden=32, negatives=4)
    model = cfg.build()
    g = torch.Generator().manual_seed(0)
    windows = torch.randint(40, (16, 5), generator=g)
    opt = torch.optim.Adam(model.parameters(), lr=3e-2)
    hist = sh.train.fit(model, [windows], opt, steps=200, progress=False, device="cpu")  # fresh corruptions each step
    losses = hist.series("loss")[1]
    assert losses[:5].mean() > 0.5 and losses[-10:].mean() < 0.1 * losses[:5].mean(), (losses[:5], losses[-10:])


def test_cw_config_checks_odd_window():
    with pytest.raises(sh.config.ConfigError):
        CWConfig(window=4)
    assert CWConfig(window=5).example_batch(3).shape == (3, 5)

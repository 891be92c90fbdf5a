"""The fused output layer + cross-entropy against PyTorch's own F.cross_entropy(F.linear(...)) and gradcheck."""
import pytest
import torch
import torch.nn.functional as F

from shoulders.models.linear_cross_entropy import linear_cross_entropy


def inputs(N=37, d=8, V=29, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(N, d, generator=g, dtype=dtype, requires_grad=True)
    w = torch.randn(V, d, generator=g, dtype=dtype, requires_grad=True)
    b = torch.randn(V, generator=g, dtype=dtype, requires_grad=True)
    y = torch.randint(0, V, (N,), generator=g)
    return h, w, b, y


@pytest.mark.parametrize("chunk", [1, 5, 37, 1_000])  # one row at a time, uneven chunks, exact, one chunk
@pytest.mark.parametrize("with_bias", [True, False])
def test_loss_and_gradients_equal_torch(chunk, with_bias):
    h, w, b, y = inputs()
    bias = b if with_bias else None
    theirs = F.cross_entropy(F.linear(h, w, bias), y)
    grads = torch.autograd.grad(theirs * 3.0, [h, w] + ([b] if with_bias else []))  # an incoming gradient of 3
    mine = linear_cross_entropy(h, w, bias, y, chunk=chunk)
    my_grads = torch.autograd.grad(mine * 3.0, [h, w] + ([b] if with_bias else []))
    assert torch.allclose(mine, theirs, atol=1e-6)
    for a, c in zip(my_grads, grads):
        assert torch.allclose(a, c, atol=1e-6)


def test_gradcheck_in_double():
    h, w, b, y = inputs(N=6, d=3, V=5, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda h, w, b: linear_cross_entropy(h, w, b, y, chunk=4), (h, w, b))


def test_tied_weights_accumulate_both_uses():
    """GPT and Transformer-XL tie the output layer to the embedding: the table gets both gradients."""
    h0, w, b, y = inputs()
    x = torch.randint(0, w.shape[0], (h0.shape[0],))

    def table_grad(loss_fn):
        w.grad = None
        loss_fn(torch.tanh(w[x] + h0.detach())).backward()  # w used as the input table and as the output layer
        return w.grad.clone()

    theirs = table_grad(lambda hh: F.cross_entropy(F.linear(hh, w, b), y))
    assert torch.allclose(table_grad(lambda hh: linear_cross_entropy(hh, w, b, y, 8)), theirs, atol=1e-6)


def test_frozen_inputs_get_no_gradient_and_no_grad_mode_only_scores():
    h, w, b, y = inputs()
    w.requires_grad_(False)
    loss = linear_cross_entropy(h, w, None, y)
    (gh,) = torch.autograd.grad(loss, [h])
    assert torch.allclose(gh, torch.autograd.grad(F.cross_entropy(F.linear(h, w), y), [h])[0], atol=1e-6)
    with torch.no_grad():
        score = linear_cross_entropy(h, w, b, y)
    assert not score.requires_grad and torch.allclose(score, F.cross_entropy(F.linear(h, w, b), y), atol=1e-6)


def test_bad_shapes_name_the_cause():
    h, w, b, y = inputs()
    with pytest.raises(ValueError, match="target"):
        linear_cross_entropy(h, w, b, y[:-1])
    with pytest.raises(ValueError, match="weight"):
        linear_cross_entropy(h, w[:, :-1], b, y)
    with pytest.raises(ValueError, match="empty"):
        linear_cross_entropy(h[:0], w, b, y[:0])

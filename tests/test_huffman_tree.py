"""The Huffman tree (prefix-free, optimal, frequent words shallow) and the hierarchical softmax over it."""
from __future__ import annotations

import heapq

import pytest
import torch

from shoulders.models.huffman_tree import HierarchicalSoftmax, huffman_tree


def huffman_cost(counts) -> float:
    """The optimal total code length sum_w c_w L(w) = the sum of all merge weights (Huffman 1952)."""
    heap = [float(c) for c in counts]
    heapq.heapify(heap)
    cost = 0.0
    while len(heap) > 1:
        merged = heapq.heappop(heap) + heapq.heappop(heap)
        cost += merged
        heapq.heappush(heap, merged)
    return cost


COUNTS = [
    [5, 9, 12, 13, 16, 45],  # the textbook example (CLRS): total length 224
    [1, 1],
    [3, 3, 3, 3, 3],
    [int(1000 / r) + 1 for r in range(1, 200)],  # Zipf-like
    torch.randint(1, 10_000, (300,), generator=torch.Generator().manual_seed(0)).tolist(),
]


@pytest.mark.parametrize("counts", COUNTS, ids=["clrs", "two", "equal", "zipf", "random"])
def test_codes_are_prefix_free_and_optimal(counts):
    tree = huffman_tree(counts)
    codes = [tree.code(w) for w in range(len(counts))]
    assert len(set(codes)) == len(codes)
    for i, a in enumerate(codes):
        for j, b in enumerate(codes):
            if i != j:
                assert not b.startswith(a), (a, b)
    total = sum(c * len(code) for c, code in zip(counts, codes))
    assert total == pytest.approx(huffman_cost(counts))
    assert tree.expected_length(counts) == pytest.approx(huffman_cost(counts) / sum(counts))
    # Kraft equality: a full binary tree uses the whole code space
    assert sum(2.0 ** -len(c) for c in codes) == pytest.approx(1.0)


def test_clrs_example_total_length():
    assert huffman_cost(COUNTS[0]) == 224
    tree = huffman_tree(COUNTS[0])
    assert [len(tree.code(w)) for w in range(6)] == [4, 4, 3, 3, 3, 1]


def test_frequent_words_are_shallower():
    counts = COUNTS[3]
    lengths = huffman_tree(counts).lengths
    for a in range(len(counts)):
        for b in range(len(counts)):
            if counts[a] > counts[b]:
                assert lengths[a] <= lengths[b]
    assert lengths[0] < lengths[-1]


def test_points_are_inner_nodes_and_root_first():
    tree = huffman_tree(COUNTS[4])
    V = len(COUNTS[4])
    pts = tree.points[tree.mask]
    assert int(pts.min()) >= 0 and int(pts.max()) == V - 2
    assert (tree.points[:, 0] == V - 2).all()  # every path starts at the root


def test_bad_counts():
    with pytest.raises(ValueError):
        huffman_tree([3])
    with pytest.raises(ValueError):
        huffman_tree([1, -1])


def test_hierarchical_softmax_is_a_distribution(one_thread):
    torch.manual_seed(0)
    tree = huffman_tree(COUNTS[3])
    hs = HierarchicalSoftmax(tree, 8)
    torch.nn.init.normal_(hs.weight)
    h = torch.randn(5, 8)
    lp = hs.log_probs(h)  # (5, V)
    torch.testing.assert_close(lp.exp().sum(1), torch.ones(5, dtype=lp.dtype), rtol=1e-5, atol=1e-5)
    y = torch.randint(len(COUNTS[3]), (5,))
    torch.testing.assert_close(hs.loss(h, y), -lp[torch.arange(5), y].mean())


def test_hierarchical_softmax_sgd_step_matches_autograd(one_thread):
    torch.manual_seed(1)
    hs = HierarchicalSoftmax(huffman_tree(COUNTS[4]), 6)
    torch.nn.init.normal_(hs.weight, std=0.3)
    h = torch.randn(7, 6, requires_grad=True)
    y = torch.tensor([0, 3, 3, 10, 299, 5, 0])
    loss = hs.loss(h, y) * 7
    loss.backward()
    w0 = hs.weight.detach().clone()
    gW = hs.weight.grad.clone()
    lr = 0.1
    got_loss, dh = hs.sgd_step(h.detach(), y, lr, damp_shared=False)
    torch.testing.assert_close(got_loss, loss.detach())
    torch.testing.assert_close(dh, h.grad)
    torch.testing.assert_close(hs.weight.detach(), w0 - lr * gW)


def test_damped_update_of_shared_nodes(one_thread):
    """A node visited by n examples of a batch moves by the summed step / sqrt(n); dL/dh is unchanged."""
    torch.manual_seed(2)
    plain, damped = HierarchicalSoftmax(huffman_tree([3, 1]), 4), HierarchicalSoftmax(huffman_tree([3, 1]), 4)
    torch.nn.init.normal_(plain.weight)
    damped.weight.data.copy_(plain.weight.data)
    w0 = plain.weight.detach().clone()
    h, y = torch.randn(9, 4), torch.randint(2, (9,))
    _, dh_plain = plain.sgd_step(h, y, 0.1, damp_shared=False)
    _, dh_damped = damped.sgd_step(h, y, 0.1)
    torch.testing.assert_close(dh_plain, dh_damped)
    torch.testing.assert_close(damped.weight - w0, (plain.weight - w0) / 3.0)  # the root: 9 visits


def test_proximal_update_of_shared_nodes(one_thread):
    """rule="prox": a node's summed step is divided by 1 + lr * sum_b sigma'(x_b) |h_b|^2 (its summed loss's
    curvature), so a lone visit with a small step is nearly word2vec.c's, and a crowded node is held back."""
    torch.manual_seed(3)
    tree = huffman_tree([3, 1])  # one inner node, the root
    plain, prox = HierarchicalSoftmax(tree, 4, rule="sum"), HierarchicalSoftmax(tree, 4, rule="prox")
    torch.nn.init.normal_(plain.weight)
    prox.weight.data.copy_(plain.weight.data)
    w0 = plain.weight.detach().clone()
    h, y, lr = torch.randn(9, 4), torch.randint(2, (9,)), 0.1
    f = torch.sigmoid(h @ w0[0])  # (9,)
    curvature = float((f * (1 - f) * h.square().sum(1)).sum())
    _, dh_plain = plain.sgd_step(h, y, lr)
    _, dh_prox = prox.sgd_step(h, y, lr)
    torch.testing.assert_close(dh_plain, dh_prox)  # dL/dh is the same
    torch.testing.assert_close(prox.weight - w0, (plain.weight - w0) / (1 + lr * curvature))
    assert prox.damp_shared and not plain.damp_shared
    with pytest.raises(ValueError):
        HierarchicalSoftmax(tree, 4, rule="mean")

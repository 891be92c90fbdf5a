"""A Huffman tree over the vocabulary, and the hierarchical softmax that walks it.

Hierarchical softmax (Morin & Bengio 2005; Mnih & Hinton 2009) replaces the |V|-way softmax by a binary tree
with the words at its leaves: P(w | h) is the product of the left/right decisions on the path from the root to
w, each a logistic unit with its own vector v'_n. Mikolov et al. (2013b, "Distributed Representations of Words
and Phrases and their Compositionality", sec. 2.1, eq. 3) use a *Huffman* tree, so frequent words have short
paths and training is cheap where the data are:

    P(w | h) = prod_{j=1}^{L(w)-1} sigma( [[ n(w, j+1) = ch(n(w, j)) ]] * v'_{n(w,j)}^T h )          (eq. 3)

with [[x]] = 1 if x else -1. Here a word's *code* is the bit string of its path (0 = the branch the paper's
[[.]] calls +1, as in word2vec.c, where the label of a node is ``1 - code``) and its *points* are the inner
nodes on the path, numbered 0 .. |V|-2. The same tree serves fastText's supervised classifier (Joulin et al.
2017, sec. 2.1), with the labels at the leaves.

Huffman (1952): repeatedly merge the two lightest subtrees. The expected code length sum_w p_w L(w) is then
the smallest of any prefix-free binary code -- the tests check it against the merge-cost sum.
"""
from __future__ import annotations

import dataclasses
import heapq
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .sparse_rows import add_rows_, take_rows

__all__ = ["HierarchicalSoftmax", "HuffmanTree", "huffman_tree"]


@dataclasses.dataclass
class HuffmanTree:
    """The codes and paths of a Huffman tree over ``V`` leaves, padded to the longest code ``L``.

    ``codes`` (V, L) int64 bits, ``points`` (V, L) int64 inner-node ids in ``0 .. V-2`` (root = V-2), ``lengths``
    (V,) code lengths, ``mask`` (V, L) bool (``True`` on the first ``lengths[w]`` positions). Padding is 0.
    """

    codes: torch.Tensor  # (V, L)
    points: torch.Tensor  # (V, L)
    lengths: torch.Tensor  # (V,)

    @property
    def num_leaves(self) -> int:
        return self.codes.shape[0]

    @property
    def num_inner(self) -> int:
        """V - 1 inner nodes, each with its own vector v'_n."""
        return self.num_leaves - 1

    @property
    def mask(self) -> torch.Tensor:
        L = self.codes.shape[1]
        return torch.arange(L)[None, :] < self.lengths[:, None]  # (V, L)

    def code(self, w: int) -> str:
        """The code of leaf ``w`` as a bit string, e.g. ``"0110"``."""
        n = int(self.lengths[w])
        return "".join(str(int(b)) for b in self.codes[w, :n])

    def expected_length(self, counts: Any) -> float:
        """sum_w p_w L(w), with p_w = counts_w / sum(counts): the average code length in bits."""
        c = torch.as_tensor(np.asarray(counts, dtype=np.float64))
        return float((c * self.lengths.double()).sum() / c.sum())

    def to(self, device: torch.device | str) -> "HuffmanTree":
        return HuffmanTree(self.codes.to(device), self.points.to(device), self.lengths.to(device))


def huffman_tree(counts: Any) -> HuffmanTree:
    """Build the Huffman tree of ``counts`` (V,) non-negative numbers (word or label frequencies), V >= 2.

    Ties are broken by creation order (leaves by id, then inner nodes as created), so the tree is deterministic.
    """
    c = np.asarray(counts, dtype=np.float64).reshape(-1)
    V = c.size
    if V < 2:
        raise ValueError(f"a Huffman tree needs at least 2 leaves, got {V}")
    if (c < 0).any() or not np.isfinite(c).all():
        raise ValueError("counts must be finite and non-negative")
    parent = np.zeros(2 * V - 1, dtype=np.int64)
    bit = np.zeros(2 * V - 1, dtype=np.int64)
    heap = [(float(c[i]), i) for i in range(V)]
    heapq.heapify(heap)
    for new in range(V, 2 * V - 1):  # node ids V .. 2V-2 are inner nodes; 2V-2 is the root
        w1, a = heapq.heappop(heap)
        w2, b = heapq.heappop(heap)
        parent[a], bit[a] = new, 0  # the lighter subtree gets bit 0 (word2vec.c gives the heavier 1)
        parent[b], bit[b] = new, 1
        heapq.heappush(heap, (w1 + w2, new))
    root = 2 * V - 2
    paths_codes, paths_points = [], []
    for w in range(V):
        codes, points, n = [], [], w
        while n != root:
            codes.append(bit[n])
            points.append(parent[n] - V)  # inner node id in 0 .. V-2
            n = parent[n]
        paths_codes.append(codes[::-1])  # root first
        paths_points.append(points[::-1])
    lengths = np.array([len(p) for p in paths_codes], dtype=np.int64)
    L = int(lengths.max())
    codes_t = torch.zeros(V, L, dtype=torch.long)
    points_t = torch.zeros(V, L, dtype=torch.long)
    for w in range(V):
        n = lengths[w]
        codes_t[w, :n] = torch.as_tensor(paths_codes[w])
        points_t[w, :n] = torch.as_tensor(paths_points[w])
    return HuffmanTree(codes_t, points_t, torch.as_tensor(lengths))


class HierarchicalSoftmax(nn.Module):
    """The output layer of eq. 3: one vector v'_n per inner node, ``weight`` (V-1, d), initialised to zero.

    ``loss(h, y)`` is the mean of -log P(y | h) over the batch; ``log_probs(h)`` gives log P(w | h) for every
    leaf (for tests and small vocabularies); ``sgd_step`` is word2vec.c's update without autograd.
    """

    RULES = ("sqrt", "sum", "prox")

    def __init__(self, tree: HuffmanTree, dim: int, damp_shared: bool = True, rule: str | None = None):
        super().__init__()
        rule = rule if rule is not None else ("sqrt" if damp_shared else "sum")
        if rule not in self.RULES:
            raise ValueError(f"rule must be one of {self.RULES}, got {rule!r}")
        self.rule = rule  # the batch rule of sgd_step
        self.register_buffer("codes", tree.codes, persistent=False)  # (V, L)
        self.register_buffer("points", tree.points, persistent=False)  # (V, L)
        self.register_buffer("path_mask", tree.mask, persistent=False)  # (V, L)
        self.weight = nn.Parameter(torch.zeros(tree.num_inner, dim))  # (V-1, d): v'_n

    def _scores(self, h: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        points, mask = self.points[y], self.path_mask[y]  # (B, L)
        x = torch.einsum("bld,bd->bl", self.weight[points], h)  # (B, L): v'_n^T h along the path
        sign = 1.0 - 2.0 * self.codes[y].to(h.dtype)  # (B, L): +1 for bit 0, -1 for bit 1
        return x, sign, mask

    def loss(self, h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """-1/B sum_b log P(y_b | h_b): h (B, d), y (B,) leaf ids."""
        x, sign, mask = self._scores(h, y)
        return -(F.logsigmoid(sign * x) * mask).sum() / h.shape[0]

    def log_probs(self, h: torch.Tensor) -> torch.Tensor:
        """log P(w | h) for every leaf w: h (B, d) -> (B, V); each row's exp sums to 1."""
        V = self.codes.shape[0]
        x = h @ self.weight.T  # (B, V-1): every inner node's score
        xs = x[:, self.points]  # (B, V, L)
        sign = 1.0 - 2.0 * self.codes.to(h.dtype)  # (V, L)
        return (F.logsigmoid(sign * xs) * self.path_mask).sum(-1).reshape(-1, V)  # (B, V)

    @property
    def damp_shared(self) -> bool:
        """``True`` unless the batch rule is the plain sum (the older name of :attr:`rule`)."""
        return self.rule != "sum"

    @damp_shared.setter
    def damp_shared(self, value: bool) -> None:
        self.rule = "sqrt" if value else "sum"

    @torch.no_grad()
    def sgd_step(self, h: torch.Tensor, y: torch.Tensor, lr: float, damp_shared: bool | None = None,
                 rule: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """One SGD step on the node vectors, by hand: returns (summed loss, dL/dh (B, d)).

        With f = sigma(v'^T h) and label 1 - code, word2vec.c does ``g = (1 - code - f) * lr``,
        ``neu1e += g v'``, ``v' += g h``; here dL/dx = f - (1 - code) on each node of the path.

        word2vec.c makes those updates one pair after another, each seeing the last; a batch computes them all
        from the same old node vectors, and every path starts at the root, so near the root one batch holds
        hundreds of stale updates of the same vector. ``rule`` (default: the layer's :attr:`rule`) says what a
        node visited n times in the batch receives:

        * ``"sum"`` -- their plain sum: the gradient step on the batch's summed loss (word2vec.c's updates, added
          up). Near the root it can overshoot and diverge (``benchmarks/word2vec.py --output hs``);
        * ``"sqrt"`` -- the sum divided by sqrt(n): bounded like a sum of random terms;
        * ``"prox"`` -- the sum divided by 1 + lr * sum_b sigma'(x_b) |h_b|^2, the curvature of the node's summed
          loss: a scalar stand-in for the implicit (proximal) step that n sequential updates approximate. A
          node whose summed curvature is small -- any node visited a few times -- takes word2vec.c's summed
          step; a crowded one a step its curvature can bear.

        ``damp_shared`` (the older switch) ``True`` means ``"sqrt"``, ``False`` ``"sum"``.
        """
        if rule is None:
            rule = self.rule if damp_shared is None else ("sqrt" if damp_shared else "sum")
        if rule not in self.RULES:
            raise ValueError(f"rule must be one of {self.RULES}, got {rule!r}")
        mask = self.path_mask[y]  # (B, L)
        b, step = mask.nonzero(as_tuple=True)  # (n,): only the real steps of each path, not the padding
        rows = self.points[y[b], step]  # (n,) the inner nodes visited
        V_n, h_n = take_rows(self.weight, rows), take_rows(h, b)  # (n, d) each
        x = torch.linalg.vecdot(V_n, h_n)  # (n,): v'^T h
        code = self.codes[y[b], step].to(h.dtype)  # (n,)
        loss = -F.logsigmoid((1.0 - 2.0 * code) * x).sum()
        f = torch.sigmoid(x)
        dx = f - (1.0 - code)  # (n,)
        dh = add_rows_(torch.zeros_like(h), b, V_n * dx[:, None])  # (B, d), from the old v'
        if rule == "sqrt":
            # dividing a node's sum by sqrt(visits) keeps its step bounded like a sum of random terms; a node
            # visited once takes exactly the plain SGD step
            visits = torch.bincount(rows, minlength=self.weight.shape[0]).to(dx.dtype)  # (V-1,)
            dx = dx / visits[rows].sqrt()  # (n,): scaling the scalar, not the (n, d) gradient
        elif rule == "prox":
            curvature = torch.zeros(self.weight.shape[0], dtype=dx.dtype, device=dx.device)  # (V-1,)
            curvature.index_add_(0, rows, f * (1.0 - f) * h_n.square().sum(1))  # sum_b sigma'(x_b) |h_b|^2
            dx = dx / (1.0 + lr * curvature[rows])
        add_rows_(self.weight, rows, h_n * (-lr * dx)[:, None])  # v' -= lr * dx * h
        return loss, dh

import torch

from shoulders.models.sparse_rows import add_rows_, take_rows


def test_take_rows_is_advanced_indexing():
    g = torch.Generator().manual_seed(0)
    W = torch.randn(50, 7, generator=g)
    idx = torch.randint(50, (4, 3), generator=g)
    got = take_rows(W, idx)
    assert got.shape == (4, 3, 7)
    torch.testing.assert_close(got, W[idx], rtol=0, atol=0)


def test_add_rows_sums_duplicates_like_index_add():
    g = torch.Generator().manual_seed(1)
    W = torch.randn(20, 5, generator=g)
    idx = torch.tensor([3, 7, 3, 3, 19, 0])
    rows = torch.randn(6, 5, generator=g)
    expected = W.clone().index_add_(0, idx, rows, alpha=-0.3)
    add_rows_(W, idx, rows, alpha=-0.3)
    torch.testing.assert_close(W, expected)
    torch.testing.assert_close(W[3], expected[3])  # three updates of row 3 all landed

"""shoulders.viz.attention_heads: the static grid of a layer's heads and the kernel-less layer x head Stacks."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from ipywidgets.widgets.widget_link import DirectionalLink, Link  # noqa: E402

from shoulders import viz  # noqa: E402
from shoulders.viz.attention import as_layers, attention_grid  # noqa: E402


def weights(L=2, B=2, H=3, Tq=4, Tk=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, H, Tq, Tk, generator=g).softmax(-1) for _ in range(L)]


@pytest.fixture(scope="module")
def cross_view():
    w = weights()
    return viz.attention_heads(w, ["<bos>", "a", "man"], ["ein", "mann", "fährt", "."], index=1,
                               title="cross-attention", layer=1), w


def test_static_figure_is_a_grid_of_every_head_of_the_layer_with_token_labels(cross_view):
    view, _ = cross_view
    axes = view.figure.axes
    assert len(axes) == 3 and [ax.get_title() for ax in axes] == ["head 1", "head 2", "head 3"]
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ["<bos>", "a", "man"]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["ein", "mann", "fährt", "."]
    assert "layer 2" in view.figure._suptitle.get_text()
    shown = axes[1].images[0].get_array()  # layer 2, head 2 of sentence 1, cut to the tokens (padding dropped)
    np.testing.assert_allclose(shown, view.data["weights"][1, 1])


def test_weights_are_cut_to_the_tokens_of_the_chosen_sentence(cross_view):
    view, w = cross_view
    assert view.data["weights"].shape == (2, 3, 3, 4)
    np.testing.assert_allclose(view.data["weights"][0, 2], w[0][1, 2, :3, :4].numpy())


def test_widget_has_a_stack_per_layer_and_a_child_per_head_all_jslinked(cross_view):
    view, _ = cross_view
    wd = view.widget
    assert isinstance(wd, viz.StackView) and list(wd.control.options) == ["layer 1", "layer 2"]
    assert wd.control.index == 1 and wd.stack.selected_index == 1
    assert isinstance(wd.link, Link) and not isinstance(wd.link, DirectionalLink)
    assert list(wd.head_control.options) == ["head 1", "head 2", "head 3", "all heads"]
    assert len(wd.stack.children) == 2 and list(wd.stack.children) == wd.head_stacks
    for stack, link in zip(wd.head_stacks, wd.head_links):
        assert isinstance(stack, widgets.Stack) and len(stack.children) == 4
        assert all(isinstance(c, widgets.Image) and bytes(c.value).startswith(b"\x89PNG") for c in stack.children)
        assert link.source == (wd.head_control, "index") and link.target == (stack, "selected_index")
    assert wd.head_control in wd.children  # shown above the layer menu
    images = {bytes(c.value) for s in wd.head_stacks for c in s.children}
    assert len(images) == 8  # every view is its own picture


def test_self_attention_defaults_keys_to_queries_and_accepts_an_array():
    arr = np.stack([w[0].numpy() for w in weights(L=1, H=2, Tq=3, Tk=3)])  # (L=1, H=2, 3, 3)
    view = viz.attention_heads(arr, ["x", "y", "z"], lines=False)
    assert view.data["tokens_k"] == ["x", "y", "z"] and len(view.widget.head_stacks[0].children) == 3
    fig = attention_grid(arr[0], ["x", "y", "z"], ["x", "y", "z"], ncols=1)
    assert len(fig.axes) == 2


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="one token per"):
        viz.attention_heads(weights(), ["a"] * 5, ["b"] * 5)
    with pytest.raises(ValueError, match="empty"):
        as_layers([])
    with pytest.raises(ValueError, match=r"\(L, H, T_q, T_k\)"):
        as_layers(np.zeros((2, 3, 3)))
    with pytest.raises(ValueError, match="different shapes"):
        as_layers([np.zeros((2, 3, 3)), np.zeros((2, 3, 4))])
    with pytest.raises(IndexError):
        viz.attention_heads(weights(), ["a"], ["b"], layer=5)

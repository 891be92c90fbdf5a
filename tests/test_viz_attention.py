"""shoulders.viz.attention_heads: the static grid of a layer's heads and the kernel-less layer x head Stacks."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from ipywidgets.widgets.widget_link import DirectionalLink, Link  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

from shoulders import viz  # noqa: E402
from shoulders.viz.attention import MAX_TOKENS, as_layers, attention_grid, head_figure  # noqa: E402


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
    assert list(wd.children[1:]) == [wd.control, wd.head_control, wd.stack]  # layer menu, head menu, the image
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


def texts_outside_the_figure(fig):
    """Every visible text of ``fig`` (titles, tick labels, token labels) whose box sticks out of the canvas."""
    canvas = FigureCanvasAgg(fig)  # a real layout and renderer, as savefig does
    canvas.draw()
    renderer = canvas.get_renderer()
    box = fig.bbox
    drawn = list(fig.texts)  # the figure's title
    for ax in fig.axes:
        drawn += [ax.title, *ax.texts]  # the axes' titles and the line view's token labels
        if ax.axison:  # tick labels are drawn only with the axes on
            drawn += [*ax.get_xticklabels(), *ax.get_yticklabels()]
    out = []
    for text in [t for t in drawn if t.get_visible() and t.get_text()]:
        e = text.get_window_extent(renderer)
        if e.x0 < box.x0 - 1 or e.x1 > box.x1 + 1 or e.y0 < box.y0 - 1 or e.y1 > box.y1 + 1:
            out.append((text.get_text(), tuple(round(v) for v in e.extents)))
    return out


def title_overlaps(fig):
    """The axes (with their titles and labels) that the figure's title overlaps."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    title = fig._suptitle.get_window_extent(renderer)
    return [ax for ax in fig.axes if ax.get_tightbbox(renderer).overlaps(title)]


LONG = "cross-attention (rows: English written, columns: German): layer 1, head 1"


@pytest.mark.parametrize("tokens", [["a", "b"], ["ein", "mann", "fährt", "."], [f"w{i}" for i in range(30)],
                                    ["a", "remarkably-long-token-indeed", "b"]])
@pytest.mark.parametrize("lines", [True, False])
def test_every_head_image_keeps_its_title_and_labels_inside_the_canvas(tokens, lines):
    """The widget's per-head image: a long title over a narrow heatmap used to be cut off on the left."""
    w = np.full((len(tokens), len(tokens)), 1.0 / len(tokens))
    fig = head_figure(w, tokens, tokens, LONG, lines=lines)
    assert texts_outside_the_figure(fig) == [] and title_overlaps(fig) == []
    assert fig._suptitle.get_text().replace("\n", " ") == LONG  # wrapped, never shortened


@pytest.mark.parametrize("heads", [1, 3])
def test_static_grid_keeps_its_title_inside_the_canvas(heads):
    layer = np.full((heads, 3, 4), 0.25)
    fig = attention_grid(layer, ["<bos>", "a", "man"], ["ein", "mann", "fährt", "."], LONG + ", with even more words")
    assert texts_outside_the_figure(fig) == [] and title_overlaps(fig) == []


def test_layer_and_head_menus_line_up(cross_view):
    """One label width for both menus (the default 80 px against the layer menu's text-wide label did not)."""
    wd = cross_view[0].widget
    menus = [wd.control, wd.head_control]
    assert all(isinstance(m, widgets.Dropdown) for m in menus)
    assert wd.control.style.description_width == wd.head_control.style.description_width != ""
    assert wd.control.layout.width == wd.head_control.layout.width


def test_a_long_sequence_is_shown_through_a_window_of_readable_size():
    T = MAX_TOKENS + 8
    w = np.random.default_rng(0).dirichlet(np.ones(T), size=(2, 2, T))  # (L, H, T, T), rows sum to 1
    tokens = [f"t{i}" for i in range(T)]
    view = viz.attention_heads(w, tokens, lines=False)  # default: the first MAX_TOKENS positions
    assert view.data["weights"].shape == (2, 2, MAX_TOKENS, MAX_TOKENS)
    assert view.data["tokens_q"] == tokens[: MAX_TOKENS]
    view = viz.attention_heads(w, tokens, lines=False, window=(5, 15))
    assert np.array_equal(view.data["weights"], w[:, :, 5:15, 5:15]) and view.data["tokens_k"] == tokens[5:15]
    assert "(tokens 6-15 of 40)" in view.figure._suptitle.get_text()
    with pytest.raises(ValueError, match=r"window=\(0, 40\) shows 40 tokens: at most 32"):
        viz.attention_heads(w, tokens, window=(0, T))
    with pytest.raises(ValueError, match=r"must be \(start, stop\) with 0 <= start < stop <= 40"):
        viz.attention_heads(w, tokens, window=(30, 50))
    short = viz.attention_heads(w[:, :, :6, :6], tokens[:6], lines=False)  # short: everything, no window
    assert short.data["weights"].shape == (2, 2, 6, 6)

"""The attention-head widget: where each head of each layer looks, for one sentence.

``attention_heads(weights, tokens_q, tokens_k)`` returns a :class:`~shoulders.viz.View`:

* the **static figure** (always displayed): every head of one layer as a grid of heatmaps, the query tokens
  down the side, the key tokens along the bottom (row ``i`` = how query ``i`` spreads its attention);
* the **widget**: a *layer* menu over a ``Stack`` of layers, each a ``Stack`` of heads picked by a *head* menu
  (the last entry, "all heads", is that layer's grid). Each head's image shows the heatmap beside a
  token-to-token line view (query tokens on the left, keys on the right, a line's darkness = its weight).
  Both menus are ``jslink``-ed to their Stacks, so they switch in the rendered book with no kernel.

It serves encoder self-attention (``tokens_k`` = ``tokens_q``, the default), decoder self-attention and
encoder-decoder (cross) attention (queries = target tokens, keys = source tokens) of the Transformer chapter,
and GPT's and BERT's heads later. ``weights`` is what the models return for every layer: a list with one
``(B, H, T_q, T_k)`` (pick the sentence with ``index``) or ``(H, T_q, T_k)`` array per layer, or one
``(L, H, T_q, T_k)`` array; it is cut to the tokens given (dropping padding).
"""
from __future__ import annotations

import math
import textwrap
from typing import Any, Sequence

import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from .figure import DPI, BookFigure, figure_to_image_widget, subplots
from .stack import StackView, stack_view
from .view import View

__all__ = ["MAX_TOKENS", "attention_grid", "attention_heads", "attention_lines", "as_layers", "fit_title",
           "head_figure", "token_window"]

HINT = ("<small>Pick a layer and a head: left, row <i>i</i> of the heatmap is how query token <i>i</i> spreads its "
        "attention over the keys (each row sums to 1); right, the same weights as lines from each query (left) "
        "to the keys (right). \"all heads\" shows the layer's heads side by side.</small>")

LINE_MIN = 0.02
"""Weights below this draw no line (they would be invisible, and there are T_q x T_k of them)."""

MENU_LABEL_WIDTH = "3.5em"
"""The layer and head menus get labels of one width, so that their boxes line up one above the other."""


def fit_title(fig: Figure, text: str, fontsize: float = 9, top: float | None = 0.06) -> float:
    """``fig.suptitle(text)`` centred and wrapped to the figure's width (never cut off at its edges); returns the
    height it takes from the top of the figure, in inches (``top`` inches of margin above it included).

    ``top=None`` leaves the title where matplotlib puts it (a constrained layout then makes room for it)."""
    where = {} if top is None else dict(va="top", y=1 - top / fig.get_figheight())
    title = fig.suptitle(text, fontsize=fontsize, x=0.5, ha="center", **where)
    top = top or 0.0
    renderer = FigureCanvasAgg(fig).get_renderer()
    room = 0.96 * fig.bbox.width  # pixels
    width = title.get_window_extent(renderer).width
    if width > room:  # wrap at the number of characters that fit, measured on this text
        title.set_text("\n".join(textwrap.wrap(text, max(8, int(len(text) * room / width)))))
    return title.get_window_extent(renderer).height / fig.dpi + top


def as_layers(weights: Any, index: int = 0) -> np.ndarray:
    """``(L, H, T_q, T_k)`` float array from a list of per-layer ``(B, H, T_q, T_k)`` / ``(H, T_q, T_k)`` arrays
    (sentence ``index`` of a batch) or from one ``(L, H, T_q, T_k)`` array."""
    if isinstance(weights, (list, tuple)):
        if not weights:
            raise ValueError("attention weights: got an empty list of layers")
        layers = []
        for w in weights:
            a = _to_numpy(w)
            if a.ndim == 4:
                a = a[index]
            if a.ndim != 3:
                raise ValueError(f"each layer's weights must be (B, H, T_q, T_k) or (H, T_q, T_k), got {a.shape}")
            layers.append(a)
        if len({a.shape for a in layers}) != 1:
            raise ValueError(f"layers have different shapes: {[a.shape for a in layers]}")
        return np.stack(layers)
    a = _to_numpy(weights)
    if a.ndim != 4:
        raise ValueError(f"an array of weights must be (L, H, T_q, T_k), got shape {a.shape}; pass a list of "
                         "per-layer (B, H, T_q, T_k) weights with index= to pick a sentence")
    return a


def _to_numpy(w: Any) -> np.ndarray:
    if hasattr(w, "detach"):
        w = w.detach().float().cpu().numpy()
    return np.asarray(w, dtype=np.float64)


def _heatmap(ax: Any, w: np.ndarray, tokens_q: Sequence[str], tokens_k: Sequence[str], title: str,
             ylabels: bool = True, xlabels: bool = True) -> Any:
    """One head: ``w`` (T_q, T_k) as an image, tokens as tick labels."""
    im = ax.imshow(w, cmap="Blues", vmin=0.0, vmax=max(float(w.max()), 1e-9), aspect="auto",
                   interpolation="nearest")
    fs = 7 if max(len(tokens_q), len(tokens_k)) <= 20 else 5
    ax.set_xticks(range(len(tokens_k)))
    ax.set_yticks(range(len(tokens_q)))
    ax.set_xticklabels(tokens_k if xlabels else [], rotation=90, fontsize=fs)
    ax.set_yticklabels(tokens_q if ylabels else [], fontsize=fs)
    ax.tick_params(length=0)
    ax.set_title(title, fontsize=8)
    return im


def attention_lines(ax: Any, w: np.ndarray, tokens_q: Sequence[str], tokens_k: Sequence[str], title: str = "",
                    margin: float = 0.5) -> None:
    """The token-to-token view: query tokens on the left, keys on the right, one line per weight (alpha = w).

    The lines run from x = 0 to x = 1; ``margin`` (same units) is left on each side for the token labels."""
    Tq, Tk = w.shape
    yq = np.linspace(1.0, 0.0, Tq) if Tq > 1 else np.array([0.5])
    yk = np.linspace(1.0, 0.0, Tk) if Tk > 1 else np.array([0.5])
    peak = max(float(w.max()), 1e-9)
    fs = 7 if max(Tq, Tk) <= 20 else 5
    qi, kj = np.nonzero(w >= LINE_MIN * peak)  # the lines worth drawing
    a = w[qi, kj] / peak  # (n,) in (0, 1]
    segments = np.stack([np.stack([np.zeros_like(a), yq[qi]], 1), np.stack([np.ones_like(a), yk[kj]], 1)], 1)
    colors = np.zeros((len(a), 4))
    colors[:, :3] = (0.12, 0.47, 0.71)  # matplotlib's C0
    colors[:, 3] = a
    ax.add_collection(LineCollection(segments, colors=colors, linewidths=0.5 + 2.0 * a))
    for y, tok in zip(yq, tokens_q):
        ax.text(-0.03, y, tok, ha="right", va="center", fontsize=fs)
    for y, tok in zip(yk, tokens_k):
        ax.text(1.03, y, tok, ha="left", va="center", fontsize=fs)
    ax.set_xlim(-margin, 1.0 + margin)
    ax.set_ylim(-0.05, 1.05)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=8)


def attention_grid(layer: np.ndarray, tokens_q: Sequence[str], tokens_k: Sequence[str], title: str = "",
                   ncols: int = 4) -> BookFigure:
    """All heads of one layer, ``layer`` ``(H, T_q, T_k)``, as a grid of heatmaps (the static figure)."""
    H = layer.shape[0]
    ncols = max(1, min(ncols, H))
    nrows = math.ceil(H / ncols)
    side = min(3.2, max(1.8, 0.16 * max(len(tokens_q), len(tokens_k)) + 0.8))
    fig, axes = subplots(nrows, ncols, figsize=(side * ncols, side * nrows), squeeze=False)
    flat = axes.ravel()
    for ax in flat[H:]:
        fig.delaxes(ax)
    for h in range(H):
        row, col = divmod(h, ncols)
        _heatmap(flat[h], layer[h], tokens_q, tokens_k, f"head {h + 1}", ylabels=col == 0,
                 xlabels=row == nrows - 1 or h + ncols >= H)
    if title:
        fit_title(fig, title, top=None)  # the constrained layout makes room below it
    return fig


def head_figure(w: np.ndarray, tokens_q: Sequence[str], tokens_k: Sequence[str], title: str,
                lines: bool = True) -> BookFigure:
    """One head, ``w`` ``(T_q, T_k)``: the heatmap and (``lines``) the token-to-token view, under one title that
    spans both and wraps to the figure's width (the widget's image for that head)."""
    side = min(4.0, max(2.4, 0.18 * max(len(tokens_q), len(tokens_k)) + 1.0))  # the heatmap, inches
    # fixed margins sized to the longest token (a constrained layout would cost twice the drawing time,
    # and a widget draws L x H of these): every length below is in inches
    label = 0.065 * max(len(t) for t in [*tokens_q, *tokens_k]) + 0.15
    core, gap, pad = 0.8 * side, 0.3, 0.1  # the line view's lines; the space between the panels; the right edge
    width = label + side + pad + ((gap + label + core + label) if lines else 0.0)
    fig = BookFigure(figsize=(width, side + label))
    head = fit_title(fig, title, fontsize=8)  # wrapped to the width, so taller for a long title
    sub = 0.35 if lines else 0.05  # the line view's own small title
    height = side + label + head + sub
    fig.set_size_inches(width, height)
    fit_title(fig, title, fontsize=8)  # placed again at the top of the taller figure
    _heatmap(fig.add_axes((label / width, label / height, side / width, side / height)), w, tokens_q, tokens_k, "")
    if lines:
        left = label + side + gap
        ax = fig.add_axes((left / width, label / height, (label + core + label) / width, side / height))
        attention_lines(ax, w, tokens_q, tokens_k, "token to token", margin=label / core)
    return fig


def _check_tokens(layers: np.ndarray, tokens_q: Sequence[str], tokens_k: Sequence[str]) -> np.ndarray:
    Tq, Tk = layers.shape[-2:]
    if not 0 < len(tokens_q) <= Tq or not 0 < len(tokens_k) <= Tk:
        raise ValueError(f"{len(tokens_q)} query and {len(tokens_k)} key tokens for weights of {Tq} queries x "
                         f"{Tk} keys: give one token per (non-padding) position")
    return layers[:, :, : len(tokens_q), : len(tokens_k)]  # cut the padding off


MAX_TOKENS = 32  # more labels than this overlap on a figure of the book's width: show a window of them


def token_window(n_q: int, n_k: int, window: tuple[int, int] | None, self_attention: bool) -> tuple[slice, slice]:
    """The query and key positions to show: ``window=(start, stop)`` (positions of the sequence; for
    self-attention the same window of queries and keys, for cross-attention a window of queries and every key),
    by default all of them when there are at most :data:`MAX_TOKENS`, else the first :data:`MAX_TOKENS`."""
    if window is None:
        window = (0, min(n_q, MAX_TOKENS))
    start, stop = window
    if not 0 <= start < stop <= n_q:
        raise ValueError(f"window={window!r} must be (start, stop) with 0 <= start < stop <= {n_q} (the query "
                         f"tokens)")
    if stop - start > MAX_TOKENS:
        raise ValueError(f"window={window!r} shows {stop - start} tokens: at most {MAX_TOKENS} stay readable")
    keys = slice(start, stop) if self_attention else slice(0, min(n_k, MAX_TOKENS))
    return slice(start, stop), keys


def attention_heads(weights: Any, tokens_q: Sequence[str], tokens_k: Sequence[str] | None = None, *,
                    index: int = 0, layer: int = 0, title: str = "attention", lines: bool = True,
                    ncols: int = 4, dpi: int = DPI, window: tuple[int, int] | None = None) -> View:
    """Every layer and head of one sentence's attention: a static grid plus a layer x head widget.

    Args:
        weights: per layer ``(B, H, T_q, T_k)`` or ``(H, T_q, T_k)`` (a list, as ``Transformer.attention_weights``
            returns them), or one ``(L, H, T_q, T_k)`` array.
        tokens_q: the query tokens (rows); tokens_k: the key tokens (columns), default ``tokens_q``
            (self-attention). Weights are cut to these lengths, so padding can be left out.
        index: the sentence of a batch. layer: the layer of the static figure and the widget's first view.
        title: e.g. ``"encoder self-attention"``, ``"cross-attention"``. lines: add the token-to-token view.
        window: ``(start, stop)``, the positions shown (at most :data:`MAX_TOKENS`, so that the labels can be
            read); by default the whole sequence when it is that short, else its first :data:`MAX_TOKENS`. The
            weights shown are the model's, over the whole sequence: a window cuts the view, not the softmax.

    Returns:
        a :class:`~shoulders.viz.View`; ``view.widget`` is a :class:`~shoulders.viz.StackView` over layers
        (``.control`` the layer menu, ``.stack`` its Stack) with ``.head_control`` and ``.head_stacks`` (one
        Stack per layer, ``H + 1`` children: the heads, then "all heads"); ``view.data["weights"]`` is the
        ``(L, H, T_q, T_k)`` array shown.
    """
    self_attention = tokens_k is None
    tokens_q = [str(t) for t in tokens_q]
    tokens_k = tokens_q if tokens_k is None else [str(t) for t in tokens_k]
    layers = _check_tokens(as_layers(weights, index), tokens_q, tokens_k)  # (L, H, T_q, T_k)
    rows, cols = token_window(len(tokens_q), len(tokens_k), window, self_attention)
    if (rows.stop - rows.start, cols.stop - cols.start) != (len(tokens_q), len(tokens_k)):
        layers = layers[:, :, rows, cols]  # (L, H, window, window)
        title = f"{title} (tokens {rows.start + 1}-{rows.stop} of {len(tokens_q)})"
        tokens_q, tokens_k = tokens_q[rows], tokens_k[cols]
    L, H = layers.shape[:2]
    if not 0 <= layer < L:
        raise IndexError(f"layer {layer} out of range for {L} layers")
    figure = attention_grid(layers[layer], tokens_q, tokens_k, f"{title}, layer {layer + 1}", ncols)
    head_labels = [f"head {h + 1}" for h in range(H)] + ["all heads"]
    head_control = widgets.Dropdown(options=head_labels, index=0, description="head",
                                    layout=widgets.Layout(width="max-content"),
                                    style={"description_width": MENU_LABEL_WIDTH})
    head_stacks, links = [], []
    for li in range(L):
        children = [figure_to_image_widget(head_figure(layers[li, h], tokens_q, tokens_k,
                                                       f"{title}: layer {li + 1}, head {h + 1}", lines), dpi=dpi)
                    for h in range(H)]
        children.append(figure_to_image_widget(
            attention_grid(layers[li], tokens_q, tokens_k, f"{title}, layer {li + 1}", ncols), dpi=dpi))
        stack = widgets.Stack(children=children, selected_index=0)
        links.append(widgets.jslink((head_control, "index"), (stack, "selected_index")))
        head_stacks.append(stack)
    hint = widgets.HTML(HINT)
    widget: StackView = stack_view([f"layer {li + 1}" for li in range(L)], head_stacks, description="layer",
                                   index=layer, dpi=dpi, header=[hint])
    # the two menus one above the other, layer first, their labels one width so that the boxes line up
    widget.control.style.description_width = MENU_LABEL_WIDTH
    widget.children = (hint, widget.control, head_control, widget.stack)
    widget.head_control, widget.head_stacks, widget.head_links = head_control, head_stacks, links
    return View(figure, widget, weights=layers, tokens_q=tokens_q, tokens_k=tokens_k)

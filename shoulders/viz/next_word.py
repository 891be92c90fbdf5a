"""The next-word distribution explorer: a context in, the language model's top-k next words out, as bars.

``next_word_explorer(models, contexts)`` returns a :class:`~shoulders.viz.View`:

* the **static figure** (always displayed): one small horizontal bar chart per example context, the ``k`` most
  probable next words of the default model, most probable on top;
* the **widget**: a context menu over a ``Stack`` of precomputed images, one per example context, each showing
  the top-k bars of every model given (e.g. n = 1 … 5, three to a row). The menu is ``jslink``-ed to the Stack, so
  it works in the rendered book with no kernel. Below it, in a running notebook, a text box takes any context
  and sliders pick the model (n) and k; the chart is redrawn on every change.

Any model with ``distribution(context) -> (|V|,) probabilities`` works (the n-gram models of
:mod:`shoulders.models.ngram`, a neural LM wrapped in a small adapter); the words come from ``vocab=`` or the
model's ``vocab`` / ``counts.vocab`` (a list of words in id order, a :class:`shoulders.text.Vocab`, or a
``{word: id}`` mapping).
"""
from __future__ import annotations

import html
from typing import Any, Mapping, Sequence

import ipywidgets as widgets
import numpy as np

from .figure import DPI, BookFigure, figure_to_png, subplots
from .stack import StackView, stack_view
from .view import View

__all__ = ["next_word_explorer", "next_word_figure", "top_k", "vocab_words", "as_context"]

HINT = ("<small>Pick a context: the bars are the most probable next words, one chart per model. In a running "
        "notebook, open the box below to type your own context and move the sliders.</small>")

LIVE_HINT = ("<small>Words are separated by spaces; an unknown word counts as <code>&lt;unk&gt;</code>. An order-n "
             "model reads the last n − 1 words; a shorter context is scored with its lower orders (for "
             "Kneser–Ney, continuation distributions), so give enough words — start with <code>&lt;s&gt;</code> "
             "to mean the beginning of a sentence.</small>")

PANEL_SIZE = (2.3, 2.5)
"""Inches of one bar chart in a widget panel (width; at the default 80 dpi: 184 px)."""


def vocab_words(model: Any = None, vocab: Any = None) -> list[str]:
    """The words in id order, from ``vocab`` or else ``model.vocab`` / ``model.counts.vocab``.

    ``vocab`` may be a sequence of words, a :class:`shoulders.text.Vocab` (anything with ``tokens`` or that
    iterates its words in id order) or a ``{word: id}`` mapping.
    """
    if vocab is None:
        for owner in (model, getattr(model, "counts", None)):
            vocab = getattr(owner, "vocab", None) if owner is not None else None
            if vocab is not None:
                break
    if vocab is None:
        raise ValueError("next_word needs the words: pass vocab= (a list of words in id order) or a model with "
                         "a `vocab` or `counts.vocab` attribute")
    if isinstance(vocab, Mapping):
        return [w for w, _ in sorted(vocab.items(), key=lambda item: int(item[1]))]
    if isinstance(vocab, str):
        raise TypeError("vocab must be a sequence of words, not a str")
    tokens = getattr(vocab, "tokens", None)
    words = list(tokens() if callable(tokens) else tokens) if tokens is not None else list(vocab)
    return [str(w) for w in words]


def as_context(context: str | Sequence[str]) -> tuple[str, ...]:
    """A context as a tuple of words: a string is split on whitespace, a sequence of words is kept."""
    if isinstance(context, str):
        return tuple(context.split())
    return tuple(str(w) for w in context)


def _order(model: Any) -> int | None:
    n = getattr(model, "n", None)
    return int(n) if isinstance(n, (int, np.integer)) else None


def _used_context(model: Any, context: tuple[str, ...]) -> tuple[str, ...]:
    """The part of the context an order-n model conditions on: its last n − 1 words (all if n is unknown)."""
    n = _order(model)
    if n is None:
        return context
    return context[len(context) - (n - 1):] if n > 1 else ()


def top_k(model: Any, context: str | Sequence[str], k: int = 10, vocab: Any = None,
          words: Sequence[str] | None = None) -> list[tuple[str, float]]:
    """The ``k`` most probable next words after ``context`` and their probabilities, most probable first.

    Ties are broken by word id (a stable sort), so the result is deterministic.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    words = list(words) if words is not None else vocab_words(model, vocab)
    p = np.asarray(model.distribution(_used_context(model, as_context(context))), dtype=np.float64).ravel()
    if p.shape[0] != len(words):
        raise ValueError(f"the model's distribution has {p.shape[0]} entries but the vocabulary has {len(words)}")
    if not np.all(np.isfinite(p)):
        raise ValueError("the model's distribution contains NaN or infinite values")
    idx = np.argsort(-p, kind="stable")[:k]
    return [(words[i], float(p[i])) for i in idx]


def _context_label(context: tuple[str, ...], max_words: int = 6) -> str:
    if not context:
        return "(no context)"
    shown = context[-max_words:]
    return ("… " if len(context) > max_words else "") + " ".join(shown)


def _draw_bars(ax: Any, pairs: Sequence[tuple[str, float]], title: str, color: str = "C0") -> None:
    """Horizontal bars, the most probable word on top, with its probability written after the bar."""
    k = len(pairs)
    ys = np.arange(k)[::-1]
    probs = [p for _, p in pairs]
    ax.barh(ys, probs, color=color, height=0.7)
    ax.set_yticks(ys, [w for w, _ in pairs], fontsize=7)
    top = max(probs) if probs and max(probs) > 0 else 1.0
    for y, p in zip(ys, probs):
        ax.text(p + 0.02 * top, y, f"{p:.2f}" if p >= 0.01 else f"{p:.0e}", va="center", fontsize=6)
    ax.set_xlim(0, top * 1.3)
    ax.set_ylim(-0.6, k - 0.4)
    ax.set_title(title, fontsize=8)
    ax.tick_params(axis="x", labelsize=6)
    ax.set_xlabel("P(next word | context)", fontsize=7)
    ax.grid(axis="x", alpha=0.3)


def _model_label(name: Any, model: Any) -> str:
    if isinstance(name, (int, np.integer)):
        return f"n = {int(name)}"
    return str(name)


def next_word_figure(model: Any, contexts: Sequence[str | Sequence[str]], k: int = 10, vocab: Any = None,
                     ncols: int = 2, name: str = "") -> BookFigure:
    """The static figure: one top-k bar chart per context for one model (most probable word on top)."""
    contexts = [as_context(c) for c in contexts]
    if not contexts:
        raise ValueError("next_word_figure needs at least one context")
    words = vocab_words(model, vocab)
    ncols = max(1, min(ncols, len(contexts)))
    nrows = -(-len(contexts) // ncols)
    fig, axes = subplots(nrows, ncols, figsize=(3.0 * ncols, 0.22 * k * nrows + 1.0 * nrows), squeeze=False)
    flat = axes.ravel()
    for ax in flat[len(contexts):]:
        fig.delaxes(ax)
    for ax, context in zip(flat, contexts):
        pairs = top_k(model, context, k, words=words)
        _draw_bars(ax, pairs, f"{_context_label(context)} →")
    if name:
        fig.suptitle(name, fontsize=9)
    return fig


PANEL_COLS = 3
"""Bar charts per row of a widget panel (5 models: 3 + 2), so a panel fits a page column without shrinking."""


def _panel_png(models: Mapping[Any, Any], context: tuple[str, ...], k: int, words: Sequence[str],
               dpi: int) -> bytes:
    """One context, one bar chart per model, ``PANEL_COLS`` to a row."""
    m = len(models)
    ncols = min(m, PANEL_COLS)
    nrows = -(-m // ncols)
    fig, axes = subplots(nrows, ncols, figsize=(PANEL_SIZE[0] * ncols, (0.2 * k + 0.9) * nrows), squeeze=False)
    flat = axes.ravel()
    for ax in flat[m:]:
        fig.delaxes(ax)
    for i, (ax, (name, model)) in enumerate(zip(flat, models.items())):
        _draw_bars(ax, top_k(model, context, k, words=words), _model_label(name, model), color=f"C{i % 10}")
    fig.suptitle(f"{_context_label(context, 10)} →", fontsize=9)
    return figure_to_png(fig, dpi=dpi)


def _live_box(models: Mapping[Any, Any], first: tuple[str, ...], k: int, words: Sequence[str],
              default: Any, dpi: int) -> widgets.VBox:
    """Text box + model slider + k slider above one redrawn chart (needs a kernel)."""
    names = list(models)
    text = widgets.Text(value=" ".join(first), description="context", continuous_update=False,
                        layout=widgets.Layout(width="420px"), style={"description_width": "initial"})
    pick = widgets.SelectionSlider(options=[(_model_label(nm, models[nm]), nm) for nm in names], value=default,
                                   description="model", continuous_update=False,
                                   style={"description_width": "initial"})
    kk = widgets.IntSlider(value=k, min=1, max=max(30, k), description="top-k", continuous_update=False,
                           style={"description_width": "initial"})
    image = widgets.Image(format="png")
    status = widgets.HTML("")
    controls = [text] + ([pick] if len(names) > 1 else []) + [kk]
    box = widgets.VBox([widgets.HBox(controls, layout=widgets.Layout(flex_flow="row wrap")), image, status,
                        widgets.HTML(LIVE_HINT)])

    def redraw(_change: Any = None) -> None:
        context = as_context(text.value)
        try:
            pairs = top_k(models[pick.value], context, kk.value, words=words)
        except (KeyError, ValueError, IndexError, TypeError) as err:
            status.value = f"<small style='color:#b00'>{html.escape(str(err))}</small>"
            return
        status.value = ""
        fig, ax = subplots(1, 1, figsize=(4.2, 0.22 * kk.value + 0.9))
        _draw_bars(ax, pairs, f"{_model_label(pick.value, models[pick.value])}: {_context_label(context, 8)} →")
        image.value = figure_to_png(fig, dpi=dpi)

    for w in (text, pick, kk):
        w.observe(redraw, names="value")
    box.redraw = redraw
    box.text, box.model_slider, box.k_slider, box.image, box.status = text, pick, kk, image, status
    return box


def next_word_explorer(models: Any, contexts: Sequence[str | Sequence[str]], k: int = 8, vocab: Any = None, *,
              default: Any = None, ncols: int = 2, dpi: int = DPI, live: bool = True) -> View:
    """The next-word distribution explorer (static figure + kernel-less menu + live text box).

    Args:
        models: one model, or ``{name: model}`` (an ``int`` name ``n`` is shown as "n = n"), each with
            ``distribution(context) -> (|V|,)`` over the same vocabulary. A model with an ``n`` attribute is
            given only the last ``n − 1`` words of a context.
        contexts: the example contexts (strings are split on whitespace); one menu entry and one static
            chart each.
        k: bars per chart.
        vocab: the words in id order (default: the first model's ``vocab`` / ``counts.vocab``).
        default: the model drawn in the static figure and first in the live box (default: the last one).
        ncols: columns of the static figure.
        live: add the text box and sliders (in a collapsed box; they need a kernel).

    Returns:
        a :class:`~shoulders.viz.View`: ``figure`` (one chart per context, default model), ``widget`` (a VBox:
        the :class:`~shoulders.viz.StackView` menu, then the live box) and ``data`` with ``stack`` (the
        StackView), ``topk`` (``{context label: [(word, p), ...]}`` of the default model), ``contexts``,
        ``models`` and ``live``.
    """
    if not isinstance(models, Mapping):
        models = {getattr(models, "n", "model"): models}
    models = dict(models)
    if not models:
        raise ValueError("next_word needs at least one model")
    if default is None:
        default = list(models)[-1]
    if default not in models:
        raise KeyError(f"default={default!r} is not one of the models {list(models)}")
    contexts = [as_context(c) for c in contexts]
    if not contexts:
        raise ValueError("next_word needs at least one example context")
    words = vocab_words(models[default], vocab)
    figure = next_word_figure(models[default], contexts, k=k, vocab=words, ncols=ncols,
                              name=_model_label(default, models[default]) if len(models) > 1 else "")
    labels = [_context_label(c, 10) for c in contexts]
    if len(set(labels)) != len(labels):
        raise ValueError(f"example contexts must differ (as shown): {labels}")
    panels = [_panel_png(models, c, k, words, dpi) for c in contexts]
    stack: StackView = stack_view(labels, panels, description="context", dpi=dpi, header=[widgets.HTML(HINT)])
    children: list[widgets.Widget] = [stack]
    box = None
    if live:
        box = _live_box(models, contexts[0], k, words, default, dpi)
        box.redraw()
        children.append(widgets.Accordion(children=[box], titles=("Your own context (needs a running kernel)",),
                                          selected_index=None))
    topk = {label: top_k(models[default], c, k, words=words) for label, c in zip(labels, contexts)}
    return View(figure, widgets.VBox(children), stack=stack, topk=topk, contexts=contexts, models=models,
                live=box)
